//! What the browser tests of `framescope report --html` share: a synthetic dump, running the
//! CLI, and reading what a browser made of the page (its DOM's numbers, its status line, a
//! screenshot's content).

use crate::image::Rgb;
use crate::Artifacts;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A dump of `frames` frames around 10 ms (a fixed pseudo-random jitter) times `scale`, one
/// 80 ms stutter at the middle frame, `driver` in the header; two counters, a GPU load that
/// reads 100 % at the stutter frame and about 50 % elsewhere, and a temperature rising by
/// 1 °C every 1000 frames.
pub fn write_dump(path: &Path, frames: u64, scale: f64, driver: &str) {
    let mut lines = vec![json!({
        "type": "header", "schema": "framescope.v1", "exe": "/usr/bin/vkcube", "api": "vulkan",
        "gpu_time": "busy", "device": {"name": "Test GPU", "driver_name": "radv", "driver_version": driver},
        "counters": [
            {"name": "gpu_util_pct", "unit": "%", "source": "amdgpu-sysfs", "scope": "device"},
            {"name": "gpu_temp_c", "unit": "°C", "source": "amdgpu-sysfs", "scope": "device"},
        ],
    })];
    let (mut t, mut x) = (1_000_000_000u64, 99u64);
    for i in 0..frames {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let base = if i == frames / 2 {
            80_000_000
        } else {
            9_000_000 + (x >> 33) % 2_000_000
        };
        let ft = (base as f64 * scale) as u64;
        t += ft;
        let load = if i == frames / 2 {
            100.0
        } else {
            45.0 + ((x >> 40) % 10) as f64
        };
        let temp = 50.0 + (i / 1000) as f64;
        let mut f = json!({
            "type": "frame", "frame": i, "t_ns": t, "cpu_frame_ns": ft, "gpu_busy_ns": ft / 2,
            "counters": {"gpu_util_pct": load, "gpu_temp_c": temp},
        });
        if i == frames / 2 {
            f["stutter"] = true.into();
            f["stutter_causes"] = json!([{"cause": "pipeline_create", "ns": 60_000_000u64}]);
        }
        lines.push(f);
    }
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

/// A fresh directory of this test process for `tag`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("framescope-html-browser-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the CLI; its exit code and stdout (it must not panic).
pub fn framescope(args: &[&str]) -> (i32, String) {
    let out = Command::new(&Artifacts::get().framescope).args(args).output().unwrap();
    assert!(out.status.code().is_some(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A run page of `frames` frames written under `dir` by `report --html`, and `report --json`'s
/// object for the same dump (the numbers the page must show).
pub fn run_page(dir: &Path, frames: u64) -> (PathBuf, serde_json::Value) {
    let dump = dir.join("run.jsonl");
    write_dump(&dump, frames, 1.0, "24.1.3");
    let page = dir.join("run.html");
    assert_eq!(
        framescope(&["report", "--html", page.to_str().unwrap(), dump.to_str().unwrap()]).0,
        0
    );
    let (code, out) = framescope(&["report", "--json", dump.to_str().unwrap()]);
    assert_eq!(code, 0);
    (page, serde_json::from_str(out.trim()).unwrap())
}

/// The `data-value` of the first element with `data-key="key"` in `dom`.
pub fn value_of(dom: &str, key: &str) -> f64 {
    let at = dom
        .find(&format!("data-key=\"{key}\" data-value=\""))
        .unwrap_or_else(|| panic!("{key} not in the page"));
    let rest = &dom[at..];
    let v = rest.split("data-value=\"").nth(1).unwrap();
    v[..v.find('"').unwrap()]
        .parse()
        .unwrap_or_else(|_| panic!("{key}: {v:.40}"))
}

/// The page's own status line: `ok` once its script has drawn everything without an error.
pub fn assert_rendered(dom: &str) {
    assert!(
        dom.contains(r#"id="status" data-status="ok">ok<"#),
        "the page did not finish rendering: {}",
        dom.lines()
            .find(|l| l.contains("id=\"status\""))
            .unwrap_or("no status line")
    );
}

/// Content in a screenshot: many non-white pixels, and the graph's line colour among them.
pub fn assert_drawn(png: &Path) {
    let img = Rgb::read(png);
    let (mut inked, mut line) = (0usize, 0usize);
    for y in 0..img.h {
        for x in 0..img.w {
            let p = img.at(x, y);
            inked += usize::from(p.iter().any(|&c| c < 200));
            line += usize::from(p[2] > 200 && p[0] < 80 && p[1] > 80 && p[1] < 140);
        }
    }
    assert!(
        inked > img.w * img.h / 200,
        "{} looks blank ({inked} inked pixels)",
        png.display()
    );
    assert!(line > 200, "{}: no graph line drawn ({line} pixels)", png.display());
}
