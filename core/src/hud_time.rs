//! The HUD's time on the app's thread, measured for the cost target "the HUD ≤ 5 µs a frame".
//!
//! With `FRAMESCOPE_REPORT_HUD_TIME=N` set, each frame's HUD path is timed from frame `N` on:
//! in the Vulkan layer the HUD's part of `vkQueuePresentKHR` (the refresh when due, recording
//! the composite and submitting it), in the GL shim the HUD's part of the swap (the refresh when
//! due and the composite). Wall time and the thread's CPU time go into fixed arrays (the first
//! 65 536 frames; the means and maxima cover all), so nothing is allocated on the app's thread,
//! and the process's exit (or the device's destruction) logs the frames timed and the mean,
//! median, 99th percentile and maximum of both. Unset, a frame costs one read of a flag cached
//! at the first frame. Timing from outside the process cannot resolve a few microseconds (the
//! frame time of identical runs varies by tens of microseconds), hence the measurement inside.

use crate::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Frames whose times are kept for the quantiles (the mean and maximum cover every frame).
const KEPT: usize = 1 << 16;

/// Timed HUD frames: the first [`KEPT`] times, and the sum and maximum of all.
pub struct HudTimes {
    kept: [u32; KEPT],
    /// Frames seen (timed or in the warm-up).
    seen: u64,
    timed: u64,
    sum_ns: u64,
    max_ns: u64,
}

impl HudTimes {
    pub const fn new() -> HudTimes {
        HudTimes {
            kept: [0; KEPT],
            seen: 0,
            timed: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }

    /// One frame's HUD time; frames up to `warmup` are only counted.
    pub fn add(&mut self, ns: u64, warmup: u64) {
        self.seen += 1;
        if self.seen <= warmup {
            return;
        }
        if let Some(slot) = usize::try_from(self.timed).ok().and_then(|i| self.kept.get_mut(i)) {
            *slot = u32::try_from(ns).unwrap_or(u32::MAX);
        }
        self.timed += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn timed(&self) -> u64 {
        self.timed
    }

    pub fn mean_ns(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.sum_ns as f64 / self.timed as f64)
    }

    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The nearest-rank quantiles `qs` of the kept times (sorted here: called at the report,
    /// off the frame path).
    pub fn quantiles_ns(&self, qs: &[f64]) -> Option<Vec<u64>> {
        let n = usize::try_from(self.timed).unwrap_or(KEPT).min(KEPT);
        if n == 0 {
            return None;
        }
        let mut v = self.kept[..n].to_vec();
        v.sort_unstable();
        Some(
            qs.iter()
                .map(|q| {
                    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
                    u64::from(v[rank - 1])
                })
                .collect(),
        )
    }
}

impl Default for HudTimes {
    fn default() -> HudTimes {
        HudTimes::new()
    }
}

/// Wall time and the thread's CPU time of each timed frame.
static TIMES: Mutex<(HudTimes, HudTimes)> = Mutex::new((HudTimes::new(), HudTimes::new()));

/// The warm-up from `FRAMESCOPE_REPORT_HUD_TIME`, or `None` when not reporting. The first call
/// registers the report at process exit.
fn reporting() -> Option<u64> {
    static REPORTING: OnceLock<Option<u64>> = OnceLock::new();
    *REPORTING.get_or_init(|| {
        let w = std::env::var("FRAMESCOPE_REPORT_HUD_TIME").ok()?.trim().parse().ok()?;
        // SAFETY: `report_at_exit` is an `extern "C" fn()` that never unwinds and only touches
        // 'static data, as atexit requires.
        if unsafe { libc::atexit(report_at_exit) } != 0 {
            crate::log::error(format_args!("cannot register the HUD time report at exit"));
        }
        Some(w)
    })
}

extern "C" fn report_at_exit() {
    let _ = std::panic::catch_unwind(report);
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to our stack.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// A frame's HUD path being timed; [`Timing::stop`] records it.
#[must_use]
pub struct Timing(Option<(u64, Instant)>);

/// Starts timing this frame's HUD path (nothing unless reporting was asked for). Wall time is
/// what the app waits; CPU time leaves out the time the thread was not running (on a machine
/// whose cores the CPU rasterizer keeps busy, preemption dominates the wall time's tail).
pub fn start() -> Timing {
    Timing(reporting().map(|_| (thread_cpu_ns(), Instant::now())))
}

impl Timing {
    pub fn stop(self) {
        if let (Some((cpu0, t0)), Some(w)) = (self.0, reporting()) {
            let wall = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let cpu = thread_cpu_ns().saturating_sub(cpu0);
            let mut t = TIMES.lock();
            t.0.add(wall, w);
            t.1.add(cpu, w);
        }
    }
}

/// `frames, mean X µs, median Y µs, p99 Z µs, max M µs` of one series.
fn describe(t: &HudTimes) -> String {
    let us = |ns: f64| format!("{:.2}", ns / 1e3);
    let q = t.quantiles_ns(&[0.5, 0.99]).unwrap_or_default();
    let at = |i: usize| q.get(i).map_or("-".to_string(), |&v| us(v as f64));
    format!(
        "mean {} µs, median {} µs, p99 {} µs, max {} µs",
        t.mean_ns().map_or("-".to_string(), us),
        at(0),
        at(1),
        us(t.max_ns() as f64)
    )
}

/// Logs the HUD's times once per process, when reporting was asked for.
pub fn report() {
    static DONE: AtomicBool = AtomicBool::new(false);
    let Some(w) = reporting() else { return };
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    let (frames, wall, cpu) = {
        let t = TIMES.lock();
        (t.0.timed(), describe(&t.0), describe(&t.1))
    };
    crate::log::error(format_args!(
        "HUD time on the app's thread after frame {w}: {frames} frames, {wall}; CPU time: {cpu}"
    ));
}

#[cfg(test)]
mod tests {
    use super::HudTimes;

    #[test]
    fn warmup_frames_are_left_out_and_quantiles_are_nearest_rank() {
        let mut t = HudTimes::new();
        for ns in [1_000_000, 2_000_000] {
            t.add(ns, 2);
        }
        assert_eq!(t.timed(), 0);
        assert_eq!(t.quantiles_ns(&[0.5]), None);
        // 98 frames at 1.0 µs, one at 3.02 µs, one at 2 ms.
        for _ in 0..98 {
            t.add(1_000, 2);
        }
        t.add(3_020, 2);
        t.add(2_000_000, 2);
        assert_eq!(t.timed(), 100);
        assert_eq!(t.max_ns(), 2_000_000);
        let mean = t.mean_ns().unwrap();
        assert!((mean - (98.0 * 1_000.0 + 3_020.0 + 2_000_000.0) / 100.0).abs() < 1e-6);
        assert_eq!(
            t.quantiles_ns(&[0.5, 0.98, 0.99, 1.0]),
            Some(vec![1_000, 1_000, 3_020, 2_000_000])
        );
    }
}
