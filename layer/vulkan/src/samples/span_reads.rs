//! One poll's reads of the sample query pools: the blocks pinned by the submissions that
//! retire in the poll, read with one `vkGetQueryPoolResults` per pool over their span instead
//! of one call per block. The calls are what cost: lavapipe waits for its queue to go idle in
//! every call (docs/performance.md measured about 2 context switches and 40 µs of CPU per call
//! on the 2-core CI machine), and on other drivers each call is at least a driver round trip.

use super::blocks::{Block, BLOCK};
use crate::dispatch::device::Device;
use crate::dispatch::vk_calls::Shared;
use ash::vk;

/// Spans wider than this many blocks are read block by block (a sparse span would read and
/// copy mostly unused queries).
const MAX_SPAN_BLOCKS: u32 = 16;

/// The queries `[first, first + count)` of one pool, read this poll: `width` u64 per query,
/// the values then the availability.
pub struct Span {
    width: usize,
    pool: Option<Shared<vk::QueryPool>>,
    first: u32,
    count: u32,
    values: Vec<u64>,
    /// The blocks the retiring submissions pin, as a range of first queries, gathered before
    /// the read.
    lo: u32,
    hi: u32,
}

impl Span {
    fn new(width: usize) -> Span {
        Span {
            width,
            pool: None,
            first: 0,
            count: 0,
            // Room for the widest span read in one call, so a wider span than before (the
            // blocks pinned depend on how far the GPU lags) never allocates in steady state.
            values: Vec::with_capacity((MAX_SPAN_BLOCKS * BLOCK) as usize * width),
            lo: u32::MAX,
            hi: 0,
        }
    }

    /// Adds a block to the span to read.
    pub fn include(&mut self, b: &Block) {
        self.pool = Some(b.pool);
        self.lo = self.lo.min(b.first);
        self.hi = self.hi.max(b.first + BLOCK);
    }

    /// Reads the gathered span in one call, unless it is empty or too wide.
    fn read(&mut self, d: &Device) {
        self.count = 0;
        let Some(pool) = self.pool else { return };
        if self.lo >= self.hi || self.hi - self.lo > MAX_SPAN_BLOCKS * BLOCK {
            return;
        }
        let count = self.hi - self.lo;
        // Zeroed, within the capacity reserved at creation (no allocation): a driver may leave
        // a not-ready query's availability word as it was (lavapipe 22.3 writes a not-ready
        // pipeline statistics query's 0 after its first value, not after its last), and
        // the last poll's values must not read as this one's.
        self.values.clear();
        self.values.resize(count as usize * self.width, 0);
        // No WAIT: unavailable queries report availability 0.
        let r = d.query_results(pool, self.lo, count, &mut self.values);
        if r == vk::Result::SUCCESS || r == vk::Result::NOT_READY {
            self.first = self.lo;
            self.count = count;
        }
    }

    /// Copies block `b` from this poll's read into `out`; `false` when it was not read.
    pub fn copy_block(&self, b: &Block, out: &mut [u64]) -> bool {
        if Some(b.pool) != self.pool || b.first < self.first || b.first + BLOCK > self.first + self.count {
            return false;
        }
        let start = (b.first - self.first) as usize * self.width;
        out.copy_from_slice(&self.values[start..start + out.len()]);
        true
    }
}

/// The timestamp and statistics spans of one poll.
pub struct SpanReads {
    pub ts: Span,
    pub stats: Span,
}

impl Default for SpanReads {
    fn default() -> Self {
        SpanReads {
            ts: Span::new(2),
            stats: Span::new(super::blocks::STATS_COUNT + 1),
        }
    }
}

impl SpanReads {
    /// Starts gathering a new poll's spans (what the last poll read is forgotten).
    pub fn begin(&mut self) {
        for s in [&mut self.ts, &mut self.stats] {
            s.count = 0;
            s.lo = u32::MAX;
            s.hi = 0;
        }
    }

    /// Reads both gathered spans.
    pub fn read(&mut self, d: &Device) {
        self.ts.read(d);
        self.stats.read(d);
    }
}
