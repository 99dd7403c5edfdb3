//! What each task installs: the demo only what the demo runs (the Vulkan loader, lavapipe,
//! vkcube, Xvfb); the tests that and the test set (third-party apps, the validation layer,
//! tools), the PyPI packages of the `framescope export` tests (Perfetto and Parquet readers,
//! with `python3 -m pip`) and the 32-bit set (`deps32`). Debian packages go through `apt`.

use std::process::Command;

/// The Debian packages `cargo xtask demo` runs: vkcube (vulkan-tools) on lavapipe
/// (mesa-vulkan-drivers) through the loader, under Xvfb when there is no display. The HUD's
/// font ships in the binary (the `dejavu` crate), so no font package.
pub const DEMO: &[&str] = &["libvulkan1", "mesa-vulkan-drivers", "vulkan-tools", "xvfb"];

/// What the tests need beyond the demo's packages.
pub const TEST_ONLY: &[&str] = &[
    "vulkan-validationlayers",
    "libvulkan-dev",
    "xauth",
    "mesa-utils",
    "mesa-utils-bin",
    "glmark2-x11",
    "glmark2-es2-x11",
    "glmark2-data",
    "x11-utils",
    "x11-apps",
    "xdotool",
    "imagemagick",
    "binutils",
    // Third-party apps the hardening tests run under framescope (tests/tests/third_party_*.rs,
    // piglit.rs, zink.rs); gcc builds piglit.rs's swap preload.
    "vkd3d-demos",
    "mpv",
    "piglit",
    "mangohud",
    "vkbasalt",
    "gcc",
    // A headless Wayland compositor and an EGL Wayland app for the Wayland display-time tests
    // (tests/tests/wayland_presentation.rs, tests/src/weston.rs).
    "weston",
    "glmark2-es2-wayland",
    // Where a Wayland app's main thread waits while its compositor is stopped
    // (tests/tests/wayland_apps.rs).
    "gdb",
    // The X server weston starts for X11 clients (`--xwayland`, tests/tests/wayland_apps.rs).
    "xwayland",
    // A headless compositor with the virtual-keyboard protocol and a client that types
    // through it, for the Wayland toggle-key test (tests/tests/keys_wayland.rs, tests/src/sway.rs).
    "sway",
    "wtype",
    // The text of `framescope plot`'s PNG files (tests/tests/compare.rs).
    "fonts-dejavu-core",
    // Opens `report --html` pages headless (tests/tests/report_html.rs).
    "chromium",
    // The second browser the pages must open in, driven over WebDriver BiDi
    // (tests/tests/report_html_firefox.rs; its client: `websockets` in PYPI below).
    "firefox-esr",
    // Runs tests/tests/export_perfetto.py (its packages: PYPI below).
    "python3",
    "python3-pip",
];

/// tests/tests/export.rs decodes the exported trace with Perfetto's own generated protobuf
/// classes, which the `perfetto` package ships (`perfetto_trace_pb2`); they need the protobuf
/// runtime they were generated for (6.31.1) or a later 6.x. Debian's python3-protobuf is 3.21.
/// `pyarrow` reads the `--parquet` export back (tests/tests/export_parquet.py); `duckdb` runs
/// the farm query the HTML farm view must agree with (tests/tests/report_html_duckdb.py);
/// `websockets` (13 brought its asyncio client) speaks WebDriver BiDi to Firefox
/// (tests/tests/report_html_bidi.py).
pub const PYPI: &[&str] = &[
    "perfetto==0.59.1",
    "protobuf>=6.31.1,<7",
    "pyarrow>=14",
    "duckdb>=1",
    "websockets>=13",
];

/// Imported by the test: when this works, nothing is installed.
const PYPI_CHECK: &str =
    "import google.protobuf, perfetto.protos.perfetto.trace.perfetto_trace_pb2, pyarrow.parquet, duckdb, \
     websockets.asyncio.client";

fn install_pypi() -> Result<(), String> {
    let python = std::env::var("FRAMESCOPE_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let works = || {
        Command::new(&python)
            .args(["-c", PYPI_CHECK])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if works() {
        return Ok(());
    }
    eprintln!("xtask: installing {} with {python} -m pip", PYPI.join(" "));
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "-q"])
        .args(PYPI)
        .status()
        .map_err(|e| format!("{python} -m pip: {e}"))?;
    if status.success() && works() {
        Ok(())
    } else {
        Err(format!(
            "could not install the PyPI packages for the export test; run:\n  {python} -m pip install {}",
            PYPI.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>().join(" ")
        ))
    }
}

/// Which task installs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Task {
    Demo,
    Test,
}

/// What a task installs.
#[derive(Debug)]
pub struct Plan {
    pub debian: Vec<&'static str>,
    pub pypi: &'static [&'static str],
    /// The Rust target, i386 packages and 32-bit vkcube of the 32-bit builds (`deps32`).
    pub bits32: bool,
}

pub fn plan(task: Task) -> Plan {
    match task {
        Task::Demo => Plan {
            debian: DEMO.to_vec(),
            pypi: &[],
            bits32: false,
        },
        Task::Test => Plan {
            debian: DEMO.iter().chain(TEST_ONLY).copied().collect(),
            pypi: PYPI,
            bits32: true,
        },
    }
}

fn why(task: Task) -> &'static str {
    match task {
        Task::Demo => "the demo",
        Task::Test => "the tests",
    }
}

/// Installs what `task` needs and is missing.
pub fn install_for(task: Task) -> Result<(), String> {
    let p = plan(task);
    crate::apt::ensure(why(task), &p.debian)?;
    if !p.pypi.is_empty() {
        install_pypi()?;
    }
    if p.bits32 {
        crate::deps32::install()?;
    }
    Ok(())
}

/// Everything the tests need (the demo's packages among them).
pub fn install() -> Result<(), String> {
    install_for(Task::Test)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new user's `cargo xtask demo` waits for nothing it does not run: none of the test
    /// set, no PyPI, no 32-bit set; and the tests install all the demo does.
    #[test]
    fn the_demo_installs_no_test_only_package() {
        let demo = plan(Task::Demo);
        let test = plan(Task::Test);
        for p in &demo.debian {
            assert!(!TEST_ONLY.contains(p), "the demo installs the test-only package {p}");
            assert!(
                !p.contains(':'),
                "the demo installs the foreign-architecture package {p}"
            );
            assert!(test.debian.contains(p), "the tests do not install the demo's {p}");
        }
        assert!(demo.pypi.is_empty() && !demo.bits32);
        assert!(test.bits32 && !test.pypi.is_empty());
        for p in crate::deps32::PACKAGES {
            assert!(!demo.debian.contains(p), "the demo installs the 32-bit package {p}");
        }
    }

    #[test]
    fn no_package_is_listed_twice() {
        let all = plan(Task::Test).debian;
        for (i, p) in all.iter().enumerate() {
            assert!(!all[i + 1..].contains(p), "{p} is listed twice");
        }
    }
}
