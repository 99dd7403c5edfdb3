//! OA time: report TIME_STAMPs are the low 32 bits of the command streamer timestamp
//! (seed 004: "same format as the Render Command Streamer TIMESTAMP register"), counting at
//! the timestamp frequency (i915 `I915_PARAM_CS_TIMESTAMP_FREQUENCY`, Xe
//! `drm_xe_oa_unit.oa_timestamp_freq`; 12 MHz on Skylake, digest §5.3). A calibration pairs
//! one GPU timestamp with the `CLOCK_MONOTONIC` time it was read at, and converts report
//! timestamps to `CLOCK_MONOTONIC`.

/// A (GPU timestamp, `CLOCK_MONOTONIC` ns) pair and the timestamp frequency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// Low 32 bits of the GPU timestamp.
    pub gpu_ts: u32,
    pub cpu_ns: u64,
    pub freq_hz: u64,
}

impl Calibration {
    /// The `CLOCK_MONOTONIC` time of a report timestamp. The 32-bit timestamp wraps (after
    /// about 358 s at 12 MHz, digest §5.6): a report is taken to lie within half a wrap of
    /// the calibration, before or after it, so a wrap between the two is undone. `None`
    /// with a zero frequency or a time before 0.
    pub fn to_mono(&self, ts: u32) -> Option<u64> {
        if self.freq_hz == 0 {
            return None;
        }
        let ticks = i128::from(ts.wrapping_sub(self.gpu_ts) as i32);
        let ns = ticks * 1_000_000_000 / i128::from(self.freq_hz);
        u64::try_from(i128::from(self.cpu_ns) + ns).ok()
    }
}

/// Timestamp ticks as nanoseconds (saturating).
pub fn ticks_to_ns(ticks: u64, freq_hz: u64) -> Option<u64> {
    if freq_hz == 0 {
        return None;
    }
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(freq_hz);
    Some(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// The sampling period of an OA exponent: `2^(exponent + 1)` timestamp ticks (`xe_drm.h`:
/// "proportional to 2^(period_exponent + 1)"; digest §5.8).
pub fn period_ns(exponent: u32, freq_hz: u64) -> Option<u64> {
    let ticks = 1u64.checked_shl(exponent.checked_add(1)?)?;
    ticks_to_ns(ticks, freq_hz)
}

/// The largest exponent (0..=31, the range i915 accepts) whose period is at most
/// `period_ns`, so at least one report lands in every wanted period; 0 when even that is
/// too slow.
pub fn exponent_for(period_ns_wanted: u64, freq_hz: u64) -> u32 {
    (0..=31u32)
        .rev()
        .find(|&e| period_ns(e, freq_hz).is_some_and(|p| p <= period_ns_wanted))
        .unwrap_or(0)
}
