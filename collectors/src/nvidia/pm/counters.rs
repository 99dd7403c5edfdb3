//! The PM counters an app's frames carry, and where each one is among a sampler's metrics:
//! shared by the collector's source (window values) and the dump writer's attributor.

use super::attribute::{Attribution, Layout};
use super::metrics::GRAPHICS_ACTIVE;
use super::ring::RingReader;
use std::time::Duration;

/// The counters frames carry: framescope's name, and the PM metric it is (or
/// [`GRAPHICS_ACTIVE`], derived from two counts). A sampler whose set lacks one leaves it NaN.
pub(super) const COUNTERS: &[(&str, &str)] = &[
    ("pm_graphics_active_pct", GRAPHICS_ACTIVE.name),
    (
        "pm_sm_active_pct",
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "pm_sm_issue_pct",
        "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "pm_ps_warps_pct",
        "sm__warps_active_shader_ps_realtime.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "pm_cs_warps_pct",
        "sm__warps_active_shader_cs_realtime.avg.pct_of_peak_sustained_elapsed",
    ),
    ("pm_dram_bw_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
];

/// How long a sampler may say nothing (no sample, no heartbeat) before it counts as gone.
pub(super) const STALE_AFTER: Duration = Duration::from_secs(2);

/// Where one of [`COUNTERS`] is: a ring metric, a derived value of the layout, or nowhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Metric(usize),
    Derived(usize),
    Missing,
}

/// The layout of a ring's metrics, with the derived graphics-active share.
pub(super) fn layout_of(reader: &RingReader) -> Layout {
    let names: Vec<&str> = reader.names().iter().map(String::as_str).collect();
    Layout::new(&names, reader.kinds(), &[GRAPHICS_ACTIVE])
}

/// Where each of [`COUNTERS`] is among a ring's metrics (`names`).
pub(super) fn slots_for(names: &[String]) -> Vec<Slot> {
    let has = |n: &str| names.iter().any(|x| x == n);
    COUNTERS
        .iter()
        .map(|(_, metric)| {
            if *metric == GRAPHICS_ACTIVE.name {
                // Derived only where the sampler's set has both counts.
                if has(GRAPHICS_ACTIVE.numerator) && has(GRAPHICS_ACTIVE.denominator) {
                    Slot::Derived(0)
                } else {
                    Slot::Missing
                }
            } else {
                names
                    .iter()
                    .position(|n| n == metric)
                    .map_or(Slot::Missing, Slot::Metric)
            }
        })
        .collect()
}

/// Writes [`COUNTERS`] from `a` into `out`.
pub(super) fn fill(out: &mut [f64], a: &Attribution, slots: &[Slot]) {
    for (o, slot) in out.iter_mut().zip(slots) {
        *o = match *slot {
            Slot::Metric(i) => a.values().get(i).copied().unwrap_or(f64::NAN),
            Slot::Derived(i) => a.derived().get(i).copied().unwrap_or(f64::NAN),
            Slot::Missing => f64::NAN,
        };
    }
}

/// The names of [`COUNTERS`], for an attributor.
pub(super) fn counter_names() -> Vec<String> {
    COUNTERS.iter().map(|(n, _)| (*n).to_string()).collect()
}

/// "the PM sampler failed: why", with how long ago where that is more than a moment: a failed
/// sampler leaves its ring (and reason) until the next one replaces it.
pub(super) fn failed(why: &str, silent_ns: u64) -> String {
    if silent_ns > STALE_AFTER.as_nanos() as u64 {
        format!("the PM sampler failed {} s ago: {why}", silent_ns / 1_000_000_000)
    } else {
        format!("the PM sampler failed: {why}")
    }
}
