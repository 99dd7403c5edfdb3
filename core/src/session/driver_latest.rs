//! The newest value of each driver counter, for the HUD: per group, the values combined over
//! the samples of the newest frame that carried it (as the dump's frames combine them). Fed
//! from every sample pushed to the frame session, on the app's thread: the tables are sized
//! once when the groups are known and never allocate after.

use crate::model::driver_values::{DriverGroup, MAX_GROUP};
use crate::model::sample::SampleRecord;

#[derive(Default)]
pub struct DriverLatest {
    groups: Vec<DriverGroup>,
    /// The frame whose samples are being combined.
    open: Option<u64>,
    /// Per group and counter: sum (or GPU-time-weighted sum) and weight of the open frame.
    acc: Vec<[(f64, f64); MAX_GROUP]>,
    /// Per group and counter: the newest combined value (NaN until a frame carried it).
    latest: Vec<[f64; MAX_GROUP]>,
}

impl DriverLatest {
    /// Starts over for `groups` (the device's or context's, once they are known).
    pub fn set_groups(&mut self, groups: Vec<DriverGroup>) {
        self.acc = vec![[(0.0, 0.0); MAX_GROUP]; groups.len()];
        self.latest = vec![[f64::NAN; MAX_GROUP]; groups.len()];
        self.groups = groups;
        self.open = None;
    }

    pub fn groups(&self) -> &[DriverGroup] {
        &self.groups
    }

    /// The newest value of counter `k` of group `g`.
    pub fn value(&self, g: usize, k: usize) -> Option<f64> {
        self.latest.get(g)?.get(k).copied().filter(|v| v.is_finite())
    }

    /// A sample; samples arrive in frame order, so a sample of a later frame closes the open one.
    pub fn add(&mut self, s: &SampleRecord) {
        let Some(d) = s.driver.filter(|_| !s.overwritten) else {
            return;
        };
        if self.open.is_some_and(|f| f != s.frame) {
            self.close();
        }
        self.open = Some(s.frame);
        let g = usize::from(d.group);
        let (Some(desc), Some(acc)) = (self.groups.get(g), self.acc.get_mut(g)) else {
            return;
        };
        let w = s.gpu_ns().map_or(1.0, |ns| ns.max(1) as f64);
        for (k, v) in d.values().iter().enumerate().filter(|(_, v)| v.is_finite()) {
            let a = &mut acc[k];
            if desc.additive(k) {
                *a = (a.0 + v, 1.0);
            } else {
                *a = (a.0 + v * w, a.1 + w);
            }
        }
    }

    /// Folds the open frame into the newest values.
    fn close(&mut self) {
        for ((desc, acc), latest) in self.groups.iter().zip(&mut self.acc).zip(&mut self.latest) {
            for (k, a) in acc.iter_mut().enumerate() {
                if a.1 > 0.0 {
                    latest[k] = if desc.additive(k) { a.0 } else { a.0 / a.1 };
                }
                *a = (0.0, 0.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::driver_values::DriverValues;

    fn sample(frame: u64, group: u8, ns: u64, v: &[f64]) -> SampleRecord {
        SampleRecord {
            frame,
            gpu_begin_ns: Some(0),
            gpu_end_ns: Some(ns),
            driver: Some(DriverValues::new(group, false, v)),
            ..SampleRecord::default()
        }
    }

    #[test]
    fn each_counter_shows_the_newest_frame_that_carried_its_group() {
        let mut t = DriverLatest::default();
        let g = |units: &[&'static str]| DriverGroup {
            units: units.to_vec(),
            storages: units
                .iter()
                .map(|u| if *u == "percentage" { "float64" } else { "uint64" })
                .collect(),
            ..DriverGroup::default()
        };
        t.set_groups(vec![g(&["generic", "percentage"]), g(&["cycles"])]);
        t.add(&sample(1, 0, 100, &[3.0, 10.0]));
        t.add(&sample(1, 0, 300, &[5.0, 50.0]));
        assert_eq!(t.value(0, 0), None, "frame 1 is still open");
        t.add(&sample(2, 1, 10, &[7.0]));
        assert_eq!((t.value(0, 0), t.value(0, 1)), (Some(8.0), Some(40.0)));
        assert_eq!(t.value(1, 0), None);
        t.add(&sample(3, 0, 10, &[1.0, 1.0]));
        assert_eq!(t.value(1, 0), Some(7.0));
        assert_eq!(
            t.value(0, 0),
            Some(8.0),
            "group 0 keeps frame 1's value until frame 3 closes"
        );
        assert_eq!(t.value(9, 0), None);
    }
}
