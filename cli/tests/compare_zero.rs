//! `compare` on a metric that is zero throughout one side names that side.

use std::path::Path;
use std::process::{Command, Stdio};

const MS: u64 = 1_000_000;

fn write_dump(path: &Path, gpu_busy_ns: u64) {
    let mut text = String::from(
        r#"{"type":"header","schema":"framescope.v1","pid":7,"exe":"/bin/app","api":"vulkan","device":null}"#,
    );
    text.push('\n');
    for i in 0..200u64 {
        text.push_str(&format!(
            r#"{{"type":"frame","frame":{i},"t_ns":{},"cpu_frame_ns":{},"gpu_busy_ns":{gpu_busy_ns},"gpu_span_ns":null,"draws":3,"dispatches":0,"submits":1,"counters":{{}}}}"#,
            1_000 + i * 10 * MS,
            10 * MS + (i % 7) * 1000,
        ));
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

fn compare(base: &Path, new: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_framescope"))
        .args(["compare", "--metric", "gpu_busy"])
        .args([base, new])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_metric_zero_throughout_one_side_names_that_side() {
    let dir = tempfile::tempdir().unwrap();
    let (busy, idle) = (dir.path().join("busy.jsonl"), dir.path().join("idle.jsonl"));
    write_dump(&busy, 2 * MS);
    write_dump(&idle, 0);
    let (code, err) = compare(&busy, &idle);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("NEW's mean is zero"), "{err}");
    assert!(!err.contains("BASE"), "{err}");
    let (code, err) = compare(&idle, &busy);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("BASE's mean is zero"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
