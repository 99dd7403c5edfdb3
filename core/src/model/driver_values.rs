//! Driver counters of samples (Vulkan `VK_KHR_performance_query`): the values one query read
//! and the groups the device's selected counters were split into (each needs one pass); a
//! frame's values combined over its samples are `dump::driver_frames`.
//!
//! A group is collected on the frames that carry it: groups rotate across frames, since a live
//! overlay cannot replay a frame once per pass as GPUPerfAPI's sessions do (seed 003). Values
//! are then means over the frames that carried the group, which assumes a steady workload.

/// Counters in one group at most: a sample's values are a fixed array (no allocation where
/// samples are made, on the app's threads).
pub const MAX_GROUP: usize = 8;

/// One query's values, in its group's counter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DriverValues {
    pub group: u8,
    /// The command buffer was recorded in an earlier frame and submitted again: it carries the
    /// group it was recorded with, whichever group this frame's rotation names.
    pub reused: bool,
    len: u8,
    values: [f64; MAX_GROUP],
}

impl DriverValues {
    /// The first [`MAX_GROUP`] of `values`.
    pub fn new(group: u8, reused: bool, values: &[f64]) -> DriverValues {
        let mut v = [f64::NAN; MAX_GROUP];
        let n = values.len().min(MAX_GROUP);
        v[..n].copy_from_slice(&values[..n]);
        DriverValues {
            group,
            reused,
            len: n as u8,
            values: v,
        }
    }

    pub fn values(&self) -> &[f64] {
        &self.values[..self.len as usize]
    }
}

/// How a group's counters are named and combined, for the dump writer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DriverGroup {
    /// The queue family whose counters these are.
    pub family: u32,
    /// Where the queries go: `command_buffer` (first to last command of each primary) or
    /// `render_pass` (around each render pass instance).
    pub scope: &'static str,
    pub names: Vec<String>,
    /// The driver's unit names (`generic`, `percentage`, `nanoseconds`, ...).
    pub units: Vec<&'static str>,
    /// The driver's storage names (`uint64`, `float64`, ...).
    pub storages: Vec<&'static str>,
    /// Per counter, what it means in framescope's names where the driver is known (RADV,
    /// ANV): (vendor-neutral metric, vendor database name, factor into their unit).
    pub meanings: Vec<Option<Meaning>>,
}

/// A driver counter's vendor-neutral metric and vendor database name, and the factor from
/// the driver's unit into theirs.
#[derive(Clone, Debug, PartialEq)]
pub struct Meaning {
    pub common: Option<String>,
    pub vendor_db: String,
    pub vendor: Option<String>,
    pub scale: f64,
}

impl DriverGroup {
    /// Whether the `k`th counter adds up over a frame's queries: an integer count, time,
    /// byte or cycle count. The others (percentages, rates, temperatures, power, and floats,
    /// which drivers use for derived ratios) are averaged, weighted by each query's GPU time.
    pub fn additive(&self, k: usize) -> bool {
        let integer = matches!(
            self.storages.get(k).copied(),
            Some("int32" | "int64" | "uint32" | "uint64")
        );
        integer
            && matches!(
                self.units.get(k).copied(),
                Some("generic" | "nanoseconds" | "bytes" | "cycles")
            )
    }
}

/// The summary's name of a driver counter: apart from framescope's own counters.
pub fn summary_name(name: &str) -> String {
    format!("driver: {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_beyond_the_group_size_are_cut() {
        let many: Vec<f64> = (0..20).map(f64::from).collect();
        let d = DriverValues::new(1, false, &many);
        assert_eq!(d.values().len(), MAX_GROUP);
        assert_eq!(d.values()[7], 7.0);
    }

    #[test]
    fn only_integer_counts_add_up() {
        let g = DriverGroup {
            units: vec!["generic", "generic", "percentage", "bytes"],
            storages: vec!["uint64", "float64", "uint64", "int32"],
            ..DriverGroup::default()
        };
        assert_eq!(
            (0..4).map(|k| g.additive(k)).collect::<Vec<_>>(),
            [true, false, false, true]
        );
    }
}
