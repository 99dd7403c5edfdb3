//! NVIDIA PM counters end to end without a GPU: a sampler over the fake CUPTI (the real
//! sampler loop, ring and reader; only the CUPTI calls are scripted) publishes a known sample
//! stream into the private ring of a sandbox while the test app renders under framescope on
//! lavapipe. Frames and long passes carry the stream's values over exactly their GPU spans;
//! an overflow, a killed sampler and a refused permission each say why values are missing,
//! and the app still finishes with a complete dump.

use framescope_collectors::nvidia::pm::api::MetricType;
use framescope_collectors::nvidia::pm::fake::{Call, FakeCupti, FakeMetric, FakeSample};
use framescope_collectors::nvidia::pm::metrics::{MetricSet, GRAPHICS};
use framescope_collectors::nvidia::pm::ring::{RingWriter, WriterState};
use framescope_collectors::nvidia::pm::sampler::{PmSampler, SamplerConfig};
use framescope_tests::{dump, Artifacts, Sandbox};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const MS: u64 = 1_000_000;

/// Sample `k` (the k-th millisecond of the Unix epoch): the graphics engine is active
/// `busy(k)` of its 1000 cycles; SM active is the same share in %.
fn busy(k: u64) -> f64 {
    (k % 50) as f64 / 50.0
}

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn monotonic_ns() -> u64 {
    framescope_core::clock::monotonic_now_ns()
}

/// What the scripted hardware does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Script {
    Run = 0,
    /// The next decode reports a hardware-buffer overflow.
    Overflow = 1,
    /// The sampler process dies: no more samples, no heartbeat, its ring left behind.
    Kill = 2,
}

/// What is wrong from the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    NoPermission,
    Busy,
}

struct FakeSampler {
    stop: Arc<AtomicBool>,
    script: Arc<AtomicU8>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeSampler {
    /// Runs the sampler loop over the fake in `runtime/framescope` of `sb`, as `framescope
    /// gpu-sampler` does, with `fault` from the start.
    fn start(sb: &Sandbox, fault: Fault) -> FakeSampler {
        use std::os::unix::fs::DirBuilderExt;
        let dir: PathBuf = sb.path("runtime/framescope");
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(AtomicU8::new(Script::Run as u8));
        let kinds: Vec<_> = GRAPHICS
            .iter()
            .map(|n| {
                let t = if n.contains("pct") {
                    MetricType::Ratio
                } else {
                    MetricType::Counter
                };
                (n.to_string(), t)
            })
            .collect();
        // The ring exists before the app starts, as `framescope run --pm` makes sure.
        let set = MetricSet::parse("graphics").unwrap();
        let fake = FakeCupti::new(
            "GH100",
            kinds
                .iter()
                .map(|(n, t)| FakeMetric::new(n, *t, if *t == MetricType::Ratio { "%" } else { "cycle" }, 1))
                .collect(),
            64,
        );
        match fault {
            Fault::None => {}
            Fault::NoPermission => fake.fail(
                Call::PmEnable,
                framescope_collectors::nvidia::pm::api::CuptiError::Cupti(
                    framescope_collectors::nvidia::pm::api::code::INSUFFICIENT_PRIVILEGES,
                ),
            ),
            // Another profiler holds the GPU's monitors for the whole run.
            Fault::Busy => fake.hold_monitors_elsewhere(),
        }
        let mut sampler_cfg = SamplerConfig::new(0, set);
        sampler_cfg.decode_every_ns = 10 * MS;
        let names: Vec<String> = GRAPHICS.iter().map(|s| s.to_string()).collect();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (s2, sc2) = (stop.clone(), script.clone());
        let thread = std::thread::spawn(move || {
            let mut sampler = PmSampler::new(&fake, sampler_cfg);
            sampler.prepare().expect("the graphics set fits one pass on the fake");
            let set = sampler.set().unwrap();
            let refs: Vec<&str> = set.metrics.iter().map(|m| m.name.as_str()).collect();
            let kinds: Vec<_> = set.metrics.iter().map(|m| m.kind).collect();
            assert_eq!(refs, names.iter().map(String::as_str).collect::<Vec<_>>());
            let mut ring = RingWriter::create_in(&dir, "gpu0", &refs, &kinds, 1 << 14, MS).unwrap();
            sampler.step(monotonic_ns(), &mut ring);
            ready_tx.send(()).unwrap();
            let mut next_ms = realtime_ns() / MS;
            while !s2.load(Ordering::Relaxed) {
                match sc2.load(Ordering::Relaxed) {
                    2 => {
                        // Killed: the ring stays, nothing writes it any more.
                        std::mem::forget(ring);
                        return;
                    }
                    1 => {
                        fake.overflow_next_decode();
                        sc2.store(Script::Run as u8, Ordering::Relaxed);
                        // The restarted session's first sample spans its start, 300 ms, as on
                        // the H100: a gap in the values, whatever the frames' timing.
                        sampler.step(monotonic_ns(), &mut ring);
                        std::thread::sleep(Duration::from_millis(300));
                        sampler.step(monotonic_ns(), &mut ring);
                        let now_ms = realtime_ns() / MS;
                        fake.produce(FakeSample::new(
                            next_ms * MS,
                            now_ms * MS,
                            &[("gr__cycles_active.avg", 1.0), ("gr__cycles_elapsed.max", 1.0)],
                        ));
                        next_ms = now_ms;
                    }
                    _ => {}
                }
                let now_ms = realtime_ns() / MS;
                for k in next_ms..now_ms {
                    let b = busy(k);
                    fake.produce(FakeSample::new(
                        k * MS,
                        (k + 1) * MS,
                        &[
                            ("gr__cycles_active.avg", 1000.0 * b),
                            ("gr__cycles_elapsed.max", 1000.0),
                            ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", 100.0 * b),
                        ],
                    ));
                }
                next_ms = now_ms;
                sampler.step(monotonic_ns(), &mut ring);
                std::thread::sleep(Duration::from_millis(5));
            }
            sampler.stop(monotonic_ns(), &mut ring);
            ring.set_state(&WriterState::Stopped, monotonic_ns());
        });
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the fake sampler started");
        FakeSampler {
            stop,
            script,
            thread: Some(thread),
        }
    }

    fn script(&self, s: Script) {
        self.script.store(s as u8, Ordering::Relaxed);
    }
}

impl Drop for FakeSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Graphics active % over `[b, e)` (CLOCK_MONOTONIC) from the script, computed here: each
/// millisecond sample weighted by its overlap with the window.
fn expected_active(b: u64, e: u64, offset: i128) -> f64 {
    let (rb, re) = ((i128::from(b) + offset) as u64, (i128::from(e) + offset) as u64);
    let (mut num, mut den) = (0.0, 0.0);
    for k in rb / MS..=re / MS {
        let lo = rb.max(k * MS);
        let hi = re.min((k + 1) * MS);
        if hi > lo {
            num += (hi - lo) as f64 * busy(k);
            den += (hi - lo) as f64;
        }
    }
    100.0 * num / den
}

/// The test and the attributor each estimate CLOCK_REALTIME − CLOCK_MONOTONIC from bracketed
/// reads; on a loaded 2-core CI machine the two estimates were seen some µs apart, which moves
/// a window's edges across the script's sawtooth. Accept any value the window takes for an
/// offset within this of ours (and 0.1 points of rounding), nothing else.
const OFFSET_SLACK_NS: i128 = 100_000;

fn assert_active(got: f64, b: u64, e: u64, offset: i128, what: &str) {
    let step = OFFSET_SLACK_NS / 20;
    let (lo, hi) = (-20..=20)
        .map(|j| expected_active(b, e, offset + j * step))
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    assert!(
        got > lo - 0.1 && got < hi + 0.1,
        "{what}: {got}, expected {lo}..{hi} (offset within {OFFSET_SLACK_NS} ns of the test's)"
    );
}

fn run_app(sb: &mut Sandbox, a: &Artifacts, path: &std::path::Path, args: &[&str]) -> dump::Dump {
    sb.with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "counter_interval_ms=20");
    let app = a.testapp.display().to_string();
    let mut all = vec!["--headless", "--frame-boundary", "--scene", "passes"];
    all.extend_from_slice(args);
    let out = sb.run_under_framescope(a, &app, &all, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    framescope_tests::validation::assert_clean("pm", &out.combined());
    let d = dump::read(path);
    assert!(d.summary.is_some(), "a complete dump");
    assert_eq!(d.summary.as_ref().unwrap()["dropped_frames"], 0);
    d
}

fn attribution(f: &Value) -> &Value {
    &f["attribution"]["pm"]
}

#[test]
fn frames_and_long_passes_carry_the_sampled_counters_over_their_gpu_spans() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("pm-exact");
    let sampler = FakeSampler::start(&sb, Fault::None);
    // CLOCK_REALTIME − CLOCK_MONOTONIC from the tightest of a few brackets, so that a
    // preemption between the reads does not shift every expected window.
    let offset = (0..20)
        .map(|_| {
            let a = monotonic_ns();
            let r = realtime_ns();
            let b = monotonic_ns();
            (b - a, i128::from(r) - i128::from(a / 2 + b / 2))
        })
        .min()
        .unwrap()
        .1;
    let path = sb.path("pm.jsonl");
    // Passes of several ms on lavapipe: 100 full-screen triangles of 512x512.
    let d = run_app(
        &mut sb,
        &a,
        &path,
        &["--frames", "40", "--draws", "100", "--width", "512", "--height", "512"],
    );
    drop(sampler);
    assert!(
        d.header["counter_sources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "pm"),
        "{}",
        d.header
    );
    let mut frames = 0;
    let mut passes = 0;
    for f in &d.frames {
        let at = attribution(f);
        assert_eq!(at["over"], "gpu_span", "calibrated timestamps on lavapipe: {f}");
        assert!(at["missing"].is_null(), "{f}");
        let (b, e) = (f["gpu_begin_ns"].as_u64().unwrap(), f["gpu_end_ns"].as_u64().unwrap());
        assert_eq!(f["counter_windows"]["pm"]["begin_ns"], b);
        assert_eq!(f["counter_windows"]["pm"]["end_ns"], e);
        let got = f["counters"]["pm_graphics_active_pct"].as_f64().unwrap();
        assert_active(got, b, e, offset, &format!("frame {}", f["frame"]));
        let sm = f["counters"]["pm_sm_active_pct"].as_f64().unwrap();
        assert!(
            (sm - got).abs() < 0.1,
            "a ratio metric, weighted by overlap like the cycle counts: {sm} against {got}"
        );
        // Over the frame's CPU interval too (none for the first frame, which has no start).
        let iv = &at["interval"];
        if f["cpu_frame_ns"].is_u64() {
            let (b, e) = (iv["begin_ns"].as_u64().unwrap(), iv["end_ns"].as_u64().unwrap());
            assert_eq!(e, f["t_ns"].as_u64().unwrap());
            assert_eq!(e - b, f["cpu_frame_ns"].as_u64().unwrap());
            assert_eq!(iv["covered"], 1.0, "frame {} interval {iv}", f["frame"]);
            let got = iv["counters"]["pm_graphics_active_pct"].as_f64().unwrap();
            assert_active(
                got,
                b,
                e,
                offset,
                &format!("frame {} interval {iv}, cpu_frame_ns {}", f["frame"], f["cpu_frame_ns"]),
            );
        } else {
            assert!(iv.is_null(), "{f}");
        }
        frames += 1;
        for s in f["samples"].as_array().unwrap() {
            let span = s["gpu_ns"].as_u64().unwrap_or(0);
            match s.get("counters") {
                Some(c) => {
                    assert!(span >= 4 * MS, "a sample shorter than 4 intervals got its own: {s}");
                    let (b, e) = (s["gpu_begin_ns"].as_u64().unwrap(), s["gpu_end_ns"].as_u64().unwrap());
                    let got = c["pm_graphics_active_pct"].as_f64().unwrap();
                    assert_active(got, b, e, offset, &format!("pass {s}"));
                    passes += 1;
                }
                None => assert!(
                    span < 4 * MS || s["overwritten"] == true,
                    "a long sample without its own: {s}"
                ),
            }
        }
    }
    assert_eq!(frames, 40);
    assert!(passes > 0, "no pass was 4 ms long: make the scene heavier");

    // The raw samples, in `series` lines: one per millisecond of the script, each with its
    // own value, none twice.
    let mut begins = Vec::new();
    for x in &d.series {
        assert_eq!(x["source"], "pm");
        let b = x["begin_ns"].as_array().unwrap();
        let active = x["values"]["pm_graphics_active_pct"].as_array().unwrap();
        assert_eq!(b.len(), active.len());
        for (b, v) in b.iter().zip(active) {
            let b = b.as_u64().unwrap();
            let k = ((i128::from(b) + offset + i128::from(MS / 2)) / i128::from(MS)) as u64;
            assert!(
                (v.as_f64().unwrap() - 100.0 * busy(k)).abs() < 1e-6,
                "sample at {b}: {v}"
            );
            begins.push(b);
        }
    }
    assert!(begins.len() > 100, "{} raw samples", begins.len());
    assert!(begins.windows(2).all(|w| w[1] > w[0]), "in time order, none twice");
    let first = d.frames[0]["gpu_begin_ns"].as_u64().unwrap();
    assert!(begins[0] <= first, "the samples cover the run from its first frame");

    // `export --perfetto`: the frames' values and the raw samples on GPU counter tracks.
    let trace = sb.path("pm.perfetto-trace");
    let out = sb.run(
        &a.framescope,
        &["export", path.to_str().unwrap(), "--perfetto", trace.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let v = framescope_tests::python::decode_perfetto(&sb, &trace);
    assert_eq!(v["errors"], Value::Array(vec![]), "{v}");
    assert_eq!(v["unknown_fields"], 0, "{v}");
    let values = &v["gpu_counter_values"];
    assert_eq!(values["pm_graphics_active_pct"], 40, "one value a frame: {v}");
    assert_eq!(
        values["pm_graphics_active_pct (samples)"],
        begins.len(),
        "one value a raw sample: {v}"
    );
}

#[test]
fn an_overflow_and_a_killed_sampler_say_why_and_the_app_finishes() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("pm-fail");
    let sampler = FakeSampler::start(&sb, Fault::None);
    let path = sb.path("pm.jsonl");
    // The script follows the frames written: an overflow after 60, the kill after 150.
    let script = {
        let (s, p) = (sampler.script.clone(), path.clone());
        std::thread::spawn(move || {
            let written = || {
                std::fs::read_to_string(&p)
                    .unwrap_or_default()
                    .matches("\"type\":\"frame\"")
                    .count()
            };
            let start = std::time::Instant::now();
            for (after, what) in [(60, Script::Overflow), (150, Script::Kill)] {
                while written() < after && start.elapsed() < LIMIT {
                    std::thread::sleep(Duration::from_millis(10));
                }
                s.store(what as u8, Ordering::Relaxed);
            }
        })
    };
    // About 8 s of light frames: past the kill and the 2 s after which a silent sampler is gone.
    let d = run_app(
        &mut sb,
        &a,
        &path,
        &["--frames", "400", "--draws", "1", "--sleep-ms", "20"],
    );
    script.join().unwrap();
    sampler.script(Script::Run);
    drop(sampler);
    let overs: Vec<&Value> = d.frames.iter().map(|f| &attribution(f)["over"]).collect();
    let attributed = overs.iter().filter(|o| **o == "gpu_span").count();
    assert!(attributed > 100, "frames before the kill are attributed: {attributed}");
    let missing: Vec<&str> = d
        .frames
        .iter()
        .filter_map(|f| attribution(f)["missing"].as_str())
        .collect();
    assert!(
        missing
            .iter()
            .any(|m| m.contains("silent") || m.contains("had not arrived")),
        "after the kill frames say why: {missing:?}"
    );
    // The last frames, seconds after the kill, name the silent sampler.
    let last = d.frames.last().unwrap();
    let why = attribution(last)["missing"]
        .as_str()
        .unwrap_or_else(|| panic!("{last}"));
    assert!(why.contains("silent"), "{why}");
    // The overflow left a gap: a frame across it is covered less than whole, or says why.
    let gap = d.frames[..140].iter().any(|f| {
        let at = attribution(f);
        at["covered"].as_f64().is_some_and(|c| c > 0.0 && c < 0.999)
            || at["missing"]
                .as_str()
                .is_some_and(|m| m.contains("overflow") || m.contains("no sample covers"))
    });
    let notes: Vec<&Value> = d.frames.iter().map(attribution).collect();
    assert!(gap, "the overflow shows: {notes:?}");
}

/// A sampler that cannot sample from the start: the header's `unavailable` and every frame say
/// why, and the dump is complete.
fn refused(name: &str, fault: Fault, expect: &str) {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(name);
    let sampler = FakeSampler::start(&sb, fault);
    let path = sb.path("pm.jsonl");
    // 1 s of frames: the header waits for the collector's first round only while the app runs
    // (a loaded CI machine once needed more than the 0.1 s that 20 bare frames take).
    let d = run_app(
        &mut sb,
        &a,
        &path,
        &["--frames", "20", "--draws", "1", "--sleep-ms", "50"],
    );
    drop(sampler);
    let u = d.header["unavailable"].to_string();
    assert!(u.contains(expect), "{u}");
    for f in &d.frames {
        assert!(attribution(f)["over"].is_null(), "{f}");
    }
    let why = attribution(d.frames.last().unwrap())["missing"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains(expect), "{why}");
}

#[test]
fn without_permission_the_reason_names_the_fix_and_the_app_finishes() {
    refused(
        "pm-denied",
        Fault::NoPermission,
        "NVreg_RestrictProfilingToAdminUsers=0",
    );
}

#[test]
fn another_profiler_holding_the_monitors_is_busy_and_the_app_finishes() {
    refused("pm-busy", Fault::Busy, "busy");
}

/// `framescope run --pm` where CUPTI cannot be loaded (no CUDA on the test machines): the
/// sampler leaves its reason, so the header and every frame name the missing library, and the
/// app finishes with a complete dump.
#[test]
fn a_missing_cupti_library_is_named_in_the_header_and_every_frame() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("pm-nolib");
    let path = sb.path("pm.jsonl");
    let missing = sb.path("no-cupti");
    sb.with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CUPTI_DIR", missing.display().to_string());
    let app = a.testapp.display().to_string();
    let out = sb.run(
        &a.framescope,
        &[
            "run",
            "--pm",
            "--",
            &app,
            "--headless",
            "--frame-boundary",
            "--frames",
            "20",
            // As in `refused`: the app outlives the collector's first round.
            "--sleep-ms",
            "50",
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let d = dump::read(&path);
    assert!(d.summary.is_some(), "a complete dump");
    assert_eq!(d.frames.len(), 20);
    let u = d.header["unavailable"].to_string();
    assert!(u.contains("libcupti.so.12 not found"), "{u}");
    // The fix survives whole (the ring's status line once cut it mid-word).
    assert!(
        u.contains(
            "set FRAMESCOPE_CUPTI_DIR to the directory holding libcupti.so.12, libnvperf_host.so and \
             libnvperf_target.so (CUDA toolkit extras/CUPTI/lib64, or the nvidia-cuda-cupti-cu12 wheel's \
             nvidia/cuda_cupti/lib)"
        ),
        "{u}"
    );
    for f in &d.frames {
        let why = attribution(f)["missing"].as_str().unwrap_or_else(|| panic!("{f}"));
        assert!(why.contains("libcupti.so.12 not found"), "{why}");
    }
    // The sampler held its reason for this app only: once the app is gone, so is the ring
    // (it polls the app every 100 ms).
    let ring = sb.path("runtime/framescope/pm-gpu0.ring");
    let t0 = std::time::Instant::now();
    while ring.exists() && t0.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!ring.exists(), "{} left behind after the app", ring.display());
}
