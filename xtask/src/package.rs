//! `cargo xtask package [--debug]`: a Debian package and a tarball of the same tree, holding
//! the CLI, both architectures' Vulkan layer and GL shim under `/usr/lib/<multiarch>/framescope`,
//! the layer manifests (naming the library through ld.so's `$LIB`, so one manifest serves 32-
//! and 64-bit apps), the manual pages, shell completions and the README. Nothing runs at
//! install or removal: the package's files are all it puts on the system.
//!
//! `--debug` packages the debug builds `cargo xtask test` already made (for the package test,
//! tests/tests/package.rs); the default is a release build. Both are stripped.

use crate::deps32::TARGET;
use crate::shell::{cargo, root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The layer manifests' file name, as the loader lists it.
const MANIFEST: &str = "VK_LAYER_FRAMESCOPE_overlay.json";
/// Debian's multiarch directories (`$LIB` of each class on Debian and Ubuntu).
const LIB64: &str = "usr/lib/x86_64-linux-gnu/framescope";
const LIB32: &str = "usr/lib/i386-linux-gnu/framescope";
/// What the manifests name: `$LIB` is expanded by ld.so in the path the loader dlopens.
const LIBRARY_PATH: &str = "/usr/$LIB/framescope/libframescope_vk.so";

fn run(program: &str, args: &[&str], dir: Option<&Path>) -> Result<Vec<u8>, String> {
    let mut c = Command::new(program);
    c.args(args);
    if let Some(d) = dir {
        c.current_dir(d);
    }
    let out = c.output().map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn version() -> Result<String, String> {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).map_err(|e| format!("Cargo.toml: {e}"))?;
    let mut in_package = false;
    for line in toml.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_package = l == "[workspace.package]";
        } else if in_package {
            if let Some(v) = l.strip_prefix("version") {
                return Ok(v.trim_start_matches([' ', '=']).trim().trim_matches('"').to_string());
            }
        }
    }
    Err("no version in [workspace.package] of Cargo.toml".into())
}

fn write(path: &Path, contents: &[u8], mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let at = |e: std::io::Error| format!("{}: {e}", path.display());
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(path, contents).map_err(at)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(at)
}

/// Copies a built binary into the tree without its debug sections and symbols.
fn install_stripped(from: &Path, to: &Path) -> Result<(), String> {
    if !from.is_file() {
        return Err(format!(
            "{} is missing (the build above should have made it)",
            from.display()
        ));
    }
    write(to, &[], 0o755)?;
    run(
        "strip",
        &[
            "--strip-unneeded",
            "-o",
            &to.display().to_string(),
            &from.display().to_string(),
        ],
        None,
    )?;
    Ok(())
}

fn control(version: &str, installed_kib: u64) -> String {
    format!(
        "Package: framescope
Version: {version}
Architecture: amd64
Maintainer: framescope developers <framescope@example.invalid>
Installed-Size: {installed_kib}
Depends: libc6 (>= 2.34)
Recommends: libvulkan1
Section: devel
Priority: optional
Description: GPU profiling overlay for Vulkan and OpenGL apps
 framescope measures any Vulkan or OpenGL app live: frame times, GPU time per
 frame, render pass and debug region, pipeline statistics and hardware counters
 (NVIDIA NVML, GPM and PM sampling; driver counters), drawn in a HUD in the
 app's own window and written as JSON Lines dumps that its CLI reports,
 compares, plots and exports.
 .
 The Vulkan layer is an implicit layer enabled per app with FRAMESCOPE=1 (or
 through `framescope run`); the package ships it and the OpenGL shim for 64-bit
 and 32-bit apps (the 32-bit ones need the i386 C library, libc6:i386).
"
    )
}

fn du_kib(dir: &Path) -> u64 {
    fn walk(p: &Path) -> u64 {
        let Ok(m) = std::fs::symlink_metadata(p) else { return 0 };
        if m.is_dir() {
            std::fs::read_dir(p)
                .map(|r| r.filter_map(Result::ok).map(|e| walk(&e.path())).sum())
                .unwrap_or(0)
        } else {
            m.len().div_ceil(1024)
        }
    }
    walk(dir)
}

/// Builds the tree under `out/root`, then `out/framescope_<v>_amd64.deb` and
/// `out/framescope-<v>-linux-x86_64.tar.xz`; returns both paths.
pub fn build(debug: bool) -> Result<(PathBuf, PathBuf), String> {
    let profile = if debug { "debug" } else { "release" };
    let mut args64 = vec![
        "build",
        "-p",
        "framescope-vk",
        "-p",
        "framescope-gl",
        "-p",
        "framescope-cli",
    ];
    let mut args32 = vec![
        "build",
        "--target",
        TARGET,
        "-p",
        "framescope-vk",
        "-p",
        "framescope-gl",
    ];
    if !debug {
        args64.push("--release");
        args32.push("--release");
    }
    cargo(&args64)?;
    cargo(&args32)?;

    let version = version()?;
    let target = root().join("target");
    let built64 = target.join(profile);
    let built32 = target.join(TARGET).join(profile);
    let out = target.join("package").join(profile);
    let tree = out.join("root");
    if tree.exists() {
        std::fs::remove_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
    }

    install_stripped(&built64.join("framescope"), &tree.join("usr/bin/framescope"))?;
    for lib in ["libframescope_vk.so", "libframescope_gl.so"] {
        install_stripped(&built64.join(lib), &tree.join(LIB64).join(lib))?;
        install_stripped(&built32.join(lib), &tree.join(LIB32).join(lib))?;
    }
    for (kind, template) in [
        ("implicit", "VK_LAYER_FRAMESCOPE_overlay.implicit.json.in"),
        ("explicit", "VK_LAYER_FRAMESCOPE_overlay.explicit.json.in"),
    ] {
        let t = std::fs::read_to_string(root().join("manifests").join(template))
            .map_err(|e| format!("manifests/{template}: {e}"))?;
        let m = t.replace("@LIBRARY_PATH@", LIBRARY_PATH);
        write(
            &tree.join(format!("usr/share/vulkan/{kind}_layer.d")).join(MANIFEST),
            m.as_bytes(),
            0o644,
        )?;
    }

    // Manual pages and completions from the CLI just built (its clap definitions).
    let cli = tree.join("usr/bin/framescope");
    let man = tree.join("usr/share/man/man1");
    std::fs::create_dir_all(&man).map_err(|e| format!("{}: {e}", man.display()))?;
    run(
        &cli.display().to_string(),
        &["manpages", &man.display().to_string()],
        None,
    )?;
    let pages: Vec<PathBuf> = std::fs::read_dir(&man)
        .map_err(|e| format!("{}: {e}", man.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    for p in pages {
        // -n: no name or time in the header, so two builds give the same bytes.
        run("gzip", &["-9n", &p.display().to_string()], None)?;
    }
    for (shell, dest) in [
        ("bash", "usr/share/bash-completion/completions/framescope"),
        ("zsh", "usr/share/zsh/vendor-completions/_framescope"),
        ("fish", "usr/share/fish/vendor_completions.d/framescope.fish"),
    ] {
        let script = run(&cli.display().to_string(), &["completions", shell], None)?;
        write(&tree.join(dest), &script, 0o644)?;
    }
    let doc = tree.join("usr/share/doc/framescope");
    let readme = std::fs::read(root().join("README.md")).map_err(|e| format!("README.md: {e}"))?;
    write(&doc.join("README.md"), &readme, 0o644)?;
    write(
        &doc.join("copyright"),
        b"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: framescope\n\nFiles: *\nCopyright: framescope developers\nLicense: MIT or Apache-2.0\n",
        0o644,
    )?;

    // The tarball holds the same tree, without the package's control data.
    let tarball = out.join(format!("framescope-{version}-linux-x86_64.tar.xz"));
    run(
        "tar",
        &[
            "--sort=name",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "-C",
            &tree.display().to_string(),
            "-cJf",
            &tarball.display().to_string(),
            "usr",
        ],
        None,
    )?;

    let kib = du_kib(&tree);
    write(&tree.join("DEBIAN/control"), control(&version, kib).as_bytes(), 0o644)?;
    let deb = out.join(format!("framescope_{version}_amd64.deb"));
    run(
        "dpkg-deb",
        &[
            "--root-owner-group",
            "-Zxz",
            "--build",
            &tree.display().to_string(),
            &deb.display().to_string(),
        ],
        None,
    )?;
    Ok((deb, tarball))
}

/// `cargo xtask package [--debug]`: builds and prints what it made, with sizes.
pub fn package(args: &[String]) -> Result<(), String> {
    let debug = match args {
        [] => false,
        [a] if a == "--debug" => true,
        _ => return Err("package takes no arguments but --debug".into()),
    };
    let (deb, tarball) = build(debug)?;
    for p in [&deb, &tarball] {
        let size = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?.len();
        println!("{} ({:.1} MiB)", p.display(), size as f64 / (1024.0 * 1024.0));
    }
    Ok(())
}
