//! Issue 3: per-frame records with GPU time, taken without stalls, written by the dump thread;
//! configuration errors; dumps that survive a kill.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, validation, Artifacts, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);

#[test]
fn vkcube_500_frames_give_a_complete_valid_dump() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("dump500");
    let path = sb.path("vkcube.jsonl");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "500"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("vkcube dump", &out.combined());
    let d = dump::read(&path);
    assert_eq!(d.header["api"], "vulkan");
    assert!(d.header["device"]["name"].as_str().is_some_and(|n| !n.is_empty()));
    assert_eq!(
        d.u64s("frame"),
        (0..500).collect::<Vec<u64>>(),
        "frames 0..499 without gaps"
    );
    // Defaults do not intercept draws to count them (`command_counts`), and say so.
    assert_eq!(d.header["command_counts"], false, "{}", d.header);
    // What was not counted is written as unknown (null), never as 0.
    for key in [
        "draws",
        "dispatches",
        "pipeline_binds",
        "barriers",
        "trace_rays",
        "draws_by_kind",
    ] {
        assert!(d.frames.iter().all(|f| f[key].is_null()), "{key} not null by default");
    }
    for f in &d.frames {
        if f["submits"].as_u64().unwrap() > 0 {
            assert!(
                f["gpu_busy_ns"].as_u64().is_some_and(|b| b > 0),
                "frame with draws but no GPU time: {f}"
            );
            assert!(
                f["gpu_span_ns"].as_u64() >= f["gpu_busy_ns"].as_u64(),
                "span < busy: {f}"
            );
        }
    }
    let s = d.summary.as_ref().expect("summary record");
    assert_eq!(s["frames"], 500);
    // fps mean over the frame records: frames with a frame time / their sum.
    let times: Vec<u64> = d.frames.iter().filter_map(|f| f["cpu_frame_ns"].as_u64()).collect();
    let fps = times.len() as f64 / (times.iter().sum::<u64>() as f64 / 1e9);
    let reported = s["fps_mean"].as_f64().unwrap();
    assert!(
        (reported - fps).abs() / fps < 1e-6,
        "summary fps {reported} vs frames {fps}"
    );
}

#[test]
fn present_to_present_time_agrees_with_the_app_within_one_percent() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("cpuframe");
    let path = sb.path("app.jsonl");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_CONFIG", "command_counts=1")
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let app = a.testapp.display().to_string();
    let out = sb.run_under_framescope(&a, &app, &["--frames", "300", "--draws", "50"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let line = out.lines_with("testapp-result ").pop().expect("result line");
    let r: serde_json::Value = serde_json::from_str(line.trim_start_matches("testapp-result ")).unwrap();
    let app_mean = r["mean_present_interval_ns"].as_f64().unwrap();
    let d = dump::read(&path);
    let times: Vec<u64> = d.frames.iter().filter_map(|f| f["cpu_frame_ns"].as_u64()).collect();
    assert_eq!(times.len(), 299);
    let ours = times.iter().sum::<u64>() as f64 / times.len() as f64;
    assert!(
        (ours - app_mean).abs() / app_mean < 0.01,
        "dump mean {ours} ns vs app {app_mean} ns"
    );
    assert!(
        d.frames.iter().all(|f| f["draws"] == 50),
        "every frame counts the app's 50 draws"
    );
}

#[test]
fn reused_and_resubmitted_command_buffers_get_gpu_time_every_frame() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let app = a.testapp.display().to_string();
    for (tag, args, draws, submits) in [
        ("reuse", &["--frames", "120", "--reuse"][..], 10, 1),
        (
            "simultaneous",
            &["--frames", "120", "--reuse", "--simultaneous", "--resubmit-twice"][..],
            20,
            2,
        ),
        (
            "threads",
            &[
                "--frames",
                "120",
                "--threads",
                "4",
                "--secondary",
                "--scene",
                "regions",
                "--submit2",
            ][..],
            111,
            1,
        ),
    ] {
        let mut sb = Sandbox::new(tag);
        let path = sb.path("app.jsonl");
        sb.display(&x)
            .with_validation()
            .set("FRAMESCOPE_CONFIG", "command_counts=1")
            .set("FRAMESCOPE_DUMP", path.display().to_string());
        let out = sb.run_under_framescope(&a, &app, args, LIMIT);
        assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
        validation::assert_clean(tag, &out.combined());
        let d = dump::read(&path);
        assert_eq!(d.frames.len(), 120, "{tag}");
        for f in &d.frames {
            assert!(
                f["gpu_busy_ns"].as_u64().is_some_and(|b| b > 0),
                "{tag}: frame without GPU time: {f}"
            );
            assert_eq!(f["draws"], draws, "{tag}: {f}");
            assert_eq!(f["submits"], submits, "{tag}: {f}");
        }
    }
}

#[test]
fn kill_9_leaves_a_dump_whose_every_whole_line_parses_and_report_recomputes() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("kill9");
    let path = sb.path("killed.jsonl");
    sb.display(&x).set("FRAMESCOPE_DUMP", path.display().to_string());
    let app = a.testapp.display().to_string();
    // The shell kills the app with SIGKILL once the dump has frames in it.
    let script = format!(
        "{fs} run -- {app} --frames 1000000 & pid=$!; for i in $(seq 1 200); do \
         [ -f {p} ] && [ $(grep -c '\"type\":\"frame\"' {p}) -gt 20 ] && break; sleep 0.05; done; \
         kill -9 $pid; wait $pid; echo killed=$?",
        fs = a.framescope.display(),
        p = path.display()
    );
    let out = sb.run(std::path::Path::new("/bin/sh"), &["-c", &script], LIMIT);
    assert!(out.stdout.contains("killed=137"), "{}", out.describe());
    // The kill may land inside the writer's write(2) of a batch: Linux ends a write early
    // when a fatal signal is pending, so the last line can be cut (docs/dump-schema.md,
    // "Crash safety"; seen once in a fresh-clone run). Every line before it must parse.
    let d = dump::read_killed(&path);
    assert!(d.summary.is_none(), "a killed process cannot have written the summary");
    assert!(d.frames.len() > 20, "{} frames", d.frames.len());
    let rep = sb.run(&a.framescope, &["report", "--json", path.to_str().unwrap()], LIMIT);
    assert_eq!(rep.code(), Some(0), "{}", rep.describe());
    let s: serde_json::Value = serde_json::from_str(&rep.stdout).expect("report --json prints JSON");
    assert_eq!(s["frames"].as_u64(), Some(d.frames.len() as u64), "{}", rep.stdout);
    let cut = !std::fs::read(&path).unwrap().ends_with(b"\n");
    assert_eq!(
        rep.stderr.contains("the last line was truncated"),
        cut,
        "report names a cut last line exactly when there is one: {}",
        rep.describe()
    );
}

#[test]
fn bad_config_prints_both_errors_and_the_app_runs_to_completion() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("badconfig");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_CONFIG", "bogus=1,dump_start=abc");
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "50"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let errs = out.lines_with("framescope: ");
    let bogus: Vec<_> = errs.iter().filter(|l| l.contains("'bogus'")).collect();
    let start: Vec<_> = errs
        .iter()
        .filter(|l| l.contains("dump_start") && l.contains("'abc'"))
        .collect();
    assert_eq!(bogus.len(), 1, "{}", out.describe());
    assert!(
        bogus[0].contains("valid keys") && bogus[0].contains("dump_duration"),
        "{}",
        bogus[0]
    );
    assert_eq!(start.len(), 1, "{}", out.describe());
    assert!(out.stderr.contains("50 presents"), "{}", out.describe());
}

#[test]
fn an_unwritable_dump_path_is_one_error_line_and_the_app_runs_on() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("unwritable");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", "/nonexistent-dir/d.jsonl");
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "50"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_eq!(
        out.lines_with("framescope: cannot write dump").len(),
        1,
        "{}",
        out.describe()
    );
    assert!(out.stderr.contains("50 presents"), "{}", out.describe());
}

#[test]
fn offscreen_app_gets_frames_through_the_emulated_frame_boundary_extension() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("boundary");
    let path = sb.path("headless.jsonl");
    sb.with_validation()
        .set("FRAMESCOPE_CONFIG", "command_counts=1")
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let app = a.testapp.display().to_string();
    let args = ["--headless", "--frame-boundary", "--frames", "50", "--draws", "20"];
    // Without framescope the driver (lavapipe) does not offer the extension at all.
    let bare = sb.run(&a.testapp, &args, LIMIT);
    assert_ne!(
        bare.code(),
        Some(0),
        "lavapipe gained VK_EXT_frame_boundary; this test needs a driver without it"
    );
    assert!(
        bare.stderr.contains("VK_EXT_frame_boundary is not advertised"),
        "{}",
        bare.describe()
    );
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("frame boundary", &out.combined());
    let d = dump::read(&path);
    assert_eq!(d.u64s("frame"), (0..50).collect::<Vec<u64>>());
    for f in &d.frames {
        assert_eq!(f["end"], "frame_boundary", "{f}");
        assert_eq!(f["draws"], 20, "{f}");
        assert!(f["gpu_busy_ns"].as_u64().is_some_and(|b| b > 0), "{f}");
    }
}

/// `gpu_timing=0` (the Mesa overlay's key, off by default there): no timing queries set up,
/// frames come out at once with no GPU time, reason `disabled`, and no samples, though
/// `samples` asks for them; the HUD still draws (validation on).
#[test]
fn gpu_timing_off_gives_frames_without_gpu_time_or_samples() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    const SET_UP: &str = "GPU timing on a queue of family";
    // The control: the same run with GPU timing sets it up, and says so at log=debug.
    let mut on = Sandbox::new("gputimingon");
    on.display(&x).set("FRAMESCOPE_CONFIG", "log=debug");
    let out = on.run_under_framescope(&a, "vkcube", &["--c", "20"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.combined().contains(SET_UP), "{}", out.describe());

    let mut sb = Sandbox::new("gputimingoff");
    let path = sb.path("vkcube.jsonl");
    sb.display(&x)
        .with_validation()
        .set(
            "FRAMESCOPE_CONFIG",
            "gpu_timing=0,samples=draw,command_counts=1,log=debug",
        )
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "120"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("vkcube gpu_timing=0", &out.combined());
    assert!(
        !out.combined().contains(SET_UP),
        "timing set up anyway: {}",
        out.describe()
    );
    let d = dump::read(&path);
    assert_eq!(d.header["config"]["gpu_timing"], false);
    assert_eq!(d.u64s("frame"), (0..120).collect::<Vec<u64>>(), "every frame, in order");
    for f in &d.frames {
        assert!(
            f["draws"].as_u64().is_some_and(|n| n > 0),
            "vkcube draws every frame: {f}"
        );
        assert!(f["gpu_busy_ns"].is_null(), "GPU time without GPU timing: {f}");
        assert_eq!(f["gpu_missing"], "disabled", "{f}");
        assert_eq!(f["queues_without_timestamps"], 0, "{f}");
        assert!(
            f["samples"].as_array().is_none_or(|s| s.is_empty()),
            "samples without GPU timing: {f}"
        );
    }
}

/// Counting draws means intercepting each (about 12 ns a draw on the H100), so by default the
/// app's `vkCmdDraw` is the next layer's own and framescope is not on the draw path at all;
/// `command_counts=1` puts it there and the frames count the draws.
#[test]
fn draws_are_intercepted_only_when_counted() {
    let a = Artifacts::get();
    let ours = a.vk_layer.file_name().unwrap().to_string_lossy().into_owned();
    let app = a.testapp.display().to_string();
    for (tag, config, intercepted) in [("draws-passed", "", false), ("draws-counted", "command_counts=1", true)] {
        let mut sb = Sandbox::new(tag);
        let path = sb.path("app.jsonl");
        sb.with_validation()
            .set("FRAMESCOPE_CONFIG", config)
            .set("FRAMESCOPE_DUMP", path.display().to_string());
        let out = sb.run_under_framescope(&a, &app, &["--headless", "--frames", "20", "--draws", "30"], LIMIT);
        assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
        validation::assert_clean(tag, &out.combined());
        let line = out.lines_with("testapp-result ").pop().expect("result line");
        let r: serde_json::Value = serde_json::from_str(line.trim_start_matches("testapp-result ")).unwrap();
        let owner = r["cmd_draw_owner"].as_str().expect("cmd_draw_owner");
        assert_eq!(
            owner == ours,
            intercepted,
            "{tag}: vkCmdDraw is {owner}'s (ours: {ours})"
        );
        let d = dump::read(&path);
        assert_eq!(d.header["command_counts"], intercepted, "{tag}");
        let draws = if intercepted {
            30.into()
        } else {
            serde_json::Value::Null
        };
        assert!(
            d.frames.iter().all(|f| f["draws"] == draws),
            "{tag}: draws {:?}",
            d.u64s("draws")
        );
        // Render passes are counted either way: their hooks take the pass samples.
        assert!(d.frames.iter().all(|f| f["render_passes"] == 1), "{tag}");
    }
}

/// `framescope run` inside another: the app loads framescope once and writes the inner run's
/// dump only, and the inner run says so in one line instead of the outer dump going missing
/// without a word.
#[test]
fn a_nested_run_says_which_dump_the_app_writes() {
    let a = Artifacts::get();
    let sb = Sandbox::new("nested-run");
    let (outer, inner) = (sb.path("outer.jsonl"), sb.path("inner.jsonl"));
    let (outer_s, inner_s) = (outer.display().to_string(), inner.display().to_string());
    let fs = a.framescope.display().to_string();
    let app = a.testapp.display().to_string();
    let args = [
        "run",
        "--dump",
        &outer_s,
        "--",
        &fs,
        "run",
        "--dump",
        &inner_s,
        "--",
        &app,
        "--headless",
        "--frame-boundary",
        "--frames",
        "5",
    ];
    let out = sb.run(&a.framescope, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let lines = out.lines_with("framescope run: inside another framescope run");
    assert_eq!(lines.len(), 1, "{}", out.describe());
    assert!(
        lines[0].contains(&format!(
            "writes its dump to '{inner_s}' and not to the outer run's '{outer_s}'"
        )),
        "{}",
        lines[0]
    );
    assert!(inner.is_file() && !outer.exists(), "{}", out.describe());
    // Not nested: no such line.
    let single = sb.run(&a.framescope, &args[5..], LIMIT);
    assert_eq!(single.code(), Some(0), "{}", single.describe());
    assert!(!single.stderr.contains("inside another"), "{}", single.describe());
}

/// How `framescope run` ends under `signal` sent by `target` (`run`: to `framescope run`, as
/// `timeout` and `kill` do; `app`: to the app itself), after the dump has frames: the shell's
/// `$?` and the dump's path. SIGINT is reset to its default first: a shell starts background
/// jobs with it ignored, and a test runner may too.
fn ended_by_signal(sb: &Sandbox, a: &Artifacts, signal: &str, target: &str, dump: &std::path::Path) -> String {
    let app = a.testapp.display().to_string();
    let victim = match target {
        "run" => "$pid",
        _ => "$(cat /proc/$pid/task/$pid/children)",
    };
    let script = format!(
        "python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
         {fs} run -- {app} --frames 1000000 --width 160 --height 120 & pid=$!; for i in $(seq 1 400); do \
         [ -f {p} ] && [ $(grep -c '\"type\":\"frame\"' {p}) -gt 20 ] && break; sleep 0.05; done; \
         kill -{signal} {victim}; wait $pid; echo status=$?",
        fs = a.framescope.display(),
        p = dump.display()
    );
    let out = sb.run(std::path::Path::new("/bin/sh"), &["-c", &script], LIMIT);
    out.describe()
}

/// Ctrl+C, SIGTERM or a `kill -9` of the app: `framescope run` stays the app's parent, ends as
/// the app did (the shell sees 128 + the signal, as bare), and completes the dump the app left
/// without its summary: every frame line whole, a summary recomputed from them saying how the
/// app ended, which `report` then takes as the dump's own.
#[test]
fn a_signal_that_ends_the_app_leaves_its_dump_completed_with_a_summary() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    for (signal, target, status, name) in [
        ("INT", "run", 130, "SIGINT"),
        ("TERM", "run", 143, "SIGTERM"),
        ("KILL", "app", 137, "SIGKILL"),
    ] {
        let tag = format!("signal-{signal}-{target}");
        let mut sb = Sandbox::new(&tag);
        let path = sb.path("d.jsonl");
        sb.display(&x).set("FRAMESCOPE_DUMP", path.display().to_string());
        let out = ended_by_signal(&sb, &a, signal, target, &path);
        assert!(out.contains(&format!("status={status}")), "{tag}: {out}");
        assert!(
            out.contains(&format!("framescope run: the app ended (killed by {name}")),
            "{tag}: no line about the completed dump: {out}"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let summary: serde_json::Value = serde_json::from_str(lines[lines.len() - 1]).expect("a summary line");
        assert_eq!(summary["type"], "summary", "{tag}");
        assert_eq!(summary["produced_by"], "framescope run", "{tag}");
        assert!(summary["ended_by"].as_str().unwrap().contains(name), "{tag}: {summary}");
        // The kill may cut the writer's last write: that fragment, and only it, is no record.
        let frames = lines
            .iter()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["type"] == "frame"))
            .count();
        let broken = lines
            .iter()
            .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
            .count();
        assert!(broken <= 1, "{tag}: {broken} broken lines");
        assert!(frames > 20, "{tag}: {frames} frames");
        assert_eq!(summary["frames"].as_u64(), Some(frames as u64), "{tag}");
        let rep = sb.run(&a.framescope, &["report", path.to_str().unwrap()], LIMIT);
        assert!(
            rep.combined().contains("summary written by the dump framescope run"),
            "{tag}: report does not take the completed summary: {}",
            rep.describe()
        );
    }
}
