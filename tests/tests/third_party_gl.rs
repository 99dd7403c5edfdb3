//! Third-party GL apps under the GL shim: each exits as it does bare, leaves a complete dump
//! (header, frames, summary) whose draws are counted, and `framescope report` reads it. piglit,
//! where the rendering itself is compared with bare, is in `piglit.rs`.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, Artifacts, Outcome, Sandbox, Xvfb};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// Two apps at a time would compete for the two CPUs and the frame counts would drift.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `framescope report` on `path`: its output, after checking it ran clean and names the GPU
/// column after what a GL dump measures (`gpu_time: span`).
fn report(a: &Artifacts, sb: &Sandbox, path: &Path) -> String {
    let out = sb.run(&a.framescope, &["report", &path.display().to_string()], LIMIT);
    assert_eq!(out.code(), Some(0), "report: {}", out.describe());
    assert!(out.stdout.contains("gpu span"), "report of a GL dump: {}", out.stdout);
    assert!(!out.stdout.contains("gpu busy"), "report of a GL dump: {}", out.stdout);
    out.stdout
}

/// A complete GL dump: the header says what its GPU time is, every frame has GPU time, the
/// summary is there; returns it.
fn complete(tag: &str, path: &Path) -> dump::Dump {
    let d = dump::read(path);
    assert_eq!(d.header["gpu_time"], "span", "{tag}: {}", d.header);
    assert!(d.summary.is_some(), "{tag}: no summary");
    assert!(d.frames.len() >= 10, "{tag}: {} frames", d.frames.len());
    let timed = d.frames.iter().filter(|f| f["gpu_busy_ns"].is_u64()).count();
    assert!(timed * 10 >= d.frames.len() * 9, "{tag}: {timed} frames with GPU time");
    d
}

fn no_internal_error(tag: &str, out: &Outcome) {
    let bad = out.lines_with("framescope: internal error");
    assert!(bad.is_empty(), "{tag}: {bad:?}");
}

/// mpv's OpenGL renderer (EGL on X11; llvmpipe needs `--gpu-sw`) plays 120 frames of a
/// generated clip and exits 0, bare and under framescope.
#[test]
fn mpv_on_gl_exits_as_bare_with_a_complete_dump_and_its_draws() {
    let _serial = serial();
    require_program("mpv");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let args = [
        "--no-config",
        "--vo=gpu",
        "--gpu-api=opengl",
        "--gpu-context=x11egl",
        "--gpu-sw=yes",
        "--audio=no",
        "--frames=120",
        "av://lavfi:testsrc=duration=5",
    ];
    let mut bare = Sandbox::new("mpv-bare");
    bare.display(&x);
    let b = bare.run(Path::new("mpv"), &args, LIMIT);
    assert_eq!(b.code(), Some(0), "bare mpv: {}", b.describe());

    let mut sb = Sandbox::new("mpv");
    let path = sb.path("mpv.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_CONFIG", "hud=0")
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "mpv", &args, LIMIT);
    assert_eq!(out.code(), b.code(), "mpv under framescope: {}", out.describe());
    no_internal_error("mpv", &out);
    let d = complete("mpv", &path);
    assert_eq!(d.header["api"], "opengl");
    // mpv presents about one frame per video frame it shows (120, less the ones it drops).
    assert!((100..=130).contains(&d.frames.len()), "mpv: {} frames", d.frames.len());
    let drawing = d.frames.iter().filter(|f| f["draws"].as_u64() > Some(0)).count();
    assert!(
        drawing * 10 >= d.frames.len() * 9,
        "mpv: draws counted in {drawing} frames"
    );
    report(&a, &sb, &path);
}

/// glxgears draws its three gears as display lists compiled in frame 0 (immediate mode inside
/// `GL_COMPILE`, which draws nothing): three draws a frame, every frame. It runs until a
/// signal, so `dump_duration` ends the dump (with its summary) while it runs.
#[test]
fn glxgears_exits_as_bare_with_a_complete_dump_of_three_list_draws_a_frame() {
    let _serial = serial();
    require_program("glxgears");
    require_program("timeout");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let args = ["-s", "INT", "4", "glxgears"];
    let mut bare = Sandbox::new("gears3p-bare");
    bare.display(&x);
    let b = bare.run(Path::new("timeout"), &args, LIMIT);
    assert_eq!(b.code(), Some(124), "bare glxgears: {}", b.describe());

    let mut sb = Sandbox::new("gears3p");
    let path = sb.path("gears.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_CONFIG", "hud=0,dump_duration=2")
        .set("FRAMESCOPE_DUMP", path.display().to_string());
    let out = sb.run_under_framescope(&a, "timeout", &args, LIMIT);
    assert_eq!(out.code(), b.code(), "glxgears under framescope: {}", out.describe());
    no_internal_error("glxgears", &out);
    let d = complete("glxgears", &path);
    assert_eq!(d.summary.as_ref().unwrap()["ended_by"], "dump_duration");
    for f in &d.frames {
        assert_eq!(f["draws"], 3, "{f}");
        assert_eq!(f["draws_by_kind"]["draw_call_list"], 3, "{f}");
    }
    report(&a, &sb, &path);
}
