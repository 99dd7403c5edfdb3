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
