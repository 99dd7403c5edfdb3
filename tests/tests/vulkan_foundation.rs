//! Issue 2: the layer loads through every enabling path, is transparent (validation stays
//! silent), counts presents exactly, hands out NULL for disabled extensions, exports only the
//! loader entry points, and contains its own failures.

use framescope_tests::artifacts::require_program;
use framescope_tests::{validation, Artifacts, Sandbox, Xvfb};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn presents_reported(out: &framescope_tests::Outcome) -> Vec<u64> {
    out.lines_with("framescope: device ")
        .iter()
        .filter_map(|l| l.split(" destroyed: ").nth(1)?.split(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn vkcube_300_frames_through_framescope_run_with_validation() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("vkcube300");
    sb.display(&x).with_validation();
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "300"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("vkcube --c 300", &out.combined());
    assert_eq!(presents_reported(&out), vec![300], "{}", out.describe());
}

#[test]
fn framescope_run_returns_the_apps_exit_code() {
    let a = Artifacts::get();
    let sb = Sandbox::new("exitcode");
    let out = sb.run(&a.framescope, &["run", "--", "sh", "-c", "exit 7"], LIMIT);
    assert_eq!(out.code(), Some(7), "{}", out.describe());
    let out = sb.run(&a.framescope, &["run", "--", "/nonexistent/app"], LIMIT);
    assert_eq!(out.code(), Some(127), "{}", out.describe());
}

#[test]
fn implicit_manifest_obeys_enable_and_disable_variables() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("implicit");
    sb.display(&x).with_validation();
    let out = sb.run(&a.framescope, &["install"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let manifest = sb.path("data/vulkan/implicit_layer.d/VK_LAYER_FRAMESCOPE_overlay.json");
    let text = std::fs::read_to_string(&manifest).expect("implicit manifest installed");
    let json: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    assert_eq!(json["file_format_version"], "1.2.0");
    let lib = json["layer"]["library_path"].as_str().expect("library_path");
    // Through ld.so's $LIB (lib/x86_64-linux-gnu here), so 32-bit apps get the 32-bit build.
    assert!(lib.contains("/$LIB/"), "{lib}");
    let lib64 = lib.replace("$LIB", "lib/x86_64-linux-gnu");
    assert!(
        std::path::Path::new(&lib64).is_absolute() && std::path::Path::new(&lib64).is_file(),
        "{lib64}"
    );
    assert!(sb
        .path("data/vulkan/explicit_layer.d/VK_LAYER_FRAMESCOPE_overlay.json")
        .is_file());

    let vkcube = std::path::Path::new("/usr/bin/vkcube");
    let args = ["--c", "30"];
    let off = sb.run(vkcube, &args, LIMIT);
    assert_eq!(off.code(), Some(0), "{}", off.describe());
    assert!(
        presents_reported(&off).is_empty(),
        "loaded without FRAMESCOPE=1:\n{}",
        off.describe()
    );

    sb.set("FRAMESCOPE", "1");
    let on = sb.run(vkcube, &args, LIMIT);
    assert_eq!(on.code(), Some(0), "{}", on.describe());
    validation::assert_clean("implicit layer", &on.combined());
    assert_eq!(presents_reported(&on), vec![30], "{}", on.describe());

    sb.set("DISABLE_FRAMESCOPE", "1");
    let disabled = sb.run(vkcube, &args, LIMIT);
    assert_eq!(disabled.code(), Some(0), "{}", disabled.describe());
    assert!(
        presents_reported(&disabled).is_empty(),
        "DISABLE_FRAMESCOPE=1 did not win:\n{}",
        disabled.describe()
    );

    let out = sb.run(&a.framescope, &["uninstall"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(!manifest.exists(), "uninstall left the manifest");
    assert!(
        !sb.path("data/framescope").exists(),
        "uninstall left the libraries' directory"
    );
    sb.unset("DISABLE_FRAMESCOPE");
    let gone = sb.run(vkcube, &args, LIMIT);
    assert!(presents_reported(&gone).is_empty(), "layer still loads after uninstall");
}

/// `uninstall` removes the manifest directories `install` made once they are empty, and keeps
/// one that holds another layer's manifest.
#[test]
fn uninstall_removes_the_empty_manifest_directories_and_keeps_others_files() {
    let a = Artifacts::get();
    let sb = Sandbox::new("uninstall-dirs");
    let out = sb.run(&a.framescope, &["install"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let other = sb.path("data/vulkan/explicit_layer.d/VkLayer_someone_else.json");
    std::fs::write(&other, "{}").unwrap();
    let out = sb.run(&a.framescope, &["uninstall"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(!sb.path("data/vulkan/implicit_layer.d").exists(), "{}", out.describe());
    assert!(other.is_file(), "another layer's manifest was removed");
    std::fs::remove_file(&other).unwrap();
    // Installed and removed again with nothing else there: no directory of ours is left.
    assert_eq!(sb.run(&a.framescope, &["install"], LIMIT).code(), Some(0));
    let out = sb.run(&a.framescope, &["uninstall"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(!sb.path("data/vulkan").exists(), "{}", out.describe());
    assert!(sb.path("data").is_dir(), "the data directory itself stays");
}

#[test]
fn get_device_proc_addr_is_null_for_extensions_the_app_did_not_enable() {
    let a = Artifacts::get();
    let mut sb = Sandbox::new("gdpa");
    sb.with_validation();
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
    let v: serde_json::Value = serde_json::from_str(line.trim_start_matches("gdpa-probe ")).expect("probe JSON");
    let without = &v[0];
    let with = &v[1];
    assert_eq!(without["device"], "without_swapchain");
    for cmd in ["vkQueuePresentKHR", "vkCreateSwapchainKHR"] {
        assert_eq!(
            without[cmd]["layer"], false,
            "{cmd} not NULL through the layer without VK_KHR_swapchain: {line}"
        );
        assert_eq!(
            without[cmd]["loader"], false,
            "{cmd} not NULL through the loader: {line}"
        );
        assert_eq!(
            with[cmd]["layer"], true,
            "{cmd} NULL although VK_KHR_swapchain is enabled: {line}"
        );
        assert_eq!(with[cmd]["layer_in_layer_so"], true, "{cmd} is not our hook: {line}");
    }
    assert_eq!(
        without["vkQueueSubmit"]["layer_in_layer_so"], true,
        "core commands are hooked: {line}"
    );
}

#[test]
fn layer_exports_only_the_loader_entry_points() {
    require_program("nm");
    let a = Artifacts::get();
    let out = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&a.vk_layer)
        .output()
        .expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut exported: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "T" | "D" | "B" | "W" | "V" | "R").then_some(name)
        })
        .collect();
    exported.sort_unstable();
    assert_eq!(
        exported,
        [
            "vkGetDeviceProcAddr",
            "vkGetInstanceProcAddr",
            "vkNegotiateLoaderLayerInterfaceVersion"
        ]
    );
}

#[test]
fn an_internal_failure_is_logged_once_and_the_app_runs_on() {
    require_program("vkcube");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("fault");
    sb.display(&x).with_validation().set("FRAMESCOPE_FAULT", "present");
    let out = sb.run_under_framescope(&a, "vkcube", &["--c", "60"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("fault injection", &out.combined());
    let errors = out.lines_with("framescope: internal error in vkQueuePresentKHR");
    assert_eq!(errors.len(), 1, "{}", out.describe());
    assert!(
        !out.stderr.contains("panicked at"),
        "the panic leaked to the default hook:\n{}",
        out.stderr
    );
}

#[test]
fn our_test_app_with_threads_secondaries_and_labels_is_validation_clean() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("testapp");
    sb.display(&x).with_validation();
    let app = a.testapp.display().to_string();
    for args in [
        &["--frames", "60", "--threads", "4", "--secondary", "--scene", "regions"][..],
        &["--frames", "60", "--reuse", "--simultaneous", "--resubmit-twice"][..],
        &["--frames", "60", "--windows", "2", "--submits", "3", "--submit2"][..],
    ] {
        let out = sb.run_under_framescope(&a, &app, args, LIMIT);
        assert_eq!(out.code(), Some(0), "{args:?}\n{}", out.describe());
        validation::assert_clean(&format!("testapp {args:?}"), &out.combined());
        assert_eq!(presents_reported(&out), vec![60], "{args:?}\n{}", out.describe());
    }
}

#[test]
fn vulkaninfo_runs_through_the_layer() {
    require_program("vulkaninfo");
    let a = Artifacts::get();
    let mut sb = Sandbox::new("vulkaninfo");
    sb.with_validation();
    let out = sb.run_under_framescope(&a, "vulkaninfo", &["--summary"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(out.stdout.contains("llvmpipe"), "{}", out.describe());
    validation::assert_clean("vulkaninfo", &out.combined());
}
