//! A confidence interval for the relative change of a mean between two sets of runs, by a
//! moving-block bootstrap.
//!
//! Frame times are autocorrelated (a heavy scene lasts many frames, clocks ramp, the
//! compositor batches), so resampling single frames would treat runs of similar frames as
//! independent evidence and give intervals that are too narrow. Resampling blocks of
//! consecutive frames keeps that dependence (Künsch 1989). The block length is the larger of
//! `n^(1/3)` (the usual rate for a mean) and the first lag at which the sample autocorrelation
//! falls inside the white-noise band `±2/√n`, capped at a quarter of the shortest run. Blocks
//! never span two runs; with several runs a side the runs themselves are resampled too
//! ([`resampled`]). The resampling uses a fixed seed: the same dumps give the same answer.
//!
//! How the interval is read off the resamples depends on the runs. One run on a side: the
//! percentile interval of the resampled ratios. Several runs on both sides: the runs, not the
//! frames, are the independent units, and a percentile interval from three runs cannot be
//! wider than what three values span (a 99 % interval from 3 against 3 lavapipe vkcube runs
//! of one configuration excluded +5 % once in about 300 metric-tries). There the interval is
//! Student's t on the log of the ratio: the resamples give each side's variance, the
//! Welch–Satterthwaite formula their degrees of freedom (at most `runs − 1` a side), so few
//! runs give the wide interval that few runs deserve (Welch 1947).

/// Resamples drawn.
pub const RESAMPLES: usize = 2000;
/// Seed of the resampling.
const SEED: u64 = 0x6672_616d_6573_636f;

/// The change of the mean from `base` to `new`, relative to `base`'s mean, with a two-sided
/// interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// The statistic of each side's pooled frames.
    pub base_value: f64,
    pub new_value: f64,
    /// `new_value / base_value - 1`.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Block length used for each side.
    pub block: (usize, usize),
    pub method: Method,
}

/// One side of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Base,
    New,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Base => "BASE",
            Side::New => "NEW",
        }
    }
}

/// How the interval was read off the resamples (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Percentiles of the resampled ratios (one run on a side).
    Percentile,
    /// Student's t on the log ratio with these degrees of freedom (several runs a side).
    RunsT { df: f64 },
    /// Newcombe's hybrid Wilson interval of a difference of rates ([`crate::rates`]).
    Wilson,
}

/// The statistic of a side's frames that is compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Statistic {
    Mean,
    /// The `q` quantile (0 < q < 1), nearest rank: `p99` frame time is the 1 % worst frames'
    /// threshold.
    Quantile(f64),
}

impl Statistic {
    /// The statistic of `v` (reordered in place); NaN when `v` is empty.
    pub fn of(self, v: &mut [f64]) -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        match self {
            Statistic::Mean => v.iter().sum::<f64>() / v.len() as f64,
            Statistic::Quantile(q) => {
                let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
                *v.select_nth_unstable_by(i, f64::total_cmp).1
            }
        }
    }
}

/// The change of `stat` from the runs `base` to the runs `new` (each run a series of per-frame
/// values in frame order), with an interval of `confidence` (0.95 for 95 %). `Err` names the
/// side with no values or a statistic of zero (BASE when both are): a relative change needs a
/// positive statistic on both sides.
pub fn change(base: &[Vec<f64>], new: &[Vec<f64>], confidence: f64, stat: Statistic) -> Result<Change, Side> {
    let base_value = pooled(base, stat).filter(|&v| v != 0.0).ok_or(Side::Base)?;
    let new_value = pooled(new, stat).filter(|&v| v != 0.0).ok_or(Side::New)?;
    let (bb, bn) = (block_len(base), block_len(new));
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut buf = Vec::new();
    let pairs: Vec<(f64, f64)> = (0..RESAMPLES)
        .map(|_| {
            let b = resampled(base, bb, stat, base_value, &mut rng, &mut buf);
            (b, resampled(new, bn, stat, new_value, &mut rng, &mut buf))
        })
        .collect();
    // A side none of whose resamples has a positive statistic (its few non-zero values never
    // drawn) gives no ratio to read an interval off.
    let usable = |v: f64| v > 0.0 && v.is_finite();
    if !pairs.iter().any(|p| usable(p.0)) {
        return Err(Side::Base);
    }
    let pairs: Vec<(f64, f64)> = pairs.into_iter().filter(|&(b, n)| usable(b) && usable(n)).collect();
    if pairs.is_empty() {
        return Err(Side::New);
    }
    let change = new_value / base_value - 1.0;
    let runs = |side: &[Vec<f64>]| side.iter().filter(|r| !r.is_empty()).count();
    let (kb, kn) = (runs(base), runs(new));
    let (low, high, method) = if kb >= 2 && kn >= 2 && new_value > 0.0 {
        let vb = log_variance(pairs.iter().map(|p| p.0));
        let vn = log_variance(pairs.iter().map(|p| p.1));
        let df = welch_df(vb, vn, kb, kn);
        let t = t_quantile(df, (1.0 + confidence) / 2.0);
        let (centre, half) = ((new_value / base_value).ln(), t * (vb + vn).sqrt());
        (
            (centre - half).exp() - 1.0,
            (centre + half).exp() - 1.0,
            Method::RunsT { df },
        )
    } else {
        let mut ratios: Vec<f64> = pairs.iter().map(|&(b, n)| n / b - 1.0).collect();
        ratios.sort_by(f64::total_cmp);
        (
            quantile(&ratios, (1.0 - confidence) / 2.0),
            quantile(&ratios, (1.0 + confidence) / 2.0),
            Method::Percentile,
        )
    };
    Ok(Change {
        base_value,
        new_value,
        change,
        low,
        high,
        block: (bb, bn),
        method,
    })
}

/// Variance of the logs of positive values.
fn log_variance(values: impl Iterator<Item = f64>) -> f64 {
    let logs: Vec<f64> = values.map(f64::ln).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    logs.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / (logs.len() - 1).max(1) as f64
}

/// Welch–Satterthwaite degrees of freedom of the sum of two variance estimates that rest on
/// `kb − 1` and `kn − 1` degrees of freedom. Both zero (identical runs): the larger count.
fn welch_df(vb: f64, vn: f64, kb: usize, kn: usize) -> f64 {
    let (fb, fnew) = ((kb - 1) as f64, (kn - 1) as f64);
    let denom = vb * vb / fb + vn * vn / fnew;
    if denom > 0.0 {
        ((vb + vn) * (vb + vn) / denom).clamp(fb.min(fnew), fb + fnew)
    } else {
        fb + fnew
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
fn t_quantile(df: f64, p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    // df ≥ 1 by construction (two runs a side at least), so the distribution exists.
    StudentsT::new(0.0, 1.0, df.max(1.0)).map_or(f64::INFINITY, |t| t.inverse_cdf(p))
}

/// `stat` of every frame of a side; `None` when it has none.
fn pooled(runs: &[Vec<f64>], stat: Statistic) -> Option<f64> {
    let mut all: Vec<f64> = runs.iter().flatten().copied().collect();
    (!all.is_empty()).then(|| stat.of(&mut all))
}

/// Block length for a side: see the module documentation.
pub fn block_len(runs: &[Vec<f64>]) -> usize {
    let n: usize = runs.iter().map(Vec::len).sum();
    let shortest = runs.iter().map(Vec::len).filter(|&l| l > 0).min().unwrap_or(1);
    let rate = (n as f64).cbrt().ceil() as usize;
    let decorrelated = runs
        .iter()
        .filter(|r| r.len() >= 8)
        .map(|r| decorrelation_lag(r))
        .max()
        .unwrap_or(1);
    rate.max(decorrelated).min((shortest / 4).max(1))
}

/// First lag at which the autocorrelation of `x` is within `±2/√n` (at most `n/4`).
fn decorrelation_lag(x: &[f64]) -> usize {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let var: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    if var == 0.0 {
        return 1;
    }
    let band = 2.0 / (n as f64).sqrt();
    for lag in 1..=n / 4 {
        let cov: f64 = x.windows(lag + 1).map(|w| (w[0] - mean) * (w[lag] - mean)).sum();
        if (cov / var).abs() < band {
            return lag;
        }
    }
    n / 4
}

/// `stat` of one resample of a side whose pooled statistic is `pooled`. One run: a
/// moving-block resample of its frames. Several runs: a two-level resample, since runs of one
/// configuration differ by more than their frames do (on lavapipe the mean frame time of
/// identical 1000-frame vkcube runs spread over ±13 %): the runs are drawn with replacement,
/// each drawn run block-resampled, and the resample's deviation from the side's statistic
/// scaled by `√(k/(k−1))`, which undoes the bootstrap's underestimate of the between-run
/// variance with `k` runs. `buf` is scratch space.
fn resampled(
    runs: &[Vec<f64>],
    block: usize,
    stat: Statistic,
    pooled: f64,
    rng: &mut fastrand::Rng,
    buf: &mut Vec<f64>,
) -> f64 {
    buf.clear();
    let k = runs.iter().filter(|r| !r.is_empty()).count();
    if k < 2 {
        block_resample(runs, block, rng, buf);
        return stat.of(buf);
    }
    let runs: Vec<&Vec<f64>> = runs.iter().filter(|r| !r.is_empty()).collect();
    for _ in 0..k {
        let r = runs[rng.usize(0..k)];
        block_resample(std::slice::from_ref(r), block, rng, buf);
    }
    pooled + (stat.of(buf) - pooled) * (k as f64 / (k - 1) as f64).sqrt()
}

/// Appends one moving-block resample of `runs` to `out`: blocks of `block` consecutive
/// values, their starts drawn uniformly over every run (a run shorter than `block` is one
/// block), until the resample is as long as the original.
fn block_resample(runs: &[Vec<f64>], block: usize, rng: &mut fastrand::Rng, out: &mut Vec<f64>) {
    let starts: Vec<usize> = runs.iter().map(|r| r.len().saturating_sub(block) + 1).collect();
    let total_starts: usize = starts.iter().sum();
    let n: usize = runs.iter().map(Vec::len).sum();
    let mut taken = 0usize;
    while taken < n {
        let mut k = rng.usize(0..total_starts);
        let mut run = 0;
        while k >= starts[run] {
            k -= starts[run];
            run += 1;
        }
        let r = &runs[run];
        let end = (k + block).min(r.len());
        out.extend_from_slice(&r[k..end]);
        taken += end - k;
    }
}

/// The `q` quantile of sorted `v` (linear between order statistics).
fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < v.len() {
        v[i] + frac * (v[i + 1] - v[i])
    } else {
        v[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An AR(1) series around `mean` (coefficient `phi`, noise ±`noise` uniform).
    fn ar1(n: usize, mean: f64, phi: f64, noise: f64, seed: u64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut e = 0.0;
        (0..n)
            .map(|_| {
                e = phi * e + noise * (2.0 * rng.f64() - 1.0);
                mean + e
            })
            .collect()
    }

    #[test]
    fn a_known_slowdown_is_inside_a_narrow_interval() {
        let base = vec![ar1(2000, 10.0, 0.5, 1.0, 1)];
        let new = vec![ar1(2000, 11.0, 0.5, 1.0, 2)];
        let c = change(&base, &new, 0.95, Statistic::Mean).unwrap();
        assert!((c.change - 0.1).abs() < 0.01, "{c:?}");
        assert!(
            c.low > 0.08 && c.high < 0.12 && c.low < c.change && c.change < c.high,
            "{c:?}"
        );
    }

    #[test]
    fn the_same_process_gives_an_interval_around_zero_in_most_trials() {
        // Strongly autocorrelated frames: the block bootstrap's interval must cover the true
        // change (zero) in about 95 % of trials; an i.i.d. bootstrap covers far fewer.
        let mut covered = 0;
        for t in 0..40 {
            let base = vec![ar1(1000, 10.0, 0.9, 1.0, 100 + t)];
            let new = vec![ar1(1000, 10.0, 0.9, 1.0, 200 + t)];
            let c = change(&base, &new, 0.95, Statistic::Mean).unwrap();
            covered += usize::from(c.low <= 0.0 && 0.0 <= c.high);
        }
        assert!(covered >= 34, "covered zero in {covered} of 40");
    }

    #[test]
    fn block_length_follows_the_autocorrelation() {
        let white = vec![ar1(1000, 10.0, 0.0, 1.0, 3)];
        let sticky = vec![ar1(1000, 10.0, 0.95, 1.0, 3)];
        assert_eq!(block_len(&white), 10);
        assert!(block_len(&sticky) > 20, "{}", block_len(&sticky));
        // Capped by the shortest run.
        let short = vec![ar1(1000, 10.0, 0.95, 1.0, 3), vec![1.0; 20]];
        assert_eq!(block_len(&short), 5);
    }

    #[test]
    fn blocks_stay_inside_runs_and_several_runs_pool() {
        let base = vec![vec![10.0; 50], vec![10.0; 70]];
        let new = vec![vec![12.0; 30], vec![12.0; 90]];
        let c = change(&base, &new, 0.95, Statistic::Mean).unwrap();
        assert!((c.change - 0.2).abs() < 1e-12 && (c.low - 0.2).abs() < 1e-9, "{c:?}");
        assert_eq!(change(&[vec![]], &new, 0.95, Statistic::Mean), Err(Side::Base));
        assert_eq!(change(&[vec![0.0; 5]], &new, 0.95, Statistic::Mean), Err(Side::Base));
        assert_eq!(change(&new, &[vec![0.0; 5]], 0.95, Statistic::Mean), Err(Side::New));
        assert_eq!(change(&new, &[vec![]], 0.95, Statistic::Mean), Err(Side::New));
    }

    /// `k` runs of an AR(1) process whose run means spread like lavapipe vkcube's (run-level
    /// standard deviation `between`, relative).
    fn spread_runs(k: usize, mean: f64, between: f64, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..k)
            .map(|i| {
                // A normal draw from twelve uniforms (Irwin–Hall).
                let z: f64 = (0..12).map(|_| rng.f64()).sum::<f64>() - 6.0;
                ar1(100, mean * (1.0 + between * z), 0.6, 1.0, seed * 31 + i as u64)
            })
            .collect()
    }

    #[test]
    fn few_runs_a_side_with_spread_means_rarely_exclude_zero() {
        // Three runs against three, run means spreading by 7 %: the runs are the units. The
        // percentile interval of a two-level bootstrap excludes zero far more often than 1 %
        // of the time; the t interval over runs keeps to about its level.
        let (mut excluded, mut excluded_percentile) = (0, 0);
        for t in 0..100 {
            let base = spread_runs(3, 10.0, 0.07, 1000 + t);
            let new = spread_runs(3, 10.0, 0.07, 5000 + t);
            let c = change(&base, &new, 0.99, Statistic::Mean).unwrap();
            assert!(
                matches!(c.method, Method::RunsT { df } if (2.0..=4.0).contains(&df)),
                "{c:?}"
            );
            excluded += usize::from(c.low > 0.0 || c.high < 0.0);
            let one = change(&base[..1], &new, 0.99, Statistic::Mean).unwrap();
            assert_eq!(one.method, Method::Percentile);
            // What the percentile interval alone gives on the same resamples.
            let (bb, bn) = (block_len(&base), block_len(&new));
            let mut rng = fastrand::Rng::with_seed(SEED);
            let (pb, pn) = (c.base_value, c.new_value);
            let mut buf = Vec::new();
            let mut r: Vec<f64> = (0..RESAMPLES)
                .map(|_| {
                    let b = resampled(&base, bb, Statistic::Mean, pb, &mut rng, &mut buf);
                    resampled(&new, bn, Statistic::Mean, pn, &mut rng, &mut buf) / b - 1.0
                })
                .collect();
            r.sort_by(f64::total_cmp);
            excluded_percentile += usize::from(quantile(&r, 0.005) > 0.0 || quantile(&r, 0.995) < 0.0);
        }
        assert!(excluded <= 2, "t over runs excluded zero in {excluded} of 100");
        assert!(
            excluded_percentile >= 4 * excluded.max(1),
            "percentile {excluded_percentile}, t {excluded}"
        );
    }

    #[test]
    fn a_real_change_across_several_runs_is_found() {
        let base = spread_runs(5, 10.0, 0.03, 7);
        let new = spread_runs(5, 12.5, 0.03, 8);
        let c = change(&base, &new, 0.99, Statistic::Mean).unwrap();
        assert!(c.low > 0.1 && c.high < 0.45 && c.low < c.change, "{c:?}");
    }

    #[test]
    fn a_slower_tail_shows_in_a_quantile_and_not_in_the_median() {
        // The same frames, but every 20th frame of NEW takes twice as long: p99 doubles, the
        // median does not move, the mean rises by 5 %.
        let base = vec![ar1(3000, 10.0, 0.3, 1.0, 11)];
        let mut tail = ar1(3000, 10.0, 0.3, 1.0, 12);
        for v in tail.iter_mut().step_by(20) {
            *v *= 2.0;
        }
        let new = vec![tail];
        let p99 = change(&base, &new, 0.99, Statistic::Quantile(0.99)).unwrap();
        assert!(p99.change > 0.5 && p99.low > 0.3, "{p99:?}");
        let median = change(&base, &new, 0.99, Statistic::Quantile(0.5)).unwrap();
        assert!(
            median.low < 0.0 && 0.0 < median.high && median.change.abs() < 0.02,
            "{median:?}"
        );
        let mean = change(&base, &new, 0.99, Statistic::Mean).unwrap();
        assert!((mean.change - 0.05).abs() < 0.01, "{mean:?}");
    }

    #[test]
    fn statistics_of_a_known_sample() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(Statistic::Mean.of(&mut v), 50.5);
        assert_eq!(Statistic::Quantile(0.99).of(&mut v), 99.0);
        assert_eq!(Statistic::Quantile(0.5).of(&mut v), 50.0);
        assert_eq!(Statistic::Quantile(0.999).of(&mut v), 100.0);
        assert_eq!(Statistic::Quantile(0.001).of(&mut v), 1.0);
        assert!(Statistic::Quantile(0.5).of(&mut []).is_nan() && Statistic::Mean.of(&mut []).is_nan());
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.125), 0.5);
        assert_eq!(quantile(&v, 1.0), 4.0);
    }
}
