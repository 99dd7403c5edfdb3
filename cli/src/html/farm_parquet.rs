//! The farm view's runs from `framescope export --parquet` files instead of dumps: a farm that
//! keeps only the Parquet exports (the form a query engine takes) still gets its page. One file
//! is one run; its statistics are computed from the `cpu_frame_ns` and `gpu_busy_ns` columns
//! with the functions `report` uses, its group from the `driver` or `device` column (the
//! export's values of the header fields the dump view groups by).

use framescope_core::stats::distribution::{low_fps, percentile_permille};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::{json, Value};
use std::ffi::OsString;

/// The group fields a Parquet export carries.
pub const FIELDS: [&str; 2] = ["driver", "device"];

/// A run's row, as `farm::run_row` gives it for a dump.
pub fn run_row(path: &OsString, field: &str) -> Result<Value, String> {
    let p = std::path::Path::new(path);
    let shown = crate::text::show(path);
    let file = std::fs::File::open(p).map_err(|e| format!("cannot read '{shown}': {e}"))?;
    let reader = SerializedFileReader::new(file).map_err(|e| format!("'{shown}' is not a Parquet file: {e}"))?;
    let rows = reader.get_row_iter(None).map_err(|e| format!("'{shown}': {e}"))?;
    let (mut frame_ns, mut gpu, mut group, mut dump) = (Vec::new(), (0u128, 0u64), None, None);
    for row in rows {
        let row = row.map_err(|e| format!("'{shown}': {e}"))?;
        for (name, value) in row.get_column_iter() {
            match (name.as_str(), value) {
                ("cpu_frame_ns", Field::Long(v)) if *v >= 0 => frame_ns.push(*v as u64),
                ("gpu_busy_ns", Field::Long(v)) if *v >= 0 => gpu = (gpu.0 + *v as u128, gpu.1 + 1),
                (n, Field::Str(s)) if n == field && group.is_none() => group = Some(s.trim().to_string()),
                ("dump", Field::Str(s)) if dump.is_none() => dump = Some(s.clone()),
                _ => {}
            }
        }
    }
    let mut sorted = frame_ns;
    sorted.sort_unstable();
    let total: u128 = sorted.iter().map(|&v| u128::from(v)).sum();
    let name = p.file_name().map_or_else(|| shown.clone(), crate::text::show);
    Ok(json!({
        "name": name,
        "dump": dump,
        "group": group.filter(|g| !g.is_empty()).unwrap_or_else(|| "(none)".into()),
        "frames": sorted.len(),
        "fps_mean": (total > 0).then(|| sorted.len() as f64 * 1e9 / total as f64),
        "p99_ms": (!sorted.is_empty()).then(|| percentile_permille(&sorted, 990) as f64 / 1e6),
        "low_1pct_fps": low_fps(&sorted, 100),
        "gpu_mean_ms": (gpu.1 > 0).then(|| gpu.0 as f64 / gpu.1 as f64 / 1e6),
        "outlier": false,
    }))
}
