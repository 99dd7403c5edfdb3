//! `framescope report` on dumps written by the core writer and by hand, whole and cut short.

use framescope_core::dump::{Api, DeviceInfo, DumpOptions, DumpWriter, Header};
use framescope_core::frame::FrameRecord;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const MS: u64 = 1_000_000;

fn temp_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("framescope-report-test-{}-{tag}.jsonl", std::process::id()))
}

fn report(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_framescope"))
        .arg("report")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// 11 frames: 9 frame times of 10 ms and one of 30 ms (120 ms, 10 frames -> 83.33 fps;
/// the slowest 1% is one frame of 30 ms -> 33.33 fps). GPU busy 2 ms, except frame 4: none.
fn write_dump(tag: &str) -> PathBuf {
    let path = temp_path(tag);
    let mut h = Header::new(Api::Vulkan);
    h.device = Some(DeviceInfo {
        name: "Test GPU".into(),
        vendor_id: 0x1002,
        device_id: 0x744c,
        driver_name: Some("radv".into()),
        driver_version_raw: (24 << 22) | (1 << 12) | 3,
        ..DeviceInfo::default()
    });
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), h);
    let mut t = w.origin_ns() + MS;
    for i in 0..11u64 {
        let ft = match i {
            0 => None,
            7 => Some(30 * MS),
            _ => Some(10 * MS),
        };
        t += ft.unwrap_or(0);
        let mut r = FrameRecord {
            frame: i,
            t_ns: t,
            cpu_frame_ns: ft,
            ..FrameRecord::default()
        };
        if i != 4 {
            r.gpu.busy_ns = Some(2 * MS);
            r.gpu.span_ns = Some(3 * MS);
        }
        w.push(r);
    }
    w.finish();
    path
}

/// The cells of the table row labelled `label`.
fn row<'a>(out: &'a str, label: &str) -> Vec<&'a str> {
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(label))
        .expect("row present");
    line.split_whitespace().skip(1).collect()
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn json_summary(path: &Path) -> Value {
    let (code, out, _) = report(&["--json", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    serde_json::from_str(out.trim()).unwrap()
}

fn assert_close(v: &Value, expected: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - expected).abs() < 1e-6 * expected, "{got} vs {expected}");
}

#[test]
fn table_of_a_complete_dump() {
    let path = write_dump("complete");
    let (code, out, err) = report(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("frames      11\n"), "{out}");
    assert!(out.contains("fps mean    83.33 fps\n"), "{out}");
    assert!(out.contains("1% low      33.33 fps\n"), "{out}");
    assert!(out.contains("dropped     0 frames\n"), "{out}");
    assert!(out.contains("Test GPU [1002:744c], driver radv 24.1.3"), "{out}");
    // p50 frame time 10 ms, max 30 ms; GPU busy 2 ms throughout.
    assert_eq!(row(&out, "p50"), ["10.000", "ms", "2.000", "ms"], "{out}");
    assert_eq!(row(&out, "p95"), ["30.000", "ms", "2.000", "ms"], "{out}");
    assert_eq!(row(&out, "max"), ["30.000", "ms", "2.000", "ms"], "{out}");
    assert!(out.contains("frames without gpu time: 1"), "{out}");
    assert!(
        out.contains("summary written by the dump writer (ended by finish)"),
        "{out}"
    );
    assert!(!out.contains("recomputed"), "{out}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn missing_summary_and_truncated_last_line_are_recomputed() {
    let path = write_dump("truncated");
    let complete = json_summary(&path);
    assert_eq!(complete["produced_by"], "writer");
    assert_eq!(complete["frames"], 11);
    assert_close(&complete["fps_mean"], 10.0 / 0.120);

    // Drop the summary and cut the last frame line in half, as kill -9 mid-write would.
    let mut lines = lines_of(&path);
    assert!(lines.pop().unwrap().contains("\"summary\""));
    let last = lines.pop().unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    text.push_str(&last[..last.len() / 2]);
    std::fs::write(&path, text).unwrap();

    let (code, out, err) = report(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("no summary record (the run did not end normally): recomputed from 10 frame records"),
        "{out}"
    );
    assert!(out.contains("the last line was truncated"), "{out}");
    assert!(out.contains("frames      10\n"), "{out}");

    // Frame 10 (a 10 ms frame) is gone: 8 x 10 ms + 30 ms = 110 ms over 9 frame times.
    let s = json_summary(&path);
    assert_eq!(s["type"], "summary");
    assert_eq!(s["produced_by"], "report");
    assert_eq!(s["ended_by"], "recomputed");
    assert_eq!(s["frames"], 10);
    assert_close(&s["fps_mean"], 9.0 / 0.110);
    assert_close(&s["low_1pct_fps"], 1.0 / 0.030);
    assert_eq!(s["frame_time_ns"]["max"], 30 * MS);
    assert_eq!(s["gpu_busy_ns"]["count"], 9);
    assert_eq!(s["dropped_frames"], 0);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn recomputed_summary_matches_the_writer_summary() {
    let path = write_dump("same");
    let written = json_summary(&path);
    let mut lines = lines_of(&path);
    lines.pop();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, out, _) = report(&[path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(!out.contains("truncated"), "{out}");
    let recomputed = json_summary(&path);
    for k in [
        "frames",
        "duration_ns",
        "fps_mean",
        "frame_time_ns",
        "low_1pct_fps",
        "low_0_1pct_fps",
        "gpu_busy_ns",
    ] {
        assert_eq!(written[k], recomputed[k], "{k}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn hand_written_dump_with_a_gap_counts_lost_frames() {
    let path = temp_path("hand");
    let frame = |i: u64, t: u64, ft: Option<u64>| {
        format!(
            r#"{{"type":"frame","frame":{i},"t_ns":{t},"cpu_frame_ns":{},"gpu_busy_ns":null,"gpu_span_ns":null,"draws":0,"dispatches":0,"submits":0,"counters":{{}},"gpu_missing":"disabled"}}"#,
            ft.map_or("null".to_string(), |f| f.to_string())
        )
    };
    let text = [
        r#"{"type":"header","schema":"framescope.v1","pid":1,"exe":"/bin/app","api":"opengl","device":null}"#
            .to_string(),
        frame(0, 1_000, None),
        frame(1, 1_000 + 20 * MS, Some(20 * MS)),
        frame(4, 1_000 + 60 * MS, Some(40 * MS)),
    ]
    .join("\n")
        + "\n";
    std::fs::write(&path, text).unwrap();
    let s = json_summary(&path);
    assert_eq!(s["frames"], 3);
    assert_eq!(s["dropped_frames"], 2);
    assert_eq!(s["duration_ns"], 60 * MS);
    // 2 frame times, 60 ms -> 33.33 fps; nearest-rank p50 of [20, 40] ms is 20 ms.
    assert_close(&s["fps_mean"], 2.0 / 0.060);
    assert_eq!(s["frame_time_ns"]["p50"], 20 * MS);
    assert!(s["gpu_busy_ns"].is_null());
    let (_, out, _) = report(&[path.to_str().unwrap()]);
    assert!(out.contains("exe         /bin/app (pid 1)"), "{out}");
    assert!(out.contains("dropped     2 frames"), "{out}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn errors_and_usage() {
    let (code, _, err) = report(&[]);
    assert_eq!(code, 2);
    assert!(err.contains("usage: framescope report"), "{err}");
    let (code, _, err) = report(&["/nonexistent/dump.jsonl"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("framescope: cannot read '/nonexistent/dump.jsonl'"),
        "{err}"
    );
    let path = temp_path("garbage");
    std::fs::write(&path, "not json\n{\"type\":\"other\"}\n").unwrap();
    let (code, _, err) = report(&[path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("is not a framescope dump"), "{err}");
    std::fs::remove_file(&path).unwrap();
}
