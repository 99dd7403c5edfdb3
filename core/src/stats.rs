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

use serde::{Deserialize, Serialize};

/// Nearest-rank percentiles of a set of durations, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Values the distribution is computed from.
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
}

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
}

/// Nearest-rank percentile of ascending `sorted` values, `permille` in 0..=1000
/// (p99.9 = 999). Panics on an empty slice.
pub fn percentile_permille(sorted: &[u64], permille: u64) -> u64 {
    let n = sorted.len() as u64;
    assert!(n > 0, "percentile of nothing");
    let rank = (n * permille).div_ceil(1000).clamp(1, n);
    sorted[(rank - 1) as usize]
}

/// Mean fps of the slowest `ceil(n / divisor)` frame times of ascending `sorted` values
/// (divisor 100: 1% low, 1000: 0.1% low). `None` when empty or the slowest sum is 0.
pub fn low_fps(sorted: &[u64], divisor: u64) -> Option<f64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    let k = n.div_ceil(divisor).max(1);
    let sum: u64 = sorted[(n - k) as usize..].iter().sum();
    fps(k, sum)
}

fn fps(frames: u64, sum_ns: u64) -> Option<f64> {
    (sum_ns > 0).then(|| frames as f64 * 1e9 / sum_ns as f64)
}

/// Distribution of the values (sorted in place); `None` when empty.
pub fn distribution(values: &mut [u64]) -> Option<Distribution> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
    Some(Distribution {
        count: values.len() as u64,
        mean: sum as f64 / values.len() as f64,
        p50: percentile_permille(values, 500),
        p90: percentile_permille(values, 900),
        p95: percentile_permille(values, 950),
        p99: percentile_permille(values, 990),
        p99_9: percentile_permille(values, 999),
        max: *values.last().expect("not empty"),
    })
}

/// Accumulates frames and produces a [`Summary`]. Keeps every frame time (8 bytes per
/// frame) so percentiles are exact; it runs on the writer thread or in the CLI, never on
/// the app's threads.
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    frames: u64,
    first_t_ns: Option<u64>,
    last_t_ns: u64,
    frame_times: Vec<u64>,
    gpu_busy: Vec<u64>,
    gpu_missing: u64,
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
            self.frame_times.push(ft);
        }
        match gpu_busy_ns {
            Some(b) => self.gpu_busy.push(b),
            None => self.gpu_missing += 1,
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The summary of the frames added so far.
    pub fn summary(&self) -> Summary {
        let mut ft = self.frame_times.clone();
        let mut gpu = self.gpu_busy.clone();
        let frame_time_ns = distribution(&mut ft);
        let sum: u64 = ft.iter().sum();
        Summary {
            frames: self.frames,
            duration_ns: self.first_t_ns.map_or(0, |f| self.last_t_ns.saturating_sub(f)),
            fps_mean: fps(ft.len() as u64, sum),
            frame_time_ns,
            low_1pct_fps: low_fps(&ft, 100),
            low_0_1pct_fps: low_fps(&ft, 1000),
            gpu_busy_ns: distribution(&mut gpu),
            gpu_missing_frames: self.gpu_missing,
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
