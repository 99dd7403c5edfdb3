//! piglit's `shader_runner` under the GL shim: measuring must not change what the driver
//! renders. Each test gives the same verdict, the same probe output and the same exit status
//! bare and in every `samples` mode, including tests that fail bare on llvmpipe (a driver bug
//! that the shim must not hide from the driver developers framescope is for).
//!
//! piglit's `-auto` never swaps, so the shim would only ever see a context and no frames. A
//! small preload, compiled here from the C below, makes every probe first call
//! `piglit_swap_buffers()`: each draw/probe step becomes a frame, swapped right after its draws
//! (so the shim's end-of-frame queries would share the draws' scene if it let them), and the
//! probe then reads the back buffer, which Mesa's software window system keeps across a swap.
//! The same preload runs bare and under framescope, so only framescope differs.
//!
//! On llvmpipe the shim takes no debug-group or draw samples unless told to (see the GL shim
//! notes, docs/gl-shim.md), so every mode here runs frame timestamps and, from `cmdbuf` on,
//! frame statistics, each in a scene of its own.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, Artifacts, Sandbox, Xvfb};
use std::path::{Path, PathBuf};
use std::time::Duration;

const PIGLIT: &str = "/usr/lib/x86_64-linux-gnu/piglit";
const LIMIT: Duration = Duration::from_secs(120);
const MODES: [&str; 5] = ["off", "cmdbuf", "renderpass", "label", "draw"];

/// The three `vs-*-main-return` tests fail bare on llvmpipe 22.3 (its linear rasterizer) and
/// passed under `samples=draw`; the others pass bare.
const TESTS: [&str; 9] = [
    "glsl-1.10/execution/vs-vec2-main-return",
    "glsl-1.10/execution/vs-vec3-main-return",
    "glsl-1.10/execution/vs-vec4-main-return",
    "glsl-1.10/execution/vs-float-main-return",
    "glsl-1.10/execution/glsl-fs-main-return",
    "glsl-1.10/execution/glsl-vs-main-return",
    "glsl-1.10/execution/fs-loop-return",
    "glsl-1.10/execution/fs-discard-deep-branch",
    "glsl-1.50/execution/geometry-basic",
];

const SWAP_PRELOAD: &str = include_str!("../fixtures/swap_before_probe.c");

/// Builds the swap-before-probe preload into `dir`.
fn build_preload(dir: &Path) -> PathBuf {
    require_program("cc");
    let src = dir.join("swap_before_probe.c");
    let so = dir.join("swap_before_probe.so");
    std::fs::write(&src, SWAP_PRELOAD).expect("write preload source");
    let out = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("run cc");
    assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
    so
}

/// What a run of one test shows of the rendering: exit status, verdict and every probe line.
#[derive(Debug, PartialEq)]
struct Verdict {
    code: Option<i32>,
    lines: Vec<String>,
}

fn verdict(out: &framescope_tests::Outcome) -> Verdict {
    let lines: Vec<String> = out
        .combined()
        .lines()
        .filter(|l| !l.starts_with("framescope:") && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    assert!(
        lines.iter().any(|l| l.starts_with("PIGLIT: {\"result\"")),
        "no piglit verdict: {}",
        out.describe()
    );
    Verdict {
        code: out.code(),
        lines,
    }
}

#[test]
fn shader_runner_renders_the_same_bare_and_in_every_samples_mode() {
    let runner = Path::new(PIGLIT).join("bin/shader_runner");
    assert!(runner.is_file(), "{} is missing: install piglit", runner.display());
    let a = Artifacts::get();
    let x = Xvfb::start();
    let tools = Sandbox::new("piglit-preload");
    let preload = build_preload(&tools.dir);
    let mut failing_bare = 0;
    for test in TESTS {
        let file = Path::new(PIGLIT).join("tests/spec").join(format!("{test}.shader_test"));
        assert!(file.is_file(), "{} is missing", file.display());
        let file = file.display().to_string();
        let args = [file.as_str(), "-auto"];
        let tag = test.replace('/', "_");
        let mut sb = Sandbox::new(&format!("piglit-{tag}-bare"));
        sb.display(&x).set("LD_PRELOAD", preload.display().to_string());
        let bare = verdict(&sb.run(&runner, &args, LIMIT));
        if bare.code != Some(0) {
            failing_bare += 1;
        }
        for mode in MODES {
            let mut sb = Sandbox::new(&format!("piglit-{tag}-{mode}"));
            let path = sb.path("dump.jsonl");
            sb.display(&x)
                .set("LD_PRELOAD", preload.display().to_string())
                .set("FRAMESCOPE_DUMP", path.display().to_string())
                .set("FRAMESCOPE_CONFIG", format!("samples={mode},hud=0"));
            let out = sb.run_under_framescope(&a, &runner.display().to_string(), &args, LIMIT);
            assert_eq!(
                verdict(&out),
                bare,
                "{test} samples={mode} renders differently from bare"
            );
            // The forced swaps made frames, and the shim saw the draws of each.
            let d = dump::read(&path);
            assert!(d.summary.is_some(), "{test} {mode}: no summary");
            assert!(!d.frames.is_empty(), "{test} {mode}: no frames");
            let draws: u64 = d.u64s("draws").iter().sum();
            assert!(draws > 0, "{test} {mode}: no draws counted");
            // On llvmpipe, debug-group and draw samples are refused (they would change the
            // rendering) and the header says why; the frame's own timestamps and statistics stay.
            let samples = d
                .frames
                .iter()
                .filter_map(|f| f["samples"].as_array())
                .flatten()
                .count();
            assert_eq!(samples, 0, "{test} {mode}: samples on llvmpipe");
            let refused = d.header["unavailable"]
                .as_array()
                .is_some_and(|u| u.iter().any(|e| e["source"] == "gl_samples"));
            assert_eq!(
                refused,
                matches!(mode, "renderpass" | "label" | "draw"),
                "{test} {mode}: {}",
                d.header
            );
            assert!(
                d.frames.iter().all(|f| f["gpu_busy_ns"].is_u64()),
                "{test} {mode}: frames without GPU time"
            );
            if mode != "off" {
                assert!(
                    d.frames.iter().all(|f| f.get("stats").is_some()),
                    "{test} {mode}: frames without stats"
                );
            }
        }
    }
    // The point of the check: tests that fail bare stay failing under framescope.
    assert!(
        failing_bare >= 3,
        "expected the vs-*-main-return tests to fail bare on llvmpipe"
    );
}

/// The test that once aborted under the shim's defaults with `free(): corrupted unsorted
/// chunks` right after its context was destroyed. piglit tears GL down from an `atexit`
/// handler (waffle: unbind, destroy the context, close the display), which glibc runs after
/// the thread-local destructors: the shim, finding its thread's pointer gone, left the frame's
/// statistics queries active through the unbind, and llvmpipe freed them with the context
/// while a scene could still write into them. Each mode that takes statistics (the defaults
/// too) must end them before the unbind.
#[test]
fn a_context_torn_down_at_exit_has_no_statistics_query_active() {
    let runner = Path::new(PIGLIT).join("bin/shader_runner");
    let file = Path::new(PIGLIT)
        .join("generated_tests/spec/glsl-1.10/execution/variable-indexing/vs-temp-array-mat4-index-row-rd.shader_test");
    assert!(runner.is_file() && file.is_file(), "piglit is missing: install piglit");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let tools = Sandbox::new("piglit-exit-preload");
    let preload = build_preload(&tools.dir);
    let file = file.display().to_string();
    for config in ["log=debug", "samples=cmdbuf,log=debug", "samples=draw,log=debug"] {
        let mut sb = Sandbox::new("piglit-exit");
        sb.display(&x)
            .set("LD_PRELOAD", preload.display().to_string())
            .set("FRAMESCOPE_CONFIG", config);
        let out = sb.run_under_framescope(&a, &runner.display().to_string(), &[file.as_str(), "-auto"], LIMIT);
        assert_eq!(out.code(), Some(0), "{config}: {}", out.describe());
        assert!(
            out.stderr
                .contains("statistics queries of the current context ended before it was unbound at exit"),
            "{config}: the queries were not ended at piglit's exit\n{}",
            out.describe()
        );
        assert!(
            !out.stderr
                .contains("destroyed with framescope's statistics queries active"),
            "{config}: {}",
            out.describe()
        );
    }
}
