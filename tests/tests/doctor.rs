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
