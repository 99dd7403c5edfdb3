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
//! ([`resampled_mean`]). The resampling uses a fixed seed: the same dumps give the same answer.

/// Resamples drawn.
pub const RESAMPLES: usize = 2000;
/// Seed of the resampling.
const SEED: u64 = 0x6672_616d_6573_636f;

/// The change of the mean from `base` to `new`, relative to `base`'s mean, with a two-sided
/// interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    pub base_mean: f64,
    pub new_mean: f64,
    /// `new_mean / base_mean - 1`.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Block length used for each side.
    pub block: (usize, usize),
}

/// The change from the runs `base` to the runs `new` (each run a series of per-frame values in
/// frame order), with an interval of `confidence` (0.95 for 95 %). `None` when a side has no
/// values or a mean of zero.
pub fn change(base: &[Vec<f64>], new: &[Vec<f64>], confidence: f64) -> Option<Change> {
    let base_mean = pooled_mean(base)?;
    let new_mean = pooled_mean(new)?;
    if base_mean == 0.0 {
        return None;
    }
    let (bb, bn) = (block_len(base), block_len(new));
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| resampled_mean(new, bn, &mut rng) / resampled_mean(base, bb, &mut rng) - 1.0)
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    Some(Change {
        base_mean,
        new_mean,
        change: new_mean / base_mean - 1.0,
        low: quantile(&ratios, (1.0 - confidence) / 2.0),
        high: quantile(&ratios, (1.0 + confidence) / 2.0),
        block: (bb, bn),
    })
}

fn pooled_mean(runs: &[Vec<f64>]) -> Option<f64> {
    let n: usize = runs.iter().map(Vec::len).sum();
    (n > 0).then(|| runs.iter().flatten().sum::<f64>() / n as f64)
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

/// Mean of one resample of a side. One run: a moving-block resample of its frames. Several
/// runs: a two-level resample, since runs of one configuration differ by more than their
/// frames do (on lavapipe the mean frame time of identical 1000-frame vkcube runs spread over
/// ±13 %): the runs are drawn with replacement, each drawn run block-resampled, and the
/// resample's deviation from the side's mean scaled by `√(k/(k−1))`, which undoes the
/// bootstrap's underestimate of the between-run variance with `k` runs.
fn resampled_mean(runs: &[Vec<f64>], block: usize, rng: &mut fastrand::Rng) -> f64 {
    let k = runs.iter().filter(|r| !r.is_empty()).count();
    if k < 2 {
        return block_resampled_mean(runs, block, rng);
    }
    let runs: Vec<&Vec<f64>> = runs.iter().filter(|r| !r.is_empty()).collect();
    let (mut sum, mut n) = (0.0, 0usize);
    for _ in 0..k {
        let r = runs[rng.usize(0..k)];
        sum += block_resampled_mean(std::slice::from_ref(r), block, rng) * r.len() as f64;
        n += r.len();
    }
    let pooled =
        runs.iter().map(|r| r.iter().sum::<f64>()).sum::<f64>() / runs.iter().map(|r| r.len()).sum::<usize>() as f64;
    pooled + (sum / n as f64 - pooled) * (k as f64 / (k - 1) as f64).sqrt()
}

/// Mean of one moving-block resample of `runs`: blocks of `block` consecutive values, their
/// starts drawn uniformly over every run (a run shorter than `block` is one block), until the
/// resample is as long as the original.
fn block_resampled_mean(runs: &[Vec<f64>], block: usize, rng: &mut fastrand::Rng) -> f64 {
    let starts: Vec<usize> = runs.iter().map(|r| r.len().saturating_sub(block) + 1).collect();
    let total_starts: usize = starts.iter().sum();
    let n: usize = runs.iter().map(Vec::len).sum();
    let (mut sum, mut taken) = (0.0, 0usize);
    while taken < n {
        let mut k = rng.usize(0..total_starts);
        let mut run = 0;
        while k >= starts[run] {
            k -= starts[run];
            run += 1;
        }
        let r = &runs[run];
        let end = (k + block).min(r.len());
        sum += r[k..end].iter().sum::<f64>();
        taken += end - k;
    }
    sum / taken as f64
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
        let c = change(&base, &new, 0.95).unwrap();
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
            let c = change(&base, &new, 0.95).unwrap();
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
        let c = change(&base, &new, 0.95).unwrap();
        assert!((c.change - 0.2).abs() < 1e-12 && (c.low - 0.2).abs() < 1e-12, "{c:?}");
        assert!(change(&[vec![]], &new, 0.95).is_none());
        assert!(change(&[vec![0.0; 5]], &new, 0.95).is_none());
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.125), 0.5);
        assert_eq!(quantile(&v, 1.0), 4.0);
    }
}
