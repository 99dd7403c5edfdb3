//! Counters end to end on this machine (lavapipe/llvmpipe, no NVIDIA or AMD GPU): both APIs'
//! dumps carry the same counter fields from the one frame session, the CPU/RAM/process values
//! agree with `/proc`, sources this machine lacks are listed as unavailable with reasons, the
//! HUD shows counter lines, and `framescope report` prints their means.

use framescope_tests::artifacts::require_program;
use framescope_tests::{dump, Artifacts, Outcome, Sandbox, Xvfb};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn names(v: &Value, key: &str) -> BTreeSet<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not an array: {v}"))
        .iter()
        .map(|c| c["name"].as_str().or(c["source"].as_str()).unwrap().to_string())
        .collect()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

fn unavailable_sources(h: &Value) -> BTreeSet<String> {
    h["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["source"].as_str().unwrap().to_string())
        .collect()
}

/// The testapp (Vulkan) for `frames` frames with a dump.
fn vulkan_dump(a: &Artifacts, x: &Xvfb, name: &str, frames: &str) -> (dump::Dump, Outcome, Sandbox) {
    let mut sb = Sandbox::new(name);
    let path = sb.path("vk.jsonl");
    // 30 ms a frame: long enough that the 100 ms collector reads several times.
    sb.display(x)
        .with_validation()
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "counter_interval_ms=20");
    let app = a.testapp.display().to_string();
    let out = sb.run_under_framescope(a, &app, &["--frames", frames, "--present-mode", "fifo"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    framescope_tests::validation::assert_clean(name, &out.combined());
    (dump::read(&path), out, sb)
}

#[test]
fn vulkan_and_gl_dumps_carry_the_same_counter_fields() {
    require_program("glxgears");
    require_program("timeout");
    let a = Artifacts::get();
    let x = Xvfb::start();
    let (vk, _, _) = vulkan_dump(&a, &x, "counters-vk", "200");

    let mut sb = Sandbox::new("counters-gl");
    let path = sb.path("gl.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "counter_interval_ms=20");
    let out = sb.run_under_framescope(&a, "timeout", &["-s", "INT", "3", "glxgears"], LIMIT);
    assert_eq!(out.code(), Some(124), "{}", out.describe());
    let gl = dump::read(&path);

    let catalogue = names(&vk.header, "counters");
    assert!(catalogue.contains("cpu_load_pct"), "{catalogue:?}");
    assert_eq!(
        catalogue,
        names(&gl.header, "counters"),
        "same catalogue from both APIs"
    );
    assert_eq!(vk.header["counter_sources"], gl.header["counter_sources"]);
    for (api, d) in [("vulkan", &vk), ("opengl", &gl)] {
        let last = d.frames.last().unwrap();
        assert_eq!(
            keys(&last["counters"]),
            catalogue,
            "{api}: every catalogue name in a frame"
        );
        assert!(
            keys(&last["counter_windows"]).contains("system"),
            "{api}: {}",
            last["counter_windows"]
        );
    }
    // glxgears dies of the SIGINT (its summary is the one `framescope run` completes); the
    // test app ends normally and writes its own.
    let s = vk.summary.as_ref().unwrap();
    assert!(s["counters"]["cpu_load_pct"]["frames"].as_u64().unwrap() > 0, "{s}");
    // The sources this machine lacks say so, in both.
    let (u_vk, u_gl) = (unavailable_sources(&vk.header), unavailable_sources(&gl.header));
    for src in ["nvml", "amdgpu", "intel_oa", "mali", "panfrost"] {
        assert!(u_vk.contains(src) && u_gl.contains(src), "{src}: {u_vk:?} / {u_gl:?}");
    }
}

/// `key` of /proc/meminfo, in bytes.
fn meminfo(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text.lines().find(|l| l.starts_with(&format!("{key}:"))).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[test]
fn cpu_ram_and_process_values_are_in_every_frame_and_agree_with_proc() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let (d, _, sb) = vulkan_dump(&a, &x, "counters-proc", "150");
    let u = unavailable_sources(&d.header);
    let reason = |src: &str| {
        d.header["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["source"] == src)
            .map(|e| e["reason"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert!(
        u.contains("nvml") && reason("nvml").contains("libnvidia-ml"),
        "{}",
        d.header
    );
    assert!(
        u.contains("amdgpu") && reason("amdgpu").contains("amdgpu"),
        "{}",
        d.header
    );
    // The kernel counter backends, which need a GPU this machine lacks, say exactly why.
    assert_eq!(reason("mali"), "no /dev/mali0", "{}", d.header);
    assert_eq!(reason("intel_oa"), "no i915/xe device", "{}", d.header);
    assert!(u.contains("panfrost"), "{}", d.header);

    // From the first frame with system values on, every frame has them (the collector reads
    // while frames come; a frame copies the newest values).
    let first = d
        .frames
        .iter()
        .position(|f| f["counters"]["ram_total_bytes"].is_number())
        .expect("some frame has system counters");
    assert!(first < 60, "system counters only from frame {first}");
    let total = meminfo("MemTotal");
    let used_now = total - meminfo("MemAvailable");
    let mut prev_cpu_time = 0;
    for f in &d.frames[first..] {
        let c = &f["counters"];
        assert_eq!(c["ram_total_bytes"].as_u64(), Some(total), "MemTotal: {c}");
        let used = c["ram_used_bytes"].as_f64().unwrap();
        assert!(used > 0.0 && used <= total as f64, "{c}");
        // Other processes come and go between the run and this read: within a quarter of RAM.
        assert!(
            (used - used_now as f64).abs() < total as f64 / 4.0,
            "ram_used {used} vs {used_now} now"
        );
        let rss = c["proc_rss_bytes"].as_f64().unwrap();
        assert!((4.0 * 1024.0 * 1024.0..4e9).contains(&rss), "proc_rss_bytes {rss}");
        let cpu_time = c["proc_cpu_time_ns"].as_u64().unwrap();
        assert!(cpu_time >= prev_cpu_time, "process CPU time never goes back");
        prev_cpu_time = cpu_time;
        for load in ["cpu_load_pct", "proc_cpu_pct"] {
            if let Some(v) = c[load].as_f64() {
                assert!((0.0..=100.0 * 64.0).contains(&v), "{load} {v}");
            }
        }
        assert!(f["counter_windows"]["system"]["age_ns"].as_u64().unwrap() < 2_000_000_000);
    }
    assert!(prev_cpu_time > 0);

    // `framescope report` prints the counters' means.
    let report = sb.run(&a.framescope, &["report", sb.path("vk.jsonl").to_str().unwrap()], LIMIT);
    assert_eq!(report.code(), Some(0), "{}", report.describe());
    let row = report
        .stdout
        .lines()
        .find(|l| l.trim_end().ends_with("ram_total_bytes"))
        .unwrap_or_else(|| panic!("no counter row: {}", report.stdout));
    // In the unit its size picks (GiB on any machine with 1 GiB or more).
    let (div, unit) = framescope_core::units::scale("bytes", total as f64);
    let mean = framescope_core::units::number(total as f64 / div);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(
        cells.windows(2).any(|w| w == [unit.as_str(), mean.as_str()]),
        "mean of ram_total_bytes as {mean} {unit}: {row}"
    );
}

#[test]
fn counters_off_start_no_collector_and_leave_the_fields_empty() {
    let a = Artifacts::get();
    let x = Xvfb::start();
    let mut sb = Sandbox::new("counters-off");
    let path = sb.path("vk.jsonl");
    sb.display(&x)
        .set("FRAMESCOPE_DUMP", path.display().to_string())
        .set("FRAMESCOPE_CONFIG", "counters=0");
    let app = a.testapp.display().to_string();
    let out = sb.run_under_framescope(&a, &app, &["--frames", "20"], LIMIT);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let d = dump::read(Path::new(&path));
    assert_eq!(d.header["counters"], serde_json::json!([]));
    assert!(d.frames.iter().all(|f| keys(&f["counters"]).is_empty()));
}
