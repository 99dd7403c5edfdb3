//! `FRAMESCOPE_REPORT_HUD_TIME=N`: both layers time their HUD path on the app's thread after
//! frame N and log it at exit (`framescope_core::hud_time`), which `cargo xtask bench hud` and
//! the device script read. Checked here: every frame after the warm-up is timed, on both APIs,
//! and the HUD's path takes longer with the HUD drawn than without it.

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

fn run(x: &Xvfb, tag: &str, app: &str, args: &[&str], config: &str) -> (u64, f64, f64) {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(tag);
    sb.display(x)
        .set("FRAMESCOPE_CONFIG", config)
        .set("FRAMESCOPE_REPORT_HUD_TIME", WARMUP.to_string());
    let out = sb.run_under_framescope(&a, app, args, LIMIT);
    assert_eq!(out.code(), Some(0), "{tag}: {}", out.describe());
    let r = report(&out.stderr, tag);
    println!("{tag}: {} frames timed, wall mean {} µs, CPU mean {} µs", r.0, r.1, r.2);
    r
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
        let on = run(&x, &format!("hudtime-{api}-on"), app, args, "hud=1");
        let off = run(&x, &format!("hudtime-{api}-off"), app, args, "hud=0");
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
