//! Attribution by GPU time: the counters of a window (a frame's or a render pass's GPU span,
//! put on the sampler's clock) integrated from PM samples. Pure functions, no allocation per
//! window: the reader calls them on framescope's collector thread for every frame.
//!
//! PM samples carry GPU time in ns on the Unix epoch, start and end of each sample
//! (`cupti-pm-sampling.md`); windows must be on the same clock. A sample partly inside the
//! window counts with the fraction of its duration that overlaps it — the monitors count
//! uniformly within a sample as far as anything can know.

use super::metrics::{Derived, MetricKind, MAX_METRICS};

/// One PM sample: `[start_ns, end_ns)` on the sampler's clock and `values[..len]` in the set's
/// metric order. Fixed size, so rings and buffers of them never allocate.
#[derive(Clone, Copy, Debug)]
pub struct PmSample {
    pub start_ns: u64,
    pub end_ns: u64,
    pub len: usize,
    pub values: [f64; MAX_METRICS],
}

impl PmSample {
    /// A sample with `values` (at most [`MAX_METRICS`]; more are dropped).
    pub fn new(start_ns: u64, end_ns: u64, values: &[f64]) -> PmSample {
        let len = values.len().min(MAX_METRICS);
        let mut v = [f64::NAN; MAX_METRICS];
        v[..len].copy_from_slice(&values[..len]);
        PmSample {
            start_ns,
            end_ns,
            len,
            values: v,
        }
    }

    pub fn values(&self) -> &[f64] {
        &self.values[..self.len.min(MAX_METRICS)]
    }
}

/// The same sample: times, length and the first `len` values bit for bit (a NaN, "no value",
/// equals itself; what lies past `len` is not part of the sample).
impl PartialEq for PmSample {
    fn eq(&self, o: &PmSample) -> bool {
        self.start_ns == o.start_ns
            && self.end_ns == o.end_ns
            && self.len == o.len
            && self
                .values()
                .iter()
                .zip(o.values())
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

/// Most derived values a layout computes.
pub const MAX_DERIVED: usize = 4;

/// A [`Derived`] resolved to metric positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DerivedAt {
    pub name: &'static str,
    pub numerator: usize,
    pub denominator: usize,
    pub scale: f64,
}

/// How to integrate a set's samples: each metric's kind, and the ratios recomputed from counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub kinds: Vec<MetricKind>,
    pub derived: Vec<DerivedAt>,
}

impl Layout {
    /// The layout of metrics `names` of `kinds`, with those of `derived` whose inputs are among
    /// them and are counts (at most [`MAX_DERIVED`]).
    pub fn new(names: &[&str], kinds: &[MetricKind], derived: &[Derived]) -> Layout {
        let n = names.len().min(kinds.len()).min(MAX_METRICS);
        let pos = |m: &str| {
            names[..n]
                .iter()
                .position(|x| *x == m)
                .filter(|&i| kinds[i] == MetricKind::Count)
        };
        let derived = derived
            .iter()
            .filter_map(|d| {
                Some(DerivedAt {
                    name: d.name,
                    numerator: pos(d.numerator)?,
                    denominator: pos(d.denominator)?,
                    scale: d.scale,
                })
            })
            .take(MAX_DERIVED)
            .collect();
        Layout {
            kinds: kinds[..n].to_vec(),
            derived,
        }
    }
}

/// `[start_ns, end_ns)` on the sampler's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// How much of the window the samples cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every nanosecond of the window is inside some sample.
    Full,
    /// The samples up to the window's end have not all arrived yet (the newest sample ends
    /// before it): try again later, or give up after a bound and say so.
    NotYetArrived,
    /// Samples that arrived around the window leave part of it uncovered (a sampler restart,
    /// an overflow, a reader that fell behind the ring). Values cover only the covered part.
    Gap,
    /// The window is empty (`end_ns <= start_ns`).
    Empty,
}

/// A window's counters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attribution {
    /// Per metric in the set's order: counts summed over the covered part, ratios as the mean
    /// weighted by covered time; NaN where no sample overlaps.
    pub values: [f64; MAX_METRICS],
    pub len: usize,
    /// Per [`Layout::derived`]: numerator sum / denominator sum × scale; NaN on a zero
    /// denominator.
    pub derived: [f64; MAX_DERIVED],
    pub derived_len: usize,
    /// Nanoseconds of the window inside some sample.
    pub covered_ns: u64,
    pub coverage: Coverage,
}

impl Attribution {
    pub fn values(&self) -> &[f64] {
        &self.values[..self.len]
    }

    pub fn derived(&self) -> &[f64] {
        &self.derived[..self.derived_len]
    }
}

/// Integrates `samples` (sorted by start, not overlapping: what one sampler produces) over
/// `window`. `arrived_until_ns`: the end of the newest sample the caller has seen, which tells
/// a window still to come ([`Coverage::NotYetArrived`]) from a gap.
pub fn integrate(samples: &[PmSample], layout: &Layout, window: Window, arrived_until_ns: u64) -> Attribution {
    let n = layout.kinds.len().min(MAX_METRICS);
    let mut out = Attribution {
        values: [f64::NAN; MAX_METRICS],
        len: n,
        derived: [f64::NAN; MAX_DERIVED],
        derived_len: layout.derived.len().min(MAX_DERIVED),
        covered_ns: 0,
        coverage: Coverage::Empty,
    };
    if window.end_ns <= window.start_ns {
        return out;
    }
    let mut sums = [0.0f64; MAX_METRICS];
    // Time each metric's value was known over (a NaN in a sample leaves it out).
    let mut known_ns = [0u64; MAX_METRICS];
    // Samples are sorted: skip those that end before the window with a binary search.
    let first = samples.partition_point(|s| s.end_ns <= window.start_ns);
    for s in &samples[first..] {
        if s.start_ns >= window.end_ns {
            break;
        }
        let dur = s.end_ns.saturating_sub(s.start_ns);
        let lo = s.start_ns.max(window.start_ns);
        let hi = s.end_ns.min(window.end_ns);
        if dur == 0 || hi <= lo {
            continue;
        }
        let overlap = hi - lo;
        out.covered_ns += overlap;
        let weight = overlap as f64 / dur as f64;
        for (i, kind) in layout.kinds.iter().enumerate().take(n) {
            let v = s.values.get(i).copied().unwrap_or(f64::NAN);
            if i >= s.len || v.is_nan() {
                continue;
            }
            known_ns[i] += overlap;
            sums[i] += match kind {
                MetricKind::Count => v * weight,
                MetricKind::Ratio => v * overlap as f64,
            };
        }
    }
    for i in 0..n {
        if known_ns[i] == 0 {
            continue;
        }
        out.values[i] = match layout.kinds[i] {
            MetricKind::Count => sums[i],
            MetricKind::Ratio => sums[i] / known_ns[i] as f64,
        };
    }
    for (d, slot) in layout.derived.iter().zip(out.derived.iter_mut()) {
        let num = out.values.get(d.numerator).copied().unwrap_or(f64::NAN);
        let den = out.values.get(d.denominator).copied().unwrap_or(f64::NAN);
        *slot = if den > 0.0 { num / den * d.scale } else { f64::NAN };
    }
    let len = window.end_ns - window.start_ns;
    out.coverage = if out.covered_ns >= len {
        Coverage::Full
    } else if arrived_until_ns < window.end_ns {
        Coverage::NotYetArrived
    } else {
        Coverage::Gap
    };
    out
}

#[cfg(test)]
mod tests {
    use super::super::metrics::GRAPHICS_ACTIVE;
    use super::*;

    const MS: u64 = 1_000_000;
    /// Where the scripted GPU clock starts (Unix epoch ns, like CUPTI's).
    const T0: u64 = 1_764_000_000_000_000_000;

    /// Metrics: active cycles (count), elapsed cycles (count), SM active % (ratio).
    fn layout() -> Layout {
        Layout::new(
            &[
                "gr__cycles_active.avg",
                "gr__cycles_elapsed.max",
                "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
            ],
            &[MetricKind::Count, MetricKind::Count, MetricKind::Ratio],
            &[GRAPHICS_ACTIVE],
        )
    }

    /// Four 1 ms samples, 1000 elapsed cycles each; active 1000, 500, 0, 250; SM % 80, 40, 0, 20.
    fn stream() -> Vec<PmSample> {
        [(1000.0, 80.0), (500.0, 40.0), (0.0, 0.0), (250.0, 20.0)]
            .iter()
            .enumerate()
            .map(|(i, &(a, sm))| PmSample::new(T0 + i as u64 * MS, T0 + (i as u64 + 1) * MS, &[a, 1000.0, sm]))
            .collect()
    }

    fn w(a: u64, b: u64) -> Window {
        Window {
            start_ns: T0 + a,
            end_ns: T0 + b,
        }
    }

    #[test]
    fn a_frame_on_sample_boundaries_sums_counts_and_recomputes_the_ratio() {
        let a = integrate(&stream(), &layout(), w(0, 2 * MS), T0 + 4 * MS);
        assert_eq!(a.coverage, Coverage::Full);
        assert_eq!(a.values(), &[1500.0, 2000.0, 60.0]);
        assert_eq!(a.derived(), &[75.0]);
        assert_eq!(a.covered_ns, 2 * MS);
    }

    #[test]
    fn partial_samples_are_weighted_by_overlap() {
        // [0.5 ms, 2.25 ms): half of sample 0, all of 1, a quarter of 2.
        let a = integrate(&stream(), &layout(), w(MS / 2, 2 * MS + MS / 4), T0 + 4 * MS);
        assert_eq!(a.coverage, Coverage::Full);
        // active 500 + 500 + 0; elapsed 500 + 1000 + 250.
        assert_eq!(a.values()[0], 1000.0);
        assert_eq!(a.values()[1], 1750.0);
        // SM %: (80×0.5 + 40×1 + 0×0.25) / 1.75 ms.
        assert_eq!(a.values()[2], 80.0 / 1.75);
        // Recomputed from counts: 1000 / 1750, not the mean of the per-sample ratios.
        assert_eq!(a.derived()[0], 1000.0 / 1750.0 * 100.0);
    }

    #[test]
    fn a_pass_inside_one_sample_gets_its_share() {
        // A render pass of 0.25 ms inside sample 1: a quarter of its counts, its ratio as is.
        let a = integrate(&stream(), &layout(), w(MS + MS / 4, MS + MS / 2), T0 + 4 * MS);
        assert_eq!(a.values(), &[125.0, 250.0, 40.0]);
        assert_eq!(a.derived(), &[50.0]);
        // Passes of one frame: their active cycles add up to at most the frame's.
        let p1 = integrate(&stream(), &layout(), w(0, MS + MS / 2), T0 + 4 * MS);
        let p2 = integrate(&stream(), &layout(), w(MS + MS / 2, 3 * MS), T0 + 4 * MS);
        let f = integrate(&stream(), &layout(), w(0, 3 * MS), T0 + 4 * MS);
        assert_eq!(p1.values()[0] + p2.values()[0], f.values()[0]);
    }

    #[test]
    fn a_window_past_the_newest_sample_has_not_arrived_and_a_hole_is_a_gap() {
        let a = integrate(&stream(), &layout(), w(3 * MS, 5 * MS), T0 + 4 * MS);
        assert_eq!(a.coverage, Coverage::NotYetArrived);
        assert_eq!(a.covered_ns, MS);
        assert_eq!(a.values()[0], 250.0);
        let mut s = stream();
        s.remove(1); // a sample lost
        let a = integrate(&s, &layout(), w(0, 3 * MS), T0 + 4 * MS);
        assert_eq!(a.coverage, Coverage::Gap);
        assert_eq!(a.covered_ns, 2 * MS);
        assert_eq!(a.values()[..2], [1000.0, 2000.0]);
        assert_eq!(a.values()[2], 40.0);
    }

    #[test]
    fn nothing_overlapping_gives_nan_and_an_empty_window_is_said() {
        let a = integrate(&stream(), &layout(), w(10 * MS, 11 * MS), T0 + 20 * MS);
        assert_eq!(a.coverage, Coverage::Gap);
        assert!(a.values().iter().all(|v| v.is_nan()));
        assert!(a.derived()[0].is_nan());
        let a = integrate(&stream(), &layout(), w(MS, MS), T0 + 4 * MS);
        assert_eq!(a.coverage, Coverage::Empty);
        let a = integrate(&[], &layout(), w(0, MS), 0);
        assert_eq!(a.coverage, Coverage::NotYetArrived);
    }

    #[test]
    fn a_nan_value_is_left_out_of_its_metric_only() {
        let mut s = stream();
        s[1].values[2] = f64::NAN;
        let a = integrate(&s, &layout(), w(0, 2 * MS), T0 + 4 * MS);
        assert_eq!(a.values(), &[1500.0, 2000.0, 80.0]);
    }

    #[test]
    fn derived_values_need_both_counts_in_the_set() {
        let l = Layout::new(&["gr__cycles_active.avg"], &[MetricKind::Count], &[GRAPHICS_ACTIVE]);
        assert!(l.derived.is_empty());
        // A ratio-kind input does not qualify either.
        let l = Layout::new(
            &["gr__cycles_active.avg", "gr__cycles_elapsed.max"],
            &[MetricKind::Count, MetricKind::Ratio],
            &[GRAPHICS_ACTIVE],
        );
        assert!(l.derived.is_empty());
    }
}
