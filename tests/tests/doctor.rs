//! `framescope doctor` on this machine: it names lavapipe, framescope's manifest once
//! installed, NVML's absence with the reason, and exits 0; with the manifest gone it names the
//! fix and exits 1.

use framescope_tests::{Artifacts, Sandbox};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn doctor_names_what_is_here_and_the_fix_for_what_is_not() {
    let a = Artifacts::get();
    let sb = Sandbox::new("doctor");
    let install = sb.run(&a.framescope, &["install"], LIMIT);
    assert_eq!(install.code(), Some(0), "{}", install.describe());
    let out = sb.run(&a.framescope, &["doctor"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let text = &out.stdout;
    let line = |what: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(what))
            .unwrap_or_else(|| panic!("no {what} line:\n{text}"))
            .to_string()
    };
    let manifest = line("vulkan");
    assert!(
        manifest.starts_with("ok") && manifest.contains("VK_LAYER_FRAMESCOPE_overlay.json"),
        "{manifest}"
    );
    assert!(text.contains("(lavapipe, software)"), "{text}");
    let nvml = text
        .lines()
        .find(|l| l.contains("counters: nvml"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(nvml.contains("no NVIDIA driver"), "{nvml}");
    // JSON for scripts: the same checks.
    let json = sb.run(&a.framescope, &["doctor", "--json"], LIMIT);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON array");
    assert!(v.as_array().unwrap().iter().all(|c| c["status"] != "fail"), "{v}");

    let un = sb.run(&a.framescope, &["uninstall"], LIMIT);
    assert_eq!(un.code(), Some(0), "{}", un.describe());
    let out = sb.run(&a.framescope, &["doctor"], LIMIT);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(out.stdout.contains("fail  vulkan manifest"), "{}", out.stdout);
    assert!(out.stdout.contains("fix: run `framescope install`"), "{}", out.stdout);
}

/// `framescope gpu-sampler` where CUPTI cannot be loaded (no NVIDIA driver here) exits 1 and
/// leaves no ring behind: a ring left with only its reason made every later `doctor` say both
/// "ok counters: pm 6 counters" and "the PM sampler failed", and every run list six empty
/// `pm_*` counters.
#[test]
fn a_sampler_that_cannot_start_leaves_no_ring_and_doctor_lists_no_pm_counters() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("doctor-pm-ring");
    sb.set("FRAMESCOPE_CUPTI_DIR", sb.path("no-cupti").display().to_string());
    let out = sb.run(&a.framescope, &["gpu-sampler"], LIMIT);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(out.stderr.contains("libcupti.so.12 not found"), "{}", out.describe());
    let ring = sb.path("runtime/framescope/pm-gpu0.ring");
    assert!(!ring.exists(), "{} left behind", ring.display());
    let out = sb.run(&a.framescope, &["doctor"], LIMIT);
    assert!(!out.stdout.contains("counters: pm"), "{}", out.stdout);
}

/// The session's window systems: an X server (Xvfb) that answers, and a Wayland socket that
/// accepts connections but never answers (a frozen compositor): doctor says so within its
/// one-second probe, names the fix, and exits 1; the toggle-key line says they do not reach
/// native Wayland apps.
#[test]
fn doctor_probes_the_session_and_flags_a_compositor_that_does_not_answer() {
    let a = Artifacts::get();
    let x = framescope_tests::Xvfb::start();
    let mut sb = Sandbox::new("doctor-session");
    let runtime = sb.path("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(runtime.join("wayland-frozen")).unwrap();
    // Accepts (the kernel's backlog does) and never reads or writes: a stopped compositor.
    sb.display(&x)
        .set("XDG_RUNTIME_DIR", runtime.display().to_string())
        .set("WAYLAND_DISPLAY", "wayland-frozen");
    let t = std::time::Instant::now();
    let out = sb.run(&a.framescope, &["doctor", "--json"], LIMIT);
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("one JSON array");
    let by = |what: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == what)
            .unwrap_or_else(|| panic!("no {what} check: {v}"))
            .clone()
    };
    let wl = by("wayland");
    assert_eq!(wl["status"], "fail", "{wl}");
    assert!(wl["detail"].as_str().unwrap().contains("did not answer"), "{wl}");
    assert!(wl["fix"].as_str().unwrap().contains("restart"), "{wl}");
    let xw = by("xwayland");
    assert_eq!(xw["status"], "ok", "{xw}");
    let keys = by("toggle keys");
    assert_eq!(keys["status"], "ok", "libxkbcommon0 is installed here: {keys}");
    assert!(
        keys["detail"]
            .as_str()
            .unwrap()
            .contains("native Wayland windows (Vulkan and EGL)"),
        "{keys}"
    );
    assert!(by("apps here")["detail"].as_str().unwrap().contains("Wayland session"));
    drop(listener);
}
