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
//!
//! The layers also mark where the parts of their HUD path end ([`lap`]: the app's GL state read,
//! the drawing, the state put back; the Vulkan recording and submit), and the report gives each
//! part's mean wall time a timed frame, to tell on a driver where the time goes.

use crate::runtime::sync::Mutex;
use std::cell::Cell;
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
    /// Adds a frame's time; `false` while in the warm-up (not timed).
    pub fn add(&mut self, ns: u64, warmup: u64) -> bool {
        self.seen += 1;
        if self.seen <= warmup {
            return false;
        }
        if let Some(slot) = usize::try_from(self.timed).ok().and_then(|i| self.kept.get_mut(i)) {
            *slot = u32::try_from(ns).unwrap_or(u32::MAX);
        }
        self.timed += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
        true
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

/// Named parts a HUD path is cut into (more are folded into the last).
const PARTS: usize = 6;

/// Wall time by part: names in the order first seen, and their time.
#[derive(Clone, Copy)]
pub struct Parts {
    names: [&'static str; PARTS],
    ns: [u64; PARTS],
    n: usize,
}

impl Parts {
    pub const EMPTY: Parts = Parts {
        names: [""; PARTS],
        ns: [0; PARTS],
        n: 0,
    };

    pub fn add(&mut self, name: &'static str, ns: u64) {
        let i = match self.names[..self.n].iter().position(|n| *n == name) {
            Some(i) => i,
            None if self.n < PARTS => {
                self.names[self.n] = name;
                self.n += 1;
                self.n - 1
            }
            None => PARTS - 1,
        };
        self.ns[i] = self.ns[i].saturating_add(ns);
    }

    fn merge(&mut self, other: &Parts) {
        for (name, ns) in other.names[..other.n].iter().zip(other.ns) {
            self.add(name, ns);
        }
    }

    /// `name X µs` per part, each its sum over `frames`.
    pub fn describe(&self, frames: u64) -> String {
        let per = |ns: u64| ns as f64 / 1e3 / frames.max(1) as f64;
        let list: Vec<String> = self.names[..self.n]
            .iter()
            .zip(self.ns)
            .map(|(name, ns)| format!("{name} {:.2} µs", per(ns)))
            .collect();
        list.join(", ")
    }
}

/// The timed frames' parts, summed.
static PARTS_SUM: Mutex<Parts> = Mutex::new(Parts::EMPTY);

thread_local! {
    /// The frame being timed on this thread: when its last part ended, and its parts so far.
    static FRAME: Cell<(Option<Instant>, Parts)> = const { Cell::new((None, Parts::EMPTY)) };
}

/// Ends part `name` of the HUD path being timed on this thread (it began where the previous
/// part, or the timing, began). Nothing unless reporting was asked for.
pub fn lap(name: &'static str) {
    if reporting().is_none() {
        return;
    }
    let now = Instant::now();
    let _ = FRAME.try_with(|f| {
        let (last, mut parts) = f.get();
        if let Some(last) = last {
            parts.add(
                name,
                u64::try_from(now.duration_since(last).as_nanos()).unwrap_or(u64::MAX),
            );
            f.set((Some(now), parts));
        }
    });
}

/// The warm-up from `FRAMESCOPE_REPORT_HUD_TIME`, or `None` when not reporting. The first call
/// registers the report at process exit.
fn reporting() -> Option<u64> {
    static REPORTING: OnceLock<Option<u64>> = OnceLock::new();
    *REPORTING.get_or_init(|| {
        let w = std::env::var("FRAMESCOPE_REPORT_HUD_TIME").ok()?.trim().parse().ok()?;
        // SAFETY: `report_at_exit` is an `extern "C" fn()` that never unwinds and only touches
        // 'static data, as atexit requires.
        if unsafe { libc::atexit(report_at_exit) } != 0 {
            crate::runtime::log::error(format_args!("cannot register the HUD time report at exit"));
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
    Timing(reporting().map(|_| {
        let now = Instant::now();
        let _ = FRAME.try_with(|f| f.set((Some(now), Parts::EMPTY)));
        (thread_cpu_ns(), now)
    }))
}

impl Timing {
    pub fn stop(self) {
        if let (Some((cpu0, t0)), Some(w)) = (self.0, reporting()) {
            let wall = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let cpu = thread_cpu_ns().saturating_sub(cpu0);
            let parts = FRAME
                .try_with(|f| f.replace((None, Parts::EMPTY)).1)
                .unwrap_or(Parts::EMPTY);
            let mut t = TIMES.lock();
            if t.0.add(wall, w) {
                PARTS_SUM.lock().merge(&parts);
            }
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
    let (frames, wall, cpu, mean) = {
        let t = TIMES.lock();
        (t.0.timed(), describe(&t.0), describe(&t.1), t.0.mean_ns())
    };
    crate::runtime::log::error(format_args!(
        "HUD time on the app's thread after frame {w}: {frames} frames, {wall}; CPU time: {cpu}"
    ));
    let parts = *PARTS_SUM.lock();
    if parts.n > 0 && frames > 0 {
        let marked: u64 = parts.ns[..parts.n].iter().sum();
        let rest = mean.unwrap_or(0.0) - marked as f64 / frames as f64;
        crate::runtime::log::error(format_args!(
            "HUD time by part after frame {w} (wall time, mean a frame): {}, the rest {:.2} µs",
            parts.describe(frames),
            rest / 1e3
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::HudTimes;

    #[test]
    fn parts_keep_their_first_order_and_fold_extra_names_into_the_last() {
        let mut p = super::Parts::EMPTY;
        for (name, ns) in [("read", 1_000), ("draw", 4_000), ("read", 1_000), ("restore", 2_000)] {
            p.add(name, ns);
        }
        assert_eq!(p.describe(2), "read 1.00 µs, draw 2.00 µs, restore 1.00 µs");
        for (i, name) in ["a", "b", "c", "d"].into_iter().enumerate() {
            p.add(name, 1_000 * (i as u64 + 1));
        }
        // Six parts at most: "d" goes into the sixth, "c".
        assert_eq!(
            p.describe(1),
            "read 2.00 µs, draw 4.00 µs, restore 2.00 µs, a 1.00 µs, b 2.00 µs, c 7.00 µs"
        );
    }

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
