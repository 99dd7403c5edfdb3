//! `compare`'s rate metrics (`dropped`, `stutters`): the share of frames a thing happened to.
//! A ratio of rates is useless when the base run has none (the common case for both), so a
//! rate's change is the difference new − base in percentage points, with Newcombe's hybrid
//! Wilson score interval for a difference of two proportions (Newcombe 1998, method 10): it
//! stays inside [−1, 1], and is sound at 0 events. It treats frames as independent; stutters
//! and drops come in bursts, so the interval is narrower than the truth, which is why the
//! gate also needs the whole interval beyond the threshold.

use crate::bootstrap::{Change, Method};

/// The two-sided normal quantile for `confidence` (0.99 → 2.5758).
fn z(confidence: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let n = Normal::new(0.0, 1.0).expect("the standard normal");
    n.inverse_cdf(1.0 - (1.0 - confidence) / 2.0)
}

/// Wilson's score interval of `k` events in `n` trials.
fn wilson(k: u64, n: u64, z: f64) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The change of the rate from `base` (events, frames) to `new`, in proportion points. `None`
/// when a side has no frames.
pub fn change(base: (u64, u64), new: (u64, u64), confidence: f64) -> Option<Change> {
    if base.1 == 0 || new.1 == 0 {
        return None;
    }
    let z = z(confidence);
    let (p0, p1) = (base.0 as f64 / base.1 as f64, new.0 as f64 / new.1 as f64);
    let (l0, u0) = wilson(base.0, base.1, z);
    let (l1, u1) = wilson(new.0, new.1, z);
    let d = p1 - p0;
    Some(Change {
        base_value: p0,
        new_value: p1,
        change: d,
        low: d - ((p1 - l1).powi(2) + (u0 - p0).powi(2)).sqrt(),
        high: d + ((u1 - p1).powi(2) + (p0 - l0).powi(2)).sqrt(),
        block: (1, 1),
        method: Method::Wilson,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Newcombe (1998), table II, example (a): 56/70 against 48/80 gives a difference of
    /// 0.2000 with the 95 % interval [0.0524, 0.3339] by method 10.
    #[test]
    fn newcombes_worked_example() {
        let c = change((48, 80), (56, 70), 0.95).unwrap();
        assert!((c.change - 0.2).abs() < 1e-12);
        assert!((c.low - 0.0524).abs() < 5e-5, "{}", c.low);
        assert!((c.high - 0.3339).abs() < 5e-5, "{}", c.high);
    }

    #[test]
    fn none_against_some_is_a_positive_interval_and_none_against_none_is_zero() {
        let c = change((0, 1000), (30, 1000), 0.99).unwrap();
        assert!(c.low > 0.0 && c.high < 0.06, "{c:?}");
        let c = change((0, 1000), (0, 1000), 0.99).unwrap();
        assert_eq!(c.change, 0.0);
        assert!(c.low < 0.0 && c.high > 0.0);
        assert!(change((0, 0), (1, 2), 0.99).is_none());
    }
}
