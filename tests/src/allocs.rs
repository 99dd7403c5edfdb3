//! The allocation report both libraries print at exit with `FRAMESCOPE_REPORT_ALLOCS=N`:
//! heap allocations framescope made on the app's threads after frame N.

use crate::Outcome;

/// The report's (allocations, frames with allocations, frames after the warm-up), after
/// checking it names `warmup` as its warm-up.
pub fn report(out: &Outcome, what: &str, warmup: u64) -> (u64, u64, u64) {
    let line = out
        .lines_with("framescope: heap allocations on app threads after frame")
        .pop()
        .unwrap_or_else(|| panic!("{what}: no allocation report: {}", out.describe()));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(nums.len(), 4, "{what}: {line}");
    assert_eq!(nums[0], warmup, "{what}: {line}");
    (nums[1], nums[2], nums[3])
}
