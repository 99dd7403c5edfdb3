//! What driver counters (`VK_KHR_performance_query`) mean in framescope's terms: for RADV and
//! ANV, the vendor-neutral metric (`common_metrics.json`) and the vendor database's name (AMD
//! GPUPerfAPI, Intel OA) that a driver counter equals, with the factor into their unit. The
//! mapping is data (`collectors/db/driver_counter_names.json`); a counter matches by its name
//! and unit, so a driver that changes a counter's unit loses the mapping rather than being
//! scaled wrongly.

use serde::Deserialize;
use std::sync::OnceLock;

const FILE: &str = include_str!("../../db/driver_counter_names.json");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NamesFile {
    #[allow(dead_code)]
    schema: u32,
    #[allow(dead_code)]
    id: String,
    #[allow(dead_code)]
    source: String,
    drivers: Vec<Driver>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Driver {
    driver: String,
    /// `VkPhysicalDeviceDriverProperties::driverName` values of this driver.
    driver_names: Vec<String>,
    vendor_db: String,
    counters: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    unit: String,
    common: Option<String>,
    vendor: Option<String>,
    scale: f64,
}

/// A driver counter's meaning in framescope's names.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverName {
    /// The vendor-neutral metric, where one means the same.
    pub common: Option<String>,
    /// The vendor database (`amd-gpa`, `intel-oa`) and its counter's name.
    pub vendor_db: String,
    pub vendor: Option<String>,
    /// Multiplies the driver's value into those names' unit.
    pub scale: f64,
}

fn file() -> &'static NamesFile {
    static F: OnceLock<NamesFile> = OnceLock::new();
    F.get_or_init(|| serde_json::from_str(FILE).expect("driver_counter_names.json parses (tested)"))
}

/// The meaning of the counter `name` in `unit` (the layer's unit names: `cycles`, `bytes`,
/// `percentage`, ...) of the driver called `driver_name`; `None` when it has none here.
pub fn lookup(driver_name: &str, name: &str, unit: &str) -> Option<DriverName> {
    let d = file()
        .drivers
        .iter()
        .find(|d| d.driver_names.iter().any(|n| n == driver_name))?;
    let e = d.counters.iter().find(|e| e.name == name && e.unit == unit)?;
    Some(DriverName {
        common: e.common.clone(),
        vendor_db: d.vendor_db.clone(),
        vendor: e.vendor.clone(),
        scale: e.scale,
    })
}

/// The drivers the file knows (`radv`, `anv`).
pub fn drivers() -> impl Iterator<Item = &'static str> {
    file().drivers.iter().map(|d| d.driver.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radv_and_anv_counters_map_by_name_and_unit() {
        let l2 = lookup("radv", "L2 cache hit ratio", "bytes").unwrap();
        assert_eq!(l2.common.as_deref(), Some("l2_hit_pct"));
        assert_eq!(
            (l2.vendor_db.as_str(), l2.vendor.as_deref()),
            ("amd-gpa", Some("L2CacheHit"))
        );
        assert_eq!(l2.scale, 100.0, "a 0..1 ratio into percent");
        assert!(
            lookup("radv", "L2 cache hit ratio", "percentage").is_none(),
            "another unit, no guess"
        );
        let busy = lookup("Intel open-source Mesa driver", "GPU Busy", "percentage").unwrap();
        assert_eq!(busy.vendor.as_deref(), Some("intel_gpu_busy_pct"));
        assert!(lookup("llvmpipe", "GPU Busy", "percentage").is_none());
        assert_eq!(drivers().collect::<Vec<_>>(), ["radv", "anv"]);
    }

    /// Every name the mapping gives exists where it says: the common metrics file, the AMD
    /// GPUPerfAPI database (some generation), the Intel OA catalogue.
    #[test]
    fn every_mapped_name_exists_in_its_database() {
        let common: serde_json::Value = serde_json::from_str(include_str!("../../db/common_metrics.json")).unwrap();
        let common: Vec<&str> = common["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        let gpa: serde_json::Value = serde_json::from_str(include_str!("../../db/amd_gpa.json")).unwrap();
        let gpa_names: Vec<&str> = gpa["generations"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["graphics"].as_array().unwrap())
            .flat_map(|grp| grp["counters"].as_array().unwrap())
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let oa: Vec<&str> = crate::intel::metrics::METRICS.iter().map(|m| m.0).collect();
        let mut n = 0;
        for d in &file().drivers {
            for e in &d.counters {
                if let Some(c) = &e.common {
                    assert!(common.contains(&c.as_str()), "{} -> common {c}", e.name);
                }
                let v = e.vendor.as_deref().unwrap();
                let known = match d.vendor_db.as_str() {
                    "amd-gpa" => gpa_names.contains(&v),
                    "intel-oa" => oa.contains(&v),
                    other => panic!("unknown database {other}"),
                };
                assert!(known, "{} -> {} {v}", e.name, d.vendor_db);
                assert!(e.scale > 0.0 && e.scale.is_finite());
                n += 1;
            }
        }
        assert_eq!(n, 15);
    }
}
