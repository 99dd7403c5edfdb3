//! `framescope report --html` pages opened in a real browser (Debian's Chromium, headless):
//! the page's script runs to the end without an error, the numbers it lays out are `report
//! --json`'s, the comparison shows `compare`'s verdict, and each view draws something.

use framescope_tests::artifacts::require_program;
use framescope_tests::html_page::{
    assert_drawn, assert_rendered, framescope, run_page, temp_dir, value_of, write_dump,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Headless Chromium starts in a second or two; a page that takes this long is broken.
const LIMIT: Duration = Duration::from_secs(90);

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

#[test]
fn a_run_page_shows_report_jsons_numbers_in_chromium() {
    let dir = temp_dir("run");
    let (page, json) = run_page(&dir, 5000);
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
/// `frames`: a run the page carries frame by frame, or one it carries as min/max points of
/// `per_point` frames each, where a hover names the slowest frame of its point.
fn hover_and_zoom(frames: u64, per_point: u64) {
    require_program("chromium");
    let dir = temp_dir(&format!("cdp-{frames}"));
    let dump = dir.join("long.jsonl");
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
        .and_then(|n| n.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap_or_else(|| panic!("no frame in the tooltip: {tip}"));
    assert!(
        hovered.abs_diff(stutter) as u64 <= 20 * per_point,
        "hovered frame {hovered}, the stutter is {stutter}"
    );
    if per_point > 1 {
        assert!(
            tip.contains(&format!("the slowest of about {per_point} frames")),
            "{tip}"
        );
    }
    // The hovered frame's own time as the page shows it: carried rounded to 0.1 µs, shown to
    // three decimals (rounded half up from the shortest decimal form), so within 0.55 µs.
    let ft = by_index[hovered]["cpu_frame_ns"].as_f64().unwrap() / 1e6;
    let shown: f64 = tip
        .lines()
        .find_map(|l| l.strip_prefix("frame time ")?.strip_suffix(" ms")?.parse().ok())
        .unwrap_or_else(|| panic!("no frame time in the tooltip: {tip}"));
    assert!(
        (shown - ft).abs() <= 0.000_55 + 1e-9,
        "{tip}: the frame's time is {ft} ms"
    );
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
    // The counters' chart shares the time axis: zooming the frame chart moved it along, and
    // the GPU load's 100 % at the stutter frame stays drawn, whole run and zoomed.
    assert_eq!(after["counter_view"], after["view"], "{r}");
    assert_eq!(
        (before["counter_max"].as_f64(), after["counter_max"].as_f64()),
        (Some(100.0), Some(100.0)),
        "{r}"
    );
}

#[test]
fn hovering_shows_a_frame_and_zooming_keeps_the_stutter_in_chromium() {
    hover_and_zoom(20_000, 1);
}

/// 100 000 frames go into the page as 4096 points of about 25 frames each.
#[test]
fn a_long_run_drawn_as_min_max_points_keeps_its_stutter_hoverable_in_chromium() {
    hover_and_zoom(100_000, 25);
}

/// A long run's page grows with its points, not its frames: twice the frames, nearly the same
/// page; and its numbers are still `report --json`'s over every frame.
#[test]
fn a_long_runs_page_size_does_not_grow_with_its_frames() {
    let dir = temp_dir("long-size");
    let page_of = |frames: u64| {
        let dump = dir.join(format!("run-{frames}.jsonl"));
        write_dump(&dump, frames, 1.0, "24.1.3");
        let page = dir.join(format!("run-{frames}.html"));
        assert_eq!(
            framescope(&["report", "--html", page.to_str().unwrap(), dump.to_str().unwrap()]).0,
            0
        );
        (dump, page)
    };
    let (_, small) = page_of(60_000);
    let (dump, large) = page_of(120_000);
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len() as f64;
    assert!(
        (size(&large) - size(&small)).abs() < 0.05 * size(&small),
        "{} bytes for 60 000 frames, {} for 120 000",
        size(&small),
        size(&large)
    );
    let (code, out) = framescope(&["report", "--json", dump.to_str().unwrap()]);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    let dom = chromium(&large, "--dump-dom", &dir.join("profile"));
    assert_rendered(&dom);
    for key in ["fps_mean", "low_1pct_fps", "frames"] {
        assert_eq!(value_of(&dom, key), json[key].as_f64().unwrap(), "{key}");
    }
    // 120 000 frames in 4096 points (cli's `BUCKETS`): 30 a point, the last ones fewer.
    assert!(
        dom.contains("data-bucketed=\"30\""),
        "the page does not say its points span 30 frames"
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
    // The same farm from the Parquet directory alone: the same groups and numbers.
    let from_exports = dir.join("farm-parquet.html");
    assert_eq!(
        framescope(&[
            "report",
            "--html",
            from_exports.to_str().unwrap(),
            parquet.to_str().unwrap()
        ])
        .0,
        0
    );
    let html = std::fs::read_to_string(&from_exports).unwrap();
    let start = html.find(r#"id="fs-data">"#).unwrap() + r#"id="fs-data">"#.len();
    let pq: Value = serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()]).unwrap();
    let pq_groups = pq["farm"]["groups"].as_array().unwrap();
    assert_eq!(pq_groups.len(), page_groups.len());
    for (a, b) in pq_groups.iter().zip(page_groups) {
        assert_eq!(
            (&a["group"], &a["runs"], &a["frames"]),
            (&b["group"], &b["runs"], &b["frames"])
        );
        for k in [
            "fps_mean",
            "fps_median",
            "fps_min",
            "fps_max",
            "p99_ms",
            "low_1pct_fps",
            "gpu_mean_ms",
        ] {
            let (x, y) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-9 * y.abs(),
                "{}: {k}: Parquet {x}, dumps {y}",
                a["group"]
            );
        }
    }
    // A field the exports lack is refused with one line.
    let (code, _) = framescope(&[
        "report",
        "--html",
        from_exports.to_str().unwrap(),
        "--group-by",
        "label",
        parquet.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
}
