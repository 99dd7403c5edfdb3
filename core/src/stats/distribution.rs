//! Distributions of durations in bounded memory: nearest-rank percentiles, the lows, and
//! [`Values`], exact up to [`EXACT_VALUES`] and an HDR histogram past that (definitions and
//! error bounds in [`crate::stats`]' module docs and docs/dump-schema.md).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Values of a distribution kept exactly (8 bytes each) before switching to the histogram:
/// 16384 frame times are over 4 minutes at 60 fps.
pub const EXACT_VALUES: usize = 16 * 1024;

/// Significant decimal digits of the histogram: its buckets are at most 2^-10 of their lower
/// bound wide (HdrHistogram's sub-bucket count for 3 digits is 2048).
const SIGNIFICANT_DIGITS: u8 = 3;

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

/// CapFrameX's "integral" low of ascending `sorted` frame times: the fps of the frame time
/// at which the slowest frames, summed from the slowest down, first reach `1/divisor` of the
/// run's time (divisor 100: the 1% low integral). Unlike [`low_fps`], which averages a share
/// of the frames, this weights frames by the time they took, as a viewer experiences it.
pub fn low_fps_integral(sorted: &[u64], divisor: u64) -> Option<f64> {
    let total: u128 = sorted.iter().map(|&v| u128::from(v)).sum();
    if total == 0 {
        return None;
    }
    let mut sum = 0u128;
    for &v in sorted.iter().rev() {
        sum += u128::from(v);
        if sum * u128::from(divisor) >= total {
            return fps(1, v);
        }
    }
    None
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

/// A distribution's values in bounded memory: exact up to [`EXACT_VALUES`], then a histogram
/// (see the module docs for the error).
#[derive(Clone, Debug, Default)]
pub struct Values {
    pub(crate) exact: Vec<u64>,
    pub(crate) hist: Option<Histogram<u64>>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Values {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
        if let Some(h) = &mut self.hist {
            record(h, v);
            return;
        }
        self.exact.push(v);
        if self.exact.len() > EXACT_VALUES {
            let mut h = Histogram::<u64>::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
            for &x in &self.exact {
                record(&mut h, x);
            }
            self.exact = Vec::new();
            self.hist = Some(h);
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the values went into the histogram (statistics within its error).
    pub fn is_approximate(&self) -> bool {
        self.hist.is_some()
    }

    /// Ascending (bucket top clamped to the exact max, count) pairs of the histogram.
    fn buckets(h: &Histogram<u64>, max: u64) -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to().min(max), v.count_at_value()))
            .collect()
    }

    /// The distribution; `None` when empty.
    pub fn distribution(&self) -> Option<Distribution> {
        let Some(h) = &self.hist else {
            return distribution(&mut self.exact.clone());
        };
        let n = self.count;
        let buckets = Self::buckets(h, self.max);
        let at = |permille: u64| {
            let rank = (n * permille).div_ceil(1000).clamp(1, n);
            let mut seen = 0;
            for &(v, c) in &buckets {
                seen += c;
                if seen >= rank {
                    return v;
                }
            }
            self.max
        };
        Some(Distribution {
            count: n,
            mean: self.sum as f64 / n as f64,
            p50: at(500),
            p90: at(900),
            p95: at(950),
            p99: at(990),
            p99_9: at(999),
            max: self.max,
        })
    }

    /// `count / sum` in fps; `None` when empty or the sum is 0.
    pub fn fps(&self) -> Option<f64> {
        fps(self.count, u64::try_from(self.sum).unwrap_or(u64::MAX))
    }

    /// Mean fps of the slowest `ceil(n / divisor)` values (see [`low_fps`]).
    pub fn low_fps(&self, divisor: u64) -> Option<f64> {
        let Some(h) = &self.hist else {
            let mut v = self.exact.clone();
            v.sort_unstable();
            return low_fps(&v, divisor);
        };
        let k = self.count.div_ceil(divisor).max(1);
        let (mut left, mut sum) = (k, 0u64);
        for (v, c) in Self::buckets(h, self.max).into_iter().rev() {
            let take = c.min(left);
            sum = sum.saturating_add(v.saturating_mul(take));
            left -= take;
            if left == 0 {
                break;
            }
        }
        fps(k, sum)
    }
}

/// Records `v`, growing the histogram up to it (`saturating_record` clamps to the current
/// top instead of growing); a value past what it can grow to is clamped.
fn record(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}
