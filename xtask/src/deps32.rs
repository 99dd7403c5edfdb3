//! What the 32-bit builds and their tests need: the Rust target `i686-unknown-linux-gnu`,
//! Debian's i386 multiarch packages (a C and C++ compiler for 32-bit code, the 32-bit Vulkan
//! loader, lavapipe, llvmpipe, GL, the validation layer and glxgears), and a 32-bit vkcube,
//! whose package cannot be installed beside the 64-bit one (`vulkan-tools` is not multi-arch),
//! unpacked with `dpkg -x` under `target/i386`. The packages go through `apt`, which pairs
//! each with its native twin's version (`multiarch`).

use crate::shell::{root, run_noninteractive as run};
use std::path::PathBuf;
use std::process::Command;

/// The cargo target of the 32-bit layers.
pub const TARGET: &str = "i686-unknown-linux-gnu";

/// The i386 packages (multi-arch: same) the 32-bit tests load, and the 64-bit compilers'
/// 32-bit halves.
pub const PACKAGES: &[&str] = &[
    "gcc-multilib",
    "g++-multilib",
    "libvulkan1:i386",
    "mesa-vulkan-drivers:i386",
    "libgl1:i386",
    "libglx-mesa0:i386",
    "libgl1-mesa-dri:i386",
    "vulkan-validationlayers:i386",
    // glxgears.i386-linux-gnu, beside the 64-bit one.
    "mesa-utils-bin:i386",
    // The unpacked 32-bit vkcube's own dependencies.
    "libwayland-client0:i386",
    "libx11-6:i386",
    "libxcb1:i386",
    "libstdc++6:i386",
    "libgcc-s1:i386",
    // The Wayland key reader's keymaps: collectors' tests compile one with the real library,
    // and they run built for i686 too (`CRATES32_TEST`).
    "libxkbcommon0:i386",
];

/// Where the 32-bit vkcube is unpacked (`<root>/usr/bin/vkcube`); the tests read it here.
pub fn apps_root() -> PathBuf {
    root().join("target/i386/root")
}

fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn rust_target() -> Result<(), String> {
    if output("rustup", &["target", "list", "--installed"])
        .lines()
        .any(|l| l.trim() == TARGET)
    {
        return Ok(());
    }
    eprintln!("xtask: adding the Rust target {TARGET}");
    run("rustup", &["target", "add", TARGET]).map_err(|e| format!("{e}; run:\n  rustup target add {TARGET}"))
}

/// The 32-bit vkcube, unpacked from Debian's `vulkan-tools:i386`.
fn vkcube() -> Result<(), String> {
    let apps = apps_root();
    if apps.join("usr/bin/vkcube").is_file() {
        return Ok(());
    }
    let dir = root().join("target/i386");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    eprintln!(
        "xtask: unpacking a 32-bit vkcube (vulkan-tools:i386) under {}",
        apps.display()
    );
    // apt-get download writes into the working directory, as the `_apt` user where it can.
    let status = Command::new("apt-get")
        .args(["download", "-q", "vulkan-tools:i386"])
        .current_dir(&dir)
        .status()
        .map_err(|e| format!("apt-get download: {e}"))?;
    if !status.success() {
        return Err(format!(
            "apt-get download vulkan-tools:i386 failed ({status}); with the i386 architecture added \
             (dpkg --add-architecture i386 && apt-get update), run in {}:\n  apt-get download vulkan-tools:i386 && dpkg -x vulkan-tools_*_i386.deb root",
            dir.display()
        ));
    }
    let deb = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vulkan-tools_") && n.ends_with("_i386.deb"))
        })
        .ok_or("apt-get download left no vulkan-tools_*_i386.deb")?;
    run("dpkg", &["-x", &deb.display().to_string(), &apps.display().to_string()])?;
    if apps.join("usr/bin/vkcube").is_file() {
        Ok(())
    } else {
        Err(format!("{} has no usr/bin/vkcube", deb.display()))
    }
}

/// Everything the 32-bit build and tests need.
pub fn install() -> Result<(), String> {
    rust_target()?;
    crate::apt::ensure("the 32-bit tests", PACKAGES)?;
    vkcube()
}
