//! A fixed-capacity ring of the most recent completed [`FrameRecord`]s, for live displays (the
//! HUD). Filled where records are emitted to the dump; pushing copies one record and never
//! allocates, so it is safe on the app's thread in steady state.

use crate::model::frame::FrameRecord;

/// Default capacity: enough for the HUD's graphs and a one-second fps window at 240 fps.
pub const DEFAULT_CAPACITY: usize = 256;

pub struct FrameHistory {
    /// Allocated once at construction; `len` of them are valid.
    ring: Box<[FrameRecord]>,
    /// Index the next push writes.
    next: usize,
    len: usize,
    /// Records pushed since construction.
    total: u64,
}

impl FrameHistory {
    /// A ring holding the last `capacity` records (at least 1).
    pub fn new(capacity: usize) -> Self {
        FrameHistory {
            ring: vec![FrameRecord::default(); capacity.max(1)].into_boxed_slice(),
            next: 0,
            len: 0,
            total: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.ring.len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records pushed since construction (including those overwritten since).
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn push(&mut self, r: FrameRecord) {
        self.ring[self.next] = r;
        self.next = (self.next + 1) % self.ring.len();
        self.len = (self.len + 1).min(self.ring.len());
        self.total += 1;
    }

    /// The newest record.
    pub fn latest(&self) -> Option<&FrameRecord> {
        (self.len > 0).then(|| &self.ring[(self.next + self.ring.len() - 1) % self.ring.len()])
    }

    /// Records from oldest to newest.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &FrameRecord> + ExactSizeIterator + '_ {
        let cap = self.ring.len();
        let start = (self.next + cap - self.len) % cap;
        (0..self.len).map(move |i| &self.ring[(start + i) % cap])
    }

    /// The newest `n` records (fewer if the ring holds fewer), oldest first.
    pub fn last(&self, n: usize) -> impl DoubleEndedIterator<Item = &FrameRecord> + '_ {
        self.iter().skip(self.len.saturating_sub(n))
    }

    /// Frames per second over the newest records whose end lies within `window_ns` of the
    /// newest one: (frames - 1) / (newest.t_ns - oldest.t_ns). `None` with fewer than 2.
    pub fn fps(&self, window_ns: u64) -> Option<f64> {
        let newest = self.latest()?.t_ns;
        let mut oldest = newest;
        let mut n = 0u64;
        for r in self.iter().rev() {
            if newest.saturating_sub(r.t_ns) > window_ns {
                break;
            }
            oldest = r.t_ns;
            n += 1;
        }
        (n >= 2 && newest > oldest).then(|| (n - 1) as f64 * 1e9 / (newest - oldest) as f64)
    }

    /// Mean present-to-present time (ms) of the newest `n` records that have one.
    pub fn mean_frame_ms(&self, n: usize) -> Option<f64> {
        mean(self.last(n).filter_map(|r| r.cpu_frame_ns))
    }

    /// Mean GPU busy time (ms) of the newest `n` records that have one.
    pub fn mean_gpu_busy_ms(&self, n: usize) -> Option<f64> {
        mean(self.last(n).filter_map(|r| r.gpu.busy_ns))
    }
}

fn mean(values: impl Iterator<Item = u64>) -> Option<f64> {
    let (mut sum, mut n) = (0u128, 0u64);
    for v in values {
        sum += u128::from(v);
        n += 1;
    }
    (n > 0).then(|| sum as f64 / n as f64 / 1e6)
}

impl Default for FrameHistory {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(frame: u64, t_ms: u64, busy_us: Option<u64>) -> FrameRecord {
        let mut r = FrameRecord {
            frame,
            t_ns: t_ms * 1_000_000,
            cpu_frame_ns: (frame > 0).then_some(10_000_000),
            ..FrameRecord::default()
        };
        r.gpu.busy_ns = busy_us.map(|b| b * 1000);
        r
    }

    #[test]
    fn keeps_the_newest_in_order() {
        let mut h = FrameHistory::new(4);
        assert!(h.is_empty() && h.latest().is_none() && h.fps(1).is_none());
        for i in 0..10 {
            h.push(rec(i, i * 10, Some(i)));
        }
        assert_eq!(h.len(), 4);
        assert_eq!(h.total(), 10);
        let frames: Vec<u64> = h.iter().map(|r| r.frame).collect();
        assert_eq!(frames, [6, 7, 8, 9]);
        assert_eq!(h.latest().unwrap().frame, 9);
        let last2: Vec<u64> = h.last(2).map(|r| r.frame).collect();
        assert_eq!(last2, [8, 9]);
        assert_eq!(h.last(99).count(), 4);
    }

    #[test]
    fn fps_and_means() {
        let mut h = FrameHistory::new(100);
        for i in 0..50 {
            h.push(rec(i, i * 10, if i % 2 == 0 { Some(1000) } else { None }));
        }
        // 10 ms apart: 100 fps, whatever the window as long as it holds 2 frames.
        assert!((h.fps(1_000_000_000).unwrap() - 100.0).abs() < 1e-9);
        assert!((h.fps(20_000_000).unwrap() - 100.0).abs() < 1e-9);
        assert!(h.fps(5_000_000).is_none());
        assert_eq!(h.mean_frame_ms(10), Some(10.0));
        assert_eq!(h.mean_gpu_busy_ms(10), Some(1.0));
        let mut h = FrameHistory::new(3);
        h.push(rec(0, 0, None));
        assert_eq!(h.mean_frame_ms(3), None);
        assert_eq!(h.mean_gpu_busy_ms(3), None);
    }
}
