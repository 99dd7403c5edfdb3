//! `VK_EXT_present_timing` as the display-time source, with known answers: the test double
//! (tests/presentdouble, `VK_LAYER_FRAMESCOPE_present_double`) gives lavapipe present timing
//! on a display that refreshes every 20 ms on CLOCK_MONOTONIC, one FIFO image a refresh, and
//! reports each present's first-pixel stages at exactly the refresh boundary it was shown at.
//! The test app (FIFO, far faster than 50 fps) must get frames from the `present_timing`
//! source shown on those boundaries, one refresh apart, with the refresh as `refresh_ns`; the
//! app never sees the commands framescope enabled for itself; with the double offering only
//! present_wait (`FRAMESCOPE_PRESENT_DOUBLE_ONLY_PRESENT_WAIT=1`) present_wait reports as before.

use framescope_tests::dump::{frame_u64 as u, median, unavailable};
use framescope_tests::{dump, test_layers, validation, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);
const MS: u64 = 1_000_000;
const REFRESH_MS: u64 = 20;
const FRAMES: usize = 40;

/// Runs the windowed test app (FIFO, small window) under framescope with the double below it,
/// `config` and further environment `env`.
fn run(
    name: &str,
    config: &str,
    refresh_ms: u64,
    frames: usize,
    env: &[(&str, &str)],
) -> (dump::Dump, framescope_tests::Outcome) {
    run_with(name, "", config, refresh_ms, frames, env)
}

/// [`run`] with the fault layer's `FRAMESCOPE_FAULT` between framescope and the double (none
/// when empty).
fn run_with(
    name: &str,
    fault: &str,
    config: &str,
    refresh_ms: u64,
    frames: usize,
    env: &[(&str, &str)],
) -> (dump::Dump, framescope_tests::Outcome) {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new(name);
    let path = sb.path("dump.jsonl");
    sb.with_validation()
        .display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_PRESENT_DOUBLE_REFRESH_MS", refresh_ms.to_string());
    if !config.is_empty() {
        sb.set("FRAMESCOPE_CONFIG", config);
    }
    for (k, v) in env {
        sb.set(k, *v);
    }
    if !fault.is_empty() {
        test_layers::enable_faults(&mut sb, fault);
    }
    test_layers::PRESENT_DOUBLE.enable(&mut sb);
    let app = a.testapp.display().to_string();
    let n = frames.to_string();
    let args = [
        "--frames",
        n.as_str(),
        "--present-mode",
        "fifo",
        "--width",
        "160",
        "--height",
        "120",
    ];
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean(name, &out.combined());
    assert!(
        out.lines_with("present_double: a timing request").is_empty(),
        "{}",
        out.describe()
    );
    let d = dump::read(&path);
    assert_eq!(d.frames.len(), frames, "{}", out.describe());
    (d, out)
}

#[test]
fn frames_are_shown_exactly_on_the_double_s_refresh_boundaries() {
    let (d, _) = run("pt-double", "", REFRESH_MS, FRAMES, &[]);
    assert_eq!(unavailable(&d.header, "present_timing"), None, "{}", d.header);
    let period = REFRESH_MS * MS;
    // As with present_wait, the last one or two frames may still be queued when the app
    // destroys its swapchain right after its last present: no result is read after that.
    let shown = d.frames.iter().take_while(|f| f["display"] == "displayed").count();
    assert!(shown >= FRAMES - 2, "only the first {shown} frames displayed");
    for f in &d.frames[shown..] {
        assert_eq!(f["display"], "no_report", "{f}");
    }
    for f in &d.frames[..shown] {
        assert_eq!(f["display_source"], "present_timing", "{f}");
        let t = u(f, "shown_ns");
        assert!(t >= u(f, "t_ns"), "shown before its present: {f}");
        // The presentation engine's own stage time: on the boundary, not after a wake-up.
        let off = t % period;
        let off = off.min(period - off);
        assert!(off <= 5_000, "shown {off} ns off a refresh boundary: {f}");
        assert_eq!(u(f, "refresh_ns"), period, "{f}");
    }
    let steady = &d.frames[1..shown - 1];
    let displayed = median(steady.iter().map(|f| u(f, "displayed_time_ns")).collect());
    assert!(
        displayed.abs_diff(period) <= MS / 10,
        "median displayed time {:.3} ms, the double's refresh {REFRESH_MS} ms",
        displayed as f64 / 1e6
    );
}

#[test]
fn a_stage_local_time_domain_is_mapped_to_clock_monotonic() {
    // The double's one time domain is PRESENT_STAGE_LOCAL, 1000 s ahead of CLOCK_MONOTONIC:
    // framescope maps it back with vkGetCalibratedTimestampsKHR, so the same known answers.
    let (d, out) = run(
        "pt-stage-local",
        "",
        REFRESH_MS,
        FRAMES,
        &[("FRAMESCOPE_PRESENT_DOUBLE_TIME_DOMAIN", "stage_local")],
    );
    assert!(
        out.lines_with("present_double: a swapchain-local calibration")
            .is_empty(),
        "{}",
        out.describe()
    );
    let period = REFRESH_MS * MS;
    let shown = d.frames.iter().take_while(|f| f["display"] == "displayed").count();
    assert!(shown >= FRAMES - 2, "only the first {shown} frames displayed");
    for f in &d.frames[..shown] {
        assert_eq!(f["display_source"], "present_timing", "{f}");
        let t = u(f, "shown_ns");
        // After the present and well within a second of it (unmapped, it would be 1000 s
        // off; the first frame's present takes ~70 ms here: the HUD's first draw), on a
        // boundary.
        assert!(t >= u(f, "t_ns") && t - u(f, "t_ns") < 1_000 * MS, "{f}");
        let off = t % period;
        let off = off.min(period - off);
        assert!(off <= 5_000, "shown {off} ns off a refresh boundary: {f}");
    }
}

#[test]
fn rebuilt_swapchains_get_present_timing_afresh() {
    // Every 10th present answers out of date (the fault layer forwards it, then says so): the
    // app rebuilds its swapchain with oldSwapchain and destroys the old one while framescope's
    // thread may be reading its results, six times.
    let (d, out) = run_with("pt-rebuild", "out_of_date_every=10", "", REFRESH_MS, FRAMES, &[]);
    assert!(
        out.lines_with("framescope: internal error").is_empty(),
        "{}",
        out.describe()
    );
    let swapchains: std::collections::BTreeSet<&str> = d
        .frames
        .iter()
        .filter_map(|f| f["swapchain"]["handle"].as_str())
        .collect();
    assert!(swapchains.len() >= 2, "the app did not rebuild: {swapchains:?}");
    let period = REFRESH_MS * MS;
    for f in &d.frames {
        match u(f, "frame") % 10 {
            // The failed present: no result comes for it.
            9 => assert_eq!(f["display"], "no_report", "{f}"),
            // Still queued when the swapchain was retired: its results are not read.
            7 | 8 => assert!(matches!(f["display"].as_str(), Some("displayed" | "no_report")), "{f}"),
            _ => {
                assert_eq!(f["display"], "displayed", "{f}");
                assert_eq!(f["display_source"], "present_timing", "{f}");
                let t = u(f, "shown_ns") % period;
                assert!(t.min(period - t) <= 5_000, "{f}");
            }
        }
    }
}

#[test]
fn with_the_double_offering_only_present_wait_present_wait_reports() {
    let (d, _) = run(
        "pt-only-wait",
        "",
        REFRESH_MS,
        FRAMES,
        &[("FRAMESCOPE_PRESENT_DOUBLE_ONLY_PRESENT_WAIT", "1")],
    );
    let why = unavailable(&d.header, "present_timing").unwrap_or_else(|| panic!("{}", d.header));
    assert!(why.contains("not offered by the device"), "{why}");
    assert_eq!(unavailable(&d.header, "present_wait"), None, "{}", d.header);
    let shown = d.frames.iter().take_while(|f| f["display"] == "displayed").count();
    assert!(shown >= FRAMES - 2, "only the first {shown} frames displayed");
    for f in &d.frames[..shown] {
        assert_eq!(f["display_source"], "present_wait", "{f}");
    }
}

#[test]
fn display_times_off_leaves_present_timing_alone() {
    let (d, _) = run("pt-off", "display_times=0", REFRESH_MS, FRAMES, &[]);
    assert_eq!(
        unavailable(&d.header, "present_timing").as_deref(),
        Some("display_times=0")
    );
    for f in &d.frames {
        assert_eq!(f["display"], "no_source", "{f}");
    }
}

#[test]
fn the_app_never_sees_the_present_timing_commands_framescope_enabled_for_itself() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("pt-gdpa");
    sb.with_validation();
    test_layers::PRESENT_DOUBLE.enable(&mut sb);
    let layer = a.vk_layer.display().to_string();
    let out = sb.run(
        &a.framescope,
        &["run", "--", a.gdpa_probe.to_str().unwrap(), &layer],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("gdpa probe", &out.combined());
    let line = out
        .lines_with("gdpa-probe ")
        .pop()
        .unwrap_or_else(|| panic!("no probe output\n{}", out.describe()));
    let v: Value = serde_json::from_str(line.trim_start_matches("gdpa-probe ")).expect("probe JSON");
    let cmds = [
        "vkGetPastPresentationTimingEXT",
        "vkSetSwapchainPresentTimingQueueSizeEXT",
        "vkGetCalibratedTimestampsKHR",
    ];
    // framescope enabled present timing on the swapchain device for itself.
    assert_eq!(v[1]["device"], "with_swapchain", "{line}");
    for cmd in cmds {
        for via in ["layer", "loader"] {
            assert_eq!(v[0][cmd][via], false, "{cmd} through the {via}: {line}");
            assert_eq!(v[1][cmd][via], false, "{cmd} through the {via}: {line}");
        }
    }
    // The app that enables the extensions gets their commands.
    assert_eq!(v[3]["device"], "with_present_timing", "{line}");
    for cmd in cmds {
        assert_eq!(v[3][cmd]["layer"], true, "{cmd}: {line}");
        assert_eq!(v[3][cmd]["loader"], true, "{cmd}: {line}");
    }
}

#[test]
fn chaining_timing_requests_allocates_nothing_on_the_app_thread() {
    const WARMUP: u64 = 60;
    // As display_present_wait's: 5 ms refreshes, the HUD's re-render out of the run.
    let (d, out) = run(
        "pt-allocs",
        "hud_refresh_ms=10000",
        5,
        200,
        &[("FRAMESCOPE_REPORT_ALLOCS", "60"), ("FRAMESCOPE_TRACE_ALLOCS", "1")],
    );
    assert!(
        d.frames[1..d.frames.len() - 2]
            .iter()
            .all(|f| f["display_source"] == "present_timing"),
        "the present_timing path did not run"
    );
    let (allocs, frames_with, steady) = framescope_tests::allocs::report(&out, "pt-allocs", WARMUP);
    assert!(steady >= 100, "only {steady} steady frames");
    assert_eq!(
        (allocs, frames_with),
        (0, 0),
        "heap allocations on the app's thread in steady state:\n{}",
        out.describe()
    );
}
