//! The dump writer end to end: files it writes validate against the schema and follow the
//! structural rules; windows, drops and errors behave as documented.

mod common;

use common::*;
use framescope_core::assembly::{AssemblerOptions, FrameAssembler};
use framescope_core::config;
use framescope_core::dump::{Api, CounterDesc, DeviceInfo, DumpOptions, DumpWriter, Fault, Header, Unavailable};
use framescope_core::frame::{DispatchKind, DrawKind, FrameEnd, FrameRecord, GpuMissing, SwapchainInfo};
use serde_json::json;
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;

fn header() -> Header {
    let mut h = Header::new(Api::Vulkan);
    h.device = Some(DeviceInfo {
        name: "Test GPU".into(),
        vendor_id: 0x10de,
        device_id: 0x2684,
        driver_name: Some("NVIDIA".into()),
        driver_info: Some("550.54.14".into()),
        driver_version_raw: (550 << 22) | (54 << 14) | (14 << 6),
        api_version_raw: (1 << 22) | (3 << 12) | 281,
        ..DeviceInfo::default()
    });
    h.timestamp_period = Some(1.0);
    h.counters = vec![
        CounterDesc {
            name: "gpu_clock".into(),
            unit: "MHz".into(),
            source: "nvml".into(),
            scope: "device".into(),
        },
        CounterDesc {
            name: "gpu_power".into(),
            unit: "W".into(),
            source: "nvml".into(),
            scope: "device".into(),
        },
    ];
    h.unavailable = vec![Unavailable {
        source: "perf".into(),
        reason: "perf_event_paranoid=4".into(),
    }];
    h.extra.insert("device_create_fallback".into(), json!(false));
    h.extra.insert("pid".into(), json!("must not override the real pid"));
    h
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(5), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn assembled_frames_make_a_valid_consistent_dump() {
    let path = temp_path("full");
    let (cfg, errors) = config::parse(&format!("dump={}", path.display()));
    assert!(errors.is_empty());
    let w = DumpWriter::from_config(&cfg, header()).expect("dump configured");
    let mut a = FrameAssembler::new(AssemblerOptions::default());
    let t0 = w.origin_ns() + 5 * MS;
    let n = 60u64;
    let mut in_flight = Vec::new();
    for i in 0..n {
        let mut r = FrameRecord {
            t_ns: t0 + i * 16 * MS + (i % 3) * MS,
            ..FrameRecord::default()
        };
        r.swapchain = Some(SwapchainInfo {
            handle: 0xdead_beef_0000_0001,
            width: 1920,
            height: 1080,
            format: 44,
            present_mode: 2,
        });
        if i == 7 {
            r.end = FrameEnd::FrameBoundary;
            r.swapchain = None;
        }
        if i != 3 {
            r.counts.submits = 2;
            r.counts.command_buffers = 3;
            r.counts.draws[DrawKind::DrawIndexed] = 10;
            r.counts.draws[DrawKind::DrawMeshTasks] = 1;
            r.counts.dispatches[DispatchKind::Direct] = 2;
            in_flight.push((a.on_submit(), i, 0));
            in_flight.push((a.on_submit(), i, 500));
        }
        if i % 2 == 0 {
            r.counters.set(0, 1500.0 + i as f64);
        }
        a.close_frame(r, |f| w.push(f));
        // Results retire one frame late; frame 5's queue cannot write timestamps.
        let last = i == n - 1;
        let (ready, later): (Vec<_>, Vec<_>) = in_flight
            .into_iter()
            .partition(|&(f, _, _)| last || f + 1 < a.open_frame());
        in_flight = later;
        for (f, idx, offset) in ready {
            // Two submissions per frame: [0, 400] and [500, 800] after idx us.
            let begin = idx * 1000 + offset;
            let len = if offset == 0 { 400 } else { 300 };
            let iv = (idx != 5).then_some((begin, begin + len));
            a.on_submission_retired(f, iv);
        }
        a.poll(t0 + i * 16 * MS, |f| w.push(f));
    }
    assert_eq!(a.pending(), 0);
    a.flush(GpuMissing::Timeout, |f| w.push(f));
    w.finish();
    w.finish();

    let lines = read_lines(&path);
    let c = check_structure(&lines);
    assert_eq!(c.frames.len() as u64, n);
    assert_eq!(c.gaps, 0);
    assert_eq!(c.frames[0]["frame"], 0);
    check_summary_agrees(&c);

    let h = &lines[0];
    assert_eq!(h["schema"], "framescope.v1");
    assert_eq!(h["pid"], std::process::id());
    assert_eq!(h["api"], "vulkan");
    assert_eq!(h["device"]["driver_version"], "550.54.14.0");
    assert_eq!(h["device"]["api_version"], "1.3.281");
    assert_eq!(h["config"]["dump"], path.display().to_string());
    assert_eq!(h["device_create_fallback"], false);
    assert_eq!(h["counters"][1]["name"], "gpu_power");

    let f = |i: usize| &c.frames[i];
    assert_eq!(f(0)["cpu_frame_ns"], json!(null));
    assert_eq!(f(1)["cpu_frame_ns"], 17 * MS);
    assert_eq!(f(1)["gpu_busy_ns"], 400 + 300);
    assert_eq!(f(1)["gpu_span_ns"], 800);
    assert_eq!(f(1)["draws"], 11);
    assert_eq!(f(1)["draws_by_kind"]["draw_indexed"], 10);
    assert_eq!(f(1)["dispatches"], 2);
    assert_eq!(f(1)["submits"], 2);
    assert_eq!(f(1)["swapchain"]["handle"], "0xdeadbeef00000001");
    assert_eq!(f(1)["swapchain"]["format_name"], "B8G8R8A8_UNORM");
    assert_eq!(f(1)["swapchain"]["present_mode_name"], "FIFO");
    assert_eq!(
        f(2)["counters"],
        json!({"gpu_clock": 1502, "gpu_power": null}),
        "whole values are JSON integers"
    );
    assert_eq!(f(3)["gpu_missing"], "no_submissions");
    assert_eq!(f(3)["gpu_busy_ns"], json!(null));
    assert_eq!(f(5)["gpu_missing"], "queue_has_no_timestamps");
    assert_eq!(f(7)["end"], "frame_boundary");
    assert_eq!(f(7)["swapchain"], json!(null));
    let s = c.summary.unwrap();
    assert_eq!(s["produced_by"], "writer");
    assert_eq!(s["ended_by"], "finish");
    assert_eq!(s["dropped_frames"], 0);
    assert_eq!(s["gpu_missing_frames"], 2);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn schema_rejects_broken_records() {
    // The schema is not vacuous: each of these breaks one documented rule.
    let v = Validator::new();
    let good = json!({"type":"summary","frames":1,"duration_ns":0,"fps_mean":null,"frame_time_ns":null,
        "low_1pct_fps":null,"low_0_1pct_fps":null,"gpu_busy_ns":null,"gpu_missing_frames":1,
        "dropped_frames":0,"produced_by":"writer","ended_by":"finish"});
    assert!(v.is_valid(&good));
    let mut no_drops = good.clone();
    no_drops.as_object_mut().unwrap().remove("dropped_frames");
    assert!(!v.is_valid(&no_drops));
    assert!(!v.is_valid(&json!({"type":"bogus"})));
    assert!(!v.is_valid(&json!({"type":"frame","frame":0})));
}

#[test]
fn a_fault_is_written_before_the_summary_and_validates() {
    let path = temp_path("fault");
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    let origin = w.origin_ns();
    for i in 0..3u64 {
        w.push(FrameRecord {
            frame: i,
            t_ns: origin + i * 10 * MS,
            ..FrameRecord::default()
        });
    }
    let fault = Fault {
        kind: "device_lost",
        call: "vkQueueSubmit",
        result: "VK_ERROR_DEVICE_LOST".into(),
        frame: Some(3),
        t_ns: origin + 35 * MS,
    };
    w.fault(fault.clone());
    // Written at once, before the dump ends (an app may abort right after a lost device).
    wait_until("the fault record", || {
        std::fs::read_to_string(&path).is_ok_and(|t| t.contains("\"type\":\"fault\""))
    });
    w.finish();
    w.fault(fault); // after the end: nothing
    let lines = read_lines(&path);
    let c = check_structure(&lines);
    assert_eq!(c.frames.len(), 3);
    let faults: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "fault").collect();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0]["kind"], "device_lost");
    assert_eq!(faults[0]["call"], "vkQueueSubmit");
    assert_eq!(faults[0]["result"], "VK_ERROR_DEVICE_LOST");
    assert_eq!(faults[0]["frame"], 3);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn dump_start_and_duration_select_a_window() {
    let path = temp_path("window");
    let mut o = DumpOptions::new(path.to_str().unwrap());
    o.dump_start_s = 1.0;
    o.dump_duration_s = Some(1.0);
    let w = DumpWriter::start(o, header());
    let origin = w.origin_ns();
    // Frames every 100 ms from the origin to 3 s: only t in [1 s, 2 s) are written.
    for i in 0..30u64 {
        let r = FrameRecord {
            frame: i,
            t_ns: origin + i * 100 * MS,
            cpu_frame_ns: (i > 0).then_some(100 * MS),
            ..FrameRecord::default()
        };
        w.push(r);
    }
    // The frame at 2 s closes the window: the writer ends by itself.
    wait_until("the window to close", || !w.is_active());
    w.finish();
    let c = check_structure(&read_lines(&path));
    let idx: Vec<u64> = c.frames.iter().map(|f| f["frame"].as_u64().unwrap()).collect();
    assert_eq!(idx, (10..20).collect::<Vec<u64>>());
    let s = c.summary.as_ref().unwrap();
    assert_eq!(s["ended_by"], "dump_duration");
    check_summary_agrees(&c);
    assert!((s["fps_mean"].as_f64().unwrap() - 10.0).abs() < 1e-9);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn full_queue_counts_drops_and_never_blocks() {
    let path = temp_path("drops");
    let mut o = DumpOptions::new(path.to_str().unwrap());
    o.queue_capacity = 4;
    o.flush_interval = Duration::from_millis(100);
    let w = DumpWriter::start(o, header());
    let n = 2000u64;
    let t = Instant::now();
    for i in 0..n {
        w.push(FrameRecord {
            frame: i,
            t_ns: w.origin_ns() + i * MS,
            cpu_frame_ns: (i > 0).then_some(MS),
            ..FrameRecord::default()
        });
    }
    // 2000 pushes into a queue of 4 drained every 100 ms: far faster than one drain.
    assert!(
        t.elapsed() < Duration::from_millis(100),
        "push blocked: {:?}",
        t.elapsed()
    );
    w.finish();
    let c = check_structure(&read_lines(&path));
    let s = c.summary.as_ref().unwrap();
    let dropped = s["dropped_frames"].as_u64().unwrap();
    assert_eq!(dropped, w.dropped());
    assert!(dropped > 0);
    assert_eq!(c.frames.len() as u64 + dropped, n);
    check_summary_agrees(&c);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn unwritable_path_turns_pushes_into_no_ops() {
    let w = DumpWriter::start(DumpOptions::new("/nonexistent-framescope-dir/sub/%p.jsonl"), header());
    wait_until("the writer to give up", || !w.is_active());
    w.push(FrameRecord::default());
    assert_eq!(w.dropped(), 0);
    w.finish();
    w.finish();
    assert!(!std::path::Path::new("/nonexistent-framescope-dir").exists());
}

#[test]
fn path_template_is_expanded_on_the_writer_thread() {
    let dir = std::env::temp_dir();
    let tpl = format!("{}/framescope-core-test-tpl-%p-%n.jsonl", dir.display());
    let w = DumpWriter::start(DumpOptions::new(tpl), header());
    w.finish();
    let exe = std::env::current_exe().unwrap();
    let name = exe.file_name().unwrap().to_str().unwrap();
    let expected = dir.join(format!("framescope-core-test-tpl-{}-{name}.jsonl", std::process::id()));
    let lines = read_lines(&expected);
    assert_eq!(lines.len(), 2, "header and summary");
    assert_eq!(lines[0]["dump_path"], expected.display().to_string());
    assert_eq!(lines[1]["frames"], 0);
    std::fs::remove_file(&expected).unwrap();
}

#[test]
fn samples_go_into_their_own_frame_line() {
    use framescope_core::sample::{LabelPath, PipelineStats, SampleRecord, Scope};
    let path = temp_path("samples");
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    let origin = w.origin_ns();
    let mut label = LabelPath::default();
    label.push(framescope_core::labels::intern(b"Frame"));
    label.push(framescope_core::labels::intern(b"Post"));
    let sample = |frame: u64, begin: u64, overwritten: bool| SampleRecord {
        frame,
        scope: Scope::Label,
        label,
        gpu_begin_ns: Some(begin),
        gpu_end_ns: Some(begin + 500),
        stats: Some(PipelineStats {
            fs_invocations: 7,
            ..PipelineStats::default()
        }),
        overwritten,
        ..SampleRecord::default()
    };
    // A sample of a frame that is never written (frame 0 below is skipped) must not leak
    // into a later frame's line.
    w.push_sample(sample(0, 1, false));
    for f in 1..4u64 {
        w.push_sample(sample(f, 1000 * f, false));
        w.push_sample(sample(f, 1000 * f + 1, f == 3));
        w.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            ..FrameRecord::default()
        });
    }
    w.finish();
    let lines = read_lines(&path);
    let c = check_structure(&lines);
    assert_eq!(c.frames.len(), 3);
    for (i, f) in c.frames.iter().enumerate() {
        let frame = i as u64 + 1;
        let s = f["samples"].as_array().expect("samples array");
        assert_eq!(s.len(), 2, "frame {frame}: {f}");
        assert_eq!(s[0]["label"], "Frame/Post");
        assert_eq!(s[0]["scope"], "label");
        assert_eq!(s[0]["gpu_begin_ns"], 1000 * frame);
        assert_eq!(s[0]["gpu_ns"], 500);
        assert_eq!(s[0]["stats"]["fs_invocations"], 7);
        let over = s[1]["overwritten"].as_bool().unwrap();
        assert_eq!(over, frame == 3);
        if over {
            assert!(
                s[1]["gpu_ns"].is_null() && s[1].get("stats").is_none(),
                "overwritten samples carry no numbers"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn frame_stats_are_written_when_measured_and_layer_drops_are_counted() {
    use framescope_core::sample::PipelineStats;
    let path = temp_path("framestats");
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    let origin = w.origin_ns();
    for f in 0..2u64 {
        w.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            stats: (f == 1).then(|| PipelineStats::from_array([1, 2, 3, 4, 5, 6, 7])),
            ..FrameRecord::default()
        });
    }
    w.add_dropped_samples(3);
    w.add_dropped_samples(0);
    w.finish();
    let c = check_structure(&read_lines(&path));
    assert!(c.frames[0].get("stats").is_none(), "{}", c.frames[0]);
    let st = &c.frames[1]["stats"];
    for (i, name) in PipelineStats::NAMES.iter().enumerate() {
        assert_eq!(st[name], i as u64 + 1, "{name}: {st}");
    }
    assert_eq!(c.summary.as_ref().unwrap()["dropped_samples"], 3);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_second_writer_on_the_same_path_gets_a_sibling_and_the_first_file_stays_intact() {
    let path = temp_path("twice");
    let first = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    let origin = first.origin_ns();
    for f in 0..5u64 {
        first.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            ..FrameRecord::default()
        });
    }
    wait_until("the first writer to write its frames", || {
        std::fs::read_to_string(&path).is_ok_and(|t| t.lines().count() >= 6)
    });
    let second = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    let origin2 = second.origin_ns();
    for f in 5..10u64 {
        first.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            ..FrameRecord::default()
        });
        second.push(FrameRecord {
            frame: f - 5,
            t_ns: origin2 + f * MS,
            ..FrameRecord::default()
        });
    }
    second.finish();
    first.finish();
    let c = check_structure(&read_lines(&path));
    let idx: Vec<u64> = c.frames.iter().map(|f| f["frame"].as_u64().unwrap()).collect();
    assert_eq!(idx, (0..10).collect::<Vec<u64>>());
    assert_eq!(c.summary.as_ref().unwrap()["frames"], 10);
    let sibling = framescope_core::dump::open::sibling(&path, 1);
    let lines = read_lines(&sibling);
    assert_eq!(lines[0]["dump_path"], sibling.display().to_string());
    let c = check_structure(&lines);
    assert_eq!(c.summary.as_ref().unwrap()["frames"], 5);
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&sibling).unwrap();
}

fn mkfifo(p: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Generous bound for calls that must not hang: far above FINISH_LIMIT, far below forever.
const HANG: Duration = Duration::from_secs(30);

/// Runs `w.finish()` on another thread and fails if it has not returned within [`HANG`], so
/// a hang is a failure rather than a test that never ends.
fn finish_within_hang_bound(w: &DumpWriter) {
    let (tx, rx) = std::sync::mpsc::channel();
    let w2 = w.clone();
    std::thread::spawn(move || {
        w2.finish();
        let _ = tx.send(());
    });
    assert!(rx.recv_timeout(HANG).is_ok(), "finish() still blocked after {HANG:?}");
}

#[test]
fn a_fifo_nobody_reads_is_refused_at_once() {
    let path = temp_path("fifo-noreader");
    mkfifo(&path);
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    finish_within_hang_bound(&w);
    assert!(!w.is_active());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_fifo_with_a_reader_receives_the_whole_dump() {
    use std::io::Read;
    let path = temp_path("fifo-reader");
    mkfifo(&path);
    let p2 = path.clone();
    // The reader opens first (blocking until the writer comes), then reads to EOF.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::fs::File::open(&p2).unwrap().read_to_string(&mut s).unwrap();
        s
    });
    // The writer's non-blocking open needs the reader to be there already.
    let w = loop {
        let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
        std::thread::sleep(Duration::from_millis(50));
        if w.is_active() {
            break w;
        }
    };
    let origin = w.origin_ns();
    for f in 0..3u64 {
        w.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            cpu_frame_ns: (f > 0).then_some(MS),
            ..FrameRecord::default()
        });
    }
    w.finish();
    let text = reader.join().unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let c = check_structure(&lines);
    assert_eq!(c.frames.len(), 3);
    assert_eq!(c.summary.as_ref().unwrap()["frames"], 3);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn finish_does_not_wait_forever_for_a_reader_that_stopped_reading() {
    use std::os::unix::fs::OpenOptionsExt;
    let path = temp_path("fifo-stalled");
    mkfifo(&path);
    // A reader that never reads: the pipe fills up (64 KiB on Linux) and the writer waits.
    let _reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header());
    let origin = w.origin_ns();
    for f in 0..1000u64 {
        w.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            ..FrameRecord::default()
        });
    }
    finish_within_hang_bound(&w);
    assert!(!w.is_active());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_symlink_at_the_path_is_refused_and_its_target_untouched() {
    let target = temp_path("link-target");
    std::fs::write(&target, "precious\n").unwrap();
    let link = temp_path("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let w = DumpWriter::start(DumpOptions::new(link.to_str().unwrap()), header());
    wait_until("the writer to give up", || !w.is_active());
    w.finish();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    std::fs::remove_file(&link).unwrap();
    std::fs::remove_file(&target).unwrap();
}

#[test]
fn a_non_utf8_path_is_written_as_given() {
    use std::os::unix::ffi::OsStringExt;
    let mut bytes = temp_path("bytes").into_os_string().into_vec();
    bytes.extend_from_slice(b"-\xff\xfe.jsonl");
    let path = std::path::PathBuf::from(std::ffi::OsString::from_vec(bytes));
    let w = DumpWriter::start(DumpOptions::new(path.clone()), header());
    w.finish();
    let c = check_structure(&read_lines(&path));
    assert_eq!(c.summary.as_ref().unwrap()["frames"], 0);
    std::fs::remove_file(&path).unwrap();
}

/// While the writer waits for the collector's catalogue before the header, it stops waiting
/// once the sample queue is half full: samples pushed meanwhile are written, not dropped, and
/// the header says why it has no counters.
#[test]
fn the_header_wait_for_counters_never_drops_samples() {
    use framescope_core::counters::CounterBoard;
    use framescope_core::sample::{SampleRecord, Scope};
    let path = temp_path("counters-wait");
    let mut opts = DumpOptions::new(path.to_str().unwrap());
    opts.sample_queue_capacity = 64;
    let mut header = Header::new(Api::Vulkan);
    // A collector that never starts.
    header.counter_board = Some(std::sync::Arc::new(CounterBoard::default()));
    let w = DumpWriter::start(opts, header);
    let t0 = w.origin_ns();
    for f in 0..4u64 {
        for _ in 0..32 {
            w.push_sample(SampleRecord {
                frame: f,
                scope: Scope::Draw,
                gpu_begin_ns: Some(1),
                gpu_end_ns: Some(2),
                ..SampleRecord::default()
            });
            // Slower than the writer's 10 ms wait steps, faster than its 3 s bound.
            std::thread::sleep(Duration::from_millis(2));
        }
        w.push(FrameRecord {
            frame: f,
            t_ns: t0 + f,
            ..FrameRecord::default()
        });
    }
    w.finish();
    let lines = read_lines(&path);
    let s = lines.last().unwrap();
    assert_eq!(s["dropped_samples"], 0, "{s}");
    let samples: usize = lines.iter().filter_map(|l| l["samples"].as_array()).map(Vec::len).sum();
    assert_eq!(samples, 128, "twice the queue's capacity, all written");
    let u = lines[0]["unavailable"].to_string();
    assert!(u.contains("not ready"), "{u}");
    std::fs::remove_file(&path).unwrap();
}

/// A scripted attributor: the values of every window are its midpoint in µs; samples are in
/// up to what the test sets.
struct Script {
    names: Vec<String>,
    until: std::sync::Arc<std::sync::atomic::AtomicU64>,
    t0: u64,
    series_taken: bool,
}

impl framescope_core::attribution::Attributor for Script {
    fn source(&self) -> &str {
        "pm"
    }
    fn counters(&self) -> &[String] {
        &self.names
    }
    fn min_span_ns(&self) -> u64 {
        4 * MS
    }
    fn poll(&mut self, _now_ns: u64) -> framescope_core::attribution::Arrival {
        framescope_core::attribution::Arrival::Until(self.until.load(std::sync::atomic::Ordering::SeqCst))
    }
    fn integrate(&mut self, b: u64, e: u64, out: &mut [f64]) -> f64 {
        out[0] = ((b + e) / 2 / 1000) as f64;
        let until = self.until.load(std::sync::atomic::Ordering::SeqCst);
        until.min(e).saturating_sub(b) as f64 / (e - b) as f64
    }
    fn forget_before(&mut self, _t_ns: u64) {}
    fn take_series(&mut self, out: &mut dyn FnMut(u64, u64, &[f64])) {
        if !self.series_taken {
            self.series_taken = true;
            out(self.t0 + 50 * MS, self.t0 + 51 * MS, &[42.0]);
            out(self.t0 + 51 * MS, self.t0 + 52 * MS, &[f64::NAN]);
        }
    }
}

/// With an attributing source, the writer holds each frame until the samples covering its GPU
/// span are in, then writes the source's counters over exactly that span (and a long pass's
/// own); a frame whose samples never come goes out after the bound with its window values and
/// the reason.
#[test]
fn attributed_frames_wait_for_their_samples_and_carry_values_over_their_gpu_span() {
    use framescope_core::counters::{Catalogue, CounterBoard, CounterWindow};
    use framescope_core::sample::{SampleRecord, Scope};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let path = temp_path("attributed");
    let board = Arc::new(CounterBoard::default());
    let desc = |name: &str, source: &str| CounterDesc {
        name: name.into(),
        unit: "%".into(),
        source: source.into(),
        scope: "device".into(),
    };
    board.set_catalogue(Catalogue {
        counters: vec![desc("gpu_util_pct", "nvml"), desc("pm_x", "pm")],
        source_of: vec![0, 1],
        sources: vec!["nvml".into(), "pm".into()],
    });
    let until = Arc::new(AtomicU64::new(0));
    let u = until.clone();
    let now = framescope_core::clock::monotonic_now_ns();
    // GPU times 5 s ahead: the writer's 1 s hold bound counts from a frame's GPU end, and a
    // loaded two-core machine once took longer than that between pushing frame 0 and checking
    // it. CPU times (`t_ns`) stay now, or the capture horizon would hold the frames instead.
    let t0 = now + 5_000 * MS;
    board.set_attributor(Box::new(move || {
        Some(Box::new(Script {
            names: vec!["pm_x".into()],
            until: u.clone(),
            t0,
            series_taken: false,
        }) as Box<dyn framescope_core::attribution::Attributor>)
    }));
    board.mark_started();
    let mut header = Header::new(Api::Vulkan);
    header.counter_board = Some(board);
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header);
    // Frames at or after the writer's start: one before it is outside the dump's window (a
    // loaded machine took over 10 ms between `now` and the start).
    let cpu0 = w.origin_ns().max(now);
    let frame = |f: u64, b: u64, e: u64| {
        let mut r = FrameRecord {
            frame: f,
            t_ns: cpu0 + e,
            cpu_frame_ns: Some(10 * MS),
            ..FrameRecord::default()
        };
        r.gpu.busy_ns = Some(e - b);
        r.gpu.span_ns = Some(e - b);
        r.gpu.begin_ns = Some(t0 + b);
        r.gpu.end_ns = Some(t0 + e);
        // The collector's window values, which attribution replaces.
        r.counters.set(1, 7.0);
        r.counter_windows[1] = CounterWindow {
            begin_ns: t0,
            end_ns: t0 + 1,
        };
        r
    };
    let pass = |f: u64, b: u64, e: u64| SampleRecord {
        frame: f,
        scope: Scope::RenderPass,
        gpu_begin_ns: Some(t0 + b),
        gpu_end_ns: Some(t0 + e),
        ..SampleRecord::default()
    };
    // Frame 0: a 6 ms pass (its own values) and a 1 ms one (too short for its own).
    w.push_sample(pass(0, 2 * MS, 8 * MS));
    w.push_sample(pass(0, 8 * MS, 9 * MS));
    w.push(frame(0, 2 * MS, 10 * MS));
    std::thread::sleep(Duration::from_millis(300));
    let frames = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"type\":\"frame\""))
            .count()
    };
    assert_eq!(frames(&path), 0, "held until its samples are in");
    until.store(t0 + 10 * MS, Ordering::SeqCst);
    wait_until("the frame", || frames(&path) == 1);
    // Frame 1: its samples never come.
    w.push(frame(1, 12 * MS, 20 * MS));
    w.finish();
    let lines = read_lines(&path);
    let c = check_structure(&lines);
    let f: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "frame").collect();
    assert_eq!(f.len(), 2);
    // The midpoint of [t0 + 2 ms, t0 + 10 ms) in µs.
    let mid = |b: u64, e: u64| ((t0 + b + t0 + e) / 2 / 1000) as f64;
    assert_eq!(f[0]["counters"]["pm_x"].as_f64(), Some(mid(2 * MS, 10 * MS)));
    assert_eq!(f[0]["counters"]["gpu_util_pct"], json!(null), "other sources untouched");
    assert_eq!(f[0]["attribution"]["pm"]["over"], "gpu_span");
    assert_eq!(f[0]["attribution"]["pm"]["covered"], 1.0);
    assert_eq!(f[0]["counter_windows"]["pm"]["begin_ns"], t0 + 2 * MS);
    assert_eq!(f[0]["counter_windows"]["pm"]["end_ns"], t0 + 10 * MS);
    let s = f[0]["samples"].as_array().unwrap();
    assert_eq!(s[0]["counters"]["pm_x"].as_f64(), Some(mid(2 * MS, 8 * MS)));
    assert!(s[1].get("counters").is_none(), "{}", s[1]);
    // At finish the writer waited its short bound, then wrote frame 1 with its window values.
    assert_eq!(f[1]["counters"]["pm_x"], 7.0);
    assert_eq!(f[1]["attribution"]["pm"]["over"], json!(null));
    let why = f[1]["attribution"]["pm"]["missing"].as_str().unwrap();
    assert!(why.contains("had not arrived"), "{why}");
    assert_eq!(c.summary.as_ref().unwrap()["frames"], 2);
    // The raw samples in one `series` line, NaN as null.
    let series: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "series").collect();
    assert_eq!(series.len(), 1);
    assert_eq!(series[0]["source"], "pm");
    assert_eq!(series[0]["begin_ns"], json!([t0 + 50 * MS, t0 + 51 * MS]));
    assert_eq!(series[0]["end_ns"], json!([t0 + 51 * MS, t0 + 52 * MS]));
    assert_eq!(series[0]["values"]["pm_x"], json!([42, null]));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn driver_counters_go_into_samples_frames_and_the_summary_with_their_meanings() {
    use framescope_core::driver_values::{DriverGroup, DriverValues, Meaning};
    use framescope_core::sample::{SampleRecord, Scope};
    let path = temp_path("driver");
    let mut h = header();
    // As RADV lists them (its cache hit ratio in 0..1 with unit bytes).
    h.driver_groups = vec![DriverGroup {
        family: 0,
        scope: "render_pass",
        names: vec!["L2 cache hit ratio".into(), "VRAM read size".into()],
        units: vec!["bytes", "bytes"],
        storages: vec!["float64", "uint64"],
        meanings: vec![
            Some(Meaning {
                common: Some("l2_hit_pct".into()),
                vendor_db: "amd-gpa".into(),
                vendor: Some("L2CacheHit".into()),
                scale: 100.0,
            }),
            Some(Meaning {
                common: Some("mem_read_bytes".into()),
                vendor_db: "amd-gpa".into(),
                vendor: Some("FetchSize".into()),
                scale: 1.0,
            }),
        ],
    }];
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), h);
    let origin = w.origin_ns();
    let pass = |frame: u64, ns: u64, ratio: f64, bytes: f64, overwritten: bool| SampleRecord {
        frame,
        scope: Scope::RenderPass,
        gpu_begin_ns: Some(1000),
        gpu_end_ns: Some(1000 + ns),
        overwritten,
        driver: Some(DriverValues::new(0, frame == 2, &[ratio, bytes])),
        ..SampleRecord::default()
    };
    for f in 1..3u64 {
        // A pass of 100 ns at 0.5 and one of 300 ns at 0.9; 1000 + 3000 bytes.
        w.push_sample(pass(f, 100, 0.5, 1000.0, false));
        w.push_sample(pass(f, 300, 0.9, 3000.0, false));
        w.push_sample(pass(f, 300, 0.1, 1e9, true));
        w.push(FrameRecord {
            frame: f,
            t_ns: origin + f * MS,
            ..FrameRecord::default()
        });
    }
    w.finish();
    let lines = read_lines(&path);
    let c = check_structure(&lines);
    let header = &lines[0];
    let groups = &header["performance_counter_groups"];
    assert_eq!(groups[0]["counters"][0], "L2 cache hit ratio");
    assert_eq!(groups[0]["meanings"][0]["vendor"], "L2CacheHit");
    assert_eq!(c.frames.len(), 2);
    for f in &c.frames {
        let frame = f["frame"].as_u64().unwrap();
        let s = f["samples"].as_array().unwrap();
        assert_eq!(s[0]["driver_counters"]["counters"]["VRAM read size"], 1000.0);
        assert_eq!(s[0]["driver_counters"]["reused"], frame == 2);
        assert!(
            s[2]["driver_counters"]["counters"]["VRAM read size"].is_null(),
            "an overwritten sample's values are not given: {}",
            s[2]
        );
        let d = &f["driver_counters"].as_array().unwrap()[0];
        assert_eq!(d["group"], 0);
        assert_eq!(
            d["samples"], 2,
            "the overwritten sample's values are rewritten ones: {d}"
        );
        assert_eq!(d["reused"], if frame == 2 { 2 } else { 0 });
        // Bytes add up; the ratio is weighted by GPU time: (0.5·100 + 0.9·300) / 400 = 0.8.
        assert_eq!(d["counters"]["VRAM read size"], 4000.0, "{d}");
        let ratio = d["counters"]["L2 cache hit ratio"].as_f64().unwrap();
        assert!((ratio - 0.8).abs() < 1e-12, "{d}");
        assert!((d["common"]["l2_hit_pct"].as_f64().unwrap() - 80.0).abs() < 1e-9, "{d}");
        assert_eq!(d["common"]["mem_read_bytes"], 4000.0);
    }
    let sc = &c.summary.as_ref().unwrap()["counters"];
    assert_eq!(sc["driver: VRAM read size"]["mean"], 4000.0, "{sc}");
    assert_eq!(sc["driver: VRAM read size"]["frames"], 2);
    std::fs::remove_file(&path).unwrap();
}
