//! `FRAMESCOPE_REPORT_HUD_TIME=N`: both layers time their HUD path on the app's thread after
//! frame N and log it at exit (`framescope_core::hud_time`), which `cargo xtask bench hud` and
//! the device script read. Checked here: every frame after the warm-up is timed, on both APIs,
//! the HUD's path takes longer with the HUD drawn than without it, its parts are reported by
//! name, and the Vulkan HUD records
//! its command buffer only when the HUD's content changes, submitting a lone composite's
//! recording again otherwise.

use framescope_tests::artifacts::require_program;
use framescope_tests::{Artifacts, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const WARMUP: u64 = 100;
const FRAMES: u64 = 400;

/// (frames timed, wall mean µs, CPU mean µs) from the report line.
fn report(stderr: &str, tag: &str) -> (u64, f64, f64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("HUD time on the app's thread after frame {WARMUP}:")))
        .unwrap_or_else(|| panic!("{tag}: no HUD time report:\n{stderr}"));
    let after = |key: &str| -> &str {
        line.split(key)
            .nth(1)
            .unwrap_or_else(|| panic!("{tag}: no '{key}' in {line}"))
    };
    let num = |s: &str| -> f64 {
        s.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{tag}: unreadable number in {line}"))
    };
    let frames = num(after(&format!("after frame {WARMUP}: "))) as u64;
    (frames, num(after(" frames, mean ")), num(after("CPU time: mean ")))
}

/// (images drawn into, of them recorded anew) from the Vulkan HUD's line at device destruction.
fn recordings(stderr: &str, tag: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("HUD: drawn into "))
        .unwrap_or_else(|| panic!("{tag}: no HUD recording line:\n{stderr}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    match nums[..] {
        [drawn, recorded] => (drawn, recorded),
        _ => panic!("{tag}: unreadable {line}"),
    }
}

fn run(x: &Xvfb, tag: &str, app: &str, args: &[&str], config: &str) -> ((u64, f64, f64), String) {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(tag);
    sb.display(x)
        .set("FRAMESCOPE_CONFIG", config)
        .set("FRAMESCOPE_REPORT_HUD_TIME", WARMUP.to_string());
    let out = sb.run_under_framescope(&a, app, args, LIMIT);
    assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
    let r = report(&out.stderr, tag);
    println!("{tag}: {} frames timed, wall mean {} µs, CPU mean {} µs", r.0, r.1, r.2);
    (r, out.stderr)
}

#[test]
fn every_frame_after_the_warmup_is_timed_and_drawing_the_hud_takes_longer() {
    require_program("vkcube");
    let x = Xvfb::start();
    let a = Artifacts::get();
    let glapp = a.glapp.display().to_string();
    let n = FRAMES.to_string();
    let vk: (&str, &[&str]) = ("vkcube", &["--c", &n]);
    let gl: (&str, &[&str]) = (&glapp, &["--frames", &n]);
    for (api, (app, args)) in [("vk", vk), ("gl", gl)] {
        let (on, log) = run(&x, &format!("hudtime-{api}-on"), app, args, "hud=1");
        let (off, _) = run(&x, &format!("hudtime-{api}-off"), app, args, "hud=0");
        let parts = log
            .lines()
            .find(|l| l.contains(&format!("HUD time by part after frame {WARMUP}")))
            .unwrap_or_else(|| panic!("{api}: no HUD time by part:\n{log}"));
        println!("{api}: {parts}");
        let names: &[&str] = if api == "vk" {
            &["lookup ", "recorded ", "submitted ", "the rest "]
        } else {
            &["lookup ", "state saved ", "drawn ", "state restored ", "the rest "]
        };
        for name in names {
            assert!(parts.contains(name), "{api}: no part '{name}' in {parts}");
        }
        if api == "vk" {
            // The content is re-rendered every hud_refresh_ms (250): a few dozen recordings in
            // a run of 400 frames, however slow the machine, unless recordings are not reused.
            let (drawn, recorded) = recordings(&log, "vk");
            println!("vk: the HUD went into {drawn} images, {recorded} of them recorded anew");
            assert!(drawn >= FRAMES / 2, "vk: the HUD went into {drawn} of {FRAMES} images");
            assert!(
                recorded >= 1 && recorded * 4 <= drawn,
                "vk: {recorded} of {drawn} HUD command buffers recorded anew"
            );
        }
        for (what, r) in [("on", on), ("off", off)] {
            assert_eq!(r.0, FRAMES - WARMUP, "{api} HUD {what}: frames timed");
        }
        assert!(
            on.1 > off.1 && on.2 > off.2,
            "{api}: the HUD's path took no longer drawn (wall {} µs, CPU {} µs) than off (wall {} µs, CPU {} µs)",
            on.1,
            on.2,
            off.1,
            off.2
        );
    }
}
