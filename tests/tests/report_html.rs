//! `framescope report --html` pages opened in a real browser (Debian's Chromium, headless):
//! the page's script runs to the end without an error, the numbers it lays out are `report
//! --json`'s, the comparison shows `compare`'s verdict, and each view draws something.

use framescope_tests::image::Rgb;
use framescope_tests::{artifacts::require_program, Artifacts};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Headless Chromium starts in a second or two; a page that takes this long is broken.
const LIMIT: Duration = Duration::from_secs(90);

/// A dump of `frames` frames around 10 ms (a fixed pseudo-random jitter) times `scale`, one
/// 80 ms stutter at the middle frame, `driver` in the header.
fn write_dump(path: &Path, frames: u64, scale: f64, driver: &str) {
    let mut lines = vec![json!({
        "type": "header", "schema": "framescope.v1", "exe": "/usr/bin/vkcube", "api": "vulkan",
        "gpu_time": "busy", "device": {"name": "Test GPU", "driver_name": "radv", "driver_version": driver},
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
        let mut f = json!({"type": "frame", "frame": i, "t_ns": t, "cpu_frame_ns": ft, "gpu_busy_ns": ft / 2});
        if i == frames / 2 {
            f["stutter"] = true.into();
            f["stutter_causes"] = json!([{"cause": "pipeline_create", "ns": 60_000_000u64}]);
        }
        lines.push(f);
    }
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("framescope-html-browser-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn framescope(args: &[&str]) -> (i32, String) {
    let out = Command::new(&Artifacts::get().framescope).args(args).output().unwrap();
    assert!(out.status.code().is_some(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Runs headless Chromium on `page` with `what` (`--dump-dom`, `--screenshot=...`); its stdout.
fn chromium(page: &Path, what: &str, profile: &Path) -> String {
    require_program("chromium");
    let start = Instant::now();
    // Files, not pipes: a DOM larger than a pipe's buffer would stall Chromium until it is read.
    let (out_path, err_path) = (profile.with_extension("out"), profile.with_extension("err"));
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--window-size=1400,2400",
        ])
        // The page's console (errors, and the CSP's report of any blocked request) on stderr.
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(what)
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start chromium");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {what} within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(status.success(), "chromium {what}: {status}: {err}");
    // The page writes nothing to its console: any line there is an error, a warning, or a
    // request the Content-Security-Policy refused.
    let console: Vec<&str> = err.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the page's console: {console:#?}");
    std::fs::read_to_string(&out_path).unwrap()
}

/// The `data-value` of the first element with `data-key="key"` in `dom`.
fn value_of(dom: &str, key: &str) -> f64 {
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
fn assert_rendered(dom: &str) {
    assert!(
        dom.contains(r#"id="status" data-status="ok">ok<"#),
        "the page did not finish rendering: {}",
        dom.lines()
            .find(|l| l.contains("id=\"status\""))
            .unwrap_or("no status line")
    );
}

/// Content in a screenshot: many non-white pixels, and the graph's line colour among them.
fn assert_drawn(png: &Path) {
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

#[test]
fn a_run_page_shows_report_jsons_numbers_in_chromium() {
    let dir = temp_dir("run");
    let dump = dir.join("run.jsonl");
    write_dump(&dump, 5000, 1.0, "24.1.3");
    let page = dir.join("run.html");
    assert_eq!(
        framescope(&["report", "--html", page.to_str().unwrap(), dump.to_str().unwrap()]).0,
        0
    );
    let (code, out) = framescope(&["report", "--json", dump.to_str().unwrap()]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    let dom = chromium(&page, "--dump-dom", &dir.join("profile"));
    assert_rendered(&dom);
    for key in ["fps_mean", "low_1pct_fps", "low_0_1pct_fps", "frames", "duration_ns"] {
        assert_eq!(value_of(&dom, key), json[key].as_f64().unwrap(), "{key}");
    }
    for (key, field) in [
        ("frame_time_ns.p99", "p99"),
        ("frame_time_ns.p50", "p50"),
        ("frame_time_ns.max", "max"),
    ] {
        assert_eq!(
            value_of(&dom, key),
            json["frame_time_ns"][field].as_f64().unwrap(),
            "{key}"
        );
    }
    assert!(
        dom.contains("pipeline_create 60.00 ms"),
        "the stutter's cause is not listed"
    );
    let png = dir.join("run.png");
    chromium(&page, &format!("--screenshot={}", png.display()), &dir.join("profile"));
    assert_drawn(&png);
}

#[test]
fn a_comparison_page_shows_compares_verdict_in_chromium() {
    let dir = temp_dir("compare");
    let (base, slow) = (dir.join("base.jsonl"), dir.join("slow.jsonl"));
    write_dump(&base, 3000, 1.0, "24.1.3");
    write_dump(&slow, 3000, 1.2, "24.1.3");
    let (gate, _) = framescope(&["compare", base.to_str().unwrap(), slow.to_str().unwrap()]);
    assert_eq!(gate, 1, "a run 20 % slower is a regression");
    let page = dir.join("compare.html");
    let args = [
        "report",
        "--html",
        page.to_str().unwrap(),
        base.to_str().unwrap(),
        slow.to_str().unwrap(),
    ];
    assert_eq!(framescope(&args).0, 0);
    let dom = chromium(&page, "--dump-dom", &dir.join("profile"));
    assert_rendered(&dom);
    assert!(
        dom.contains(r#"<p data-exit="1">"#),
        "the page's exit status is not compare's"
    );
    assert!(
        dom.contains(r#"data-verdict="regression""#),
        "no regression verdict shown"
    );
    let png = dir.join("compare.png");
    chromium(&page, &format!("--screenshot={}", png.display()), &dir.join("profile"));
    assert_drawn(&png);
}

#[test]
fn a_farm_page_renders_one_row_per_driver_in_chromium() {
    let dir = temp_dir("farm");
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for k in 0..4 {
        let driver = if k % 2 == 0 { "24.2.0" } else { "24.1.3" };
        write_dump(&runs.join(format!("r{k}.jsonl")), 300, 1.0 + 0.02 * k as f64, driver);
    }
    let page = dir.join("farm.html");
    assert_eq!(
        framescope(&["report", "--html", page.to_str().unwrap(), runs.to_str().unwrap()]).0,
        0
    );
    let dom = chromium(&page, "--dump-dom", &dir.join("profile"));
    assert_rendered(&dom);
    let groups = &dom[dom.find(r#"<table class="groups">"#).expect("groups table")..];
    let groups = &groups[..groups.find("</table>").unwrap()];
    assert_eq!(
        groups.matches("<tr>").count(),
        3,
        "a header row and one row per driver: {groups}"
    );
    assert!(groups.contains("24.1.3") && groups.contains("24.2.0"));
}

/// Hovering the frame-time graph names the frame under the pointer with its own fields, and
/// zooming around a stutter keeps its spike drawn, as does the whole run at one pixel column
/// per many frames (tests/tests/report_html_cdp.py drives Chromium over the DevTools protocol).
#[test]
fn hovering_shows_a_frame_and_zooming_keeps_the_stutter_in_chromium() {
    require_program("chromium");
    let dir = temp_dir("cdp");
    let dump = dir.join("long.jsonl");
    let frames = 20_000u64;
    write_dump(&dump, frames, 1.0, "24.1.3");
    let page = dir.join("long.html");
    assert_eq!(
        framescope(&["report", "--html", page.to_str().unwrap(), dump.to_str().unwrap()]).0,
        0
    );
    let by_index: Vec<Value> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let t = |i: usize| by_index[i]["t_ns"].as_f64().unwrap();
    let stutter = (frames / 2) as usize;
    let frac = (t(stutter) - t(0)) / (t(by_index.len() - 1) - t(0));
    let script = dir.join("report_html_cdp.py");
    std::fs::write(&script, include_str!("report_html_cdp.py")).unwrap();
    let out = Command::new(framescope_tests::python::python())
        .arg(&script)
        .arg(&page)
        .arg(dir.join("profile"))
        .arg(frac.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tip = r["tip"].as_str().expect("no tooltip on hover");
    let hovered: usize = tip
        .lines()
        .find_map(|l| l.strip_prefix("frame "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no frame in the tooltip: {tip}"));
    assert!(
        hovered.abs_diff(stutter) <= 20,
        "hovered frame {hovered}, the stutter is {stutter}"
    );
    let ft = by_index[hovered]["cpu_frame_ns"].as_f64().unwrap() / 1e6;
    assert!(tip.contains(&format!("frame time {ft:.3} ms")), "{tip}");
    let span = |v: &Value| v["view"][1].as_f64().unwrap() - v["view"][0].as_f64().unwrap();
    let (before, after) = (&r["before"], &r["after"]);
    assert!(span(after) < 0.2 * span(before), "no zoom: {r}");
    let at = (t(stutter) - t(0)) / 1e6;
    assert!(
        after["view"][0].as_f64().unwrap() <= at && at <= after["view"][1].as_f64().unwrap(),
        "{r}"
    );
    // Many frames a column before zooming: the spike survives as its column's maximum.
    assert!(before["columns"].as_u64().unwrap() < frames / 10, "{r}");
    assert_eq!(
        (before["max"].as_f64(), after["max"].as_f64()),
        (Some(80.0), Some(80.0)),
        "{r}"
    );
}

/// The farm view agrees with DuckDB over the same runs exported with `export --parquet`
/// (tests/tests/report_html_duckdb.py, the query README shows): per driver, the runs, their
/// mean, median, lowest and highest fps and their mean p99 frame time.
#[test]
fn the_farm_view_agrees_with_duckdb_over_the_parquet_export() {
    let dir = temp_dir("duckdb");
    let (runs, parquet) = (dir.join("runs"), dir.join("parquet"));
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::create_dir_all(&parquet).unwrap();
    for k in 0..12 {
        let driver = if k % 3 == 0 { "24.2.0" } else { "24.1.3" };
        let dump = runs.join(format!("r{k:02}.jsonl"));
        // 2000 frames: nearest rank and DuckDB's quantile_disc pick the same p99 frame.
        write_dump(&dump, 2000, 1.0 + 0.03 * k as f64, driver);
        let out = parquet.join(format!("r{k:02}.parquet"));
        let args = ["export", dump.to_str().unwrap(), "--parquet", out.to_str().unwrap()];
        assert_eq!(framescope(&args).0, 0);
    }
    let page = dir.join("farm.html");
    assert_eq!(
        framescope(&["report", "--html", page.to_str().unwrap(), runs.to_str().unwrap()]).0,
        0
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html.find(r#"id="fs-data">"#).unwrap() + r#"id="fs-data">"#.len();
    let data: Value = serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()]).unwrap();
    let script = dir.join("report_html_duckdb.py");
    std::fs::write(&script, include_str!("report_html_duckdb.py")).unwrap();
    let out = Command::new(framescope_tests::python::python())
        .arg(&script)
        .arg(&parquet)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} (PyPI duckdb is needed: `cargo xtask install-deps`)",
        String::from_utf8_lossy(&out.stderr)
    );
    let duck: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let page_groups = data["farm"]["groups"].as_array().unwrap();
    assert_eq!(page_groups.len(), duck.len(), "{duck:?}");
    for (p, d) in page_groups.iter().zip(&duck) {
        assert_eq!((&p["group"], &p["runs"]), (&d["group"], &d["runs"]));
        for k in ["fps_mean", "fps_median", "fps_min", "fps_max", "p99_ms"] {
            let (a, b) = (p[k].as_f64().unwrap(), d[k].as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-9 * b.abs(),
                "{}: {k}: page {a}, DuckDB {b}",
                p["group"]
            );
        }
    }
}
