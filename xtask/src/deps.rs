//! The Debian packages the demo and tests need; installed when root, else the exact command
//! is printed and the task fails (a missing dependency is never a silent skip). Also the PyPI
//! packages of the `framescope export` test (Perfetto and Parquet readers), installed with
//! `python3 -m pip`.

use std::process::Command;

pub const PACKAGES: &[&str] = &[
    "mesa-vulkan-drivers",
    "vulkan-tools",
    "vulkan-validationlayers",
    "libvulkan-dev",
    "libvulkan1",
    "xvfb",
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
    // The text of `framescope plot`'s PNG files (tests/tests/compare.rs).
    "fonts-dejavu-core",
    // Runs tests/tests/export_perfetto.py (its packages: PYPI below).
    "python3",
    "python3-pip",
];

/// tests/tests/export.rs decodes the exported trace with Perfetto's own generated protobuf
/// classes, which the `perfetto` package ships (`perfetto_trace_pb2`); they need the protobuf
/// runtime they were generated for (6.31.1) or a later 6.x. Debian's python3-protobuf is 3.21.
/// `pyarrow` reads the `--parquet` export back (tests/tests/export_parquet.py).
pub const PYPI: &[&str] = &["perfetto==0.59.1", "protobuf>=6.31.1,<7", "pyarrow>=14"];

/// Imported by the test: when this works, nothing is installed.
const PYPI_CHECK: &str = "import google.protobuf, perfetto.protos.perfetto.trace.perfetto_trace_pb2, pyarrow.parquet";

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

fn missing() -> Vec<&'static str> {
    PACKAGES
        .iter()
        .copied()
        .filter(|p| !crate::shell::is_installed(p))
        .collect()
}

pub fn install() -> Result<(), String> {
    install_debian()?;
    install_pypi()?;
    crate::deps32::install()
}

fn install_debian() -> Result<(), String> {
    let missing = missing();
    if missing.is_empty() {
        return Ok(());
    }
    let line = format!("apt-get install -y --no-install-recommends {}", missing.join(" "));
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "missing Debian packages; run as root:\n  sudo apt-get update && sudo {line}"
        ));
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    let run = |args: &[&str]| crate::shell::run_noninteractive("apt-get", args);
    // A mirror caught mid-sync fails one index; the install below says whether what we need
    // was found anyway.
    if let Err(e) = run(&["update", "-q"]) {
        eprintln!("xtask: {e}; installing from the indexes there are");
    }
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    run(&args)?;
    let still = self::missing();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!("still missing after apt-get: {}", still.join(" ")))
    }
}
