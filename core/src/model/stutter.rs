//! The stutter rule and a stutter frame's likely causes.
//!
//! A frame is a stutter when its frame time (`cpu_frame_ns`, present to present) is at least
//! 2.5 times the median of the previous 100 frames' and at least 8 ms: a hitch a player sees
//! at any frame rate (8 ms is half a 60 Hz refresh), judged against the run's own recent pace
//! so a slow scene is not one long stutter. The first 10 frames are never judged (start-up).
//! CapFrameX's stutter rule is the same shape (a multiple of the moving average); the median
//! keeps one earlier stutter from raising the bar for the next.
//!
//! Its causes are what the presenting thread did in the frame that can take that long: every
//! creation (pipelines, shaders, programs, memory, a GL program's first draw) and every wait of at least 1 ms but the
//! frame limiter's, largest first. A cause *explains* the stutter when it took at least half
//! the frame's time over the median.

use crate::model::creation::CreationKind;
use crate::model::frame::CpuFrameTime;
use crate::model::waits::WaitKind;

/// Frames the median is taken over.
pub const WINDOW: usize = 100;
/// Frames judged only once this many came before.
pub const MIN_HISTORY: usize = 10;
/// The floor of a stutter.
pub const MIN_NS: u64 = 8_000_000;
/// A wait shorter than this is no cause.
pub const MIN_WAIT_NS: u64 = 1_000_000;

/// Judges frames in order against the median of the ones before.
pub struct Detector {
    ring: [u64; WINDOW],
    len: usize,
    next: usize,
    scratch: [u64; WINDOW],
}

impl Default for Detector {
    fn default() -> Self {
        Detector {
            ring: [0; WINDOW],
            len: 0,
            next: 0,
            scratch: [0; WINDOW],
        }
    }
}

impl Detector {
    /// The next frame's frame time (`None`: the frame has none, and is not judged); the
    /// median it is a stutter against, when it is one.
    pub fn push(&mut self, frame_ns: Option<u64>) -> Option<u64> {
        let ns = frame_ns?;
        let verdict = (self.len >= MIN_HISTORY)
            .then(|| self.median())
            .filter(|&median| ns >= MIN_NS && u128::from(ns) * 2 >= u128::from(median) * 5);
        self.ring[self.next] = ns;
        self.next = (self.next + 1) % WINDOW;
        self.len = (self.len + 1).min(WINDOW);
        verdict
    }

    fn median(&mut self) -> u64 {
        let v = &mut self.scratch[..self.len];
        v.copy_from_slice(&self.ring[..self.len]);
        let mid = v.len() / 2;
        *v.select_nth_unstable(mid).1
    }
}

/// One likely cause of a stutter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause {
    /// A [`CreationKind`] or [`WaitKind`] name.
    pub name: &'static str,
    pub ns: u64,
    /// Calls (creations; 0 for waits, which are not counted).
    pub calls: u32,
}

/// The causes of a frame's stutter, largest first, into `out` (cleared).
pub fn causes(cpu: &CpuFrameTime, out: &mut Vec<Cause>) {
    out.clear();
    for k in CreationKind::ALL {
        let ns = cpu.creation.ns(k);
        if cpu.creation.calls(k) > 0 {
            out.push(Cause {
                name: k.name(),
                ns,
                calls: cpu.creation.calls(k),
            });
        }
    }
    for k in WaitKind::ALL {
        let ns = cpu.waits.get(k);
        if k != WaitKind::FpsLimit && ns >= MIN_WAIT_NS {
            out.push(Cause {
                name: k.name(),
                ns,
                calls: 0,
            });
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.ns));
}

/// The largest of a frame's causes (as [`causes`] lists them first), without allocating: for
/// the HUD on the app's thread.
pub fn largest_cause(cpu: &CpuFrameTime) -> Option<Cause> {
    let creation = CreationKind::ALL
        .iter()
        .filter(|&&k| cpu.creation.calls(k) > 0)
        .map(|&k| Cause {
            name: k.name(),
            ns: cpu.creation.ns(k),
            calls: cpu.creation.calls(k),
        });
    let waits = WaitKind::ALL
        .iter()
        .filter(|&&k| k != WaitKind::FpsLimit && cpu.waits.get(k) >= MIN_WAIT_NS)
        .map(|&k| Cause {
            name: k.name(),
            ns: cpu.waits.get(k),
            calls: 0,
        });
    // The first of equals, as the stable sort in `causes` keeps it.
    creation.chain(waits).fold(None, |best: Option<Cause>, c| match best {
        Some(b) if b.ns >= c.ns => Some(b),
        _ => Some(c),
    })
}

/// Whether one of `causes` took at least half of `excess_ns` (the frame's time over the median).
pub fn explained(causes: &[Cause], excess_ns: u64) -> bool {
    causes.iter().any(|c| c.ns.saturating_mul(2) >= excess_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_frame_two_and_a_half_times_the_median_and_over_8_ms_is_a_stutter() {
        let mut d = Detector::default();
        for _ in 0..MIN_HISTORY {
            assert_eq!(d.push(Some(10 * MS)), None, "start-up is not judged");
        }
        assert_eq!(d.push(Some(24 * MS)), None, "2.4x");
        assert_eq!(d.push(Some(25 * MS)), Some(10 * MS), "2.5x");
        assert_eq!(d.push(None), None);
        // One stutter does not move the median.
        assert_eq!(d.push(Some(30 * MS)), Some(10 * MS));
        // At 1 ms a frame, 3 ms is 3x but under the floor.
        let mut fast = Detector::default();
        for _ in 0..50 {
            fast.push(Some(MS));
        }
        assert_eq!(fast.push(Some(3 * MS)), None);
        assert_eq!(fast.push(Some(9 * MS)), Some(MS));
    }

    #[test]
    fn the_median_follows_the_last_hundred_frames() {
        let mut d = Detector::default();
        for _ in 0..WINDOW {
            d.push(Some(4 * MS));
        }
        // A slower scene: after 100 frames at 20 ms the median is 20 ms.
        for _ in 0..WINDOW {
            d.push(Some(20 * MS));
        }
        assert_eq!(d.push(Some(45 * MS)), None);
        assert_eq!(d.push(Some(50 * MS)), Some(20 * MS));
    }

    #[test]
    fn causes_are_creations_and_long_waits_largest_first() {
        let mut cpu = CpuFrameTime::default();
        cpu.creation.add(CreationKind::Pipeline, 30 * MS);
        cpu.creation.add(CreationKind::Pipeline, 5 * MS);
        cpu.creation.add(CreationKind::Memory, 100);
        cpu.waits.add(WaitKind::Fence, 40 * MS);
        cpu.waits.add(WaitKind::Acquire, MS / 2);
        cpu.waits.add(WaitKind::FpsLimit, 90 * MS);
        let mut out = Vec::new();
        causes(&cpu, &mut out);
        let names: Vec<&str> = out.iter().map(|c| c.name).collect();
        assert_eq!(names, ["fence", "pipeline", "memory"]);
        assert_eq!(out[1].calls, 2);
        assert_eq!(out[1].ns, 35 * MS);
        assert!(explained(&out, 60 * MS));
        assert!(!explained(&out, 81 * MS));
    }
}
