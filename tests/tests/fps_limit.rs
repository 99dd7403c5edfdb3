//! The frame limiter (`fps_limit`): a limited app never presents faster than the limit, on
//! Vulkan (vkcube's presents) and GL (our GL test app's swaps), and the dump header records it. Only
//! the upper bound is checked here: a loaded machine may run slower than any limit; how close
//! to the limit frames are paced is measured by `cargo xtask bench fps-limit`.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, Artifacts, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn check(d: &dump::Dump, fps: f64, what: &str) {
    assert_eq!(d.header["config"]["fps_limit"], fps.to_string(), "{what}");
    let t = d.u64s("t_ns");
    // The first frames include start-up; the steady part is after them.
    let steady = &t[5..];
    let span = (steady[steady.len() - 1] - steady[0]) as f64 / 1e9;
    let rate = (steady.len() - 1) as f64 / span;
    println!("{what}: {rate:.1} fps with a limit of {fps}");
    assert!(rate <= fps * 1.02, "{what}: {rate:.1} fps over a limit of {fps}");
}

#[test]
fn limited_apps_present_no_faster_than_the_limit() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("fps-limit-vk");
    let path = sb.path("vk.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "fps_limit=30");
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "60"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    check(&dump::read(&path), 30.0, "vkcube");

    let mut sb = Sandbox::new("fps-limit-gl");
    let path = sb.path("gl.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "fps_limit=25");
    let app = a.glapp.display().to_string();
    let out = sb.run_under_framescope(
        &a,
        &app,
        &["--frames", "40", "--width", "200", "--height", "150"],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    check(&dump::read(&path), 25.0, "GL test app");
}
