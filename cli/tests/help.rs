//! The command line itself: clap's help lists every option, completion scripts are printed,
//! usage errors exit 2 with one bounded first line.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output};

fn framescope<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_framescope"))
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_lists_every_command_and_option() {
    let out = framescope(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for c in [
        "run",
        "install",
        "uninstall",
        "report",
        "compare",
        "plot",
        "export",
        "ctl",
        "counters",
        "completions",
    ] {
        assert!(help.contains(&format!("\n  {c} ")), "{c}: {help}");
    }
    let out = framescope(&["export", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for o in ["--perfetto", "--csv", "--presentmon", "--parquet"] {
        assert!(help.contains(o), "{o}: {help}");
    }
    let help = text(&framescope(&["compare", "--help"]).stdout);
    for o in [
        "--metric",
        "--stat",
        "--threshold",
        "--confidence",
        "--skip-frames",
        "--skip-seconds",
        "--json",
    ] {
        assert!(help.contains(o), "{o}: {help}");
    }
}

#[test]
fn run_help_lists_the_config_keys() {
    let help = text(&framescope(&["run", "--help"]).stdout);
    for k in framescope_core::config::KEYS {
        let line = format!("  {} (default {}): {}\n", k.name, k.default, k.doc);
        assert!(help.contains(&line), "{}: {help}", k.name);
    }
    // The short help stays short.
    assert!(!text(&framescope(&["run", "-h"]).stdout).contains("hud_scale"));
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = framescope(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.len() > 200 && script.contains("framescope"), "{shell}: {script}");
        assert!(
            script.contains("parquet"),
            "{shell}: options of subcommands are completed"
        );
    }
    assert_eq!(framescope(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2_with_a_bounded_first_line() {
    let huge = "x".repeat(100_000);
    let bad = OsStr::from_bytes(b"--\xff\x1b[2J");
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![],
        vec![OsStr::new("nope")],
        vec![OsStr::new(&huge)],
        vec![OsStr::new("report"), OsStr::new("--bogus")],
        vec![OsStr::new("report"), bad],
        vec![OsStr::new("export"), OsStr::new("d.jsonl"), OsStr::new("--csv")],
        vec![
            OsStr::new("compare"),
            OsStr::new("--threshold"),
            OsStr::new("x"),
            OsStr::new("a"),
            OsStr::new("b"),
        ],
        vec![OsStr::new("plot"), OsStr::new("--width"), OsStr::new(&huge)],
        vec![OsStr::new("run")],
    ];
    for args in cases {
        let out = framescope(&args);
        let err = text(&out.stderr);
        let what = format!("{args:?}").chars().take(80).collect::<String>();
        assert_eq!(out.status.code(), Some(2), "{what}: {err:.500}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.len() < 4096, "{what}: {} bytes", err.len());
        assert!(!err.contains('\x1b'), "control characters are escaped: {err}");
        assert!(!err.lines().next().unwrap_or("").is_empty(), "{err}");
    }
}

#[test]
fn the_apps_arguments_are_its_own() {
    // `--c 100` and `--dump` after CMD belong to the app, not to `run`.
    let out = Command::new(env!("CARGO_BIN_EXE_framescope"))
        .args([
            "run",
            "sh",
            "-c",
            "printf '%s ' \"$@\"",
            "sh",
            "--c",
            "100",
            "--dump",
            "x",
            "--",
            "-h",
        ])
        .env("FRAMESCOPE_LIB_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "--c 100 --dump x -- -h ");
}
