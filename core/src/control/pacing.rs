//! The frame limiter (`fps_limit`): holds each present (Vulkan) or swap (GL) back until the
//! frame's deadline, one period after the previous one. It sleeps until a little before the
//! deadline and spins the rest, since a sleep overshoots by up to about a scheduler tick; a
//! frame that comes late moves the deadlines on from itself (no burst of catch-up frames). It
//! runs on the presenting thread, outside every lock of framescope's, so only that thread
//! waits, as it would for a vsync'd present.
//!
//! The limit in force can change at any time (the cycling key); one process has one limiter,
//! shared by its swapchains and contexts as one frame stream is.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// The last part before a deadline that is spun, not slept: a sleep's overshoot.
const SPIN_NS: u64 = 1_000_000;

pub struct Limiter {
    /// Frames per second in force (0: none).
    fps: AtomicU32,
    /// The next deadline (CLOCK_MONOTONIC ns; 0: none yet).
    next_ns: AtomicU64,
}

impl Limiter {
    pub const fn new() -> Limiter {
        Limiter {
            fps: AtomicU32::new(0),
            next_ns: AtomicU64::new(0),
        }
    }

    pub fn set_fps(&self, fps: u32) {
        if self.fps.swap(fps, Ordering::Relaxed) != fps {
            self.next_ns.store(0, Ordering::Relaxed);
        }
    }

    pub fn fps(&self) -> u32 {
        self.fps.load(Ordering::Relaxed)
    }

    /// The frame's deadline given the clock reads `now_ns`, and the next one stored: `None`
    /// when nothing limits (no limit, the first frame, or a frame already late).
    pub fn deadline(&self, now_ns: u64) -> Option<u64> {
        let fps = self.fps();
        if fps == 0 {
            return None;
        }
        let period = 1_000_000_000 / u64::from(fps);
        let next = self.next_ns.load(Ordering::Relaxed);
        if next == 0 || now_ns >= next {
            // First frame or late: the next deadline counts from now.
            self.next_ns.store(now_ns + period, Ordering::Relaxed);
            return None;
        }
        self.next_ns.store(next + period, Ordering::Relaxed);
        Some(next)
    }

    /// Waits on this thread until the frame's deadline (see the module docs); the time
    /// waited (0 when nothing limits).
    pub fn pace(&self) -> u64 {
        let start = crate::runtime::clock::monotonic_now_ns();
        let Some(deadline) = self.deadline(start) else {
            return 0;
        };
        let now = crate::runtime::clock::monotonic_now_ns();
        if deadline > now + SPIN_NS {
            std::thread::sleep(Duration::from_nanos(deadline - now - SPIN_NS));
        }
        let mut end = crate::runtime::clock::monotonic_now_ns();
        while end < deadline {
            std::hint::spin_loop();
            end = crate::runtime::clock::monotonic_now_ns();
        }
        end - start
    }
}

impl Default for Limiter {
    fn default() -> Self {
        Self::new()
    }
}

/// The process's limiter.
pub static LIMITER: Limiter = Limiter::new();

/// `fps_limit`'s rates, parsed once.
fn rates() -> &'static [u32] {
    static RATES: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    RATES.get_or_init(|| crate::control::settings::get().fps_limits())
}

/// The rate in force after `presses` presses of the rate key (0: none).
pub fn rate_after(presses: u64) -> u32 {
    let r = rates();
    if r.is_empty() {
        return 0;
    }
    r[(presses % r.len() as u64) as usize]
}

/// Paces the calling thread's present or swap with the rate in force after `presses` presses
/// of the rate key, and adds the time held to the thread's waits (the frame's `fps_limit`
/// wait). Nothing to do (one atomic read) without a limit.
pub fn pace(presses: u64) {
    LIMITER.set_fps(rate_after(presses));
    if LIMITER.fps() == 0 {
        return;
    }
    let waited = LIMITER.pace();
    if waited > 0 {
        crate::model::waits::add(crate::model::waits::WaitKind::FpsLimit, waited);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_follow_one_period_apart_and_a_late_frame_restarts_them() {
        let l = Limiter::new();
        assert_eq!(l.deadline(5), None, "no limit");
        l.set_fps(100); // 10 ms
        assert_eq!(l.deadline(1_000), None, "the first frame sets the pace");
        assert_eq!(l.deadline(2_000_000), Some(10_001_000));
        assert_eq!(l.deadline(10_500_000), Some(20_001_000), "early again: the next period");
        // 25 ms late: no catch-up burst, the pace restarts from now.
        assert_eq!(l.deadline(45_000_000), None);
        assert_eq!(l.deadline(46_000_000), Some(55_000_000));
        l.set_fps(0);
        assert_eq!(l.deadline(47_000_000), None);
        l.set_fps(50);
        assert_eq!(l.deadline(48_000_000), None, "a new limit starts over");
        assert_eq!(l.deadline(49_000_000), Some(68_000_000));
    }

    #[test]
    fn pace_returns_at_the_deadline_not_before() {
        let l = Limiter::new();
        l.set_fps(200); // 5 ms
        assert_eq!(l.pace(), 0, "the first frame sets the pace");
        let t0 = crate::runtime::clock::monotonic_now_ns();
        let waited = l.pace();
        let t1 = crate::runtime::clock::monotonic_now_ns();
        assert!(waited <= t1 - t0 && waited >= 4_000_000, "said it waited {waited} ns");
        // The second pace waited for the first frame's deadline, about 5 ms after the first.
        assert!(t1 >= t0, "{t0} {t1}");
        assert!(t1 - t0 >= 4_000_000, "waited only {} ns", t1 - t0);
    }
}
