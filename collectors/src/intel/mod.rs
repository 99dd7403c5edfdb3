//! Intel OA (Observation Architecture) counters through the i915 perf and Xe observation
//! uAPIs: a periodic OA stream, decoded with the seed 004 report formats and derived with the
//! `intel-gen9` counter set.
//!
//! * [`i915_perf`], [`xe_observation`]: one module per kernel ABI (request numbers, argument
//!   layouts, record framing), every syscall through [`crate::sys::Sys`].
//! * [`report`], [`accumulate`], [`clock`], [`frames`], [`metrics`]: pure decoding, deltas
//!   with 32/40-bit wrap, GPU-to-`CLOCK_MONOTONIC` time, frame windows, derived values.
//! * [`discover`]: the render node, the metric set and the privilege check, through sysfs.
//! * [`oa_source`]: the `intel_oa` [`crate::source::CounterSource`].
//! * [`fake`]: i915 and Xe driver models over [`crate::sys::fake::FakeSys`] for tests.
//! * [`fuzzing`]: the body of the `oa_records` fuzz target.

pub mod accumulate;
pub mod clock;
pub mod discover;
pub mod fake;
pub mod frames;
pub mod fuzzing;
pub mod i915_perf;
pub mod metrics;
pub mod oa_source;
pub mod report;
pub mod xe_observation;

pub use oa_source::IntelOaSource;

use crate::collector::Built;
use crate::source::GpuHint;

/// The Intel sources over the machine's syscalls, for the builtin list. Building opens
/// nothing; `start` finds the device and says why when there is none.
pub fn sources(hint: &GpuHint) -> Vec<Built> {
    vec![Ok(Box::new(IntelOaSource::new(hint.clone())))]
}
