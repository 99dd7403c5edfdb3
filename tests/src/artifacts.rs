//! Locations of what `cargo build --workspace` produced.

use std::path::{Path, PathBuf};

pub struct Artifacts {
    pub bin_dir: PathBuf,
    pub framescope: PathBuf,
    pub vk_layer: PathBuf,
    /// The GL LD_PRELOAD shim.
    pub gl_shim: PathBuf,
    pub testapp: PathBuf,
    pub gdpa_probe: PathBuf,
    /// Our GL test app (`tests/glapp`).
    pub glapp: PathBuf,
}

impl Artifacts {
    /// The debug build in the workspace's target dir (or `CARGO_TARGET_DIR`). Panics with the
    /// command to run when something is missing: tests never skip silently.
    pub fn get() -> Artifacts {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
        let profile = std::env::var("FRAMESCOPE_TEST_PROFILE").unwrap_or_else(|_| "debug".into());
        let bin_dir = target.join(profile);
        let a = Artifacts {
            framescope: bin_dir.join("framescope"),
            vk_layer: bin_dir.join("libframescope_vk.so"),
            gl_shim: bin_dir.join("libframescope_gl.so"),
            testapp: bin_dir.join("framescope-testapp"),
            gdpa_probe: bin_dir.join("gdpa_probe"),
            glapp: bin_dir.join("framescope-glapp"),
            bin_dir,
        };
        for p in [
            &a.framescope,
            &a.vk_layer,
            &a.gl_shim,
            &a.testapp,
            &a.gdpa_probe,
            &a.glapp,
        ] {
            assert!(
                p.is_file(),
                "{} is missing: run `cargo build --workspace` first (`cargo xtask test` does)",
                p.display()
            );
        }
        a
    }
}

/// Panics unless `program` is on PATH: a missing dependency is a failure, never a skip.
pub fn require_program(program: &str) {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
        .unwrap_or(false);
    assert!(found, "'{program}' is not installed: run `cargo xtask install-deps`");
}

/// The 32-bit layer and shim (`cargo build --target i686-unknown-linux-gnu`) and the 32-bit
/// apps `cargo xtask install-deps` provides: Debian's i386 glxgears beside the 64-bit one, and
/// an i386 vkcube unpacked under `target/i386/root` (its package is not multi-arch).
pub struct Artifacts32 {
    pub vk_layer: PathBuf,
    pub gl_shim: PathBuf,
    pub vkcube: PathBuf,
    pub glxgears: PathBuf,
}

impl Artifacts32 {
    /// Panics with the command to run when something is missing.
    pub fn get() -> Artifacts32 {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
        let profile = std::env::var("FRAMESCOPE_TEST_PROFILE").unwrap_or_else(|_| "debug".into());
        let bin_dir = target.join("i686-unknown-linux-gnu").join(profile);
        let a = Artifacts32 {
            vk_layer: bin_dir.join("libframescope_vk.so"),
            gl_shim: bin_dir.join("libframescope_gl.so"),
            vkcube: target.join("i386/root/usr/bin/vkcube"),
            glxgears: PathBuf::from("/usr/bin/glxgears.i386-linux-gnu"),
        };
        for p in [&a.vk_layer, &a.gl_shim] {
            assert!(
                p.is_file(),
                "{} is missing: run `cargo build --target i686-unknown-linux-gnu -p framescope-vk -p framescope-gl` (`cargo xtask test` does)",
                p.display()
            );
        }
        for p in [&a.vkcube, &a.glxgears] {
            assert!(
                p.is_file(),
                "{} is missing: run `cargo xtask install-deps` (as root)",
                p.display()
            );
        }
        a
    }
}
