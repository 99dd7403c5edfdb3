//! The farm view: many runs grouped by a header field (a driver build, a device), one row a
//! group. A group aggregates its runs' own statistics (each run weighs the same, however many
//! frames it has), so one long run cannot hide the others; the page states this.

use super::data;
use framescope_core::stats::distribution::{low_fps, percentile_permille};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;

/// A run is an outlier when its mean fps is this far from its group's median, relative.
const OUTLIER_SHARE: f64 = 0.10;
/// Runs a group needs before one can be called an outlier.
const OUTLIER_MIN_RUNS: usize = 3;

/// The header value runs are grouped by: `driver` (its info string, else its version), `device`,
/// `label` (`run --label`), or a dotted path into the header (`config.samples`, `exe`).
fn group_key(header: &Value, field: &str) -> String {
    let text = |v: &Value| match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    };
    let at = |path: &str| path.split('.').try_fold(header, |v, k| v.get(k)).and_then(text);
    let key = match field {
        // As `export --parquet`'s `driver` column, so the page and a query over the Parquet
        // files group runs alike.
        "driver" => at("device.driver_info").or_else(|| at("device.driver_version")),
        "device" => at("device.name"),
        // `framescope run --label`, kept in the header's config.
        "label" => at("config.label").filter(|l| !l.is_empty()),
        path => at(path),
    };
    key.map_or_else(|| "(none)".into(), |k| k.trim().to_string())
}

fn num(v: &Value, path: &str) -> Option<f64> {
    path.split('.').try_fold(v, |v, k| v.get(k)).and_then(Value::as_f64)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    })
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A run's row: its group and the statistics the farm compares.
fn run_row(path: &OsString, field: &str) -> Result<Value, String> {
    let r = data::run(path, false)?;
    let s = &r["summary"];
    Ok(json!({
        "name": r["name"],
        "group": group_key(&r["header"], field),
        "frames": s["frames"],
        "fps_mean": s["fps_mean"],
        "p99_ms": num(s, "frame_time_ns.p99").map(|v| v / 1e6),
        "low_1pct_fps": s["low_1pct_fps"],
        "gpu_mean_ms": num(s, "gpu_busy_ns.mean").map(|v| v / 1e6),
        "outlier": false,
    }))
}

/// One row per group, over the run rows in it; marks their outliers.
fn group_row(name: &str, runs: &mut [&mut Value]) -> Value {
    let col = |runs: &[&mut Value], k: &str| -> Vec<f64> { runs.iter().filter_map(|r| r[k].as_f64()).collect() };
    let fps = col(runs, "fps_mean");
    let mid = median(fps.clone());
    let mut outliers = Vec::new();
    if let (Some(mid), true) = (mid, runs.len() >= OUTLIER_MIN_RUNS) {
        for r in runs.iter_mut() {
            if r["fps_mean"]
                .as_f64()
                .is_some_and(|f| (f - mid).abs() > OUTLIER_SHARE * mid)
            {
                r["outlier"] = true.into();
                outliers.push(r["name"].clone());
            }
        }
    }
    let frames: u64 = runs.iter().filter_map(|r| r["frames"].as_u64()).sum();
    json!({
        "group": name,
        "runs": runs.len(),
        "frames": frames,
        "fps_mean": mean(&fps),
        "fps_median": mid,
        "fps_min": fps.iter().copied().reduce(f64::min),
        "fps_max": fps.iter().copied().reduce(f64::max),
        "p99_ms": mean(&col(runs, "p99_ms")),
        "low_1pct_fps": mean(&col(runs, "low_1pct_fps")),
        "gpu_mean_ms": mean(&col(runs, "gpu_mean_ms")),
        "outliers": outliers,
    })
}

/// A group's frame-weighted statistics over its runs' frames concatenated: fps as frames over
/// their total time, the p99 frame time and the 1 % low of the pooled frame times, the mean
/// GPU time over the frames that have one.
fn pooled(paths: &[&OsString]) -> Result<Value, String> {
    let (mut frame_ns, mut gpu) = (Vec::new(), (0u128, 0u64));
    for p in paths {
        crate::frame_lines::scan(p, |line, _| {
            frame_ns.extend(line.cpu_frame_ns);
            if let Some(g) = line.gpu_busy_ns {
                gpu = (gpu.0 + u128::from(g), gpu.1 + 1);
            }
        })?;
    }
    frame_ns.sort_unstable();
    let total: u128 = frame_ns.iter().map(|&v| u128::from(v)).sum();
    Ok(json!({
        "fps_mean": (total > 0).then(|| frame_ns.len() as f64 * 1e9 / total as f64),
        "p99_ms": (!frame_ns.is_empty()).then(|| percentile_permille(&frame_ns, 990) as f64 / 1e6),
        "low_1pct_fps": low_fps(&frame_ns, 100),
        "gpu_mean_ms": (gpu.1 > 0).then(|| gpu.0 as f64 / gpu.1 as f64 / 1e6),
    }))
}

/// What the page says of each aggregation.
const BY_RUNS: &str = "by run: a group's values are the mean (and median, min, max) of its runs' own statistics, \
                       each run weighing the same however many frames it has";
const BY_FRAMES: &str = "by frame: a group's fps, p99 frame time, 1 % low and GPU mean are computed over its runs' \
                         frames concatenated, so a longer run weighs more; its fps median, min and max are still over its runs";
const OUTLIERS: &str =
    "a run is marked an outlier when its mean fps is more than 10 % from its group's median (groups of 3 runs or more)";

/// The farm's runs and groups, each group aggregated by run or (`by_frames`) over its runs'
/// frames. A dump that cannot be read ends it, named.
pub fn farm(paths: &[OsString], field: &str, by_frames: bool) -> Result<Value, String> {
    let runs = paths.iter().map(|p| run_row(p, field)).collect::<Result<Vec<_>, _>>()?;
    grouped(paths, runs, field, by_frames)
}

/// The same from `export --parquet` files, one a run (grouped by `driver` or `device`, the
/// export's columns; by run only: the exports are read for their runs' statistics).
pub fn farm_of_exports(paths: &[OsString], field: &str, by_frames: bool) -> Result<Value, String> {
    if !super::farm_parquet::FIELDS.contains(&field) {
        return Err(format!(
            "a directory of Parquet exports groups by {} (its columns), not by '{field}'",
            super::farm_parquet::FIELDS.join(" or ")
        ));
    }
    if by_frames {
        return Err("--aggregate frames needs the dumps; a directory of Parquet exports is aggregated by run".into());
    }
    let runs = paths
        .iter()
        .map(|p| super::farm_parquet::run_row(p, field))
        .collect::<Result<Vec<_>, _>>()?;
    grouped(paths, runs, field, false)
}

/// Groups `runs` (rows of `paths`, in order) by their `group`.
fn grouped(paths: &[OsString], mut runs: Vec<Value>, field: &str, by_frames: bool) -> Result<Value, String> {
    let mut by_group: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let g = r["group"].as_str().unwrap_or_default().to_string();
        by_group.entry(g).or_default().push(i);
    }
    let mut groups = Vec::with_capacity(by_group.len());
    for (g, idx) in &by_group {
        let mut rows: Vec<&mut Value> = runs
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| idx.contains(i))
            .map(|(_, r)| r)
            .collect();
        let mut row = group_row(g, &mut rows);
        if by_frames {
            let members: Vec<&OsString> = idx.iter().map(|&i| &paths[i]).collect();
            for (k, v) in pooled(&members)?.as_object().into_iter().flatten() {
                row[k] = v.clone();
            }
        }
        groups.push(row);
    }
    let how = if by_frames { BY_FRAMES } else { BY_RUNS };
    Ok(json!({
        "group_by": field,
        "aggregated_by": if by_frames { "frames" } else { "runs" },
        "aggregate": format!("{how}; {OUTLIERS}"),
        "groups": groups,
        "runs": runs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_group_by_driver_or_a_header_path() {
        let h = json!({"device": {"driver_name": "radv", "driver_version": "24.1.3", "name": "RX"}, "config": {"samples": "off"}});
        assert_eq!(group_key(&h, "driver"), "24.1.3");
        assert_eq!(group_key(&h, "device"), "RX");
        assert_eq!(group_key(&h, "config.samples"), "off");
        assert_eq!(group_key(&h, "exe"), "(none)");
        // `run --label`; a run without one (the key's default, empty) is in no label's group.
        assert_eq!(group_key(&h, "label"), "(none)");
        let labelled = json!({"config": {"label": "nightly 1234"}});
        assert_eq!(group_key(&labelled, "label"), "nightly 1234");
        assert_eq!(group_key(&json!({"config": {"label": ""}}), "label"), "(none)");
    }

    /// Two runs of one driver: 100 frames at 10 ms and 900 at 20 ms. By run, the group's fps
    /// is the mean of 100 and 50; by frame, 1000 frames over 19 s.
    #[test]
    fn a_group_by_frames_weighs_the_longer_run_more_than_by_runs() {
        let dir = std::env::temp_dir().join(format!("framescope-farm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, n: u64, ft: u64| {
            let mut text = String::from(
                r#"{"type":"header","schema":"framescope.v1","api":"vulkan","device":{"driver_version":"1"}}"#,
            );
            text.push('\n');
            for i in 0..n {
                text.push_str(&format!(
                    r#"{{"type":"frame","frame":{i},"t_ns":{},"cpu_frame_ns":{ft},"gpu_busy_ns":{}}}"#,
                    (i + 1) * ft,
                    ft / 2
                ));
                text.push('\n');
            }
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p.into_os_string()
        };
        let paths = [write("a.jsonl", 100, 10_000_000), write("b.jsonl", 900, 20_000_000)];
        let by_runs = farm(&paths, "driver", false).unwrap();
        let by_frames = farm(&paths, "driver", true).unwrap();
        let fps = |v: &Value| v["groups"][0]["fps_mean"].as_f64().unwrap();
        assert!((fps(&by_runs) - 75.0).abs() < 1e-6, "{}", by_runs["groups"]);
        assert!(
            (fps(&by_frames) - 1000.0 / 19.0).abs() < 1e-6,
            "{}",
            by_frames["groups"]
        );
        assert_eq!(by_frames["groups"][0]["p99_ms"].as_f64(), Some(20.0));
        assert_eq!(by_frames["aggregated_by"], "frames");
        assert!(by_frames["aggregate"].as_str().unwrap().starts_with("by frame"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_run_far_from_its_group_is_an_outlier() {
        let mut rows: Vec<Value> = [100.0, 101.0, 99.0, 60.0]
            .iter()
            .enumerate()
            .map(|(i, f)| json!({"name": i.to_string(), "fps_mean": f, "frames": 10}))
            .collect();
        let mut refs: Vec<&mut Value> = rows.iter_mut().collect();
        let g = group_row("g", &mut refs);
        assert_eq!(g["outliers"], json!(["3"]));
        assert_eq!(g["frames"], 40);
    }
}
