//! Counters and sensors over a run, for the page's graph beside the frame times: per counter
//! of the dump's catalogue, at most [`MAX_POINTS`] points of (time, least, greatest value) over
//! consecutive frames, however long the run. Built while the frames stream past in bounded
//! memory: when a counter's points fill up, neighbours merge pairwise and each later point
//! spans twice as many frames, so the points stay even and no extreme value is lost.

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Points a counter keeps at most; merging halves them, so a run ends with between half this
/// and this many.
pub const MAX_POINTS: usize = 4096;
/// Counters carried: a dump's catalogue is far shorter (per-core rows fold into tens).
const MAX_COUNTERS: usize = 256;

/// One counter's points so far.
#[derive(Default)]
struct Series {
    /// (time of the point's first frame in ms, least, greatest).
    points: Vec<(f64, f64, f64)>,
    /// The point being filled and the frames it holds.
    open: Option<(f64, f64, f64)>,
    open_frames: u64,
}

impl Series {
    fn add(&mut self, t_ms: f64, v: f64, per_point: u64) {
        let p = self.open.get_or_insert((t_ms, v, v));
        p.1 = p.1.min(v);
        p.2 = p.2.max(v);
        self.open_frames += 1;
        if self.open_frames >= per_point {
            self.points.extend(self.open.take());
            self.open_frames = 0;
        }
    }

    /// Pairs of points become one: the first's time, the pair's extremes.
    fn halve(&mut self) {
        let merged: Vec<_> = self
            .points
            .chunks(2)
            .map(|c| c.iter().skip(1).fold(c[0], |a, b| (a.0, a.1.min(b.1), a.2.max(b.2))))
            .collect();
        self.points = merged;
    }
}

/// Every counter's points, keyed by name.
#[derive(Default)]
pub struct CounterSeries {
    series: BTreeMap<String, Series>,
    /// Frames a point spans (the same for every counter).
    per_point: u64,
    /// Counter names seen beyond [`MAX_COUNTERS`], left out.
    left_out: usize,
}

impl CounterSeries {
    /// One frame's counters at `t_ms` (null values and non-finite ones are skipped).
    pub fn add<'a>(&mut self, t_ms: f64, counters: impl IntoIterator<Item = (&'a str, Option<f64>)>) {
        self.per_point = self.per_point.max(1);
        for (name, v) in counters {
            let Some(v) = v.filter(|v| v.is_finite()) else { continue };
            if !self.series.contains_key(name) && self.series.len() >= MAX_COUNTERS {
                self.left_out += 1;
                continue;
            }
            let s = self.series.entry(name.to_string()).or_default();
            s.add(t_ms, v, self.per_point);
            if s.points.len() >= MAX_POINTS {
                // Every counter halves at once, so their points keep one span.
                self.per_point *= 2;
                for s in self.series.values_mut() {
                    s.halve();
                }
            }
        }
    }

    /// The page's `counters` block: per counter its times, least and greatest values.
    pub fn into_json(self) -> Value {
        let per_point = self.per_point.max(1);
        let series: serde_json::Map<String, Value> = self
            .series
            .into_iter()
            .map(|(name, mut s)| {
                s.points.extend(s.open.take());
                let t: Vec<f64> = s.points.iter().map(|p| p.0).collect();
                let lo: Vec<f64> = s.points.iter().map(|p| p.1).collect();
                let hi: Vec<f64> = s.points.iter().map(|p| p.2).collect();
                (name, json!({"t_ms": t, "min": lo, "max": hi}))
            })
            .collect();
        json!({"per_point": per_point, "series": series, "left_out": self.left_out})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_keeps_few_points_and_every_extreme() {
        let mut c = CounterSeries::default();
        let n = 100_000u64;
        for i in 0..n {
            let v = if i == 77_777 { 1000.0 } else { (i % 10) as f64 };
            c.add(i as f64, [("gpu_util_pct", Some(v)), ("missing", None)]);
        }
        let j = c.into_json();
        let s = &j["series"]["gpu_util_pct"];
        let hi: Vec<f64> = serde_json::from_value(s["max"].clone()).unwrap();
        let lo: Vec<f64> = serde_json::from_value(s["min"].clone()).unwrap();
        assert!(
            hi.len() <= MAX_POINTS && hi.len() >= MAX_POINTS / 4,
            "{} points",
            hi.len()
        );
        assert_eq!(hi.iter().cloned().fold(f64::MIN, f64::max), 1000.0);
        assert_eq!(lo.iter().cloned().fold(f64::MAX, f64::min), 0.0);
        let per_point = j["per_point"].as_u64().unwrap();
        assert!(per_point * hi.len() as u64 >= n, "the points cover the run");
        assert!(j["series"].get("missing").is_none());
        // Times stay in order, one per point.
        let t: Vec<f64> = serde_json::from_value(s["t_ms"].clone()).unwrap();
        assert!(t.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_short_run_keeps_every_value() {
        let mut c = CounterSeries::default();
        for i in 0..10 {
            c.add(f64::from(i), [("cpu_temp_c", Some(40.0 + f64::from(i)))]);
        }
        let j = c.into_json();
        assert_eq!(j["per_point"], 1);
        assert_eq!(j["series"]["cpu_temp_c"]["max"].as_array().unwrap().len(), 10);
    }
}
