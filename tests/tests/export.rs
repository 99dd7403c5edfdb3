//! `framescope export`: a real `--scene regions` dump with every draw sampled, exported to a
//! Perfetto trace that Perfetto's own published protobuf classes decode (the PyPI `perfetto`
//! package's `perfetto_trace_pb2`, run by tests/tests/export_perfetto.py), to the MangoHud
//! and PresentMon CSV layouts, and to Parquet (read back by pyarrow, export_parquet.py).

use framescope_tests::{dump, validation, Artifacts, Sandbox, Xvfb};
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(180);
const FRAMES: usize = 30;

const MANGOHUD_SYSTEM: &str = "os,cpu,gpu,ram,kernel,driver,cpuscheduler";
const MANGOHUD_COLUMNS: &str = "fps,frametime,cpu_load,cpu_power,gpu_load,cpu_temp,gpu_temp,gpu_core_clock,gpu_mem_clock,gpu_vram_used,gpu_power,ram_used,swap_used,process_rss,cpu_mhz,elapsed";
const PRESENTMON_COLUMNS: &str = "Application,ProcessID,SwapChainAddress,PresentRuntime,SyncInterval,PresentFlags,AllowsTearing,PresentMode,TimeInSeconds,MsBetweenPresents,MsBetweenDisplayChange,MsInPresentAPI,MsUntilDisplayed,MsCPUBusy,MsCPUWait,MsGPULatency,MsGPUTime,MsGPUBusy,MsGPUWait,Dropped,MsDisplayLatency,MsDisplayedTime,MsAnimationError";

use framescope_tests::python::python_json;

/// Decodes `trace` with Perfetto's protos; a missing package is a failure, never a skip.
fn decode(sb: &Sandbox, trace: &std::path::Path) -> Value {
    framescope_tests::python::decode_perfetto(sb, trace)
}

fn timed_samples(d: &dump::Dump) -> u64 {
    let mut n = 0;
    for f in &d.frames {
        for s in f["samples"].as_array().expect("samples") {
            if let (Some(b), Some(e)) = (s["gpu_begin_ns"].as_u64(), s["gpu_end_ns"].as_u64()) {
                n += u64::from(b <= e);
            }
        }
    }
    n
}

#[test]
fn regions_dump_exports_to_perfetto_mangohud_and_presentmon() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("export-regions");
    let path = sb.path("regions.jsonl");
    sb.display(&x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "samples=draw,sample_budget=100");
    let app = a.testapp.display().to_string();
    let frames = FRAMES.to_string();
    let args = [
        "--scene", "regions", "--frames", &frames, "--width", "320", "--height", "240",
    ];
    let out = sb.run_under_framescope(&a, &app, &args, LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    validation::assert_clean("export-regions", &out.combined());
    let d = dump::read(&path);
    assert_eq!(d.frames.len(), FRAMES, "frames in the dump");
    let samples = timed_samples(&d);
    assert!(samples > 0, "the regions scene gave no timed samples");

    let (trace, csv, pm, pq) = (
        sb.path("run.pftrace"),
        sb.path("mangohud.csv"),
        sb.path("presentmon.csv"),
        sb.path("run.parquet"),
    );
    let dump_arg = path.display().to_string();
    let (t, c, p, q) = (
        trace.display().to_string(),
        csv.display().to_string(),
        pm.display().to_string(),
        pq.display().to_string(),
    );
    let out = sb.run(
        &a.framescope,
        &[
            "export",
            &dump_arg,
            "--perfetto",
            &t,
            "--csv",
            &c,
            "--presentmon",
            &p,
            "--parquet",
            &q,
        ],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}", out.describe());

    // Parquet, read back by pyarrow: a row per frame, the column types, values as in the dump.
    let v = python_json(&sb, "export_parquet.py", include_str!("export_parquet.py"), &pq);
    assert_eq!(v["rows"], FRAMES as u64, "{v}");
    let types = &v["types"];
    for (col, ty) in [
        ("dump", "string"),
        ("exe", "string"),
        ("device", "string"),
        ("pid", "int64"),
        ("frame", "int64"),
        ("t_ns", "int64"),
        ("cpu_frame_ns", "int64"),
        ("gpu_busy_ns", "int64"),
        ("draws", "int64"),
    ] {
        assert_eq!(types[col], ty, "column {col}: {v}");
    }
    for c in d.header["counters"].as_array().expect("catalogue") {
        let name = format!("counter_{}", c["name"].as_str().unwrap());
        assert_eq!(types[&name], "double", "column {name}: {v}");
    }
    let frames: Vec<Value> = d.frames.iter().map(|f| f["frame"].clone()).collect();
    assert_eq!(v["frame"], Value::Array(frames), "{v}");
    let busy: Vec<Value> = d.frames.iter().map(|f| f["gpu_busy_ns"].clone()).collect();
    assert_eq!(
        v["gpu_busy_ns"],
        Value::Array(busy),
        "nulls where the dump has none: {v}"
    );
    assert_eq!(v["dump"], serde_json::json!([dump_arg]), "{v}");
    // samples=draw counts draws: the regions scene's 111 a frame, as in the dump.
    assert_eq!(d.header["command_counts"], true, "{}", d.header);
    assert_eq!(d.u64s("draws"), vec![111; d.frames.len()]);
    assert_eq!(v["draws"], serde_json::json!([111]), "{v}");

    let v = decode(&sb, &trace);
    assert_eq!(v["errors"], Value::Array(vec![]), "{v}");
    assert_eq!(v["unknown_fields"], 0, "fields Perfetto's proto does not declare: {v}");
    assert_eq!(v["sequence_ids"], serde_json::json!([1]), "{v}");
    assert_eq!(v["first_clears_state"], true, "{v}");
    assert_eq!(v["frame_slices"], FRAMES as u64, "one slice per frame: {v}");
    assert_eq!(v["gpu_slices"], samples, "one slice per timed sample: {v}");
    let names: Vec<&str> = v["gpu_slice_names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in ["cmdbuf 0", "Frame/Main", "Frame/Shadows", "Frame/Post"] {
        assert!(names.contains(&want), "no GPU slice named {want}: {names:?}");
    }
    assert!(
        names.iter().any(|n| n.starts_with("draw ")),
        "no draw slices: {names:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("pass")),
        "no render pass slices: {names:?}"
    );
    // The samples are GPU render stage events: one stage per scope, on the app's context.
    for stage in ["cmdbuf", "renderpass", "label", "draw"] {
        assert!(
            v["gpu_stages"].as_array().unwrap().contains(&Value::from(stage)),
            "no {stage} stage: {v}"
        );
    }
    assert_eq!(
        v["contexts"],
        serde_json::json!([{"pid": d.header["pid"], "api": 2}]),
        "{v}"
    );
    assert!(
        v["gpu_tracks"].as_array().unwrap().contains(&Value::from("cmdbuf 0")),
        "{v}"
    );
    // Counters: system ones on CPU counter tracks, gpu_busy_ns and the GPU sources' as GPU
    // counter events.
    let names = |key: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str().map(String::from))
            .collect()
    };
    let (cpu_tracks, gpu_counters) = (names("counter_tracks"), names("gpu_counters"));
    assert!(gpu_counters.contains(&"gpu_busy_ns".to_string()), "{v}");
    let catalogue = d.header["counters"].as_array().expect("catalogue");
    assert!(
        catalogue.iter().any(|c| c["source"] == "system"),
        "the test wants a system counter: {}",
        d.header
    );
    for c in catalogue {
        let name = c["name"].as_str().unwrap().to_string();
        let place = if c["source"] == "system" {
            &cpu_tracks
        } else {
            &gpu_counters
        };
        assert!(
            place.contains(&name),
            "{name} ({}) is not where it belongs: {v}",
            c["source"]
        );
    }
    let busy_frames = d.frames.iter().filter(|f| f["gpu_busy_ns"].is_u64()).count() as u64;
    assert_eq!(v["gpu_counter_values"]["gpu_busy_ns"], busy_frames, "{v}");
    assert_eq!(v["process"][0]["pid"], d.header["pid"], "{v}");

    let text = std::fs::read_to_string(&csv).expect("mangohud csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], MANGOHUD_SYSTEM);
    assert_eq!(lines[1].split(',').count(), 7, "system info values: {}", lines[1]);
    assert_eq!(lines[2], MANGOHUD_COLUMNS);
    assert_eq!(lines.len() - 3, FRAMES, "one MangoHud row per frame");
    for row in &lines[3..] {
        assert_eq!(row.split(',').count(), 16, "{row}");
        assert!(
            row.split(',').all(|c| c.parse::<f64>().is_ok()),
            "MangoHud rows are numbers: {row}"
        );
    }

    let text = std::fs::read_to_string(&pm).expect("presentmon csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], PRESENTMON_COLUMNS);
    assert_eq!(lines.len() - 1, FRAMES, "one PresentMon row per frame");
    for row in &lines[1..] {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), PRESENTMON_COLUMNS.split(',').count(), "{row}");
        assert_eq!(cells[0], "framescope-testapp");
        assert_eq!(cells[3], "Vulkan");
    }
}

#[test]
fn export_refuses_a_symbolic_link_and_a_non_dump() {
    let a = Artifacts::get();
    let sb = Sandbox::new("export-hostile");
    let dump = sb.path("d.jsonl");
    std::fs::write(
        &dump,
        "{\"type\":\"header\",\"pid\":1}\n{\"type\":\"frame\",\"frame\":0,\"t_ns\":5}\n",
    )
    .unwrap();
    let target = sb.path("precious");
    std::fs::write(&target, "keep").unwrap();
    let link = sb.path("link.csv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (d, l) = (dump.display().to_string(), link.display().to_string());
    let out = sb.run(&a.framescope, &["export", &d, "--csv", &l], LIMIT);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert!(out.stderr.contains("symbolic link"), "{}", out.describe());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");

    let junk = sb.path("junk");
    std::fs::write(&junk, "\n\nhello\n").unwrap();
    let (j, o) = (junk.display().to_string(), sb.path("o.csv").display().to_string());
    let out = sb.run(&a.framescope, &["export", &j, "--presentmon", &o], LIMIT);
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.describe());
    assert!(out.stderr.contains("not a framescope dump"), "{}", out.describe());
}

/// The frame timeline in Perfetto: one display slice per displayed frame, an instant per
/// dropped one, and a hitch slice per stutter frame named by its causes; and the same frames'
/// display columns in PresentMon's layout.
#[test]
fn display_and_hitch_tracks_follow_the_frames() {
    let a = Artifacts::get();
    let sb = Sandbox::new("export-display");
    let dump = sb.path("display.jsonl");
    let mut lines = vec![
        r#"{"type":"header","schema":"framescope.v1","api":"vulkan","gpu_time":"busy","pid":7,"exe":"/bin/app","start_ns":1000000000}"#.to_string(),
    ];
    // 40 frames 16 ms apart, shown 30 ms after their start; every 8th dropped; frame 20 a
    // stutter caused by a pipeline.
    let (mut displayed, mut dropped) = (0, 0);
    for i in 0..40u64 {
        let t = 1_000_000_000 + (i + 1) * 16_000_000;
        let start = t - 14_000_000;
        let display = if i % 8 == 7 {
            dropped += 1;
            r#""display":"dropped","shown_ns":null,"displayed_time_ns":null,"display_latency_ns":null"#.to_string()
        } else {
            displayed += 1;
            format!(
                r#""display":"displayed","shown_ns":{},"displayed_time_ns":16000000,"display_latency_ns":30000000,"until_displayed_ns":16000000"#,
                start + 30_000_000
            )
        };
        let stutter = if i == 20 {
            r#""stutter":true,"stutter_causes":[{"cause":"pipeline","ns":25000000,"calls":1}]"#
        } else {
            r#""stutter":false"#
        };
        lines.push(format!(
            r#"{{"type":"frame","frame":{i},"t_ns":{t},"cpu_frame_ns":16000000,"cpu_start_ns":{start},"gpu_busy_ns":null,"samples":[],{display},{stutter}}}"#
        ));
    }
    std::fs::write(&dump, lines.join("\n") + "\n").unwrap();
    let trace = sb.path("display.perfetto-trace");
    let out = sb.run(
        &a.framescope,
        &["export", dump.to_str().unwrap(), "--perfetto", trace.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}{}", out.stdout, out.stderr);
    let v = decode(&sb, &trace);
    assert_eq!(v["errors"], Value::Array(vec![]), "{v}");
    assert_eq!(v["display_slices"], displayed, "{v}");
    assert_eq!(v["display_instants"], dropped, "{v}");
    assert_eq!(v["hitch_slices"], 1, "{v}");
    assert_eq!(v["hitch_names"][0], "stutter, frame 20: pipeline 25.0 ms", "{v}");
    let csv = sb.path("display.csv");
    let out = sb.run(
        &a.framescope,
        &["export", dump.to_str().unwrap(), "--presentmon", csv.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(out.code(), Some(0), "{}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 40);
    assert!(rows[0].ends_with(",0,30.0000,16.0000,NA"), "{}", rows[0]);
    assert!(rows[7].ends_with(",1,NA,NA,NA"), "{}", rows[7]);
}
