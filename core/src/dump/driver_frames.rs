//! A frame's driver counters: the driver values of its samples combined per group, for the
//! frame line and the summary.

use crate::model::driver_values::DriverGroup;
use crate::model::sample::SampleRecord;

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
pub fn frame_values(groups: &[DriverGroup], samples: &[SampleRecord], out: &mut Vec<FrameGroupValues>) {
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
    use crate::model::driver_values::DriverValues;
    use crate::model::sample::Scope;

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
    fn a_counter_no_query_gave_is_nan() {
        let groups = [group(&["generic", "generic"])];
        let mut out = Vec::new();
        frame_values(&groups, &[sample(0, false, 10, &[2.0])], &mut out);
        assert_eq!(out[0].values[0], 2.0);
        assert!(out[0].values[1].is_nan(), "no query gave the second counter");
    }
}
