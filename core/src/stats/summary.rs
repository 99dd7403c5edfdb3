//! Summary statistics of a run, shared by the dump writer and `framescope report` so the
//! summary they produce is the same for the same frames.
//!
//! Definitions (also in docs/dump-schema.md):
//! - frame times are the frames' `cpu_frame_ns` (present to present); the first frame has
//!   none and is not a frame time;
//! - `fps_mean` = number of frame times / sum of frame times;
//! - percentiles are nearest-rank: the p-th percentile of n sorted values is the value at
//!   1-based rank `ceil(p/100 * n)` (at least 1), computed in integer arithmetic;
//! - the 1% (0.1%) low is the mean fps of the slowest 1% (0.1%) of frame times:
//!   `k / sum(k largest frame times)` with `k = ceil(n / 100)` (`ceil(n / 1000)`), so at
//!   least one frame.
//!
//! Memory is bounded: the first [`EXACT_VALUES`] values of a distribution are kept and the
//! statistics above are exact; past that they go into an HDR histogram with 3 significant
//! digits (buckets at most 1/1024 of their value wide), and every reported percentile is the
//! top of the exact value's bucket (never above the exact maximum): at most 0.1% above the
//! exact value, never below. The lows sum those bucket tops, so they are at most 0.1% below
//! the exact fps. Count, mean, `fps_mean` and max stay exact.

use serde::{Deserialize, Serialize};

pub use crate::stats::distribution::{distribution, low_fps, percentile_permille, Distribution, Values, EXACT_VALUES};

/// Summary of a run. Optional parts are `None` when there is nothing to compute them from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Frames summarised.
    pub frames: u64,
    /// First frame's `t_ns` to last frame's `t_ns`.
    pub duration_ns: u64,
    /// Frame times / sum of frame times, in frames per second.
    pub fps_mean: Option<f64>,
    /// Distribution of `cpu_frame_ns`.
    pub frame_time_ns: Option<Distribution>,
    /// Mean fps of the slowest 1% of frame times.
    pub low_1pct_fps: Option<f64>,
    /// Mean fps of the slowest 0.1% of frame times.
    pub low_0_1pct_fps: Option<f64>,
    /// Distribution of `gpu_busy_ns` over frames that have it.
    pub gpu_busy_ns: Option<Distribution>,
    /// Frames without GPU time (`gpu_busy_ns` null).
    pub gpu_missing_frames: u64,
    /// Per counter (by name): mean, min and max over the frames that carry a value.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counters: std::collections::BTreeMap<String, CounterStats>,
    /// Timed draws aggregated per key ([`crate::session::draw_keys`]): the most expensive first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draws_top: Vec<crate::session::draw_keys::DrawSummary>,
    /// Distinct draw keys seen, and timed draws left out because the key table was full.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub draw_keys: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub draws_untracked: u64,
    /// The frame timeline: CPU busy/wait, stutters by cause, when frames reached the screen
    /// ([`crate::stats::timeline_stats`]); absent when no frame carried its fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::stats::timeline_stats::TimelineSummary>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Mean, min and max of one counter over the frames that carry it. A counter read every
/// 100 ms repeats its value in every frame of the window, so this is a mean over frames
/// (time-weighted by frame length), not over readings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterStats {
    pub frames: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

/// Accumulates frames and produces a [`Summary`], in bounded memory ([`Values`]); it runs on
/// the writer thread or in the CLI, never on the app's threads.
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    frames: u64,
    first_t_ns: Option<u64>,
    last_t_ns: u64,
    frame_times: Values,
    gpu_busy: Values,
    gpu_missing: u64,
    /// name -> (frames, sum, min, max)
    counters: std::collections::BTreeMap<String, (u64, f64, f64, f64)>,
    /// The frame timeline, fed by the caller from each frame's fields.
    pub timeline: crate::stats::timeline_stats::TimelineStats,
}

impl SummaryBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one frame, given its dump fields.
    pub fn add(&mut self, t_ns: u64, cpu_frame_ns: Option<u64>, gpu_busy_ns: Option<u64>) {
        self.frames += 1;
        self.first_t_ns.get_or_insert(t_ns);
        self.last_t_ns = t_ns;
        if let Some(ft) = cpu_frame_ns {
            self.frame_times.add(ft);
        }
        match gpu_busy_ns {
            Some(b) => self.gpu_busy.add(b),
            None => self.gpu_missing += 1,
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Counters with at least one value so far.
    pub fn counter_names(&self) -> usize {
        self.counters.len()
    }

    pub fn has_counter(&self, name: &str) -> bool {
        self.counters.contains_key(name)
    }

    /// Adds one frame's value of a counter; non-finite values are ignored.
    pub fn add_counter(&mut self, name: &str, v: f64) {
        if !v.is_finite() {
            return;
        }
        match self.counters.get_mut(name) {
            Some((n, sum, min, max)) => {
                *n += 1;
                *sum += v;
                *min = min.min(v);
                *max = max.max(v);
            }
            None => {
                self.counters.insert(name.to_string(), (1, v, v, v));
            }
        }
    }

    /// The summary of the frames added so far.
    pub fn summary(&self) -> Summary {
        let ft = &self.frame_times;
        Summary {
            frames: self.frames,
            duration_ns: self.first_t_ns.map_or(0, |f| self.last_t_ns.saturating_sub(f)),
            fps_mean: ft.fps(),
            frame_time_ns: ft.distribution(),
            low_1pct_fps: ft.low_fps(100),
            low_0_1pct_fps: ft.low_fps(1000),
            gpu_busy_ns: self.gpu_busy.distribution(),
            gpu_missing_frames: self.gpu_missing,
            counters: self
                .counters
                .iter()
                .map(|(k, &(frames, sum, min, max))| {
                    (
                        k.clone(),
                        CounterStats {
                            frames,
                            mean: sum / frames as f64,
                            min,
                            max,
                        },
                    )
                })
                .collect(),
            draws_top: Vec::new(),
            draw_keys: 0,
            draws_untracked: 0,
            timeline: self.timeline.summary(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn nearest_rank_on_ten_values() {
        let v = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
        // rank = ceil(p * 10): p50 -> 5, p90 -> 9, p95 -> 10 (9.5 up), p99.9 -> 10, p0 -> 1.
        assert_eq!(percentile_permille(&v, 500), 50);
        assert_eq!(percentile_permille(&v, 900), 90);
        assert_eq!(percentile_permille(&v, 950), 100);
        assert_eq!(percentile_permille(&v, 999), 100);
        assert_eq!(percentile_permille(&v, 0), 10);
        assert_eq!(percentile_permille(&v, 1000), 100);
    }

    #[test]
    fn nearest_rank_on_exact_boundaries() {
        // 1000 values 1..=1000: p99.9 rank = 999 exactly -> 999, p50 -> 500, p99 -> 990.
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile_permille(&v, 999), 999);
        assert_eq!(percentile_permille(&v, 500), 500);
        assert_eq!(percentile_permille(&v, 990), 990);
        // 1001 values: p99.9 rank = ceil(999.999) = 1000.
        let v: Vec<u64> = (1..=1001).collect();
        assert_eq!(percentile_permille(&v, 999), 1000);
    }

    #[test]
    fn lows_take_at_least_one_frame() {
        // 5 frames: 1% of 5 rounds up to 1 frame, the slowest (40 ms) -> 25 fps.
        let v = [10 * MS, 10 * MS, 20 * MS, 20 * MS, 40 * MS];
        assert!(close(low_fps(&v, 100).unwrap(), 25.0));
        assert!(close(low_fps(&v, 1000).unwrap(), 25.0));
        assert_eq!(low_fps(&[], 100), None);
    }

    #[test]
    fn one_percent_low_of_two_hundred_frames_uses_two() {
        // 198 frames of 10 ms, one of 50 ms, one of 30 ms: k = 2 -> 2 / 80 ms = 25 fps.
        // 0.1%: k = ceil(200/1000) = 1 -> 1 / 50 ms = 20 fps.
        let mut v = vec![10 * MS; 198];
        v.push(50 * MS);
        v.push(30 * MS);
        v.sort_unstable();
        assert!(close(low_fps(&v, 100).unwrap(), 25.0));
        assert!(close(low_fps(&v, 1000).unwrap(), 20.0));
    }

    #[test]
    fn summary_of_a_hand_made_run() {
        // Frame 0 at t=0 has no frame time; then 16, 16, 17, 33, 18 ms.
        let mut b = SummaryBuilder::new();
        let times = [16, 16, 17, 33, 18];
        let mut t = 0;
        b.add(t, None, Some(5 * MS));
        for (i, ms) in times.iter().enumerate() {
            t += ms * MS;
            let gpu = if i == 2 { None } else { Some((i as u64 + 1) * MS) };
            b.add(t, Some(ms * MS), gpu);
        }
        let s = b.summary();
        assert_eq!(s.frames, 6);
        assert_eq!(s.duration_ns, 100 * MS);
        // 5 frame times summing to 100 ms -> 50 fps.
        assert!(close(s.fps_mean.unwrap(), 50.0));
        let ft = s.frame_time_ns.unwrap();
        // sorted: 16 16 17 18 33; p50 rank 3 -> 17; p90 rank ceil(4.5)=5 -> 33.
        assert_eq!(
            (ft.count, ft.p50, ft.p90, ft.p99, ft.max),
            (5, 17 * MS, 33 * MS, 33 * MS, 33 * MS)
        );
        assert!(close(ft.mean, 20.0 * MS as f64));
        // 1% low: one frame, 33 ms -> 30.303... fps.
        assert!(close(s.low_1pct_fps.unwrap(), 1000.0 / 33.0));
        // GPU busy over 5 frames with data: 5, 1, 2, 4, 5 ms -> sorted 1 2 4 5 5; p50 = 4.
        let g = s.gpu_busy_ns.unwrap();
        assert_eq!((g.count, g.p50, g.max), (5, 4 * MS, 5 * MS));
        assert!(close(g.mean, 3.4 * MS as f64));
        assert_eq!(s.gpu_missing_frames, 1);
    }

    /// A deterministic spread of frame times: mostly 14-18 ms, some spikes up to 250 ms.
    fn synthetic_frame_times(n: usize) -> Vec<u64> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let base = 14 * MS + x % (4 * MS);
                if i % 97 == 0 {
                    base + x % (236 * MS)
                } else {
                    base
                }
            })
            .collect()
    }

    /// Exact summary numbers of `v`, from the exact functions above.
    fn exact(v: &[u64]) -> (Distribution, f64, f64) {
        let mut s = v.to_vec();
        let d = distribution(&mut s).unwrap();
        (d, low_fps(&s, 100).unwrap(), low_fps(&s, 1000).unwrap())
    }

    #[test]
    fn past_the_exact_limit_percentiles_stay_within_the_documented_error() {
        for n in [EXACT_VALUES + 1, 100_000, 1_000_000] {
            let v = synthetic_frame_times(n);
            let mut b = SummaryBuilder::new();
            let mut t = 0;
            for &ft in &v {
                t += ft;
                b.add(t, Some(ft), Some(ft / 2));
            }
            assert!(b.frame_times.is_approximate() && b.frame_times.exact.capacity() == 0);
            let s = b.summary();
            let (d, low1, low01) = exact(&v);
            let got = s.frame_time_ns.unwrap();
            let rel = 1.0 / 1024.0;
            for (name, g, e) in [
                ("p50", got.p50, d.p50),
                ("p90", got.p90, d.p90),
                ("p95", got.p95, d.p95),
                ("p99", got.p99, d.p99),
                ("p99.9", got.p99_9, d.p99_9),
            ] {
                assert!(g >= e, "{n} {name}: {g} below exact {e}");
                assert!((g - e) as f64 <= e as f64 * rel, "{n} {name}: {g} vs exact {e}");
            }
            assert_eq!((got.count, got.max), (d.count, d.max), "{n}");
            assert!(close(got.mean, d.mean), "{n}");
            assert!(close(
                s.fps_mean.unwrap(),
                n as f64 * 1e9 / v.iter().sum::<u64>() as f64
            ));
            for (g, e) in [(s.low_1pct_fps.unwrap(), low1), (s.low_0_1pct_fps.unwrap(), low01)] {
                assert!(
                    g <= e * (1.0 + 1e-12) && g >= e / (1.0 + rel),
                    "{n}: low {g} vs exact {e}"
                );
            }
            let half: Vec<u64> = v.iter().map(|x| x / 2).collect();
            let g = s.gpu_busy_ns.unwrap();
            let (e, _, _) = exact(&half);
            assert!(g.p99 >= e.p99 && (g.p99 - e.p99) as f64 <= e.p99 as f64 * rel);
        }
    }

    #[test]
    fn memory_stays_bounded_however_long_the_run() {
        let mut b = SummaryBuilder::new();
        for i in 0..2_000_000u64 {
            b.add(i * 16 * MS, Some(16 * MS + i % 1000), Some(i % (50 * MS)));
        }
        // The histogram of 3 significant digits up to 50 ms is a few tens of KiB.
        let h = b.frame_times.hist.as_ref().unwrap();
        assert!(h.distinct_values() < 64 * 1024, "{}", h.distinct_values());
        assert_eq!(b.frame_times.exact.capacity(), 0);
        assert_eq!(b.summary().frame_time_ns.unwrap().count, 2_000_000);
        // A garbage value cannot make it unbounded or panic: at most 64 binary magnitudes.
        b.add(0, Some(u64::MAX), Some(u64::MAX));
        let d = b.summary().frame_time_ns.unwrap();
        assert_eq!(d.max, u64::MAX);
        assert!(b.frame_times.hist.as_ref().unwrap().distinct_values() < 64 * 1024);
    }

    #[test]
    fn up_to_the_limit_everything_is_exact() {
        let v = synthetic_frame_times(EXACT_VALUES);
        let mut b = SummaryBuilder::new();
        for &ft in &v {
            b.add(0, Some(ft), None);
        }
        assert!(!b.frame_times.is_approximate());
        let (d, low1, low01) = exact(&v);
        let s = b.summary();
        assert_eq!(s.frame_time_ns.unwrap(), d);
        assert_eq!((s.low_1pct_fps.unwrap(), s.low_0_1pct_fps.unwrap()), (low1, low01));
    }

    #[test]
    fn empty_and_single_frame_runs() {
        let s = SummaryBuilder::new().summary();
        assert_eq!(s.frames, 0);
        assert_eq!(s.fps_mean, None);
        assert_eq!(s.frame_time_ns, None);
        assert_eq!(s.gpu_busy_ns, None);
        let mut b = SummaryBuilder::new();
        b.add(123, None, None);
        let s = b.summary();
        assert_eq!(
            (s.frames, s.duration_ns, s.fps_mean, s.gpu_missing_frames),
            (1, 0, None, 1)
        );
    }
}
