//! `framescope report --html`: one self-contained file whose embedded numbers are `report
//! --json`'s and whose comparison verdict is `compare`'s.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn framescope(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_framescope"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A dump of `frames` frames around 10 ms (a fixed pseudo-random jitter) times `scale`, with a
/// stutter of 80 ms at the middle frame; `driver` goes into the header.
fn write_dump(path: &Path, frames: u64, scale: f64, driver: &str) {
    let mut lines = vec![json!({
        "type": "header", "schema": "framescope.v1", "exe": "/usr/bin/vkcube", "api": "vulkan",
        "gpu_time": "busy",
        "device": {"name": "Test GPU", "driver_name": "radv", "driver_version": driver},
        "config": {"samples": "renderpass"},
    })];
    let (mut t, mut x) = (1_000_000_000u64, 12345u64);
    for i in 0..frames {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let jitter = (x >> 33) % 2_000_000;
        let base = if i == frames / 2 {
            80_000_000
        } else {
            9_000_000 + jitter
        };
        let ft = (base as f64 * scale) as u64;
        t += ft;
        let mut f = json!({
            "type": "frame", "frame": i, "t_ns": t, "cpu_frame_ns": ft, "gpu_busy_ns": ft * 6 / 10,
            "samples": [{"scope": "renderpass", "label": "main", "gpu_ns": ft / 3}],
        });
        if i == frames / 2 {
            f["stutter"] = true.into();
            f["stutter_causes"] = json!([{"cause": "pipeline_create", "ns": 60_000_000u64, "calls": 2}]);
        }
        lines.push(f);
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("framescope-html-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes the page for `dumps`; returns its text and its embedded data.
fn page(out: &Path, dumps: &[&Path]) -> (String, Value) {
    let mut args = vec!["report", "--html", s(out)];
    args.extend(dumps.iter().map(|p| s(p)));
    let (code, _, err) = framescope(&args);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(out).unwrap();
    let start = html
        .find(r#"<script type="application/json" id="fs-data">"#)
        .expect("data element");
    let rest = &html[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    (html.clone(), serde_json::from_str(body).unwrap())
}

#[test]
fn a_run_page_is_one_file_that_fetches_nothing() {
    let dir = temp_dir("run");
    let dump = dir.join("a.jsonl");
    write_dump(&dump, 400, 1.0, "24.1.3");
    let (html, data) = page(&dir.join("run.html"), &[&dump]);
    let csp = r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; "#;
    assert!(html.contains(csp), "no CSP forbidding fetches");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "a URL in the page"
    );
    for tag in ["<link", "<img", "<iframe", " src="] {
        assert!(!html.contains(tag), "the page references a resource: {tag}");
    }
    assert_eq!(data["view"], "run");
    let run = &data["runs"][0];
    assert_eq!(run["frames"]["t_ms"].as_array().unwrap().len(), 400);
    assert_eq!(run["stutter_count"], 1);
    assert_eq!(run["stutters"][0]["causes"][0]["cause"], "pipeline_create");
    assert_eq!(run["header"]["device"]["driver_version"], "24.1.3");
}

#[test]
fn the_embedded_summary_is_report_json() {
    let dir = temp_dir("summary");
    let dump = dir.join("a.jsonl");
    write_dump(&dump, 3000, 1.0, "24.1.3");
    let (_, data) = page(&dir.join("run.html"), &[&dump]);
    let (code, out, err) = framescope(&["report", "--json", s(&dump)]);
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    let summary = &data["runs"][0]["summary"];
    for key in [
        "frames",
        "duration_ns",
        "fps_mean",
        "frame_time_ns",
        "low_1pct_fps",
        "low_0_1pct_fps",
        "gpu_busy_ns",
        "timeline",
        "regions_top",
    ] {
        assert_eq!(summary[key], json[key], "{key}");
    }
    assert!(summary["fps_mean"].as_f64().unwrap() > 0.0);
    // The integral low and P1 are of the same frames: P1 (1000 / p99) is at or above the
    // 1 % low, which averages the slowest 1 %.
    let extra = &data["runs"][0]["extra"];
    assert!(extra["p1_fps"].as_f64().unwrap() >= summary["low_1pct_fps"].as_f64().unwrap());
}

#[test]
fn a_comparison_gives_compares_verdict() {
    let dir = temp_dir("compare");
    let (a, slow) = (dir.join("a.jsonl"), dir.join("slow.jsonl"));
    write_dump(&a, 2000, 1.0, "24.1.3");
    write_dump(&slow, 2000, 1.2, "24.1.3");
    let (gate, out, _) = framescope(&["compare", "--json", s(&a), s(&slow)]);
    assert_eq!(gate, 1, "a 20 % slower run is a regression: {out}");
    let (_, data) = page(&dir.join("cmp.html"), &[&a, &slow, &a]);
    assert_eq!(data["view"], "compare");
    let c = &data["comparisons"];
    assert_eq!(c[0]["exit"], gate);
    assert_eq!(c[0]["result"], serde_json::from_str::<Value>(out.trim()).unwrap());
    let change = c[0]["result"]["metrics"][0]["change"].as_f64().unwrap();
    assert!((change - 0.2).abs() < 0.01, "{change}");
    let (same, _, _) = framescope(&["compare", s(&a), s(&a)]);
    assert_eq!((c[1]["exit"].as_i64(), same), (Some(0), 0));
}

#[test]
fn a_directory_is_a_farm_grouped_by_driver() {
    let dir = temp_dir("farm");
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for k in 0..6 {
        let scale = if k == 4 { 1.5 } else { 1.0 + 0.01 * k as f64 };
        let driver = if k % 2 == 0 { "24.2.0" } else { "24.1.3" };
        write_dump(&runs.join(format!("r{k}.jsonl")), 200, scale, driver);
    }
    let (_, data) = page(&dir.join("farm.html"), &[&runs]);
    let groups = data["farm"]["groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["group"].as_str().unwrap()).collect();
    assert_eq!(names, ["24.1.3", "24.2.0"]);
    assert_eq!(groups[1]["runs"], 3);
    assert_eq!(groups[1]["outliers"], json!(["r4.jsonl"]));
    // A group's mean is the mean of its runs' own fps.
    let runs_fps: Vec<f64> = data["farm"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["group"] == "24.1.3")
        .map(|r| r["fps_mean"].as_f64().unwrap())
        .collect();
    let mean = runs_fps.iter().sum::<f64>() / runs_fps.len() as f64;
    assert!((groups[0]["fps_mean"].as_f64().unwrap() - mean).abs() < 1e-9);
}

#[test]
fn a_dump_that_is_no_dump_writes_no_page() {
    let dir = temp_dir("bad");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "not a dump\n").unwrap();
    let out = dir.join("out.html");
    let (code, _, err) = framescope(&["report", "--html", s(&out), s(&bad)]);
    assert_eq!(code, 1, "{err}");
    assert!(!out.exists());
    let (code, _, _) = framescope(&["report", "--html", s(&out), "--json", s(&bad)]);
    assert_eq!(code, 2);
}
