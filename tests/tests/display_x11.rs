//! The X11 Present display-time source, with known answers, on Xvfb (Present with a fake
//! 60 Hz refresh). Mesa's software GL on Xvfb puts images with `PutImage`, which Present never
//! hears of, so the GL test app's `--present-pixmap` also presents every frame with
//! `PresentPixmap` (serial = frame number), paced by the refresh, and prints every completion
//! its own connection received: framescope's watcher, on a connection of its own, must give
//! each frame exactly that completion's time. Without the mode, and for the Vulkan test app
//! (lavapipe's WSI on Xvfb puts images too), the source must say the window is
//! software-presented.

use framescope_tests::dump::{frame_u64 as u, median};
use framescope_tests::{dump, validation, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
/// Xvfb's fake refresh: 1 s / 60 (present_fake.c).
const REFRESH_NS: u64 = 16_666_667;
const WINDOW: [&str; 4] = ["--width", "160", "--height", "120"];

/// One `PresentCompleteNotify` as the app received it.
#[derive(Clone, Copy, Debug)]
struct Known {
    ust_us: u64,
    msc: u64,
    /// 0 copy, 1 flip, 2 skip, 3 suboptimal copy.
    mode: u64,
}

/// The app's own completions, by serial (its frame number).
fn app_completions(out: &framescope_tests::Outcome) -> HashMap<u64, Known> {
    let line = out.lines_with("glapp-result ");
    assert_eq!(line.len(), 1, "{}", out.describe());
    let r: Value = serde_json::from_str(&line[0]["glapp-result ".len()..]).expect("glapp-result is JSON");
    r["present_pixmap"]
        .as_array()
        .expect("present_pixmap completions")
        .iter()
        .map(|c| {
            let n = |i: usize| c[i].as_u64().expect("a number");
            (
                n(0),
                Known {
                    ust_us: n(1),
                    msc: n(2),
                    mode: n(3),
                },
            )
        })
        .collect()
}

#[test]
fn x11_present_gives_each_frame_its_completion_time() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("display-x11-present");
    let path = sb.path("dump.jsonl");
    sb.display(&x).set("FRAMESCOPE_DUMP", path.display().to_string());
    let app = a.glapp.display().to_string();
    let frames = 90;
    let mut args = vec!["--frames", "90", "--present-pixmap"];
    args.extend(WINDOW);
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let known = app_completions(&out);
    assert_eq!(
        known.len(),
        frames,
        "the app saw every present complete: {}",
        out.describe()
    );
    assert!(
        known.values().all(|k| k.mode == 0),
        "paced presents are all copies: {known:?}"
    );
    let d = dump::read(&path);
    assert_eq!(d.frames.len(), frames);
    // The watcher subscribes at the first present, on its own thread: the frames presented
    // before its selection took effect have no report. A few at most.
    let first = d
        .frames
        .iter()
        .position(|f| f["display"] == "displayed")
        .unwrap_or_else(|| panic!("no frame displayed: {}", out.describe()));
    assert!(first <= 5, "frame {first} is the first displayed");
    let mut one_refresh = Vec::new();
    for f in &d.frames[first..] {
        let frame = u(f, "frame");
        let k = known[&frame];
        assert_eq!(f["display"], "displayed", "{f}");
        assert_eq!(f["display_source"], "x11_present", "{f}");
        assert_eq!(f["display_mode"], "copy", "{f}");
        assert_eq!(
            u(f, "shown_ns"),
            k.ust_us * 1000,
            "frame {frame}: the app's own completion"
        );
        let (latency, until) = (u(f, "display_latency_ns"), u(f, "until_displayed_ns"));
        assert!(until > 0 && latency >= until, "{f}");
        // On screen until the next frame's completion.
        if let Some(next) = known.get(&(frame + 1)) {
            let displayed = u(f, "displayed_time_ns");
            assert_eq!(displayed, (next.ust_us - k.ust_us) * 1000, "frame {frame}");
            if next.msc == k.msc + 1 {
                one_refresh.push(displayed);
            }
        }
    }
    // A busy machine makes the paced app miss refreshes now and then: the refresh is what
    // frames shown at consecutive refreshes (msc steps of 1) stayed on screen.
    assert!(
        one_refresh.len() >= frames / 2,
        "{} frames at consecutive refreshes",
        one_refresh.len()
    );
    let m = median(one_refresh);
    assert!(
        m.abs_diff(REFRESH_NS) <= 1_000_000,
        "median displayed time {:.3} ms, Xvfb's refresh 16.667 ms",
        m as f64 / 1e6
    );
    let refresh = u(&d.frames[frames - 1], "refresh_ns");
    assert!(
        refresh.abs_diff(REFRESH_NS) <= 1_000_000,
        "estimated refresh {refresh} ns"
    );
}

/// 2.4 s of frames at 250 fps from `app`, presented without Present: one log line says so and
/// the frames after the first 1.2 s (the source gives up on the window after 1 s) have no
/// source, for that reason.
fn software_present(name: &str, app: &std::path::Path, vulkan: bool) {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new(name);
    let path = sb.path("dump.jsonl");
    if vulkan {
        sb.with_validation();
    }
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "fps_limit=250");
    let app = app.display().to_string();
    let mut args = vec!["--frames", "600"];
    args.extend(WINDOW);
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    if vulkan {
        validation::assert_clean("the test app", &out.combined());
    }
    let said = out
        .combined()
        .lines()
        .filter(|l| l.contains("presented without Present"))
        .count();
    assert_eq!(said, 1, "one log line: {}", out.describe());
    let d = dump::read(&path);
    let t0 = u(&d.frames[0], "t_ns");
    let late: Vec<&Value> = d.frames.iter().filter(|f| u(f, "t_ns") > t0 + 1_200_000_000).collect();
    assert!(late.len() >= 200, "{} frames after the first 1.2 s", late.len());
    for f in late {
        assert_eq!(f["display"], "no_source", "{f}");
        assert_eq!(f["display_none_reason"], "software_present", "{f}");
        assert!(f["shown_ns"].is_null(), "{f}");
    }
}

/// llvmpipe's GLX on Xvfb swaps with `PutImage`.
#[test]
fn a_gl_window_presented_without_present_is_software_present() {
    software_present("display-x11-software-gl", &Artifacts::get().glapp, false);
}

/// lavapipe's X11 WSI on Xvfb presents its immediate-mode swapchain with `PutImage`: the
/// Xlib surface's window is found through the surface and swapchain hooks and watched.
#[test]
fn a_vulkan_window_presented_without_present_is_software_present() {
    software_present("display-x11-software-vk", &Artifacts::get().testapp, true);
}
