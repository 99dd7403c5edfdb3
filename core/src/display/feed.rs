//! The channel from display-time sources to the frame session's consumers.
//!
//! Sources run on framescope's own threads and [`DisplayFeed::report`] without blocking; the
//! dump writer drains the queue ([`DisplayFeed::drain`]); the HUD reads the newest values
//! ([`DisplayFeed::latest`]) from atomics, so it needs no dump. A full queue drops the report
//! (counted) rather than wait: the frame then goes out as `no_report`.

use super::model::{DisplayReport, DisplaySource, NoSourceReason};
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Reports the queue holds: seconds of frames at any rate the writer keeps up with (it
/// drains at least every 100 ms).
pub const CAPACITY: usize = 4096;

const NO_SOURCE: u8 = u8::MAX;

pub struct DisplayFeed {
    reports: ArrayQueue<DisplayReport>,
    /// The source reporting now ([`DisplaySource`] index), or [`NO_SOURCE`].
    source: AtomicU8,
    /// Why there is none, when there is none ([`NoSourceReason`] index).
    why_none: AtomicU8,
    lost: AtomicU64,
    /// The newest displayed frame and when it reached the screen (`u64::MAX`: none yet).
    last_frame: AtomicU64,
    last_shown_ns: AtomicU64,
    displayed: AtomicU64,
    dropped: AtomicU64,
}

/// The newest display facts, for the HUD.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latest {
    pub source: Option<DisplaySource>,
    /// The newest displayed frame and when it was shown.
    pub frame: Option<(u64, u64)>,
    pub displayed: u64,
    pub dropped: u64,
}

impl Default for DisplayFeed {
    fn default() -> Self {
        DisplayFeed {
            reports: ArrayQueue::new(CAPACITY),
            source: AtomicU8::new(NO_SOURCE),
            why_none: AtomicU8::new(NoSourceReason::NoneFound as u8),
            lost: AtomicU64::new(0),
            last_frame: AtomicU64::new(u64::MAX),
            last_shown_ns: AtomicU64::new(0),
            displayed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }
}

impl DisplayFeed {
    /// A source starts reporting for the frames presented from now on.
    pub fn set_source(&self, source: DisplaySource) {
        let i = DisplaySource::ALL.iter().position(|s| *s == source).unwrap_or(0);
        self.source.store(i as u8, Ordering::Release);
    }

    /// No source (any more), and why.
    pub fn set_none(&self, why: NoSourceReason) {
        self.why_none.store(why as u8, Ordering::Relaxed);
        self.source.store(NO_SOURCE, Ordering::Release);
    }

    /// The source reporting now, or why there is none.
    pub fn source(&self) -> Result<DisplaySource, NoSourceReason> {
        match DisplaySource::from_index(self.source.load(Ordering::Acquire)) {
            Some(s) => Ok(s),
            None => Err(NoSourceReason::from_index(self.why_none.load(Ordering::Relaxed))),
        }
    }

    /// One frame's report, from a source's thread; never blocks.
    pub fn report(&self, r: DisplayReport) {
        match r.shown_ns {
            Some(t) => {
                self.displayed.fetch_add(1, Ordering::Relaxed);
                self.last_shown_ns.store(t, Ordering::Relaxed);
                self.last_frame.store(r.frame, Ordering::Release);
            }
            None => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        if self.reports.push(r).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes every queued report, in arrival order.
    pub fn drain(&self, mut f: impl FnMut(DisplayReport)) {
        while let Some(r) = self.reports.pop() {
            f(r);
        }
    }

    /// Reports dropped because the queue was full.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    pub fn latest(&self) -> Latest {
        let frame = self.last_frame.load(Ordering::Acquire);
        Latest {
            source: self.source().ok(),
            frame: (frame != u64::MAX).then(|| (frame, self.last_shown_ns.load(Ordering::Relaxed))),
            displayed: self.displayed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::model::PresentationMode;

    fn shown(frame: u64, t: Option<u64>) -> DisplayReport {
        DisplayReport {
            frame,
            source: DisplaySource::X11Present,
            shown_ns: t,
            mode: PresentationMode::Copy,
            refresh_ns: None,
        }
    }

    #[test]
    fn reports_come_out_in_order_and_the_latest_follows_them() {
        let f = DisplayFeed::default();
        assert_eq!(f.source(), Err(NoSourceReason::NoneFound));
        f.set_source(DisplaySource::X11Present);
        assert_eq!(f.source(), Ok(DisplaySource::X11Present));
        f.report(shown(3, Some(100)));
        f.report(shown(4, None));
        let mut got = Vec::new();
        f.drain(|r| got.push(r.frame));
        assert_eq!(got, [3, 4]);
        let l = f.latest();
        assert_eq!((l.frame, l.displayed, l.dropped), (Some((3, 100)), 1, 1));
        f.set_none(NoSourceReason::SoftwarePresent);
        assert_eq!(f.source(), Err(NoSourceReason::SoftwarePresent));
    }

    #[test]
    fn a_full_queue_counts_what_it_drops() {
        let f = DisplayFeed::default();
        for i in 0..CAPACITY as u64 + 3 {
            f.report(shown(i, Some(i)));
        }
        assert_eq!(f.lost(), 3);
    }
}
