//! Cutting the stream of report-to-report intervals into windows at frame ends. OA reports
//! are periodic and GPU-global, so a frame's values are the sum of the intervals that ended
//! by the frame's end (`CLOCK_MONOTONIC`, from the calibrated report timestamps); the rest
//! waits for the next frame (the frame pattern of vendor-counter-backends §6 (a): system
//! samples joined to frames by time).

use super::accumulate::Deltas;
use std::collections::VecDeque;

/// The most intervals kept between two reads (over a minute of 1 ms reports): older ones are
/// dropped and counted, so a stalled reader cannot grow memory without end.
pub const MAX_PENDING: usize = 1 << 16;

/// The change between two consecutive reports, placed on `CLOCK_MONOTONIC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    pub begin_ns: u64,
    pub end_ns: u64,
    pub deltas: Deltas,
}

/// A window's summed intervals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub begin_ns: u64,
    pub end_ns: u64,
    pub deltas: Deltas,
}

#[derive(Debug, Default)]
pub struct Windower {
    pending: VecDeque<Interval>,
    dropped: u64,
}

impl Windower {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, iv: Interval) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            self.dropped = self.dropped.saturating_add(1);
        }
        self.pending.push_back(iv);
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Intervals dropped by [`MAX_PENDING`] so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Forgets every pending interval (after a report loss, whose gap must not be summed).
    pub fn clear(&mut self) {
        self.pending.clear();
    }

    /// The next window: the pending intervals that ended by `frame_end_ns`, or all of them
    /// when there is no frame end or none ended by it (the frame was already emitted, or no
    /// report landed in it). `None` when nothing is pending.
    pub fn take(&mut self, frame_end_ns: Option<u64>) -> Option<Window> {
        let first = self.pending.front()?;
        let n = match frame_end_ns {
            Some(cut) if first.end_ns <= cut => self.pending.iter().take_while(|iv| iv.end_ns <= cut).count(),
            _ => self.pending.len(),
        };
        let mut w = Window {
            begin_ns: first.begin_ns,
            end_ns: first.end_ns,
            deltas: Deltas::default(),
        };
        for iv in self.pending.drain(..n) {
            w.begin_ns = w.begin_ns.min(iv.begin_ns);
            w.end_ns = w.end_ns.max(iv.end_ns);
            w.deltas.add(&iv.deltas);
        }
        Some(w)
    }
}
