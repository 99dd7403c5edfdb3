//! From recorded events to samples. At submit, each command buffer's events (secondaries in
//! place) are walked in queue order with the queue's label stack, into pending samples that
//! name their query slots in blocks the submission pins. When the submission retires, its
//! blocks are read (one call per pool for all submissions retiring in a poll, see
//! `span_reads`) and finished samples go to the dump.

use super::blocks::{Block, BLOCK, STATS_COUNT};
use super::driver_counters::PerfLayout;
use super::recording::{Event, Recording, SharedRecording, SlotRef};
use super::span_reads::SpanReads;
use super::SampleState;
use crate::dispatch::device::Device;
use ash::vk;
use framescope_core::driver_values::{DriverValues, MAX_GROUP};
use framescope_core::sample::{DrawParams, LabelPath, PipelineStats, SampleRecord, Scope, MAX_LABEL_DEPTH};
use std::sync::Arc;

/// Open labels kept per queue; deeper nesting is not sampled.
pub const MAX_OPEN_LABELS: usize = 16;

/// A query slot of a pinned block: (pin index, query index in the block).
type Pin = (u16, u8);

/// A statistics query of a pinned block: its pin, first query, and the slots it spans (one
/// per view in a multiview subpass; the statistics are their sum).
#[derive(Clone, Copy)]
struct StatsSlot {
    pin: u16,
    q: u8,
    views: u8,
}

/// A sample's statistics: `count` queries from `start` in `Pending::stats_slots`, summed (a
/// pass with several subpasses has one query per subpass).
#[derive(Clone, Copy)]
struct StatsRange {
    start: u32,
    count: u16,
}

/// A driver-counter query of a pinned block, the group it counts and whether its recording
/// was begun in an earlier frame than the submission's.
#[derive(Clone, Copy)]
struct PerfSlot {
    pin: u16,
    q: u8,
    group: u8,
    reused: bool,
}

#[derive(Clone, Copy)]
pub struct PendingSample {
    scope: Scope,
    label: LabelPath,
    cmdbuf: u32,
    draw: Option<u32>,
    begin: Option<Pin>,
    end: Option<Pin>,
    stats: Option<StatsRange>,
    params: Option<DrawParams>,
    perf: Option<PerfSlot>,
    /// Recordings whose slots this sample reads (index into `Pending::recs`).
    recs: [u16; 2],
}

/// An open label of a queue: it may end in a later command buffer or submission.
pub struct OpenLabel {
    name: u32,
    begin: Option<(Arc<Block>, u8)>,
    rec: Option<(SharedRecording, u64, u64)>,
}

/// The samples of one submission, kept with its timing slot until it retires.
#[derive(Default)]
pub struct Pending {
    /// Blocks reset at the start of the submission (those of its command buffers).
    pub resets: Vec<Arc<Block>>,
    /// Every block the samples read: `resets` plus label begins from earlier submissions.
    ts_pins: Vec<Arc<Block>>,
    stats_pins: Vec<Arc<Block>>,
    perf_pins: Vec<Arc<Block>>,
    /// The device's driver-counter groups (what reading their queries needs) and the
    /// rotation's frame at submit.
    perf: Option<(Arc<[PerfLayout]>, u64)>,
    /// `MAX_GROUP` values per sample with a driver-counter query, in `samples` order.
    perf_values: Vec<f64>,
    samples: Vec<PendingSample>,
    stats_slots: Vec<StatsSlot>,
    /// (command buffer, generation, submit serial) of each recording read.
    recs: Vec<(SharedRecording, u64, u64)>,
    /// Per `recs` entry: submitted while an earlier use of the same slots was still unread, so
    /// two executions shared the slots and neither result can be trusted.
    overlapped: Vec<bool>,
    ts_values: Vec<u64>,
    stats_values: Vec<u64>,
    overwritten: Vec<bool>,
}

fn pin(pins: &mut Vec<Arc<Block>>, b: &Arc<Block>) -> u16 {
    match pins.iter().position(|p| Arc::ptr_eq(p, b)) {
        Some(i) => i as u16,
        None => {
            pins.push(Arc::clone(b));
            (pins.len() - 1) as u16
        }
    }
}

/// The capacities of a [`Pending`]'s buffers, to give new ones the room old ones grew to.
pub type Capacities = [usize; 12];

/// The label path of the labels open now (at most `MAX_LABEL_DEPTH` deep).
fn label_path(labels: &[OpenLabel]) -> LabelPath {
    let mut p = LabelPath::default();
    for l in labels.iter().take(MAX_LABEL_DEPTH) {
        p.push(l.name);
    }
    p
}

impl Pending {
    pub fn capacities(&self) -> Capacities {
        [
            self.resets.capacity(),
            self.ts_pins.capacity(),
            self.stats_pins.capacity(),
            self.samples.capacity(),
            self.stats_slots.capacity(),
            self.recs.capacity(),
            self.overlapped.capacity(),
            self.ts_values.capacity(),
            self.stats_values.capacity(),
            self.overwritten.capacity(),
            self.perf_pins.capacity(),
            self.perf_values.capacity(),
        ]
    }

    /// Grows the buffers to at least `c`'s capacities (their contents stay).
    pub fn reserve_to(&mut self, c: Capacities) {
        fn to<T>(v: &mut Vec<T>, cap: usize) {
            v.reserve(cap.saturating_sub(v.len()));
        }
        to(&mut self.resets, c[0]);
        to(&mut self.ts_pins, c[1]);
        to(&mut self.stats_pins, c[2]);
        to(&mut self.samples, c[3]);
        to(&mut self.stats_slots, c[4]);
        to(&mut self.recs, c[5]);
        to(&mut self.overlapped, c[6]);
        to(&mut self.ts_values, c[7]);
        to(&mut self.stats_values, c[8]);
        to(&mut self.overwritten, c[9]);
        to(&mut self.perf_pins, c[10]);
        to(&mut self.perf_values, c[11]);
    }

    /// Empty buffers with at least `c`'s capacities.
    pub fn with_capacities(c: Capacities) -> Pending {
        Pending {
            resets: Vec::with_capacity(c[0]),
            ts_pins: Vec::with_capacity(c[1]),
            stats_pins: Vec::with_capacity(c[2]),
            samples: Vec::with_capacity(c[3]),
            stats_slots: Vec::with_capacity(c[4]),
            recs: Vec::with_capacity(c[5]),
            overlapped: Vec::with_capacity(c[6]),
            ts_values: Vec::with_capacity(c[7]),
            stats_values: Vec::with_capacity(c[8]),
            overwritten: Vec::with_capacity(c[9]),
            perf_pins: Vec::with_capacity(c[10]),
            perf: None,
            perf_values: Vec::with_capacity(c[11]),
        }
    }

    pub fn clear(&mut self) {
        self.resets.clear();
        self.ts_pins.clear();
        self.stats_pins.clear();
        self.perf_pins.clear();
        self.perf = None;
        self.samples.clear();
        self.stats_slots.clear();
        self.recs.clear();
        self.overlapped.clear();
    }

    fn push_rec(&mut self, state: &SharedRecording, rec: &mut Recording) -> u16 {
        self.overlapped.push(rec.submits > rec.read);
        rec.submits += 1;
        self.recs.push((Arc::clone(state), rec.generation, rec.submits));
        (self.recs.len() - 1) as u16
    }

    /// Resolves one submitted command buffer (index `cmdbuf` in its frame) into samples, with
    /// the queue's open labels and the device's driver-counter groups with the rotation's
    /// frame. The recording's submit serial is bumped here.
    pub fn add_command_buffer(
        &mut self,
        state: &SharedRecording,
        cmdbuf: u32,
        labels: &mut Vec<OpenLabel>,
        perf: Option<(&Arc<[PerfLayout]>, u64)>,
    ) {
        if let (None, Some((layouts, frame))) = (&self.perf, perf) {
            self.perf = Some((Arc::clone(layouts), frame));
        }
        let mut rec = state.lock();
        let r = self.push_rec(state, &mut rec);
        self.walk(&rec, r, cmdbuf, labels, 0);
    }

    fn walk(&mut self, rec: &Recording, r: u16, cmdbuf: u32, labels: &mut Vec<OpenLabel>, depth: u32) {
        let Some((ts_base, st_base, perf_base)) = self.pin_blocks(rec) else {
            return;
        };
        let reused = match (&self.perf, rec.perf) {
            (Some((_, now)), Some((_, begun))) => begun != *now,
            _ => false,
        };
        let ts = |_: &mut Self, x: SlotRef| -> Pin { (ts_base + x.block, x.index) };
        let st = |x: SlotRef| StatsSlot {
            pin: st_base + x.block,
            q: x.index,
            views: x.views,
        };
        let mut open_cb: Option<Pin> = None;
        let mut open_pass: Option<Pin> = None;
        // Where the statistics parts of the pass being walked start in `stats_slots`.
        let mut pass_parts: Option<usize> = None;
        let base = PendingSample {
            scope: Scope::CmdBuf,
            label: LabelPath::default(),
            cmdbuf,
            draw: None,
            begin: None,
            end: None,
            stats: None,
            params: None,
            perf: None,
            recs: [r, r],
        };
        for e in &rec.events {
            match e {
                Event::CmdBufBegin(x) => open_cb = Some(ts(self, *x)),
                Event::CmdBufEnd(x) => {
                    let end = Some(ts(self, *x));
                    self.samples.push(PendingSample {
                        label: label_path(labels),
                        begin: open_cb,
                        end,
                        ..base
                    });
                }
                Event::PassBegin(x) => open_pass = Some(ts(self, *x)),
                Event::PassStatsPart(x) => {
                    pass_parts.get_or_insert(self.stats_slots.len());
                    self.stats_slots.push(st(*x));
                }
                Event::PassEnd { ts: x, stats } => {
                    let end = Some(ts(self, *x));
                    let start = pass_parts.take().unwrap_or(self.stats_slots.len());
                    let stats = self.pass_stats(start, stats.map(st));
                    self.samples.push(PendingSample {
                        scope: Scope::RenderPass,
                        label: label_path(labels),
                        begin: open_pass.take(),
                        end,
                        stats,
                        ..base
                    });
                }
                Event::LabelBegin { ts: x, name } => {
                    if labels.len() < MAX_OPEN_LABELS {
                        let begin = x.map(|x| (Arc::clone(&rec.ts_blocks[x.block as usize]), x.index));
                        labels.push(OpenLabel {
                            name: *name,
                            begin,
                            rec: Some(self.recs[r as usize].clone()),
                        });
                    }
                }
                Event::LabelEnd { ts: x } => {
                    let end = x.map(|x| ts(self, x));
                    self.label_end(rec.quiet, end, labels, base);
                }
                Event::Draw {
                    begin,
                    end,
                    stats,
                    params,
                    index,
                } => {
                    let (b, e) = (ts(self, *begin), ts(self, *end));
                    let stats = stats.map(|s| {
                        self.stats_slots.push(st(s));
                        StatsRange {
                            start: (self.stats_slots.len() - 1) as u32,
                            count: 1,
                        }
                    });
                    let s = PendingSample {
                        scope: Scope::Draw,
                        label: label_path(labels),
                        draw: Some(*index),
                        begin: Some(b),
                        end: Some(e),
                        stats,
                        params: Some(*params),
                        ..base
                    };
                    self.samples.push(s);
                }
                Event::Execute(sec) if depth < 4 => {
                    let mut srec = sec.lock();
                    let sr = self.push_rec(sec, &mut srec);
                    self.walk(&srec, sr, cmdbuf, labels, depth + 1);
                }
                Event::Execute(_) => {}
                Event::Perf { slot, group } => self.perf_query(r, perf_base + slot.block, slot.index, *group, reused),
            }
        }
    }

    /// Pins a recording's query blocks, once each and in order, so a slot maps to its pin in
    /// O(1); the bases of its timestamp, statistics and performance pins (`None`: the pins
    /// are full and the recording is not walked).
    fn pin_blocks(&mut self, rec: &Recording) -> Option<(u16, u16, u16)> {
        if self.ts_pins.len() + rec.ts_blocks.len() > u16::MAX as usize
            || self.stats_pins.len() + rec.stats_blocks.len() > u16::MAX as usize
            || self.perf_pins.len() + rec.perf_blocks.len() > u16::MAX as usize
        {
            return None;
        }
        let bases = (
            self.ts_pins.len() as u16,
            self.stats_pins.len() as u16,
            self.perf_pins.len() as u16,
        );
        self.ts_pins.extend(rec.ts_blocks.iter().cloned());
        self.stats_pins.extend(rec.stats_blocks.iter().cloned());
        self.perf_pins.extend(rec.perf_blocks.iter().cloned());
        self.resets.extend(
            rec.ts_blocks
                .iter()
                .chain(&rec.stats_blocks)
                .chain(&rec.perf_blocks)
                .cloned(),
        );
        Some(bases)
    }

    /// The statistics of a render pass whose parts start at `start` in `stats_slots`: with its
    /// last part, all of them; without (no statistics this pass), none.
    fn pass_stats(&mut self, start: usize, last: Option<StatsSlot>) -> Option<StatsRange> {
        match last {
            Some(last) => {
                self.stats_slots.push(last);
                Some(StatsRange {
                    start: start as u32,
                    count: (self.stats_slots.len() - start) as u16,
                })
            }
            None => {
                self.stats_slots.truncate(start);
                None
            }
        }
    }

    /// A debug label closes (at `end`): its sample, from where it opened (perhaps in an earlier
    /// recording) to here. `quiet`: the recording is a baseline one.
    fn label_end(&mut self, quiet: bool, end: Option<Pin>, labels: &mut Vec<OpenLabel>, base: PendingSample) {
        let label = label_path(labels);
        let Some(open) = labels.pop() else { return };
        if quiet && end.is_none() && open.begin.is_none() {
            // A region wholly inside a baseline recording: not sampled, by design.
            return;
        }
        let begin = open.begin.as_ref().map(|(b, i)| (pin(&mut self.ts_pins, b), *i));
        let r = base.recs[1];
        let begin_rec = match open.rec {
            Some(rec_entry) => self.rec_index(rec_entry),
            None => r,
        };
        self.samples.push(PendingSample {
            scope: Scope::Label,
            label,
            begin,
            end,
            recs: [begin_rec, r],
            ..base
        });
    }

    /// A performance query around the sample its closing event just made (a command buffer or
    /// a render pass of recording `r`).
    fn perf_query(&mut self, r: u16, pin: u16, q: u8, group: u8, reused: bool) {
        if let Some(s) = self
            .samples
            .last_mut()
            .filter(|s| s.recs[1] == r && s.perf.is_none() && matches!(s.scope, Scope::CmdBuf | Scope::RenderPass))
        {
            s.perf = Some(PerfSlot { pin, q, group, reused });
        }
    }

    fn rec_index(&mut self, entry: (SharedRecording, u64, u64)) -> u16 {
        match self
            .recs
            .iter()
            .position(|(s, g, n)| Arc::ptr_eq(s, &entry.0) && *g == entry.1 && *n == entry.2)
        {
            Some(i) => i as u16,
            None => {
                self.recs.push(entry);
                self.overlapped.push(false);
                (self.recs.len() - 1) as u16
            }
        }
    }

    /// The reset command buffers to put first in the submission, for queue family `family`.
    pub fn reset_buffers<'a>(
        &'a self,
        d: &'a Device,
        samples: Option<&'a SampleState>,
        family: u32,
    ) -> impl Iterator<Item = vk::CommandBuffer> + 'a {
        let pools = samples.map(|s| &s.reset_pools);
        self.resets.iter().filter_map(move |b| b.reset_cb(d, family, pools?))
    }

    /// Adds the blocks this submission's samples read to the poll's spans.
    pub fn include_in(&self, spans: &mut SpanReads) {
        if self.samples.is_empty() {
            return;
        }
        for b in &self.ts_pins {
            spans.ts.include(b);
        }
        for b in &self.stats_pins {
            spans.stats.include(b);
        }
    }

    /// Takes the submission's blocks from the poll's spans (reading a block itself only when
    /// the span left it out) and tells whether every slot its samples use is available. The end timestamp of the submission being available does not
    /// order the availability of the other queries on every driver (seen on NVIDIA), so a
    /// submission retires only once this holds (or its wait runs out).
    pub fn ready(&mut self, d: &Device, spans: &SpanReads) -> bool {
        if self.samples.is_empty() {
            return true;
        }
        self.ts_values.clear();
        self.ts_values.resize(self.ts_pins.len() * BLOCK as usize * 2, 0);
        for (i, b) in self.ts_pins.iter().enumerate() {
            let out = &mut self.ts_values[i * BLOCK as usize * 2..(i + 1) * BLOCK as usize * 2];
            if !spans.ts.copy_block(b, out) {
                read_block(d, b, out, 2);
            }
        }
        self.stats_values.clear();
        self.stats_values
            .resize(self.stats_pins.len() * BLOCK as usize * (STATS_COUNT + 1), 0);
        for (i, b) in self.stats_pins.iter().enumerate() {
            let n = BLOCK as usize * (STATS_COUNT + 1);
            let out = &mut self.stats_values[i * n..(i + 1) * n];
            if !spans.stats.copy_block(b, out) {
                read_block(d, b, out, STATS_COUNT + 1);
            }
        }
        let mut perf_ok = true;
        self.perf_values.clear();
        if let Some((layouts, _)) = &self.perf {
            for s in &self.samples {
                let Some(p) = s.perf else { continue };
                let start = self.perf_values.len();
                self.perf_values.resize(start + MAX_GROUP, f64::NAN);
                let (Some(layout), Some(b)) = (
                    layouts.get(usize::from(p.group)),
                    self.perf_pins.get(usize::from(p.pin)),
                ) else {
                    continue;
                };
                let out = &mut self.perf_values[start..];
                perf_ok &= super::driver_counters::read(d, layout, b.pool, b.first + u32::from(p.q), out);
            }
        }
        let ts_ok = |p: Option<Pin>| {
            p.is_none_or(|(pin, q)| self.ts_values[(pin as usize * BLOCK as usize + q as usize) * 2 + 1] != 0)
        };
        perf_ok
            && self
                .samples
                .iter()
                .all(|s| ts_ok(s.begin) && ts_ok(s.end) && s.stats.is_none_or(|r| self.stats_sum(r).is_some()))
    }

    /// The statistics of `r` summed over its queries and their views; `None` until the first
    /// slot of every query is available. The other views' slots are added where available:
    /// the spec has the query write all of them at once, but lavapipe (Mesa 22.3) writes only
    /// the first, with every view's work in it, and never makes the others available.
    fn stats_sum(&self, r: StatsRange) -> Option<PipelineStats> {
        let w = STATS_COUNT + 1;
        let mut sum = [0u64; STATS_COUNT];
        let slots = &self.stats_slots[r.start as usize..r.start as usize + r.count as usize];
        for s in slots {
            for view in 0..usize::from(s.views) {
                let i = (s.pin as usize * BLOCK as usize + s.q as usize + view) * w;
                let v = &self.stats_values[i..i + w];
                if v[STATS_COUNT] == 0 {
                    if view == 0 {
                        return None;
                    }
                    continue;
                }
                for (acc, x) in sum.iter_mut().zip(v) {
                    *acc = acc.saturating_add(*x);
                }
            }
        }
        Some(PipelineStats::from_array(sum))
    }

    /// The submission retired: emits its samples from the values `ready` read, marks its
    /// recordings read.
    pub fn retire(&mut self, d: &Device, frame: u64, gpu_to_cpu: Option<i64>, mut out: impl FnMut(SampleRecord)) {
        if self.samples.is_empty() && self.recs.is_empty() {
            return;
        }
        let period = f64::from(d.properties.limits.timestamp_period);
        // A recording submitted again (same generation) since this submission had its slots
        // reset and rewritten: its numbers are gone.
        self.overwritten.clear();
        for ((s, g, n), overlapped) in self.recs.iter().zip(&self.overlapped) {
            let mut rec = s.lock();
            let over = rec.generation == *g && {
                rec.read = rec.read.max(*n);
                rec.submits != *n
            };
            self.overwritten.push(over || *overlapped);
        }
        let overwritten = &self.overwritten;
        let ts = |p: Option<Pin>, values: &[u64]| -> Option<u64> {
            let (pin, q) = p?;
            let i = (pin as usize * BLOCK as usize + q as usize) * 2;
            (values[i + 1] != 0).then(|| {
                let ns = (values[i] as f64 * period) as u64;
                match gpu_to_cpu {
                    Some(off) => ns.saturating_add_signed(off),
                    None => ns,
                }
            })
        };
        let mut perf_at = 0;
        for s in &self.samples {
            let over = s.recs.iter().any(|&r| overwritten[r as usize]);
            let stats = s.stats.and_then(|r| self.stats_sum(r));
            let driver = s.perf.map(|p| {
                let values = self.perf_values.get(perf_at..perf_at + MAX_GROUP).unwrap_or(&[]);
                perf_at += MAX_GROUP;
                let n = self
                    .perf
                    .as_ref()
                    .and_then(|(l, _)| l.get(usize::from(p.group)))
                    .map_or(0, |l| l.n);
                DriverValues::new(p.group, p.reused, &values[..n.min(values.len())])
            });
            out(SampleRecord {
                frame,
                scope: s.scope,
                label: s.label,
                cmdbuf: s.cmdbuf,
                draw: s.draw,
                gpu_begin_ns: if over { None } else { ts(s.begin, &self.ts_values) },
                gpu_end_ns: if over { None } else { ts(s.end, &self.ts_values) },
                stats: if over { None } else { stats },
                params: s.params,
                overwritten: over,
                driver,
            });
        }
        self.clear();
    }
}

/// Reads a whole block: `width` u64 per query (values then availability), without waiting.
fn read_block(d: &Device, b: &Block, out: &mut [u64], width: usize) {
    // Zeroed first: a driver may leave a not-ready query's availability word unwritten (see
    // `span_reads`).
    out.fill(0);
    // No WAIT: unavailable queries report availability 0.
    debug_assert_eq!(out.len(), BLOCK as usize * width);
    let _ = d.query_results(b.pool, b.first, BLOCK, out);
}
