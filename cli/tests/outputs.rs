//! Commands that write a file never destroy a file they read: `export` and `plot` with the
//! output named like the dump, or as a hard link to it, refuse in one line and leave the dump
//! byte for byte as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const MS: u64 = 1_000_000;

fn dump_text() -> String {
    let mut lines = vec![
        r#"{"type":"header","schema":"framescope.v1","pid":7,"exe":"/bin/app","api":"vulkan","device":null}"#
            .to_string(),
    ];
    for i in 0..40u64 {
        lines.push(format!(
            r#"{{"type":"frame","frame":{i},"t_ns":{},"cpu_frame_ns":{},"gpu_busy_ns":{},"gpu_span_ns":null,"draws":3,"dispatches":0,"submits":1,"counters":{{}}}}"#,
            1_000 + i * 10 * MS,
            10 * MS + i * 1000,
            2 * MS
        ));
    }
    lines.join("\n") + "\n"
}

fn framescope(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_framescope"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

fn assert_refused_and_kept(out: &Output, dump: &Path, text: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("reads"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dump).unwrap(), text, "the dump was changed");
}

#[test]
fn export_never_empties_the_dump_it_reads() {
    let text = dump_text();
    for format in ["--csv", "--perfetto", "--parquet", "--presentmon"] {
        let dir = Dir::new();
        let dump = dir.path("run.jsonl");
        std::fs::write(&dump, &text).unwrap();
        // The same path.
        let out = framescope(&[Path::new("export"), &dump, Path::new(format), &dump]);
        assert_refused_and_kept(&out, &dump, &text);
        // A hard link to the dump.
        let link = dir.path("linked.out");
        std::fs::hard_link(&dump, &link).unwrap();
        let out = framescope(&[Path::new("export"), &dump, Path::new(format), &link]);
        assert_refused_and_kept(&out, &dump, &text);
        // The same path as the second of two outputs: the first output is not the problem.
        let first = dir.path("first.csv");
        let other = if format == "--csv" { "--presentmon" } else { "--csv" };
        let out = framescope(&[
            Path::new("export"),
            &dump,
            Path::new(other),
            &first,
            Path::new(format),
            &dump,
        ]);
        assert_refused_and_kept(&out, &dump, &text);
    }
}

#[test]
fn export_still_replaces_an_existing_output_that_is_not_the_dump() {
    let dir = Dir::new();
    let dump = dir.path("run.jsonl");
    std::fs::write(&dump, dump_text()).unwrap();
    let csv = dir.path("run.csv");
    std::fs::write(&csv, "x".repeat(1 << 20)).unwrap();
    let out = framescope(&[Path::new("export"), &dump, Path::new("--csv"), &csv]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(&csv).unwrap();
    assert!(!written.contains('x'), "the old content is gone");
    // MangoHud's CSV: a header block, then one row per frame.
    assert!(written.lines().count() >= 40, "{written}");
}

#[test]
fn plot_never_overwrites_a_dump_it_reads() {
    let text = dump_text();
    let dir = Dir::new();
    let dump = dir.path("run.jsonl");
    std::fs::write(&dump, &text).unwrap();
    // plot wants an .svg or .png name: a hard link gives the dump one.
    let link = dir.path("run.svg");
    std::fs::hard_link(&dump, &link).unwrap();
    let out = framescope(&[Path::new("plot"), &dump, Path::new("-o"), &link]);
    assert_refused_and_kept(&out, &dump, &text);
    // Given as a dump to plot by that name too.
    let out = framescope(&[Path::new("plot"), &link, Path::new("-o"), &link]);
    assert_refused_and_kept(&out, &dump, &text);
    let svg = dir.path("plot.svg");
    let out = framescope(&[Path::new("plot"), &dump, Path::new("-o"), &svg]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}
