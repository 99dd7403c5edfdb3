//! GPU time per submission without stalls: a ring of pre-recorded timestamp command buffers
//! per queue. The begin buffer resets its query pair and writes a top-of-pipe timestamp; the
//! end buffer writes a bottom-of-pipe one, which completes only after all earlier work of the
//! queue. Both are recorded once with SIMULTANEOUS_USE and spliced around the app's command
//! buffers at submit, so reused app command buffers need nothing special. Results are polled
//! with availability, never waited for: one call for the ring and one per sample pool per
//! poll, however many submissions retire in it (a call costs more than the values it reads).

use crate::dispatch::device::Device;
use crate::dispatch::vk_calls::{CommandPool, PoolBuffer, QueryPool};
use crate::samples::resolve::{Capacities, Pending};
use crate::samples::span_reads::SpanReads;
use ash::vk;
use std::collections::VecDeque;

/// The ring starts with `INITIAL` slots: a slot retires only when its samples are readable,
/// up to `MAX_SAMPLE_WAITS` polls (presents) after its end timestamp, so an app with S
/// submissions per frame and F frames in flight keeps up to about S * (F + 1 +
/// MAX_SAMPLE_WAITS) in flight: 22 for the resubmitting test app (2 per frame, 2 in flight),
/// past the 16 the ring once started with, so it grew, and allocated, in steady state (1 of 4
/// CI runs). Beyond `INITIAL`, slots are added in chunks only when the GPU falls further
/// behind; `MAX_SLOTS` bounds memory if results never come.
const INITIAL: u32 = 64;
const CHUNK: u32 = 16;
const MAX_SLOTS: u32 = 512;
/// Polls (at submits and presents) a retired submission may wait for its sample queries'
/// availability. Well under the frame assembler's `timeout_frames` (32): a query a driver never
/// makes available (lavapipe's extra multiview slots did) must cost its samples' values, not
/// every frame's GPU time.
const MAX_SAMPLE_WAITS: u32 = 8;

struct Slot {
    begin: vk::CommandBuffer,
    end: vk::CommandBuffer,
    /// Frame the submission belongs to while in flight.
    frame: u64,
    /// End timestamp read last time: a result not newer than it is stale (the GPU has not yet
    /// executed this use's reset).
    last_end: u64,
    /// The submission's samples, read when it retires.
    samples: Pending,
    /// Polls that found the end timestamp but not yet every sample query available.
    waits: u32,
}

/// A retired submission: which frame it belonged to and its `[begin, end]` in ns.
#[derive(Clone, Copy, Debug)]
pub struct Retired {
    pub frame: u64,
    pub interval: Option<(u64, u64)>,
}

pub struct QueueTiming {
    pool: CommandPool,
    queries: QueryPool,
    slots: Vec<Slot>,
    free: Vec<u32>,
    in_flight: VecDeque<u32>,
    valid_bits: u32,
    period_ns: f64,
    /// The last poll's read of the ring's queries, (value, availability) per query, from
    /// `ring_first`.
    ring_values: Vec<[u64; 2]>,
    ring_first: u32,
    spans: SpanReads,
    /// The largest sample-buffer capacities any slot's use needed: every slot is given them
    /// as soon as one needs more (in the warm-up), so a slot first used at a later, deeper lag
    /// of the GPU does not grow its buffers then.
    caps: Capacities,
}

impl QueueTiming {
    /// `None` when the queue family cannot write timestamps or setup fails (logged once).
    pub fn new(d: &Device, family: u32) -> Result<Option<QueueTiming>, vk::Result> {
        let Some(props) = d.queue_families.get(family as usize) else {
            return Ok(None);
        };
        if props.timestamp_valid_bits == 0 {
            return Ok(None);
        }
        let pool = d.create_command_pool(family)?;
        let query_ci = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(2 * MAX_SLOTS);
        // On failure the command pool, still empty, drops with the error.
        let queries = d.create_query_pool(&query_ci)?;
        Ok(Some(QueueTiming {
            pool,
            queries,
            slots: Vec::with_capacity(MAX_SLOTS as usize),
            free: Vec::with_capacity(MAX_SLOTS as usize),
            in_flight: VecDeque::with_capacity(MAX_SLOTS as usize),
            valid_bits: props.timestamp_valid_bits,
            period_ns: f64::from(d.properties.limits.timestamp_period),
            ring_values: Vec::with_capacity(2 * MAX_SLOTS as usize),
            ring_first: 0,
            spans: SpanReads::default(),
            caps: [0; 12],
        }))
    }

    /// A free slot for a submission of `frame`: its (begin, end) command buffers and its
    /// (empty) pending samples to fill.
    pub fn acquire(&mut self, d: &Device, frame: u64) -> Option<(vk::CommandBuffer, vk::CommandBuffer, &mut Pending)> {
        if self.free.is_empty() && !self.grow(d) {
            return None;
        }
        let i = self.free.pop()?;
        let s = &mut self.slots[i as usize];
        s.frame = frame;
        s.waits = 0;
        s.samples.clear();
        self.in_flight.push_back(i);
        Some((s.begin, s.end, &mut s.samples))
    }

    /// The pending samples of the slot taken last.
    pub fn last_pending(&mut self) -> Option<&mut Pending> {
        let i = *self.in_flight.back()?;
        Some(&mut self.slots[i as usize].samples)
    }

    /// Submissions not yet seen retired.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Gives back the slot taken last, after the submission that would use it failed.
    pub fn cancel_last(&mut self) {
        if let Some(i) = self.in_flight.pop_back() {
            self.slots[i as usize].samples.clear();
            self.free.push(i);
        }
    }

    fn grow(&mut self, d: &Device) -> bool {
        let have = self.slots.len() as u32;
        if have >= MAX_SLOTS {
            return false;
        }
        let n = if have == 0 { INITIAL } else { CHUNK }.min(MAX_SLOTS - have);
        // The ring grows when the GPU falls further behind than before. New slots get the room
        // the old ones' sample buffers grew to, so the growth allocates once, here, instead
        // of again at each new slot's first use.
        let caps = self.caps;
        // The pool is only used under our queue lock.
        let Ok(cbs) = d.allocate_command_buffers(&self.pool, 2 * n) else {
            return false;
        };
        for (k, pair) in cbs.chunks_exact(2).enumerate() {
            let index = have + k as u32;
            let q = 2 * index;
            if self
                .record(d, pair[0], Some(q), q, vk::PipelineStageFlags::TOP_OF_PIPE)
                .is_err()
                || self
                    .record(d, pair[1], None, q + 1, vk::PipelineStageFlags::BOTTOM_OF_PIPE)
                    .is_err()
            {
                return false;
            }
            self.slots.push(Slot {
                begin: pair[0].handle(),
                end: pair[1].handle(),
                frame: 0,
                last_end: 0,
                samples: Pending::with_capacities(caps),
                waits: 0,
            });
            self.free.push(index);
        }
        true
    }

    fn record(
        &self,
        d: &Device,
        cb: PoolBuffer,
        reset_from: Option<u32>,
        query: u32,
        stage: vk::PipelineStageFlags,
    ) -> Result<(), vk::Result> {
        // Freshly allocated, recorded once, and never ended twice.
        let rec = d.begin(cb, vk::CommandBufferUsageFlags::SIMULTANEOUS_USE)?;
        if let Some(first) = reset_from {
            rec.cmd_reset_query_pool(self.queries.share(), first, 2);
        }
        rec.cmd_write_timestamp(stage, self.queries.share(), query);
        rec.end()
    }

    /// Reads, in submission order, every in-flight slot whose end timestamp is available, and
    /// hands each retirement to `out`. Never waits. One call reads the queries of every
    /// in-flight slot, one per sample pool the blocks of those that finished.
    pub fn poll(&mut self, d: &Device, mut out: impl FnMut(Retired, &mut Pending)) {
        let (Some(lo), Some(hi)) = (self.in_flight.iter().min(), self.in_flight.iter().max()) else {
            return;
        };
        let (first, count) = (2 * lo, 2 * (hi - lo + 1));
        self.ring_values.clear();
        self.ring_values.resize(count as usize, [0; 2]);
        // Without WAIT: what is not yet available stays for a later poll.
        let r = d.query_results(self.queries.share(), first, count, self.ring_values.as_flattened_mut());
        if !(r == vk::Result::SUCCESS || r == vk::Result::NOT_READY) {
            return;
        }
        self.ring_first = first;
        // The sample blocks of the submissions that finished, read together.
        self.spans.begin();
        for &i in &self.in_flight {
            if self.finished(i).is_none() {
                break;
            }
            self.slots[i as usize].samples.include_in(&mut self.spans);
        }
        self.spans.read(d);
        let mut grown = false;
        while let Some(&i) = self.in_flight.front() {
            let Some((begin, end)) = self.finished(i) else { break };
            let period = self.period_ns;
            let wrap = 1u64 << self.valid_bits.min(63);
            let slot = &mut self.slots[i as usize];
            // Sample queries may become available after our end timestamp; wait for them a
            // bounded number of polls (then their samples report no values).
            if !slot.samples.ready(d, &self.spans) && slot.waits < MAX_SAMPLE_WAITS {
                slot.waits += 1;
                break;
            }
            slot.last_end = end;
            let end_unwrapped = if end < begin { end + wrap } else { end };
            let to_ns = |t: u64| (t as f64 * period) as u64;
            out(
                Retired {
                    frame: slot.frame,
                    interval: Some((to_ns(begin), to_ns(end_unwrapped))),
                },
                &mut slot.samples,
            );
            for (c, now) in self.caps.iter_mut().zip(slot.samples.capacities()) {
                grown |= now > *c;
                *c = (*c).max(now);
            }
            self.in_flight.pop_front();
            self.free.push(i);
        }
        if grown {
            let caps = self.caps;
            for s in &mut self.slots {
                s.samples.reserve_to(caps);
            }
        }
    }

    /// Slot `i`'s (begin, end) timestamps from the last read, when both are available and the
    /// end is not the one read at its previous use (the GPU has not yet run this use's reset).
    fn finished(&self, i: u32) -> Option<(u64, u64)> {
        let k = (2 * i).checked_sub(self.ring_first)? as usize;
        let [[begin, begin_ok], [end, end_ok]] = [*self.ring_values.get(k)?, *self.ring_values.get(k + 1)?];
        if begin_ok == 0 || end_ok == 0 {
            return None;
        }
        let (begin, end) = (self.mask(begin), self.mask(end));
        (end != self.slots[i as usize].last_end).then_some((begin, end))
    }

    fn mask(&self, t: u64) -> u64 {
        if self.valid_bits >= 64 {
            t
        } else {
            t & ((1u64 << self.valid_bits) - 1)
        }
    }

    /// Frees the Vulkan objects, the command pool (with its command buffers) first; at device
    /// destruction, where the app's vkDeviceWaitIdle contract leaves nothing of ours pending.
    pub fn destroy(self) {
        let QueueTiming { pool, queries, .. } = self;
        drop(pool);
        drop(queries);
    }
}
