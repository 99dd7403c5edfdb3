//! Driver counters (`VK_KHR_performance_query`): lavapipe has none, and the header says so; with
//! the test double below framescope (tests/perfdouble, a layer that gives lavapipe four
//! deterministic counters), the header lists the device's counters per queue family, with
//! their units, storage and scope, and the validation layer between the two reports nothing.

use framescope_tests::{dump, validation, Artifacts, Sandbox};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const DOUBLE: &str = "VK_LAYER_FRAMESCOPE_perf_double";

/// Runs the headless test app for 5 frames under framescope, with the double when `double`.
fn run(name: &str, double: bool) -> dump::Dump {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(name);
    let path = sb.path("dump.jsonl");
    sb.with_validation().set("FRAMESCOPE_DUMP", path.display().to_string());
    if double {
        let lib = a.bin_dir.join("libframescope_perf_double.so");
        assert!(
            lib.is_file(),
            "{} is missing: run `cargo build --workspace`",
            lib.display()
        );
        let dir = sb.path("layers");
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = serde_json::json!({
            "file_format_version": "1.2.0",
            "layer": {
                "name": DOUBLE,
                "type": "GLOBAL",
                "library_path": lib,
                "api_version": "1.3.0",
                "implementation_version": "1",
                "description": "framescope test double: VK_KHR_performance_query on lavapipe",
            }
        });
        std::fs::write(dir.join("perf_double.json"), manifest.to_string()).unwrap();
        // Below the validation layer when it is there (the list's first is nearest the app),
        // and below framescope, whose manifest is implicit.
        let layers = match sb.env("VK_INSTANCE_LAYERS") {
            Some(l) => format!("{l}:{DOUBLE}"),
            None => DOUBLE.to_string(),
        };
        sb.set("VK_INSTANCE_LAYERS", layers).set(
            "VK_LAYER_PATH",
            format!("{}:/usr/share/vulkan/explicit_layer.d", dir.display()),
        );
    }
    let app = a.testapp.display().to_string();
    let out = sb.run_under_framescope(&a, &app, &["--headless", "--frame-boundary", "--frames", "5"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean(name, &out.combined());
    let d = dump::read(&path);
    assert_eq!(d.frames.len(), 5);
    assert!(d.summary.is_some());
    d
}

fn unavailable(h: &Value, source: &str) -> String {
    h["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["source"] == source)
        .map(|u| u["reason"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no {source} in unavailable: {h}"))
}

#[test]
fn lavapipe_has_no_driver_counters_and_the_header_says_so() {
    let d = run("perfq-none", false);
    let why = unavailable(&d.header, "vk_performance_query");
    assert!(why.contains("VK_KHR_performance_query not supported"), "{why}");
    assert!(d.header.get("performance_counters").is_none(), "{}", d.header);
}

#[test]
fn the_double_s_counters_are_listed_with_units_storage_and_scope() {
    let d = run("perfq-double", true);
    let list = d.header["performance_counters"]
        .as_array()
        .unwrap_or_else(|| panic!("no performance_counters: {}", d.header));
    let got: Vec<(u64, u64, &str, &str)> = list
        .iter()
        .map(|c| {
            (
                c["family"].as_u64().unwrap(),
                c["index"].as_u64().unwrap(),
                c["name"].as_str().unwrap(),
                c["storage"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 0, "Draws", "uint64"),
            (0, 1, "Vertices", "uint64"),
            (0, 2, "Vertices per draw", "float64"),
            (0, 3, "Draws x 1000", "uint32"),
        ]
    );
    assert!(list.iter().all(|c| c["scope"] == "command" && c["unit"] == "generic"));
    assert_eq!(list[0]["category"], "Test double");
    let why = unavailable(&d.header, "vk_performance_query");
    assert!(why.contains("4 VK_KHR_performance_query counters are listed"), "{why}");
}
