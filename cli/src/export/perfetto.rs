//! The Perfetto trace: a `Trace` written one `TracePacket` at a time (a trace file is the
//! concatenation of `Trace.packet` fields), so frames stream out as they are read.
//!
//! CPU side, as track events (`TrackDescriptor`, by uuid): the app's process; under it a
//! frames track (one slice per frame, previous present to this present, `TYPE_SLICE_BEGIN`/
//! `TYPE_SLICE_END` pairs), a marks track with an instant event per `mark` record, and one
//! counter track per `system` counter. GPU side, in the trace format's own GPU packets, which
//! Perfetto files under the GPU and keys by GPU, hardware queue and counter id:
//! - every timed sample is a `GpuRenderStageEvent` (begin and duration; its stage is the
//!   sample's scope, its hardware queue one per command buffer index and overlap lane, since
//!   the events of one queue must nest; samples of different command buffers may overlap);
//!   queues, stages and the graphics context (pid, API) are interned (`InternedData`);
//! - `gpu_busy_ns` and every counter of a GPU source are `GpuCounterEvent`s, described once by
//!   a `GpuCounterDescriptor` (name, description, unit where Perfetto has one).
//!
//! All packets share one `trusted_packet_sequence_id`; the first one clears incremental state
//! and the packets that use interned ids say they need it. Timestamps are the dump's
//! `CLOCK_MONOTONIC` nanoseconds, declared as such by a clock snapshot and each packet's
//! `timestamp_clock_id`.
//!
//! Field numbers are those of Perfetto's published `perfetto_trace.proto`.

use super::protobuf::Msg;
use super::records::{Frame, Header, Mark, Sample, Series};
use super::sink::Sink;
use std::collections::HashMap;
use std::io::{self, Write};

mod field {
    pub const TRACE_PACKET: u32 = 1;

    pub const PACKET_CLOCK_SNAPSHOT: u32 = 6;
    pub const PACKET_TIMESTAMP: u32 = 8;
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    pub const PACKET_TRACK_EVENT: u32 = 11;
    pub const PACKET_INTERNED_DATA: u32 = 12;
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
    pub const PACKET_GPU_COUNTER_EVENT: u32 = 52;
    pub const PACKET_GPU_RENDER_STAGE_EVENT: u32 = 53;
    pub const PACKET_TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;

    pub const CLOCK_SNAPSHOT_CLOCKS: u32 = 1;
    pub const CLOCK_SNAPSHOT_PRIMARY: u32 = 2;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;

    pub const TRACK_UUID: u32 = 1;
    pub const TRACK_NAME: u32 = 2;
    pub const TRACK_PROCESS: u32 = 3;
    pub const TRACK_PARENT_UUID: u32 = 5;
    pub const TRACK_COUNTER: u32 = 8;

    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_NAME: u32 = 6;

    pub const COUNTER_UNIT_NAME: u32 = 6;

    pub const EVENT_TYPE: u32 = 9;
    pub const EVENT_TRACK_UUID: u32 = 11;
    pub const EVENT_NAME: u32 = 23;
    pub const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;

    pub const INTERNED_GRAPHICS_CONTEXTS: u32 = 23;
    pub const INTERNED_GPU_SPECIFICATIONS: u32 = 24;
    pub const CONTEXT_IID: u32 = 1;
    pub const CONTEXT_PID: u32 = 2;
    pub const CONTEXT_API: u32 = 3;
    pub const SPEC_IID: u32 = 1;
    pub const SPEC_NAME: u32 = 2;
    pub const SPEC_DESCRIPTION: u32 = 3;
    pub const SPEC_CATEGORY: u32 = 4;

    pub const STAGE_EVENT_ID: u32 = 1;
    pub const STAGE_DURATION: u32 = 2;
    pub const STAGE_CONTEXT: u32 = 5;
    pub const STAGE_EXTRA_DATA: u32 = 6;
    pub const STAGE_GPU_ID: u32 = 11;
    pub const STAGE_COMMAND_BUFFER_HANDLE: u32 = 12;
    pub const STAGE_HW_QUEUE_IID: u32 = 13;
    pub const STAGE_STAGE_IID: u32 = 14;
    pub const STAGE_NAME: u32 = 17;
    pub const EXTRA_NAME: u32 = 1;
    pub const EXTRA_VALUE: u32 = 2;

    pub const COUNTER_EVENT_DESCRIPTOR: u32 = 1;
    pub const COUNTER_EVENT_COUNTERS: u32 = 2;
    pub const COUNTER_EVENT_GPU_ID: u32 = 3;
    pub const DESCRIPTOR_SPECS: u32 = 1;
    pub const SPEC_COUNTER_ID: u32 = 1;
    pub const SPEC_COUNTER_NAME: u32 = 2;
    pub const SPEC_COUNTER_DESCRIPTION: u32 = 3;
    pub const SPEC_NUMERATOR_UNITS: u32 = 7;
    pub const COUNTER_ID: u32 = 1;
    pub const COUNTER_DOUBLE_VALUE: u32 = 3;
}

const SEQUENCE_ID: u64 = 1;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
const CLOCK_MONOTONIC: u64 = 3;
const CLOCK_BOOTTIME: u64 = 6;
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
const TYPE_COUNTER: u64 = 4;
/// `InternedGraphicsContext.Api`.
const API_OPEN_GL: u64 = 1;
const API_VULKAN: u64 = 2;
/// `InternedGpuRenderStageSpecification.RenderStageCategory`.
const CATEGORY_OTHER: u64 = 0;
const CATEGORY_GRAPHICS: u64 = 1;
/// `GpuCounterDescriptor.MeasureUnit` values framescope's units map to.
const UNITS: &[(&str, u64)] = &[
    ("ns", 19),
    ("us", 20),
    ("ms", 21),
    ("s", 22),
    ("Hz", 13),
    ("kHz", 14),
    ("MHz", 15),
    ("GHz", 16),
    ("mW", 28),
    ("W", 29),
    ("J", 31),
    ("V", 32),
    ("A", 33),
    ("C", 34),
    ("°C", 34),
    ("%", 37),
    ("B", 7),
    ("KiB", 8),
    ("MiB", 9),
    ("GiB", 10),
];

const PROCESS_UUID: u64 = 1;
const FRAMES_UUID: u64 = 2;
const MARKS_UUID: u64 = 5;
/// One slice per displayed frame, from reaching the screen to the next frame doing so.
const DISPLAY_UUID: u64 = 6;
/// Stutter frames over their CPU time, named by their causes.
const HITCHES_UUID: u64 = 7;
/// CPU counter tracks are `COUNTER_UUID_BASE + index in the catalogue`.
const COUNTER_UUID_BASE: u64 = 1 << 20;
/// The one graphics context (the app's device).
const CONTEXT_IID: u64 = 1;
/// Render stages, by sample scope; hardware queues are `QUEUE_IID_BASE + lane`.
const STAGES: &[(u64, &str, &str)] = &[
    (1, "cmdbuf", "command buffer"),
    (2, "renderpass", "render pass"),
    (3, "label", "debug-label region"),
    (4, "draw", "draw"),
    (5, "other", "other sample"),
];
const QUEUE_IID_BASE: u64 = 1 << 16;
/// GPU counter ids: `gpu_busy_ns` is 1, catalogue counters `2 + index` (none is 0, which
/// some readers take for "absent").
const GPU_BUSY_COUNTER_ID: u64 = 1;

/// Counters of the catalogue that get a track; a forged header may list millions.
const MAX_COUNTERS: usize = 256;
/// GPU counter ids of the raw samples of `pm` counters (`series` records):
/// `SERIES_ID_BASE + index in the catalogue`, after every catalogue counter's id.
const SERIES_ID_BASE: u64 = 2 + MAX_COUNTERS as u64;
/// The counter source whose `series` records become counter tracks of their own.
const SERIES_SOURCE: &str = "pm";
/// Hardware queues (command buffer index × overlap lane); a forged dump may name any index.
const MAX_GPU_TRACKS: usize = 1024;
/// Longest slice or track name written.
const MAX_NAME: usize = 1024;

/// One hardware queue of render stage events: the events open on it, innermost last.
struct Lane {
    iid: u64,
    open: Vec<u64>,
    /// End of the last top-level event: a later sample starting before it cannot go here.
    free_at: u64,
}

/// A catalogue counter with its place in the trace.
enum CounterPlace {
    /// A `system` counter: a track event counter track.
    Track(u64),
    /// A GPU counter: its `GpuCounterSpec.counter_id`.
    Gpu(u64),
}

pub struct Perfetto<W: Write> {
    out: W,
    first: bool,
    counters: Vec<(String, CounterPlace)>,
    /// `pm` counters by name: the GPU counter id of their raw samples.
    series_ids: HashMap<String, u64>,
    lanes: Vec<Lane>,
    /// Lanes of one command buffer index, in the order they were made.
    lanes_of: HashMap<u32, Vec<usize>>,
    next_event_id: u64,
    last_frame_end: Option<u64>,
    /// Where the display track's last slice ended (slices on a track must not overlap).
    last_display_end: u64,
    dropped_samples: u64,
    untimed_samples: u64,
    uncalibrated: bool,
}

fn clip(s: &str) -> &str {
    if s.len() <= MAX_NAME {
        return s;
    }
    let mut end = MAX_NAME;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A sample's slice name: `cmdbuf 0`, `pass @ Frame/Main`, `Frame/Main`, `draw 12`.
fn sample_name(s: &Sample) -> String {
    let label = clip(&s.label);
    match s.scope.as_deref() {
        Some("cmdbuf") => format!("cmdbuf {}", s.cmdbuf.unwrap_or(0)),
        Some("renderpass") if label.is_empty() => "pass".into(),
        Some("renderpass") => format!("pass @ {label}"),
        Some("label") => label.to_string(),
        Some("draw") => match s.draw {
            Some(d) => format!("draw {d}"),
            None => "draw".into(),
        },
        Some(other) => clip(other).to_string(),
        None => "sample".into(),
    }
}

/// The render stage iid of a sample's scope.
fn stage_iid(s: &Sample) -> u64 {
    let scope = s.scope.as_deref().unwrap_or("other");
    STAGES
        .iter()
        .find(|(_, name, _)| *name == scope)
        .map_or(STAGES[STAGES.len() - 1].0, |st| st.0)
}

/// Orders samples of one interval outermost first.
fn scope_rank(s: &Sample) -> u8 {
    match s.scope.as_deref() {
        Some("cmdbuf") => 0,
        Some("renderpass") => 1,
        Some("label") => 2,
        _ => 3,
    }
}

fn gpu_spec(iid: u64, name: &str, description: &str, category: u64) -> Msg {
    let mut m = Msg::new();
    m.uint(field::SPEC_IID, iid)
        .string(field::SPEC_NAME, clip(name))
        .string(field::SPEC_DESCRIPTION, description)
        .uint(field::SPEC_CATEGORY, category);
    m
}

fn counter_spec(id: u64, name: &str, description: &str, unit: &str) -> Msg {
    let mut m = Msg::new();
    m.uint(field::SPEC_COUNTER_ID, id)
        .string(field::SPEC_COUNTER_NAME, clip(name))
        .string(field::SPEC_COUNTER_DESCRIPTION, clip(description));
    if let Some(&(_, u)) = UNITS.iter().find(|(n, _)| *n == unit) {
        m.uint(field::SPEC_NUMERATOR_UNITS, u);
    }
    m
}

impl<W: Write> Perfetto<W> {
    pub fn new(out: W) -> Self {
        Perfetto {
            out,
            first: true,
            counters: Vec::new(),
            series_ids: HashMap::new(),
            lanes: Vec::new(),
            lanes_of: HashMap::new(),
            next_event_id: 1,
            last_frame_end: None,
            last_display_end: 0,
            dropped_samples: 0,
            untimed_samples: 0,
            uncalibrated: false,
        }
    }

    /// Writes `p` on the sequence with its `flags`; the first packet also clears the
    /// sequence's incremental state.
    fn packet(&mut self, mut p: Msg, mut flags: u64) -> io::Result<()> {
        p.uint(field::PACKET_SEQUENCE_ID, SEQUENCE_ID);
        if std::mem::take(&mut self.first) {
            flags |= SEQ_INCREMENTAL_STATE_CLEARED;
        }
        if flags != 0 {
            p.uint(field::PACKET_SEQUENCE_FLAGS, flags);
        }
        let mut t = Msg::new();
        t.message(field::TRACE_PACKET, &p);
        self.out.write_all(t.as_bytes())
    }

    /// A packet at `ts` on the dump's clock holding `body` as field `kind`.
    fn timed(&mut self, ts: u64, kind: u32, body: &Msg, interned_refs: bool) -> io::Result<()> {
        let mut p = Msg::new();
        p.uint(field::PACKET_TIMESTAMP, ts)
            .uint(field::PACKET_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC)
            .message(kind, body);
        self.packet(p, if interned_refs { SEQ_NEEDS_INCREMENTAL_STATE } else { 0 })
    }

    fn interned(&mut self, ts: u64, data: &Msg) -> io::Result<()> {
        self.timed(ts, field::PACKET_INTERNED_DATA, data, false)
    }

    fn track(&mut self, uuid: u64, parent: Option<u64>, name: &str, extra: impl FnOnce(&mut Msg)) -> io::Result<()> {
        let mut d = Msg::new();
        d.uint(field::TRACK_UUID, uuid);
        if let Some(p) = parent {
            d.uint(field::TRACK_PARENT_UUID, p);
        }
        d.string(field::TRACK_NAME, clip(name));
        extra(&mut d);
        let mut p = Msg::new();
        p.message(field::PACKET_TRACK_DESCRIPTOR, &d);
        self.packet(p, 0)
    }

    fn event(&mut self, ts: u64, track: u64, kind: u64, fill: impl FnOnce(&mut Msg)) -> io::Result<()> {
        let mut e = Msg::new();
        e.uint(field::EVENT_TYPE, kind).uint(field::EVENT_TRACK_UUID, track);
        fill(&mut e);
        self.timed(ts, field::PACKET_TRACK_EVENT, &e, false)
    }

    fn counter(&mut self, ts: u64, track: u64, v: f64) -> io::Result<()> {
        self.event(ts, track, TYPE_COUNTER, |e| {
            e.double(field::EVENT_DOUBLE_COUNTER_VALUE, v);
        })
    }

    /// Retires the events of lane `i` that end by `t`.
    fn close_until(&mut self, i: usize, t: u64) {
        let lane = &mut self.lanes[i];
        while let Some(&end) = lane.open.last() {
            if end > t {
                break;
            }
            lane.open.pop();
            if lane.open.is_empty() {
                lane.free_at = lane.free_at.max(end);
            }
        }
    }

    /// The lane (hardware queue) a sample of `cmdbuf` spanning `b..e` nests on, made when none
    /// fits; its interned description is written at `b`, before its first event.
    fn lane_for(&mut self, cmdbuf: u32, b: u64, e: u64) -> io::Result<Option<usize>> {
        let existing = self.lanes_of.get(&cmdbuf).cloned().unwrap_or_default();
        for &i in &existing {
            self.close_until(i, b);
            let l = &self.lanes[i];
            let fits = match l.open.last() {
                Some(&top) => e <= top,
                None => b >= l.free_at,
            };
            if fits {
                return Ok(Some(i));
            }
        }
        if self.lanes.len() >= MAX_GPU_TRACKS {
            return Ok(None);
        }
        let iid = QUEUE_IID_BASE + self.lanes.len() as u64;
        let name = match existing.len() {
            0 => format!("cmdbuf {cmdbuf}"),
            n => format!("cmdbuf {cmdbuf} (overlap {n})"),
        };
        let mut data = Msg::new();
        data.message(
            field::INTERNED_GPU_SPECIFICATIONS,
            &gpu_spec(
                iid,
                &name,
                "framescope samples of one command buffer index",
                CATEGORY_GRAPHICS,
            ),
        );
        self.interned(b, &data)?;
        self.lanes.push(Lane {
            iid,
            open: Vec::new(),
            free_at: 0,
        });
        let i = self.lanes.len() - 1;
        self.lanes_of.entry(cmdbuf).or_default().push(i);
        Ok(Some(i))
    }

    fn stage_event(&mut self, b: u64, e: u64, queue: u64, s: &Sample) -> io::Result<()> {
        let mut ev = Msg::new();
        ev.uint(field::STAGE_EVENT_ID, self.next_event_id)
            .uint(field::STAGE_DURATION, e - b)
            .uint(field::STAGE_HW_QUEUE_IID, queue)
            .uint(field::STAGE_STAGE_IID, stage_iid(s))
            .uint(field::STAGE_CONTEXT, CONTEXT_IID)
            .uint(field::STAGE_GPU_ID, 0)
            .string(field::STAGE_NAME, &sample_name(s));
        if let Some(c) = s.cmdbuf {
            ev.uint(field::STAGE_COMMAND_BUFFER_HANDLE, u64::from(c));
        }
        if !s.label.is_empty() {
            let mut x = Msg::new();
            x.string(field::EXTRA_NAME, "label")
                .string(field::EXTRA_VALUE, clip(&s.label));
            ev.message(field::STAGE_EXTRA_DATA, &x);
        }
        self.next_event_id += 1;
        self.timed(b, field::PACKET_GPU_RENDER_STAGE_EVENT, &ev, true)
    }

    fn gpu_samples(&mut self, f: &Frame) -> io::Result<()> {
        let mut timed: Vec<(u64, u64, &Sample)> = Vec::with_capacity(f.samples.len());
        for s in &f.samples {
            match (s.gpu_begin_ns, s.gpu_end_ns) {
                (Some(b), Some(e)) if b <= e => timed.push((b, e, s)),
                _ => self.untimed_samples += 1,
            }
        }
        // Outer events first: earlier begin, then later end, then the coarser scope.
        timed.sort_by(|a, b| {
            (a.0, std::cmp::Reverse(a.1), scope_rank(a.2)).cmp(&(b.0, std::cmp::Reverse(b.1), scope_rank(b.2)))
        });
        for (b, e, s) in timed {
            let cmdbuf = s.cmdbuf.unwrap_or(0);
            let Some(i) = self.lane_for(cmdbuf, b, e)? else {
                self.dropped_samples += 1;
                continue;
            };
            let iid = self.lanes[i].iid;
            self.stage_event(b, e, iid, s)?;
            self.lanes[i].open.push(e);
        }
        // A frame's samples are complete in its own record.
        for i in 0..self.lanes.len() {
            self.close_until(i, u64::MAX);
        }
        Ok(())
    }

    /// The frame on the display track: a slice while it was on screen (zero-length when the
    /// next displayed frame is not known), or an instant at its present when dropped.
    fn display(&mut self, f: &Frame) -> io::Result<()> {
        match (f.display.as_deref(), f.shown_ns) {
            (Some("displayed"), Some(shown)) => {
                let begin = shown.max(self.last_display_end);
                let end = shown.saturating_add(f.displayed_time_ns.unwrap_or(0)).max(begin);
                let name = match f.display_latency_ns {
                    Some(l) => format!("frame {} ({:.2} ms after its start)", f.frame, l as f64 / 1e6),
                    None => format!("frame {}", f.frame),
                };
                self.event(begin, DISPLAY_UUID, TYPE_SLICE_BEGIN, |e| {
                    e.string(field::EVENT_NAME, &name);
                })?;
                self.event(end, DISPLAY_UUID, TYPE_SLICE_END, |_| {})?;
                self.last_display_end = end;
                Ok(())
            }
            (Some("dropped"), _) => {
                let name = format!("frame {} dropped", f.frame);
                self.event(f.t_ns, DISPLAY_UUID, TYPE_INSTANT, |e| {
                    e.string(field::EVENT_NAME, &name);
                })
            }
            _ => Ok(()),
        }
    }

    /// One `GpuCounterEvent` with the frame's GPU counter values.
    fn gpu_counters(&mut self, f: &Frame) -> io::Result<()> {
        let mut ev = Msg::new();
        let mut any = false;
        let mut put = |ev: &mut Msg, id: u64, v: f64| {
            let mut c = Msg::new();
            c.uint(field::COUNTER_ID, id).double(field::COUNTER_DOUBLE_VALUE, v);
            ev.message(field::COUNTER_EVENT_COUNTERS, &c);
            any = true;
        };
        if let Some(g) = f.gpu_busy_ns {
            put(&mut ev, GPU_BUSY_COUNTER_ID, g as f64);
        }
        for (name, place) in &self.counters {
            if let (CounterPlace::Gpu(id), Some(v)) = (place, f.counter(name)) {
                put(&mut ev, *id, v);
            }
        }
        if !any {
            return Ok(());
        }
        ev.uint(field::COUNTER_EVENT_GPU_ID, 0);
        self.timed(f.t_ns, field::PACKET_GPU_COUNTER_EVENT, &ev, false)
    }
}

impl<W: Write> Sink for Perfetto<W> {
    fn header(&mut self, h: &Header) -> io::Result<()> {
        self.uncalibrated = h.calibrated_timestamps == Some(false);
        let pid = h.pid.unwrap_or(0);
        let app = h.app_name();
        self.track(PROCESS_UUID, None, &app, |d| {
            let mut p = Msg::new();
            p.uint(field::PROCESS_PID, pid).string(field::PROCESS_NAME, clip(&app));
            d.message(field::TRACK_PROCESS, &p);
        })?;
        // The snapshot ties the dump's clock to the trace's: without one a reader can only
        // guess how CLOCK_MONOTONIC maps to its default clock (BOOTTIME). Both are read at
        // the same instant here, so suspend time before the run is not accounted for.
        let t0 = h.start_ns.unwrap_or(0);
        let mut snap = Msg::new();
        for id in [CLOCK_MONOTONIC, CLOCK_BOOTTIME] {
            let mut c = Msg::new();
            c.uint(field::CLOCK_ID, id).uint(field::CLOCK_TIMESTAMP, t0);
            snap.message(field::CLOCK_SNAPSHOT_CLOCKS, &c);
        }
        snap.uint(field::CLOCK_SNAPSHOT_PRIMARY, CLOCK_MONOTONIC);
        self.timed(t0, field::PACKET_CLOCK_SNAPSHOT, &snap, false)?;
        self.track(
            FRAMES_UUID,
            Some(PROCESS_UUID),
            "frames (CPU, present to present)",
            |_| {},
        )?;
        self.track(MARKS_UUID, Some(PROCESS_UUID), "marks (framescope ctl)", |_| {})?;
        self.track(
            DISPLAY_UUID,
            Some(PROCESS_UUID),
            "display (frames on screen; dropped frames as instants)",
            |_| {},
        )?;
        self.track(
            HITCHES_UUID,
            Some(PROCESS_UUID),
            "hitches (stutter frames and their causes)",
            |_| {},
        )?;

        // The GPU side's interned names: the app's graphics context and the render stages.
        let mut data = Msg::new();
        let mut ctx = Msg::new();
        ctx.uint(field::CONTEXT_IID, CONTEXT_IID).uint(field::CONTEXT_PID, pid);
        match h.api.as_deref() {
            Some("vulkan") => ctx.uint(field::CONTEXT_API, API_VULKAN),
            Some("opengl") | Some("opengles") => ctx.uint(field::CONTEXT_API, API_OPEN_GL),
            _ => &mut ctx,
        };
        data.message(field::INTERNED_GRAPHICS_CONTEXTS, &ctx);
        for &(iid, name, description) in STAGES {
            let category = if name == "other" {
                CATEGORY_OTHER
            } else {
                CATEGORY_GRAPHICS
            };
            data.message(
                field::INTERNED_GPU_SPECIFICATIONS,
                &gpu_spec(iid, name, description, category),
            );
        }
        self.interned(t0, &data)?;

        // Counters: `system` ones on CPU counter tracks, the rest described once as GPU
        // counters (the descriptor rides on a value-less first GpuCounterEvent).
        let mut descriptor = Msg::new();
        descriptor.message(
            field::DESCRIPTOR_SPECS,
            &counter_spec(
                GPU_BUSY_COUNTER_ID,
                "gpu_busy_ns",
                "framescope: GPU busy time of the frame",
                "ns",
            ),
        );
        let mut places: Vec<(String, CounterPlace)> = Vec::new();
        for (k, c) in h.counters.iter().take(MAX_COUNTERS).enumerate() {
            if places.iter().any(|(n, _)| n == &c.name) {
                continue;
            }
            let place = if c.source == "system" {
                let uuid = COUNTER_UUID_BASE + k as u64;
                self.track(uuid, Some(PROCESS_UUID), &c.name, |d| {
                    let mut cd = Msg::new();
                    if !c.unit.is_empty() {
                        cd.string(field::COUNTER_UNIT_NAME, clip(&c.unit));
                    }
                    d.message(field::TRACK_COUNTER, &cd);
                })?;
                CounterPlace::Track(uuid)
            } else {
                let id = 2 + k as u64;
                let what = format!("{} ({})", clip(&c.source), clip(&c.unit));
                descriptor.message(field::DESCRIPTOR_SPECS, &counter_spec(id, &c.name, &what, &c.unit));
                if c.source == SERIES_SOURCE {
                    // Frames carry these over each frame's span; the samples themselves get a
                    // track of their own, at the sampler's resolution.
                    let sid = SERIES_ID_BASE + k as u64;
                    let name = format!("{} (samples)", clip(&c.name));
                    let what = format!("{}: raw samples ({})", clip(&c.source), clip(&c.unit));
                    descriptor.message(field::DESCRIPTOR_SPECS, &counter_spec(sid, &name, &what, &c.unit));
                    self.series_ids.insert(c.name.clone(), sid);
                }
                CounterPlace::Gpu(id)
            };
            places.push((c.name.clone(), place));
        }
        self.counters = places;
        let mut ev = Msg::new();
        ev.message(field::COUNTER_EVENT_DESCRIPTOR, &descriptor)
            .uint(field::COUNTER_EVENT_GPU_ID, 0);
        self.timed(t0, field::PACKET_GPU_COUNTER_EVENT, &ev, false)
    }

    fn frame(&mut self, f: &Frame) -> io::Result<()> {
        let end = f.t_ns;
        let start = match (f.cpu_frame_ns, self.last_frame_end) {
            (Some(ft), _) => end.saturating_sub(ft),
            (None, Some(prev)) => prev,
            // The first frame of a run has no start: a zero-length slice at its present.
            (None, None) => end,
        };
        // Slices on one track must not overlap: a frame presented from another thread may
        // carry a `t_ns` a little before the previous one's.
        let floor = self.last_frame_end.unwrap_or(0);
        let (start, end) = (start.max(floor).min(end.max(floor)), end.max(floor));
        let name = format!("frame {}", f.frame);
        self.event(start, FRAMES_UUID, TYPE_SLICE_BEGIN, |e| {
            e.string(field::EVENT_NAME, &name);
        })?;
        self.event(end, FRAMES_UUID, TYPE_SLICE_END, |_| {})?;
        self.last_frame_end = Some(end);
        if f.stutter {
            let causes: Vec<String> = f
                .stutter_causes
                .iter()
                .map(|c| format!("{} {:.1} ms", clip(&c.cause), c.ns as f64 / 1e6))
                .collect();
            let name = match causes.is_empty() {
                true => format!("stutter, frame {} (no known cause)", f.frame),
                false => format!("stutter, frame {}: {}", f.frame, causes.join(", ")),
            };
            self.event(start, HITCHES_UUID, TYPE_SLICE_BEGIN, |e| {
                e.string(field::EVENT_NAME, clip(&name));
            })?;
            self.event(end, HITCHES_UUID, TYPE_SLICE_END, |_| {})?;
        }
        self.display(f)?;
        self.gpu_counters(f)?;
        let counters = std::mem::take(&mut self.counters);
        let mut res = Ok(());
        for (name, place) in &counters {
            if let (CounterPlace::Track(uuid), Some(v)) = (place, f.counter(name)) {
                res = self.counter(f.t_ns, *uuid, v);
                if res.is_err() {
                    break;
                }
            }
        }
        self.counters = counters;
        res?;
        self.gpu_samples(f)
    }

    /// One `GpuCounterEvent` per raw sample, at its begin, with the `pm` counters it has.
    fn series(&mut self, x: &Series) -> io::Result<()> {
        if x.source != SERIES_SOURCE || self.series_ids.is_empty() {
            return Ok(());
        }
        for (i, &t) in x.begin_ns.iter().enumerate() {
            let mut ev = Msg::new();
            let mut any = false;
            for (name, values) in &x.values {
                let (Some(id), Some(Some(v))) = (self.series_ids.get(name), values.get(i)) else {
                    continue;
                };
                if !v.is_finite() {
                    continue;
                }
                let mut c = Msg::new();
                c.uint(field::COUNTER_ID, *id).double(field::COUNTER_DOUBLE_VALUE, *v);
                ev.message(field::COUNTER_EVENT_COUNTERS, &c);
                any = true;
            }
            if any {
                ev.uint(field::COUNTER_EVENT_GPU_ID, 0);
                self.timed(t, field::PACKET_GPU_COUNTER_EVENT, &ev, false)?;
            }
        }
        Ok(())
    }

    fn mark(&mut self, m: &Mark) -> io::Result<()> {
        let name = clip(&m.label).to_string();
        self.event(m.t_ns, MARKS_UUID, TYPE_INSTANT, |e| {
            e.string(field::EVENT_NAME, &name);
        })
    }

    fn finish(&mut self) -> io::Result<Vec<String>> {
        self.out.flush()?;
        let mut notes = Vec::new();
        if self.untimed_samples > 0 {
            notes.push(format!(
                "{} GPU sample(s) without both times were left out",
                self.untimed_samples
            ));
        }
        if self.dropped_samples > 0 {
            notes.push(format!(
                "{} GPU sample(s) were left out: more than {MAX_GPU_TRACKS} GPU hardware queues would be needed",
                self.dropped_samples
            ));
        }
        if self.uncalibrated {
            notes.push("the dump's GPU times are in the GPU's own clock (no calibrated timestamps), so GPU slices do not line up with frames".into());
        }
        Ok(notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(scope: &str, label: &str, cmdbuf: u32, b: u64, e: u64) -> Sample {
        Sample {
            scope: Some(scope.into()),
            label: label.into(),
            cmdbuf: Some(cmdbuf),
            draw: Some(7),
            gpu_begin_ns: Some(b),
            gpu_end_ns: Some(e),
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            sample_name(&sample("renderpass", "Frame/Main", 0, 0, 1)),
            "pass @ Frame/Main"
        );
        assert_eq!(sample_name(&sample("renderpass", "", 0, 0, 1)), "pass");
        assert_eq!(sample_name(&sample("label", "Frame/Main", 0, 0, 1)), "Frame/Main");
        assert_eq!(sample_name(&sample("draw", "Frame/Main", 0, 0, 1)), "draw 7");
        assert_eq!(sample_name(&sample("cmdbuf", "", 3, 0, 1)), "cmdbuf 3");
    }

    /// Nesting per lane, checked from the lane assignment: overlapping command buffers get
    /// their own tracks, and a sample that straddles its parent's end gets an overlap lane.
    #[test]
    fn samples_nest_on_their_lanes() {
        let mut p = Perfetto::new(Vec::new());
        p.header(&Header::default()).unwrap();
        let f = Frame {
            frame: 1,
            t_ns: 1000,
            cpu_frame_ns: Some(100),
            gpu_busy_ns: Some(10),
            samples: vec![
                sample("cmdbuf", "", 0, 100, 200),
                sample("renderpass", "A", 0, 110, 190),
                sample("draw", "A", 0, 120, 130),
                sample("draw", "A", 0, 130, 140),
                sample("cmdbuf", "", 1, 150, 250),
                sample("label", "B", 0, 180, 220),
                sample("draw", "", 0, 0, 0),
                Sample {
                    gpu_end_ns: None,
                    ..sample("draw", "", 0, 1, 1)
                },
            ],
            ..Frame::default()
        };
        p.frame(&f).unwrap();
        assert_eq!(p.lanes_of[&0], [0, 2]);
        assert_eq!(p.lanes_of[&1], [1]);
        assert!(p.lanes.iter().all(|l| l.open.is_empty()));
        assert_eq!(p.untimed_samples, 1);
        assert_eq!(p.dropped_samples, 0);
        let notes = p.finish().unwrap();
        assert_eq!(notes.len(), 1);
    }
}
