//! 32-bit apps under `framescope run`: Debian's i386 vkcube (on 32-bit lavapipe, with the i386
//! validation layer below framescope in the `validation` lane and without it in the `driver`
//! lane) and i386 glxgears (32-bit llvmpipe). `run` names the layer and the shim through ld.so's
//! `$LIB`, so the 32-bit app loads the 32-bit builds: each leaves a complete dump written by
//! the 32-bit code (`process_arch: x86`), `report` reads it, the HUD is in a screenshot, and
//! ld.so prints nothing about a library of the wrong class.

use framescope_tests::artifacts::{require_program, Artifacts32};
use framescope_tests::image::{count_in, is_text, Rect, Rgb};
use framescope_tests::{dump, validation, Artifacts, Outcome, Sandbox, Xvfb};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// A dump written by the 32-bit code, every line whole, with at least `min_frames` frames and
/// its summary (written by the app, or completed by `framescope run` after a signal ended it);
/// `framescope report` reads it.
fn complete_32(a: &Artifacts, sb: &Sandbox, path: &Path, api: &str, min_frames: usize) -> dump::Dump {
    let d = dump::read(path);
    assert_eq!(d.header["process_arch"], "x86", "{}", d.header);
    assert_eq!(d.header["api"], api, "{}", d.header);
    // SIGINT ends glxgears without exit handlers, so its summary is the one `framescope run`
    // completes from the frames after the app ended; vkcube writes its own.
    let s = d.summary.as_ref().expect("a summary");
    let by = if api == "vulkan" { "writer" } else { "framescope run" };
    assert_eq!(s["produced_by"], by, "{s}");
    assert!(d.frames.len() >= min_frames, "{} frames", d.frames.len());
    let timed = d.frames.iter().filter(|f| f["gpu_busy_ns"].is_u64()).count();
    assert!(
        timed * 10 >= d.frames.len() * 9,
        "{timed} of {} frames with GPU time",
        d.frames.len()
    );
    let out = sb.run(&a.framescope, &["report", &path.display().to_string()], LIMIT);
    assert_eq!(out.code(), Some(0), "report: {}", out.describe());
    assert!(out.stdout.contains("frames"), "{}", out.stdout);
    d
}

/// Text-coloured pixels in the top-left quarter of `shot` (where the HUD is by default).
fn hud_text(shot: &Rgb) -> usize {
    let quarter = Rect {
        x0: 0,
        y0: 0,
        x1: shot.w / 2,
        y1: shot.h / 2,
    };
    count_in(shot, quarter, is_text)
}

fn vkcube_run(a: &Artifacts, a32: &Artifacts32, x: &Xvfb, name: &str, config: &str) -> (Sandbox, Outcome) {
    let mut sb = Sandbox::new(name);
    let dir = sb.dir.display().to_string();
    sb.display(x).with_validation().set(
        "FRAMESCOPE_CONFIG",
        format!("{config},dump={dir}/vkcube.jsonl,screenshot=100,screenshot_path={dir}/shot-%N.png"),
    );
    let out = sb.run_under_framescope(a, &a32.vkcube.display().to_string(), &["--c", "120"], LIMIT);
    assert_eq!(out.code(), Some(0), "{name}: {}", out.describe());
    validation::assert_clean(name, &out.combined());
    out.assert_no_loader_errors(name);
    (sb, out)
}

#[test]
fn a_32_bit_vkcube_gets_the_32_bit_layer_a_complete_dump_and_the_hud() {
    let a = Artifacts::get();
    let a32 = Artifacts32::get();
    let x = Xvfb::start();
    let (on_sb, on) = vkcube_run(&a, &a32, &x, "vkcube32-hud", "hud=1");
    let (off_sb, _) = vkcube_run(&a, &a32, &x, "vkcube32-nohud", "hud=0");
    assert!(
        on.stdout.contains("llvmpipe") || on.stderr.contains("llvmpipe"),
        "the 32-bit lavapipe renders\n{}",
        on.describe()
    );
    let d = complete_32(&a, &on_sb, &on_sb.path("vkcube.jsonl"), "vulkan", 100);
    let vkcube = a32.vkcube.canonicalize().expect("vkcube's path");
    assert_eq!(d.header["exe"].as_str(), vkcube.to_str(), "{}", d.header);
    let shot_on = Rgb::read(&on_sb.path("shot-100.png"));
    let shot_off = Rgb::read(&off_sb.path("shot-100.png"));
    let (t_on, t_off) = (hud_text(&shot_on), hud_text(&shot_off));
    println!("32-bit vkcube frame 100: {t_on} text pixels with the HUD, {t_off} without");
    assert!(t_on >= 300 && t_on > 10 * t_off.max(1), "{t_on} vs {t_off}");
}

#[test]
fn a_32_bit_glxgears_gets_the_32_bit_shim_a_complete_dump_and_the_hud() {
    require_program("timeout");
    let a = Artifacts::get();
    let a32 = Artifacts32::get();
    let x = Xvfb::start();
    let gears = |name: &str, config: &str| {
        let mut sb = Sandbox::new(name);
        let dir = sb.dir.display().to_string();
        sb.display(&x).set(
            "FRAMESCOPE_CONFIG",
            format!("{config},dump={dir}/gears.jsonl,screenshot=200,screenshot_path={dir}/shot-%N.png"),
        );
        // `timeout` is a 64-bit program that gets the 64-bit shim and execs the 32-bit glxgears,
        // which gets the 32-bit one: neither class may see a library of the other.
        let glxgears = a32.glxgears.display().to_string();
        let out = sb.run_under_framescope(&a, "timeout", &["-s", "INT", "6", &glxgears], LIMIT);
        assert_eq!(
            out.code(),
            Some(124),
            "{name}: timeout ends glxgears\n{}",
            out.describe()
        );
        out.assert_no_loader_errors(name);
        (sb, out)
    };
    let (on_sb, _) = gears("gears32-hud", "hud=1");
    let (off_sb, _) = gears("gears32-nohud", "hud=0");
    let d = complete_32(&a, &on_sb, &on_sb.path("gears.jsonl"), "opengl", 200);
    assert!(
        d.header["exe"].as_str().is_some_and(|e| e.contains("i386")),
        "{}",
        d.header
    );
    let shot_on = Rgb::read(&on_sb.path("shot-200.png"));
    let shot_off = Rgb::read(&off_sb.path("shot-200.png"));
    let (t_on, t_off) = (hud_text(&shot_on), hud_text(&shot_off));
    println!("32-bit glxgears frame 200: {t_on} text pixels with the HUD, {t_off} without");
    assert!(t_on >= 300 && t_on > 10 * t_off.max(1), "{t_on} vs {t_off}");
}
