//! The Debian packages the demo and tests need; installed when root, else the exact command
//! is printed and the task fails (a missing dependency is never a silent skip).

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
];

fn missing() -> Vec<&'static str> {
    PACKAGES
        .iter()
        .copied()
        .filter(|p| {
            let out = Command::new("dpkg-query")
                .args(["-W", "-f=${db:Status-Status}", p])
                .output();
            !matches!(out, Ok(o) if o.status.success() && o.stdout == b"installed")
        })
        .collect()
}

pub fn install() -> Result<(), String> {
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
    let run = |args: &[&str]| -> Result<(), String> {
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| format!("apt-get: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("apt-get {} failed ({status})", args.join(" ")))
        }
    };
    run(&["update", "-q"])?;
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
