//! Driver counters (`VK_KHR_performance_query`): lavapipe has none, and the header says so; with
//! the test double below framescope (tests/perfdouble, a layer that gives lavapipe four
//! deterministic counters), the header lists the device's counters per queue family, with
//! their units, storage and scope, and the validation layer between the two reports nothing.

use framescope_tests::{dump, test_layers, validation, Artifacts, Sandbox};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// Runs the headless test app for 5 frames under framescope, with the double when `double`.
fn run(name: &str, double: bool) -> dump::Dump {
    run_with(name, double, "", &[], &[], 5).0
}

/// Runs the headless test app under framescope with config `config`, app arguments `args`
/// (after `--headless --frame-boundary --frames N`) and further environment `env`, with the
/// double below framescope when `double`.
fn run_with(
    name: &str,
    double: bool,
    config: &str,
    args: &[&str],
    env: &[(&str, &str)],
    frames: usize,
) -> (dump::Dump, Sandbox, std::path::PathBuf, framescope_tests::Outcome) {
    let a = Artifacts::get();
    let mut sb = Sandbox::new(name);
    let path = sb.path("dump.jsonl");
    sb.with_validation().set("FRAMESCOPE_DUMP", path.display().to_string());
    if !config.is_empty() {
        sb.set("FRAMESCOPE_CONFIG", config);
    }
    for (k, v) in env {
        sb.set(k, *v);
    }
    if double {
        test_layers::PERF_DOUBLE.enable(&mut sb);
    }
    let app = a.testapp.display().to_string();
    let n = frames.to_string();
    let mut all = vec!["--headless", "--frame-boundary", "--frames", n.as_str()];
    all.extend_from_slice(args);
    let out = sb.run_under_framescope(&a, &app, &all, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean(name, &out.combined());
    let d = dump::read(&path);
    assert_eq!(d.frames.len(), frames);
    assert!(d.summary.is_some());
    (d, sb, path, out)
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
    assert!(why.contains("driver_counters=0 (the default)"), "{why}");
    assert!(why.contains("4 counters are listed"), "{why}");
    assert!(d.header.get("performance_counter_groups").is_none(), "{}", d.header);
}

/// The regions scene in one command buffer: three rendering instances of (draws, vertices
/// per draw) each.
const PASSES: [(f64, f64); 3] = [(10.0, 300.0), (100.0, 36.0), (1.0, 3.0)];

fn groups(h: &Value) -> Vec<Vec<String>> {
    h["performance_counter_groups"]
        .as_array()
        .unwrap_or_else(|| panic!("no performance_counter_groups: {h}"))
        .iter()
        .map(|g| {
            assert_eq!(g["scope"], "render_pass", "{g}");
            g["counters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// What the double counts for a pass of `draws` draws of `per` vertices, by counter name.
fn known(name: &str, (draws, per): (f64, f64)) -> f64 {
    match name {
        "Draws" => draws,
        "Vertices" => draws * per,
        "Vertices per draw" => per,
        "Draws x 1000" => draws * 1000.0,
        _ => panic!("unknown counter {name}"),
    }
}

#[test]
fn per_pass_driver_counters_equal_the_work_and_the_two_groups_alternate() {
    let (d, sb, path, _) = run_with(
        "perfq-collect",
        true,
        // Label sampling names the passes by their label paths.
        "driver_counters=1,samples=label",
        &["--scene", "regions", "--labels"],
        &[],
        12,
    );
    assert_eq!(
        groups(&d.header),
        [vec!["Draws", "Vertices"], vec!["Vertices per draw", "Draws x 1000"]],
        "two counters a pass: the double's two passes become two groups"
    );
    assert!(
        !d.header["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["source"] == "vk_performance_query"),
        "{}",
        d.header["unavailable"]
    );
    let names = groups(&d.header);
    // lavapipe's driver (under the double) is none the mapping knows: no meanings, and frames'
    // `common` maps stay empty.
    for g in d.header["performance_counter_groups"].as_array().unwrap() {
        assert!(g["meanings"].as_array().unwrap().iter().all(Value::is_null), "{g}");
    }
    let mut carried = [0usize; 2];
    for f in &d.frames {
        let entries = f["driver_counters"].as_array().unwrap_or_else(|| panic!("{f}"));
        assert_eq!(entries.len(), 1, "one group a frame: {f}");
        let e = &entries[0];
        let g = e["group"].as_u64().unwrap() as usize;
        let k = f["frame"].as_u64().unwrap() as usize;
        assert_eq!(g, k % 2, "frame {k} carries group {g}");
        assert_eq!(e["reused"], 0);
        assert_eq!(e["samples"], 3, "one query per pass: {e}");
        assert_eq!(e["common"], serde_json::json!({}), "{e}");
        carried[g] += 1;
        // Per pass: the passes' samples carry exactly their own work.
        let passes: Vec<&Value> = f["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["scope"] == "renderpass")
            .collect();
        assert_eq!(passes.len(), 3, "{f}");
        for (s, want) in passes.iter().zip(PASSES) {
            let dc = &s["driver_counters"];
            assert_eq!(dc["group"].as_u64(), Some(g as u64), "{s}");
            assert_eq!(dc["reused"], false);
            for name in &names[g] {
                assert_eq!(dc["counters"][name].as_f64(), Some(known(name, want)), "{name} in {s}");
            }
        }
        // Per frame: counts add up over the passes; the ratio is weighted by GPU time.
        let c = &e["counters"];
        if g == 0 {
            assert_eq!(c["Draws"].as_f64(), Some(111.0), "{e}");
            assert_eq!(c["Vertices"].as_f64(), Some(3000.0 + 3600.0 + 3.0), "{e}");
        } else {
            assert_eq!(c["Draws x 1000"].as_f64(), Some(111_000.0), "{e}");
            let per = c["Vertices per draw"].as_f64().unwrap();
            assert!((3.0..=300.0).contains(&per), "a weighted mean of 300, 36 and 3: {per}");
        }
    }
    assert_eq!(carried, [6, 6]);
    // The summary: each counter's mean over the frames that carried it, and how many.
    let sc = &d.summary.as_ref().unwrap()["counters"];
    assert_eq!(sc["driver: Draws"]["mean"].as_f64(), Some(111.0), "{sc}");
    assert_eq!(sc["driver: Draws"]["frames"], 6, "{sc}");
    assert_eq!(sc["driver: Draws x 1000"]["frames"], 6, "{sc}");
    // `report` recomputes the same summary from the frames, and shows the per-pass means.
    let a = Artifacts::get();
    let rep = sb.run(&a.framescope, &["report", path.to_str().unwrap()], LIMIT);
    assert_eq!(rep.code(), Some(0), "{}", rep.describe());
    let text = &rep.stdout;
    assert!(text.contains("summary written by the dump"), "{text}");
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    // `Draws  generic  111.000  111.000  111.000  6  driver: Draws` (the id last)
    let counter = rows
        .iter()
        .find(|r| r.len() == 8 && r[6..] == ["driver:", "Draws"])
        .unwrap_or_else(|| panic!("no driver: Draws row: {text}"));
    assert_eq!(counter[..6], ["Draws", "generic", "111.000", "111.000", "111.000", "6"]);
    // `Frame/Shadows  Vertices  3,000.0  6`: label, counter name, mean, passes.
    let pass = |label: &str, name: &str| -> (String, String) {
        let r = rows
            .iter()
            .find(|r| r.len() > 3 && r[0] == label && r[1..r.len() - 2].join(" ") == name)
            .unwrap_or_else(|| panic!("no {label} {name} row: {text}"));
        (r[r.len() - 2].to_string(), r[r.len() - 1].to_string())
    };
    assert_eq!(pass("Frame/Shadows", "Vertices"), ("3,000.0".into(), "6".into()));
    assert_eq!(pass("Frame/Main", "Draws x 1000"), ("100,000".into(), "6".into()));
    assert_eq!(pass("Frame/Post", "Vertices per draw"), ("3.000".into(), "6".into()));
}

#[test]
fn reused_command_buffers_keep_their_group_and_say_so() {
    let (d, ..) = run_with(
        "perfq-reuse",
        true,
        "driver_counters=1",
        &["--scene", "regions", "--reuse"],
        &[],
        12,
    );
    let mut reused = 0;
    for f in &d.frames {
        for e in f["driver_counters"].as_array().unwrap() {
            let n = e["reused"].as_u64().unwrap();
            reused += n;
            let g = e["group"].as_u64().unwrap();
            let c = &e["counters"];
            // A reused recording still counts its own work.
            if g == 0 {
                assert_eq!(c["Draws"].as_f64(), Some(111.0), "{e}");
            } else {
                assert_eq!(c["Draws x 1000"].as_f64(), Some(111_000.0), "{e}");
            }
        }
    }
    assert!(
        reused > 0,
        "command buffers recorded once and submitted again are reported as reused"
    );
}

#[test]
fn a_refused_profiling_lock_is_unavailable_and_the_app_is_unaffected() {
    let (d, ..) = run_with(
        "perfq-lock",
        true,
        "driver_counters=1",
        &["--scene", "regions"],
        &[("FRAMESCOPE_PERF_DOUBLE_LOCK", "refuse")],
        5,
    );
    let why = unavailable(&d.header, "vk_performance_query");
    assert!(why.contains("vkAcquireProfilingLockKHR answered"), "{why}");
    assert!(why.contains("TIMEOUT"), "{why}");
    for f in &d.frames {
        assert!(f.get("driver_counters").is_none(), "{f}");
        assert!(f["gpu_busy_ns"].as_u64().is_some(), "timing goes on: {f}");
    }
}

/// Driver counters add no heap allocation on the app's threads in steady state: their query
/// blocks, the recordings' block lists, the submissions' values and the frame session's table
/// keep their room (`FRAMESCOPE_REPORT_ALLOCS`, as in `steady_allocations.rs`).
#[test]
fn driver_counters_allocate_nothing_per_frame() {
    let (_, _, _, out) = run_with(
        "perfq-alloc",
        true,
        "driver_counters=1,samples=label",
        &["--scene", "regions", "--threads", "2"],
        &[("FRAMESCOPE_REPORT_ALLOCS", "60"), ("FRAMESCOPE_TRACE_ALLOCS", "1")],
        300,
    );
    let (allocs, _, steady) = framescope_tests::allocs::report(&out, "driver counters", 60);
    assert!(steady >= 200, "{steady} steady frames");
    assert_eq!(allocs, 0, "heap allocations in steady state:\n{}", out.stderr);
}
