//! The Debian package `cargo xtask package` makes (here the debug build's, which `cargo xtask
//! test` packages before the tests): installed with `dpkg -i`, its implicit layer enabled by
//! `FRAMESCOPE=1` loads into a 64-bit and a 32-bit vkcube (one manifest, `$LIB`), the installed
//! `framescope run` gives a 32-bit glxgears the 32-bit shim, and `dpkg --purge` leaves the
//! system's files as they were (a list of /usr, /etc and /opt before and after).
//!
//! Needs root (dpkg); it runs alone in its test binary, and nothing else in the suite sets
//! `FRAMESCOPE=1` while it is installed (other test binaries run before or after this one).

use framescope_tests::artifacts::{require_program, Artifacts32};
use framescope_tests::{dump, Sandbox, Xvfb};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const PACKAGE: &str = "framescope";

/// The .deb of the debug build (`cargo xtask package --debug`).
fn deb() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/package/debug");
    std::fs::read_dir(&dir)
        .ok()
        .and_then(|r| {
            r.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "deb"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no .deb in {}: run `cargo xtask package --debug` (`cargo xtask test` does)",
                dir.display()
            )
        })
}

/// Every path under the directories a package may touch, links and directories included.
fn system_files() -> BTreeSet<PathBuf> {
    fn walk(p: &Path, out: &mut BTreeSet<PathBuf>) {
        out.insert(p.to_path_buf());
        let Ok(m) = std::fs::symlink_metadata(p) else { return };
        if m.is_dir() {
            if let Ok(r) = std::fs::read_dir(p) {
                for e in r.filter_map(Result::ok) {
                    walk(&e.path(), out);
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for d in ["/usr", "/etc", "/opt"] {
        walk(Path::new(d), &mut out);
    }
    out
}

fn dpkg(args: &[&str]) -> std::process::Output {
    Command::new("dpkg")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .expect("dpkg runs")
}

/// Purges the package when the test ends, passing or not.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = dpkg(&["--purge", PACKAGE]);
    }
}

#[test]
fn the_package_installs_serves_64_and_32_bit_apps_and_purges_without_a_trace() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "dpkg -i needs root");
    require_program("dpkg");
    require_program("vkcube");
    let a32 = Artifacts32::get();
    let deb = deb();
    assert!(
        !dpkg(&["-s", PACKAGE]).status.success(),
        "{PACKAGE} is already installed here; purge it before running this test"
    );

    let before = system_files();
    let out = dpkg(&["-i", &deb.display().to_string()]);
    let _installed = Installed;
    assert!(
        out.status.success(),
        "dpkg -i: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&dpkg(&["-L", PACKAGE]).stdout).into_owned();
    for f in [
        "/usr/bin/framescope",
        "/usr/lib/x86_64-linux-gnu/framescope/libframescope_vk.so",
        "/usr/lib/i386-linux-gnu/framescope/libframescope_vk.so",
        "/usr/lib/x86_64-linux-gnu/framescope/libframescope_gl.so",
        "/usr/lib/i386-linux-gnu/framescope/libframescope_gl.so",
        "/usr/share/vulkan/implicit_layer.d/VK_LAYER_FRAMESCOPE_overlay.json",
        "/usr/share/vulkan/explicit_layer.d/VK_LAYER_FRAMESCOPE_overlay.json",
        "/usr/share/man/man1/framescope.1.gz",
        "/usr/share/man/man1/framescope-run.1.gz",
        "/usr/share/bash-completion/completions/framescope",
    ] {
        assert!(listed.lines().any(|l| l == f), "{f} not in the package:\n{listed}");
        assert!(Path::new(f).is_file(), "{f} not installed");
    }
    let manifest = std::fs::read_to_string("/usr/share/vulkan/implicit_layer.d/VK_LAYER_FRAMESCOPE_overlay.json")
        .expect("implicit manifest");
    assert!(
        manifest.contains("/usr/$LIB/framescope/libframescope_vk.so"),
        "{manifest}"
    );

    // The installed implicit layer, enabled by its variable, in a 64-bit and a 32-bit vkcube.
    let x = Xvfb::start();
    for (name, vkcube, arch) in [
        ("pkg-vkcube64", PathBuf::from("/usr/bin/vkcube"), "x86_64"),
        ("pkg-vkcube32", a32.vkcube.clone(), "x86"),
    ] {
        let mut sb = Sandbox::new(name);
        let path = sb.path("vkcube.jsonl");
        sb.display(&x)
            .set("FRAMESCOPE", "1")
            .set("FRAMESCOPE_DUMP", path.display().to_string())
            .set("FRAMESCOPE_CONFIG", "hud=1");
        let out = sb.run(&vkcube, &["--c", "60"], LIMIT);
        assert_eq!(out.code(), Some(0), "{name}: {}", out.describe());
        out.assert_no_loader_errors(name);
        let d = dump::read(&path);
        assert_eq!(d.header["process_arch"], arch, "{name}: {}", d.header);
        assert!(d.frames.len() >= 50, "{name}: {} frames", d.frames.len());
        assert!(d.summary.is_some(), "{name}: no summary");
    }

    // The installed CLI finds the installed libraries: `run` gives the 32-bit glxgears the
    // 32-bit shim through $LIB.
    let mut sb = Sandbox::new("pkg-gears32");
    let path = sb.path("gears.jsonl");
    sb.display(&x).set("FRAMESCOPE_DUMP", path.display().to_string());
    let glxgears = a32.glxgears.display().to_string();
    let out = sb.run(
        Path::new("/usr/bin/framescope"),
        &["run", "--", "timeout", "-s", "INT", "3", &glxgears],
        LIMIT,
    );
    assert_eq!(out.code(), Some(124), "timeout ends glxgears: {}", out.describe());
    out.assert_no_loader_errors("installed framescope run, 32-bit glxgears");
    let d = dump::read(&path);
    assert_eq!(d.header["process_arch"], "x86", "{}", d.header);
    assert_eq!(d.header["api"], "opengl", "{}", d.header);
    let doctor = sb.run(Path::new("/usr/bin/framescope"), &["doctor"], LIMIT);
    assert!(
        doctor
            .stdout
            .contains("/usr/lib/x86_64-linux-gnu/framescope/libframescope_vk.so"),
        "doctor names the installed layer:\n{}",
        doctor.describe()
    );

    let out = dpkg(&["--purge", PACKAGE]);
    assert!(
        out.status.success(),
        "dpkg --purge: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = system_files();
    let added: Vec<_> = after.difference(&before).collect();
    let removed: Vec<_> = before.difference(&after).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "after purging, {} paths added ({:?}) and {} removed ({:?})",
        added.len(),
        added.iter().take(20).collect::<Vec<_>>(),
        removed.len(),
        removed.iter().take(20).collect::<Vec<_>>()
    );
}
