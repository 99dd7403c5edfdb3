//! The workspace's root and running cargo in it, for every task.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

pub fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_env(args, &[])
}

pub fn cargo_env(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("xtask: {}cargo {}", shown.concat(), args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// The release build of the two layers and the CLI (and of `extra` packages).
pub fn build_release(extra: &[&str]) -> Result<(), String> {
    let mut args = vec!["build", "--release"];
    for p in ["framescope-vk", "framescope-gl", "framescope-cli"].iter().chain(extra) {
        args.extend(["-p", p]);
    }
    cargo(&args)
}

/// Whether `package` (`name` for this machine's architecture, `name:i386` for another) is
/// installed. dpkg-query lists every architecture of a multi-arch package under its bare
/// name, so the line of the one asked for is picked out.
pub fn is_installed(package: &str) -> bool {
    let Ok(o) = std::process::Command::new("dpkg-query")
        .args([
            "-W",
            "-f=${binary:Package}\t${Architecture}\t${db:Status-Status}\n",
            package,
        ])
        .output()
    else {
        return false;
    };
    let native = String::from_utf8_lossy(
        &std::process::Command::new("dpkg")
            .arg("--print-architecture")
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default(),
    )
    .trim()
    .to_string();
    let want = package.split_once(':').map(|(_, a)| a.to_string());
    String::from_utf8_lossy(&o.stdout).lines().any(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        let arch_ok = match (&want, f.get(1)) {
            (Some(w), Some(a)) => a == w,
            (None, Some(a)) => *a == native || *a == "all",
            _ => false,
        };
        arch_ok && f.get(2) == Some(&"installed")
    })
}

/// Runs `program args` non-interactively (apt, dpkg); its output goes to ours.
pub fn run_noninteractive(program: &str, args: &[&str]) -> Result<(), String> {
    let status = std::process::Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| format!("{program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} {} failed ({status})", args.join(" ")))
    }
}
