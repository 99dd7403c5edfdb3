//! Deltas between two consecutive OA reports. Every report is a snapshot of free-running
//! counters; a measurement is the difference of two, modulo the field's width: 2^32 for the
//! header fields, B, C, A32-A35 and the low-dword-only A counters of formats 000b/010b,
//! 2^40 for A0-A31 in 101b (seed 004; digest §5.6 rules 2 and 3). At most one wrap between
//! two reports is assumed, which the sampling period guarantees (digest §5.6 rule 4).

use super::report::{Layout, Report};

const MASK40: u64 = (1 << 40) - 1;

/// `(b - a) mod 2^32`.
pub fn delta32(a: u32, b: u32) -> u64 {
    u64::from(b.wrapping_sub(a))
}

/// `(b - a) mod 2^40`; bits above 40 of either input are ignored.
pub fn delta40(a: u64, b: u64) -> u64 {
    (b & MASK40).wrapping_sub(a & MASK40) & MASK40
}

/// What changed between two reports, or the sum of such changes over several.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deltas {
    /// TIME_STAMP ticks.
    pub timestamp: u64,
    /// GPU_TICKS: render clocks, frozen in RC6 (not a clock: digest R-OA-7).
    pub gpu_ticks: u64,
    /// Per counter of the layout, in layout order.
    pub counters: Vec<u64>,
    /// How many report pairs were summed.
    pub pairs: u64,
}

impl Deltas {
    /// Zeroes for `layout`.
    pub fn zero(layout: &Layout) -> Self {
        Deltas {
            counters: vec![0; layout.counters.len()],
            ..Deltas::default()
        }
    }

    /// The deltas from report `a` to the next report `b` of the same layout. Missing counter
    /// values (a report decoded with another layout) count as 0.
    pub fn between(layout: &Layout, a: &Report, b: &Report) -> Self {
        let counters = layout
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (x, y) = (
                    a.counters.get(i).copied().unwrap_or(0),
                    b.counters.get(i).copied().unwrap_or(0),
                );
                if c.bits() == 40 {
                    delta40(x, y)
                } else {
                    delta32(x as u32, y as u32)
                }
            })
            .collect();
        Deltas {
            timestamp: delta32(a.timestamp, b.timestamp),
            gpu_ticks: delta32(a.gpu_ticks, b.gpu_ticks),
            counters,
            pairs: 1,
        }
    }

    /// Adds `o` (saturating: a sum never wraps).
    pub fn add(&mut self, o: &Deltas) {
        self.timestamp = self.timestamp.saturating_add(o.timestamp);
        self.gpu_ticks = self.gpu_ticks.saturating_add(o.gpu_ticks);
        if self.counters.len() < o.counters.len() {
            self.counters.resize(o.counters.len(), 0);
        }
        for (s, v) in self.counters.iter_mut().zip(&o.counters) {
            *s = s.saturating_add(*v);
        }
        self.pairs = self.pairs.saturating_add(o.pairs);
    }
}
