//! The fuzz targets, run by `cargo xtask test` for a fixed time each (`cargo xtask fuzz
//! [SECONDS]` alone): the counter equations, Mali kbase samples and Intel OA records
//! (`collectors/fuzz`), and the config parser, the control socket's request parser and the
//! CLI's dump readers (`fuzz/`).
//!
//! Built with nightly as `cargo fuzz` builds them (libFuzzer through `libfuzzer-sys`,
//! sanitizer coverage instrumentation), without AddressSanitizer: the targets are safe code on
//! byte slices, where a bug shows as a panic, which libFuzzer reports as a crash. A crash fails
//! the task; the input is saved under `target/fuzz/artifacts/TARGET/` and printed in hex, so a
//! CI log alone is enough to reproduce it. Each target's corpus is kept in
//! `target/fuzz/corpus/TARGET/` between local runs.

use std::path::Path;
use std::process::Command;

/// (workspace manifest, target names).
const WORKSPACES: &[(&str, &[&str])] = &[
    (
        "collectors/fuzz/Cargo.toml",
        &["parse_equation", "kbase_sample", "oa_records"],
    ),
    ("fuzz/Cargo.toml", &["config_parse", "ctl_request", "dump_reader"]),
];
const TARGET: &str = "x86_64-unknown-linux-gnu";
/// Seconds each target runs in `cargo xtask test`.
pub const CI_SECONDS: u32 = 60;

const RUSTFLAGS: &str = "-Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing -Cdebug-assertions -Coverflow-checks";

fn build(root: &Path, manifest: &str) -> Result<(), String> {
    eprintln!("xtask: fuzz: building {manifest} (nightly, libFuzzer)");
    let status = Command::new("cargo")
        .args([
            "+nightly",
            "build",
            "--release",
            "--bins",
            "--target",
            TARGET,
            "--manifest-path",
            manifest,
        ])
        .env("RUSTFLAGS", RUSTFLAGS)
        .env("CARGO_TARGET_DIR", root.join("target/fuzz"))
        .current_dir(root)
        .status()
        .map_err(|e| format!("cargo +nightly: {e} (the fuzz targets need the nightly toolchain)"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("building the fuzz targets of {manifest} failed ({status})"))
    }
}

/// Prints the crashing inputs libFuzzer saved, in hex (at most 4 KiB each).
fn show_artifacts(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let Ok(bytes) = std::fs::read(e.path()) else { continue };
        let hex: String = bytes.iter().take(4096).map(|b| format!("{b:02x}")).collect();
        eprintln!(
            "xtask: fuzz: input saved at {} ({} bytes): {hex}{}",
            e.path().display(),
            bytes.len(),
            if bytes.len() > 4096 { "…" } else { "" }
        );
    }
}

fn run_target(root: &Path, name: &str, seconds: u32) -> Result<(), String> {
    let bin = root.join("target/fuzz").join(TARGET).join("release").join(name);
    let corpus = root.join("target/fuzz/corpus").join(name);
    let artifacts = root.join("target/fuzz/artifacts").join(name);
    for d in [&corpus, &artifacts] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    eprintln!("xtask: fuzz: {name} for {seconds} s");
    let out = Command::new(&bin)
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-rss_limit_mb=2048")
        .arg("-print_final_stats=1")
        .arg(&corpus)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let execs = log
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .map_or("?".into(), |v| v.trim().to_string());
        eprintln!("xtask: fuzz: {name}: no crash in {execs} executions");
        return Ok(());
    }
    // The end of libFuzzer's report: the panic message and the stack.
    let tail: Vec<&str> = log.lines().rev().take(60).collect();
    for l in tail.iter().rev() {
        eprintln!("  {l}");
    }
    show_artifacts(&artifacts);
    Err(format!("fuzz target {name} crashed ({})", out.status))
}

/// Builds every fuzz target and runs each for `seconds`; all run even when one crashes.
pub fn fuzz(seconds: u32) -> Result<(), String> {
    let root = crate::shell::root();
    for (manifest, _) in WORKSPACES {
        build(&root, manifest)?;
    }
    let failed: Vec<String> = WORKSPACES
        .iter()
        .flat_map(|(_, names)| names.iter())
        .filter_map(|name| run_target(&root, name, seconds).err())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}
