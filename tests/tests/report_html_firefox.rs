//! `framescope report --html` pages in the second browser users open them in: Debian's
//! Firefox ESR, headless, driven over WebDriver BiDi (tests/tests/report_html_bidi.py). The
//! page's script runs to its `ok` status with an empty console, makes no request beyond the
//! page's own file, lays out `report --json`'s numbers, shows `compare`'s verdict, and draws.

use framescope_tests::artifacts::require_program;
use framescope_tests::html_page::{
    assert_drawn, assert_rendered, framescope, run_page, temp_dir, value_of, write_dump,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// What Firefox made of `page`: the page's status, DOM, console and requests; the
/// screenshot is written to `shot`.
fn firefox(page: &Path, shot: &Path) -> Value {
    require_program("firefox-esr");
    let dir = page.parent().unwrap();
    let script = dir.join("report_html_bidi.py");
    std::fs::write(&script, include_str!("report_html_bidi.py")).unwrap();
    let out = Command::new(framescope_tests::python::python())
        .arg(&script)
        .arg(page)
        .arg(dir.join("firefox-profile"))
        .arg(shot)
        .output()
        .expect("start python3");
    assert!(
        out.status.success(),
        "report_html_bidi.py failed ({}): {}\n(it needs firefox-esr and the PyPI package websockets: `cargo xtask test` installs both)",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");
    assert_eq!(v["status"], "ok", "the page's status in Firefox");
    let console: Vec<&Value> = v["console"].as_array().unwrap().iter().collect();
    assert!(console.is_empty(), "the page's console in Firefox: {console:#?}");
    // Firefox loads a font of its own from a `data:` URL (none of the page's CSS names one);
    // anything else is a request beyond the page.
    let page_url = format!("file://{}", page.display());
    for url in v["requests"].as_array().unwrap().iter().filter_map(Value::as_str) {
        assert!(
            url == page_url || url.starts_with("data:"),
            "a request beyond the page itself: {url:.120}"
        );
    }
    v
}

#[test]
fn a_run_page_shows_report_jsons_numbers_in_firefox() {
    let dir = temp_dir("firefox-run");
    let (page, json) = run_page(&dir, 5000);
    let shot = dir.join("run.png");
    let v = firefox(&page, &shot);
    let dom = v["dom"].as_str().unwrap();
    assert_rendered(dom);
    for key in ["fps_mean", "low_1pct_fps", "frames", "duration_ns"] {
        assert_eq!(value_of(dom, key), json[key].as_f64().unwrap(), "{key}");
    }
    assert_eq!(
        value_of(dom, "frame_time_ns.p99"),
        json["frame_time_ns"]["p99"].as_f64().unwrap()
    );
    assert!(
        dom.contains("pipeline_create 60.00 ms"),
        "the stutter's cause is not listed"
    );
    assert_drawn(&shot);
}

#[test]
fn a_comparison_page_shows_compares_verdict_in_firefox() {
    let dir = temp_dir("firefox-compare");
    let (base, slow) = (dir.join("base.jsonl"), dir.join("slow.jsonl"));
    write_dump(&base, 3000, 1.0, "24.1.3");
    write_dump(&slow, 3000, 1.2, "24.1.3");
    let page = dir.join("compare.html");
    let paths = [base.to_str().unwrap(), slow.to_str().unwrap()];
    assert_eq!(
        framescope(&["report", "--html", page.to_str().unwrap(), paths[0], paths[1]]).0,
        0
    );
    let (exit, _) = framescope(&["compare", paths[0], paths[1]]);
    assert_eq!(exit, 1, "a run 20 % slower is a regression");
    let shot = dir.join("compare.png");
    let v = firefox(&page, &shot);
    let dom = v["dom"].as_str().unwrap();
    assert_rendered(dom);
    assert!(
        dom.contains(r#"<p data-exit="1">"#),
        "the page's exit status is not compare's"
    );
    assert!(
        dom.contains(r#"data-verdict="regression""#),
        "no regression verdict shown"
    );
    assert_drawn(&shot);
}
