//! The frame timeline's CPU side, with known answers: the fault layer below framescope makes
//! every `vkWaitForFences` and image acquire of the test app sleep a known time, the frame
//! limiter holds frames to a known period, and the GL test app calls `glFinish` before every
//! swap. Each frame must carry exactly those waits under their kinds (medians within 10 % of
//! the known time: a sleep overshoots by a scheduler tick, and the app's own short waits add
//! to it), its time in the present call, its start at the previous present's return, and
//! busy + waits must add up to the frame's time exactly.

use framescope_tests::dump::median;
use framescope_tests::{dump, test_layers, validation, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);
const MS: u64 = 1_000_000;
/// A small window: the app's own work stays far below the known waits.
const WINDOW: [&str; 4] = ["--width", "160", "--height", "120"];

fn wait(f: &Value, kind: &str) -> u64 {
    f["cpu_wait_by_kind_ns"][kind]
        .as_u64()
        .unwrap_or_else(|| panic!("frame {} has no {kind} wait: {f}", f["frame"]))
}

/// What holds for every frame after the first: its start is the previous frame's present
/// return, and its busy time, waits and time in present split its time exactly.
fn check_sums(frames: &[Value], what: &str) {
    assert!(frames.len() >= 3, "{what}: {} frames", frames.len());
    assert!(frames[0]["cpu_start_ns"].is_null(), "{what}: frame 0 has a start");
    for pair in frames.windows(2) {
        let (prev, f) = (&pair[0], &pair[1]);
        let u = |v: &Value, k: &str| {
            v[k].as_u64()
                .unwrap_or_else(|| panic!("{what}: frame {} has no {k}: {v}", v["frame"]))
        };
        let start = u(f, "cpu_start_ns");
        assert_eq!(
            start,
            u(prev, "t_ns") + u(prev, "present_call_ns"),
            "{what}: frame {} does not start at the previous present's return",
            f["frame"]
        );
        let waits: u64 = f["cpu_wait_by_kind_ns"]
            .as_object()
            .expect("waits by kind")
            .values()
            .map(|v| v.as_u64().expect("a wait in ns"))
            .sum();
        assert_eq!(
            u(f, "cpu_busy_ns") + waits,
            u(f, "t_ns") - start,
            "{what}: frame {}: busy + waits is not the time from its start to its present",
            f["frame"]
        );
        assert_eq!(
            u(f, "cpu_wait_ns"),
            waits + u(f, "present_call_ns"),
            "{what}: frame {}",
            f["frame"]
        );
    }
}

/// `known` ns within 10 % (above: a sleep never returns early).
fn assert_near(measured: u64, known: u64, what: &str) {
    assert!(
        measured >= known && measured <= known + known / 10,
        "{what}: median {:.3} ms, known {:.3} ms",
        measured as f64 / 1e6,
        known as f64 / 1e6
    );
}

#[test]
fn known_fence_and_acquire_waits_are_split_out_of_the_frame() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("timeline-waits");
    let path = sb.path("dump.jsonl");
    sb.with_validation()
        .display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    test_layers::enable_faults(&mut sb, "slow_fence_ms=30,slow_acquire_ms=20");
    let app = a.testapp.display().to_string();
    let mut args = vec!["--frames", "30"];
    args.extend(WINDOW);
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("the test app", &out.combined());
    let d = dump::read(&path);
    check_sums(&d.frames, "slow fences and acquires");
    // Frame 0 waited before the first present; each later one once for each.
    let steady = &d.frames[1..];
    let fence = median(steady.iter().map(|f| wait(f, "fence")).collect());
    let acquire = median(steady.iter().map(|f| wait(f, "acquire")).collect());
    assert_near(fence, 30 * MS, "fence waits");
    assert_near(acquire, 20 * MS, "acquire waits");
    for f in steady {
        assert_eq!(wait(f, "fps_limit"), 0, "no limit, no limiter wait: {f}");
        assert_eq!(wait(f, "gl_sync"), 0, "a Vulkan app: {f}");
        // The known 50 ms of waiting is not busy time.
        let busy = f["cpu_busy_ns"].as_u64().unwrap();
        let span = f["t_ns"].as_u64().unwrap() - f["cpu_start_ns"].as_u64().unwrap();
        assert!(span >= 50 * MS && busy <= span - 50 * MS, "{f}");
    }
}

#[test]
fn the_frame_limiters_hold_is_a_wait_of_its_own() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("timeline-fps-limit");
    let path = sb.path("dump.jsonl");
    sb.with_validation()
        .display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "fps_limit=20");
    let app = a.testapp.display().to_string();
    let mut args = vec!["--frames", "24"];
    args.extend(WINDOW);
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("the test app", &out.combined());
    let d = dump::read(&path);
    check_sums(&d.frames, "fps_limit=20");
    // The limiter's first frame sets the pace; from the third on each frame is held to 50 ms.
    let steady = &d.frames[2..];
    let held = median(steady.iter().map(|f| wait(f, "fps_limit")).collect());
    // What the limiter holds plus the rest of the frame is its period.
    let period: Vec<u64> = steady
        .iter()
        .map(|f| f["cpu_frame_ns"].as_u64().expect("a frame time"))
        .collect();
    // The limiter's deadlines are exact (it spins the last millisecond): within 10 % each way.
    let period = median(period);
    assert!(
        period.abs_diff(50 * MS) <= 5 * MS,
        "frame times under fps_limit=20: median {:.3} ms",
        period as f64 / 1e6
    );
    assert!(
        held >= 25 * MS,
        "the limiter held frames a median {:.3} ms of a 50 ms period",
        held as f64 / 1e6
    );
}

#[test]
fn gl_finish_and_the_swap_are_timed_on_gl() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.glapp.display().to_string();
    let run = |name: &str, finish: bool| {
        let mut sb = Sandbox::new(name);
        let path = sb.path("dump.jsonl");
        sb.display(&x).set("FRAMESCOPE_DUMP", path.display().to_string());
        let mut args = vec!["--frames", "20"];
        args.extend(WINDOW);
        if finish {
            args.push("--finish");
        }
        let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
        assert_eq!(out.code(), Some(0), "{}", out.describe());
        dump::read(&path)
    };
    let with = run("timeline-gl-finish", true);
    check_sums(&with.frames, "GL with glFinish");
    for f in &with.frames[1..] {
        assert!(wait(f, "gl_sync") > 0, "glFinish before every swap: {f}");
        assert!(f["present_call_ns"].as_u64().unwrap() > 0, "{f}");
    }
    let without = run("timeline-gl", false);
    check_sums(&without.frames, "GL");
    for f in &without.frames[1..] {
        assert_eq!(wait(f, "gl_sync"), 0, "no glFinish: {f}");
    }
}

fn created(f: &Value, kind: &str) -> (u64, u64) {
    let c = &f["creation_by_kind"][kind];
    let get = |k: &str| {
        c[k].as_u64()
            .unwrap_or_else(|| panic!("frame {} has no {kind} {k}: {f}", f["frame"]))
    };
    (get("calls"), get("ns"))
}

/// The test app with a pipeline created every 15th frame (the stutter rule judges a frame
/// once 10 frame times came before it), once as the driver makes it and once
/// with the fault layer holding every pipeline creation 200 ms: those frames, and only those,
/// carry one pipeline and two shader modules, and the driver's creation feedback of that one
/// pipeline; the slow run's pipelines took 200 ms more (within 10 %), none of it in the driver's
/// own account; its frames are stutters explained by the pipeline, first among their causes; and
/// `report` counts them.
#[test]
fn a_pipeline_created_mid_run_is_the_named_cause_of_its_stutter() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    let run = |name: &str, fault: &str| {
        let mut sb = Sandbox::new(name);
        let path = sb.path("dump.jsonl");
        sb.with_validation()
            .display(&x)
            .set("FRAMESCOPE_DUMP", path.display().to_string());
        test_layers::enable_faults(&mut sb, fault);
        let mut args = vec!["--frames", "50", "--pipeline-every", "15"];
        args.extend(WINDOW);
        let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
        assert_eq!(out.code(), Some(0), "{}", out.describe());
        validation::assert_clean("the test app", &out.combined());
        (dump::read(&path), path, sb)
    };
    let (base, _, _base_sb) = run("timeline-pipeline", "");
    let (slow, slow_path, _slow_sb) = run("timeline-pipeline-slow", "slow_pipeline_ms=200");
    let known = [15u64, 30, 45];
    let pipeline_ns = |d: &dump::Dump| {
        let mut ns = Vec::new();
        for f in &d.frames[1..] {
            let n = f["frame"].as_u64().unwrap();
            let (calls, t) = created(f, "pipeline");
            let (shaders, _) = created(f, "shader");
            let feedback = f["pipeline_feedback"].as_u64().unwrap();
            let driver_ns = f["pipeline_driver_ns"].as_u64().unwrap();
            if known.contains(&n) {
                assert_eq!((calls, shaders), (1, 2), "frame {n} made a pipeline: {f}");
                // Lavapipe reports creation feedback (core in 1.3, which the test app asks
                // for): one valid feedback per pipeline, its duration inside the call's.
                assert_eq!(feedback, calls, "frame {n}: {f}");
                assert!(driver_ns > 0 && driver_ns <= t, "frame {n}: {f}");
                ns.push(t);
            } else {
                assert_eq!((calls, shaders), (0, 0), "frame {n} made none: {f}");
                assert_eq!((feedback, driver_ns), (0, 0), "frame {n}: {f}");
            }
            // The test app passes no pipeline cache.
            assert_eq!(f["pipeline_cache_hits"], 0, "frame {n}: {f}");
        }
        assert_eq!(ns.len(), known.len());
        median(ns)
    };
    let added = pipeline_ns(&slow).saturating_sub(pipeline_ns(&base));
    // The fault layer's hold is below framescope and above the driver: in the call's wall time,
    // not in the driver's own account.
    for f in slow
        .frames
        .iter()
        .filter(|f| known.contains(&f["frame"].as_u64().unwrap()))
    {
        let (_, wall) = created(f, "pipeline");
        let driver = f["pipeline_driver_ns"].as_u64().unwrap();
        assert!(wall.saturating_sub(driver) >= 200 * MS, "{f}");
    }
    assert!(
        added.abs_diff(200 * MS) <= 20 * MS,
        "the slow pipelines took {:.3} ms more, known 200 ms",
        added as f64 / 1e6
    );
    for f in slow
        .frames
        .iter()
        .filter(|f| known.contains(&f["frame"].as_u64().unwrap()))
    {
        assert_eq!(f["stutter"], true, "{f}");
        assert_eq!(f["stutter_explained"], true, "{f}");
        assert_eq!(f["stutter_causes"][0]["cause"], "pipeline", "{f}");
        assert_eq!(f["stutter_causes"][0]["calls"], 1, "{f}");
    }
    let report = std::process::Command::new(&a.framescope)
        .args(["report", "--json"])
        .arg(&slow_path)
        .output()
        .expect("run framescope report");
    assert!(report.status.success(), "{report:?}");
    let j: Value = serde_json::from_slice(&report.stdout).expect("report --json is JSON");
    let t = &j["timeline"];
    assert!(t["stutters"].as_u64().unwrap() >= 3, "{t}");
    let pipeline = t["stutter_causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "pipeline")
        .unwrap_or_else(|| panic!("no pipeline cause in {t}"));
    assert_eq!(pipeline["stutters"], 3, "{t}");
}

/// The GL test app links its program anew at frame 15 and draws with it: that frame, and no
/// other after the first, carries two shader compiles and one link, and the first draw with
/// the new program as its one `first_use`. With Mesa's shader cache off, llvmpipe compiles the
/// program's variant at that draw (measured: link 0.6 ms, first draw 23 ms), so the first use
/// costs far more than the link and than a steady draw, and the frame, when it is a stutter,
/// names it among its causes.
#[test]
fn a_gl_program_linked_mid_run_is_counted_in_its_frame() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("timeline-gl-program");
    let path = sb.path("dump.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        // Mesa's cache would hand the second link of the same sources its compiled variant.
        .set("MESA_SHADER_CACHE_DISABLE", "true");
    let app = a.glapp.display().to_string();
    let mut args = vec!["--frames", "30", "--new-program-at", "15"];
    args.extend(WINDOW);
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let d = dump::read(&path);
    check_sums(&d.frames, "GL with a new program");
    for f in &d.frames[1..] {
        let made = (
            created(f, "shader").0,
            created(f, "program").0,
            created(f, "first_use").0,
        );
        let want = if f["frame"] == 15 { (2, 1, 1) } else { (0, 0, 0) };
        assert_eq!(made, want, "{f}");
    }
    // The first frame carries the app's start-up program and its first draw.
    assert_eq!(created(&d.frames[0], "program").0, 1, "{}", d.frames[0]);
    assert_eq!(created(&d.frames[0], "first_use").0, 1, "{}", d.frames[0]);
    // A steady draw's mean cost: the busy time of the frames without creations over their draws.
    let per_draw = median(
        d.frames[1..]
            .iter()
            .filter(|f| f["frame"] != 15)
            .map(|f| f["cpu_busy_ns"].as_u64().unwrap() / f["draws"].as_u64().unwrap().max(1))
            .collect(),
    );
    let f = d.frames.iter().find(|f| f["frame"] == 15).expect("frame 15");
    let (_, first_use) = created(f, "first_use");
    let (_, link) = created(f, "program");
    assert!(
        first_use > 10 * per_draw && first_use > link,
        "the first draw with the new program took {:.3} ms; a steady draw {:.3} ms, the link {:.3} ms: {f}",
        first_use as f64 / 1e6,
        per_draw as f64 / 1e6,
        link as f64 / 1e6
    );
    assert!(f["cpu_busy_ns"].as_u64().unwrap() >= first_use, "{f}");
    if f["stutter"] == true {
        let causes = f["stutter_causes"].as_array().expect("a stutter's causes");
        let c = causes
            .iter()
            .find(|c| c["cause"] == "first_use")
            .unwrap_or_else(|| panic!("first_use is not among the causes: {f}"));
        assert_eq!(
            (c["calls"].as_u64(), c["ns"].as_u64()),
            (Some(1), Some(first_use)),
            "{f}"
        );
    }
}
