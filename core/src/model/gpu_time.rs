//! GPU time of one frame from its submissions' `[begin, end]` intervals.
//!
//! Submissions may run on several queues, overlap and arrive in any order. `busy` is the
//! length of the union of the intervals (time the GPU was working on the frame on at least
//! one queue); `span` is first begin to last end.
//!
//! No heap: intervals live in a fixed array of [`MAX_INTERVALS`]. Overflow behaviour: when
//! the array is full, overlapping intervals are merged first (exact); if it is still full,
//! the two neighbouring intervals with the smallest gap between them are merged, which
//! counts that gap as busy. `span` stays exact; `busy` can only be over-estimated, by at
//! most [`IntervalSet::merged_gap_ns`].

/// Intervals one frame can hold before merging (see the module docs).
pub const MAX_INTERVALS: usize = 256;

/// The GPU time of a set of intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuTime {
    pub busy_ns: u64,
    pub span_ns: u64,
    /// Earliest begin (same clock as the intervals).
    pub begin_ns: u64,
    /// Latest end (same clock as the intervals).
    pub end_ns: u64,
}

/// A fixed-capacity set of `[begin, end]` intervals, in nanoseconds.
#[derive(Clone, Debug)]
pub struct IntervalSet {
    buf: [(u64, u64); MAX_INTERVALS],
    len: usize,
    merged_gap_ns: u64,
}

impl Default for IntervalSet {
    fn default() -> Self {
        Self::new()
    }
}

impl IntervalSet {
    pub const fn new() -> Self {
        IntervalSet {
            buf: [(0, 0); MAX_INTERVALS],
            len: 0,
            merged_gap_ns: 0,
        }
    }

    /// Empties the set for reuse (no deallocation: there is nothing on the heap).
    pub fn clear(&mut self) {
        self.len = 0;
        self.merged_gap_ns = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Gap time counted as busy because of overflow merges; 0 means `busy` is exact.
    pub fn merged_gap_ns(&self) -> u64 {
        self.merged_gap_ns
    }

    /// Adds an interval. An inverted interval (`end < begin`, e.g. a wrapped or corrupt
    /// timestamp) is taken as empty at `begin`, so it cannot inflate busy time.
    pub fn push(&mut self, begin: u64, end: u64) {
        let end = end.max(begin);
        if self.len == MAX_INTERVALS {
            self.compact();
            if self.len == MAX_INTERVALS {
                self.merge_closest_pair();
            }
        }
        self.buf[self.len] = (begin, end);
        self.len += 1;
    }

    /// Busy and span of the intervals; `None` when empty. Sorts the stored intervals in place.
    pub fn compute(&mut self) -> Option<GpuTime> {
        if self.len == 0 {
            return None;
        }
        let v = &mut self.buf[..self.len];
        v.sort_unstable();
        let mut busy = 0u64;
        let (mut cur_b, mut cur_e) = v[0];
        let mut last_end = cur_e;
        for &(b, e) in &v[1..] {
            last_end = last_end.max(e);
            if b <= cur_e {
                cur_e = cur_e.max(e);
            } else {
                busy += cur_e - cur_b;
                (cur_b, cur_e) = (b, e);
            }
        }
        busy += cur_e - cur_b;
        let begin = v[0].0;
        Some(GpuTime {
            busy_ns: busy,
            span_ns: last_end - begin,
            begin_ns: begin,
            end_ns: last_end,
        })
    }

    /// Sorts and merges overlapping or touching intervals in place; exact.
    fn compact(&mut self) {
        let v = &mut self.buf[..self.len];
        v.sort_unstable();
        let mut w = 0;
        for r in 1..v.len() {
            if v[r].0 <= v[w].1 {
                v[w].1 = v[w].1.max(v[r].1);
            } else {
                w += 1;
                v[w] = v[r];
            }
        }
        self.len = w + 1;
    }

    /// Merges the neighbours (in sorted, disjoint order) with the smallest gap; needs
    /// `compact` first. Frees one slot at the cost of counting that gap as busy.
    fn merge_closest_pair(&mut self) {
        let v = &mut self.buf[..self.len];
        let (i, gap) = (0..v.len() - 1)
            .map(|i| (i, v[i + 1].0 - v[i].1))
            .min_by_key(|&(_, g)| g)
            .expect("called with a full buffer");
        v[i].1 = v[i + 1].1;
        v.copy_within(i + 2.., i + 1);
        self.len -= 1;
        self.merged_gap_ns += gap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time_of(intervals: &[(u64, u64)]) -> Option<GpuTime> {
        let mut s = IntervalSet::new();
        for &(b, e) in intervals {
            s.push(b, e);
        }
        s.compute()
    }

    #[test]
    fn empty_has_no_time() {
        assert_eq!(time_of(&[]), None);
    }

    #[test]
    fn single_interval() {
        let t = time_of(&[(100, 150)]).unwrap();
        assert_eq!((t.busy_ns, t.span_ns, t.begin_ns, t.end_ns), (50, 50, 100, 150));
    }

    #[test]
    fn disjoint_unsorted_intervals() {
        // Union = 10 + 20 + 5 = 35; span 0..100.
        let t = time_of(&[(70, 90), (0, 10), (95, 100)]).unwrap();
        assert_eq!((t.busy_ns, t.span_ns, t.begin_ns, t.end_ns), (35, 100, 0, 100));
    }

    #[test]
    fn overlapping_and_nested_intervals_on_several_queues() {
        // [0,50] u [20,60] u [30,40] u [100,110] u [105,120] = [0,60] + [100,120] = 60 + 20.
        let t = time_of(&[(30, 40), (100, 110), (0, 50), (105, 120), (20, 60)]).unwrap();
        assert_eq!((t.busy_ns, t.span_ns), (80, 120));
    }

    #[test]
    fn touching_intervals_and_an_early_long_one() {
        // [10,20] and [20,30] touch: busy 20. A long early interval ending last sets span end.
        assert_eq!(time_of(&[(20, 30), (10, 20)]).unwrap().busy_ns, 20);
        let t = time_of(&[(0, 1000), (10, 20), (500, 600)]).unwrap();
        assert_eq!((t.busy_ns, t.span_ns, t.end_ns), (1000, 1000, 1000));
    }

    #[test]
    fn inverted_interval_counts_as_empty() {
        let t = time_of(&[(100, 50), (0, 10)]).unwrap();
        assert_eq!((t.busy_ns, t.span_ns), (10, 100));
    }

    #[test]
    fn overflow_with_overlaps_stays_exact() {
        // 3 * MAX_INTERVALS intervals, each overlapping the next: one union [0, 3*MAX*10 + 15].
        let mut s = IntervalSet::new();
        let n = 3 * MAX_INTERVALS as u64;
        for i in 0..n {
            s.push(i * 10, i * 10 + 15);
        }
        let t = s.compute().unwrap();
        let expected_end = (n - 1) * 10 + 15;
        assert_eq!((t.busy_ns, t.span_ns), (expected_end, expected_end));
        assert_eq!(s.merged_gap_ns(), 0);
        assert!(s.len() <= MAX_INTERVALS);
    }

    #[test]
    fn overflow_of_disjoint_intervals_merges_the_smallest_gap() {
        // MAX_INTERVALS disjoint intervals of length 10 starting every 100 ns, except that the
        // 6th starts only 3 ns after the 5th ends: that gap is the one merged on overflow.
        let mut s = IntervalSet::new();
        let mut starts: Vec<u64> = (0..MAX_INTERVALS as u64).map(|i| i * 100).collect();
        starts[5] = starts[4] + 10 + 3;
        for &b in &starts {
            s.push(b, b + 10);
        }
        let last = starts[MAX_INTERVALS - 1];
        // One more disjoint interval overflows the buffer.
        s.push(last + 1000, last + 1010);
        let t = s.compute().unwrap();
        assert_eq!(s.merged_gap_ns(), 3);
        assert_eq!(t.busy_ns, (MAX_INTERVALS as u64 + 1) * 10 + 3);
        assert_eq!(t.span_ns, last + 1010);
        assert_eq!(s.len(), MAX_INTERVALS);
    }

    #[test]
    fn clear_allows_reuse() {
        let mut s = IntervalSet::new();
        s.push(0, 10);
        s.clear();
        s.push(5, 7);
        assert_eq!(s.compute().unwrap().busy_ns, 2);
    }
}
