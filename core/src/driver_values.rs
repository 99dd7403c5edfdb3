//! Driver counters of samples (Vulkan `VK_KHR_performance_query`): the values one query read,
//! the groups the device's selected counters were split into (each needs one pass), and a
//! frame's values combined over its samples.
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

/// A frame's values of one group: combined over the frame's samples that carry it.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameGroupValues {
    pub group: u8,
    /// Samples that carried the group.
    pub samples: u32,
    /// Of them, from command buffers recorded in an earlier frame.
    pub reused: u32,
    pub values: Vec<f64>,
}

/// Combines the driver values of `samples` per group (in group order) into `out`.
pub fn frame_values(groups: &[DriverGroup], samples: &[crate::sample::SampleRecord], out: &mut Vec<FrameGroupValues>) {
    out.clear();
    for (g, desc) in groups.iter().enumerate() {
        let n = desc.names.len();
        let mut acc = FrameGroupValues {
            group: g as u8,
            samples: 0,
            reused: 0,
            values: vec![0.0; n],
        };
        let mut weights = vec![0.0; n];
        for s in samples {
            // An overwritten sample's query slot was rewritten by a later submission.
            let Some(d) = s.driver.filter(|d| usize::from(d.group) == g && !s.overwritten) else {
                continue;
            };
            acc.samples += 1;
            acc.reused += u32::from(d.reused);
            let w = s.gpu_ns().map_or(1.0, |ns| ns.max(1) as f64);
            for (k, v) in d.values().iter().enumerate().take(n) {
                if !v.is_finite() {
                    continue;
                }
                if desc.additive(k) {
                    acc.values[k] += v;
                    weights[k] = 1.0;
                } else {
                    acc.values[k] += v * w;
                    weights[k] += w;
                }
            }
        }
        if acc.samples == 0 {
            continue;
        }
        for (k, v) in acc.values.iter_mut().enumerate() {
            *v = if weights[k] == 0.0 {
                f64::NAN
            } else if desc.additive(k) {
                *v
            } else {
                *v / weights[k]
            };
        }
        out.push(acc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{SampleRecord, Scope};

    fn group(units: &[&'static str]) -> DriverGroup {
        DriverGroup {
            family: 0,
            scope: "render_pass",
            names: units.iter().map(|u| format!("c_{u}")).collect(),
            units: units.to_vec(),
            storages: units
                .iter()
                .map(|u| if *u == "percentage" { "float64" } else { "uint64" })
                .collect(),
            meanings: vec![None; units.len()],
        }
    }

    fn sample(group: u8, reused: bool, ns: u64, v: &[f64]) -> SampleRecord {
        SampleRecord {
            scope: Scope::RenderPass,
            gpu_begin_ns: Some(1000),
            gpu_end_ns: Some(1000 + ns),
            driver: Some(DriverValues::new(group, reused, v)),
            ..SampleRecord::default()
        }
    }

    #[test]
    fn counts_add_up_and_percentages_are_weighted_by_gpu_time() {
        let groups = [group(&["generic", "percentage"]), group(&["cycles"])];
        let samples = [
            sample(0, false, 100, &[3.0, 10.0]),
            sample(0, true, 300, &[5.0, 50.0]),
            SampleRecord::default(),
        ];
        let mut out = Vec::new();
        frame_values(&groups, &samples, &mut out);
        assert_eq!(out.len(), 1, "group 1 was not carried");
        assert_eq!(out[0].group, 0);
        assert_eq!((out[0].samples, out[0].reused), (2, 1));
        assert_eq!(out[0].values, vec![8.0, 40.0]);
    }

    #[test]
    fn values_beyond_the_group_size_are_cut_and_unset_ones_are_nan() {
        let many: Vec<f64> = (0..20).map(f64::from).collect();
        let d = DriverValues::new(1, false, &many);
        assert_eq!(d.values().len(), MAX_GROUP);
        assert_eq!(d.values()[7], 7.0);
        let groups = [group(&["generic", "generic"])];
        let mut out = Vec::new();
        frame_values(&groups, &[sample(0, false, 10, &[2.0])], &mut out);
        assert_eq!(out[0].values[0], 2.0);
        assert!(out[0].values[1].is_nan(), "no query gave the second counter");
    }
}
