//! The Perfetto trace: a `Trace` written one `TracePacket` at a time (a trace file is the
//! concatenation of `Trace.packet` fields), so frames stream out as they are read.
//!
//! Tracks (`TrackDescriptor`, by uuid): the app's process; under it a frames track (one
//! slice per frame, previous present to this present), a GPU track with one child track per
//! command buffer index (samples of one command buffer nest; those of different command
//! buffers may overlap in time), and one counter track per catalogue counter plus
//! `gpu_busy_ns`, and a marks track with an instant event per `mark` record. Slices are `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs. All packets share one
//! `trusted_packet_sequence_id`; the first one clears incremental state. Timestamps are the
//! dump's `CLOCK_MONOTONIC` nanoseconds, declared as such by a clock snapshot and each
//! packet's `timestamp_clock_id`.
//!
//! Field numbers are those of Perfetto's published `perfetto_trace.proto`.

use super::protobuf::Msg;
use super::{Frame, Header, Mark, Sample, Sink};
use std::collections::HashMap;
use std::io::{self, Write};

mod field {
    pub const TRACE_PACKET: u32 = 1;

    pub const PACKET_CLOCK_SNAPSHOT: u32 = 6;
    pub const PACKET_TIMESTAMP: u32 = 8;
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    pub const PACKET_TRACK_EVENT: u32 = 11;
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
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

    pub const COUNTER_UNIT: u32 = 3;
    pub const COUNTER_UNIT_NAME: u32 = 6;

    pub const EVENT_TYPE: u32 = 9;
    pub const EVENT_TRACK_UUID: u32 = 11;
    pub const EVENT_NAME: u32 = 23;
    pub const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
}

const SEQUENCE_ID: u64 = 1;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const CLOCK_MONOTONIC: u64 = 3;
const CLOCK_BOOTTIME: u64 = 6;
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
const TYPE_COUNTER: u64 = 4;
const UNIT_TIME_NS: u64 = 1;

const PROCESS_UUID: u64 = 1;
const FRAMES_UUID: u64 = 2;
const GPU_UUID: u64 = 3;
const GPU_BUSY_UUID: u64 = 4;
const MARKS_UUID: u64 = 5;
/// Counter tracks are `COUNTER_UUID_BASE + index in the catalogue`.
const COUNTER_UUID_BASE: u64 = 1 << 20;
/// GPU tracks are `GPU_TRACK_UUID_BASE + n`, n in order of first use.
const GPU_TRACK_UUID_BASE: u64 = 1 << 32;

/// Counters of the catalogue that get a track; a forged header may list millions.
const MAX_COUNTERS: usize = 256;
/// GPU tracks (command buffer index × overlap lane); a forged dump may name any index.
const MAX_GPU_TRACKS: usize = 1024;
/// Longest slice or track name written.
const MAX_NAME: usize = 1024;

/// One GPU track: the slices open on it, innermost last.
struct Lane {
    uuid: u64,
    open: Vec<u64>,
    /// End of the last top-level slice: a later sample starting before it cannot go here.
    free_at: u64,
}

pub struct Perfetto<W: Write> {
    out: W,
    first: bool,
    /// Catalogue counters with a track: name → uuid.
    counters: Vec<(String, u64)>,
    lanes: Vec<Lane>,
    /// Lanes of one command buffer index, in the order they were made.
    lanes_of: HashMap<u32, Vec<usize>>,
    last_frame_end: Option<u64>,
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

/// Orders samples of one interval outermost first.
fn scope_rank(s: &Sample) -> u8 {
    match s.scope.as_deref() {
        Some("cmdbuf") => 0,
        Some("renderpass") => 1,
        Some("label") => 2,
        _ => 3,
    }
}

impl<W: Write> Perfetto<W> {
    pub fn new(out: W) -> Self {
        Perfetto {
            out,
            first: true,
            counters: Vec::new(),
            lanes: Vec::new(),
            lanes_of: HashMap::new(),
            last_frame_end: None,
            dropped_samples: 0,
            untimed_samples: 0,
            uncalibrated: false,
        }
    }

    fn packet(&mut self, mut p: Msg) -> io::Result<()> {
        p.uint(field::PACKET_SEQUENCE_ID, SEQUENCE_ID);
        if std::mem::take(&mut self.first) {
            p.uint(field::PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        }
        let mut t = Msg::new();
        t.message(field::TRACE_PACKET, &p);
        self.out.write_all(t.as_bytes())
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
        self.packet(p)
    }

    fn event(&mut self, ts: u64, track: u64, kind: u64, fill: impl FnOnce(&mut Msg)) -> io::Result<()> {
        let mut e = Msg::new();
        e.uint(field::EVENT_TYPE, kind).uint(field::EVENT_TRACK_UUID, track);
        fill(&mut e);
        let mut p = Msg::new();
        p.uint(field::PACKET_TIMESTAMP, ts)
            .uint(field::PACKET_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC)
            .message(field::PACKET_TRACK_EVENT, &e);
        self.packet(p)
    }

    fn begin(&mut self, ts: u64, track: u64, name: &str) -> io::Result<()> {
        self.event(ts, track, TYPE_SLICE_BEGIN, |e| {
            e.string(field::EVENT_NAME, name);
        })
    }

    fn end(&mut self, ts: u64, track: u64) -> io::Result<()> {
        self.event(ts, track, TYPE_SLICE_END, |_| {})
    }

    fn counter(&mut self, ts: u64, track: u64, v: f64) -> io::Result<()> {
        self.event(ts, track, TYPE_COUNTER, |e| {
            e.double(field::EVENT_DOUBLE_COUNTER_VALUE, v);
        })
    }

    /// Closes the slices of lane `i` that end by `t`.
    fn close_until(&mut self, i: usize, t: u64) -> io::Result<()> {
        while let Some(&end) = self.lanes[i].open.last() {
            if end > t {
                break;
            }
            self.lanes[i].open.pop();
            if self.lanes[i].open.is_empty() {
                self.lanes[i].free_at = self.lanes[i].free_at.max(end);
            }
            let uuid = self.lanes[i].uuid;
            self.end(end, uuid)?;
        }
        Ok(())
    }

    /// The lane a sample of `cmdbuf` spanning `b..e` nests on, made when none fits.
    fn lane_for(&mut self, cmdbuf: u32, b: u64, e: u64) -> io::Result<Option<usize>> {
        let existing = self.lanes_of.get(&cmdbuf).cloned().unwrap_or_default();
        for &i in &existing {
            self.close_until(i, b)?;
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
        let uuid = GPU_TRACK_UUID_BASE + self.lanes.len() as u64;
        let name = match existing.len() {
            0 => format!("cmdbuf {cmdbuf}"),
            n => format!("cmdbuf {cmdbuf} (overlap {n})"),
        };
        self.track(uuid, Some(GPU_UUID), &name, |_| {})?;
        self.lanes.push(Lane {
            uuid,
            open: Vec::new(),
            free_at: 0,
        });
        let i = self.lanes.len() - 1;
        self.lanes_of.entry(cmdbuf).or_default().push(i);
        Ok(Some(i))
    }

    fn gpu_samples(&mut self, f: &Frame) -> io::Result<()> {
        let mut timed: Vec<(u64, u64, &Sample)> = Vec::with_capacity(f.samples.len());
        for s in &f.samples {
            match (s.gpu_begin_ns, s.gpu_end_ns) {
                (Some(b), Some(e)) if b <= e => timed.push((b, e, s)),
                _ => self.untimed_samples += 1,
            }
        }
        // Outer slices first: earlier begin, then later end, then the coarser scope.
        timed.sort_by(|a, b| {
            (a.0, std::cmp::Reverse(a.1), scope_rank(a.2)).cmp(&(b.0, std::cmp::Reverse(b.1), scope_rank(b.2)))
        });
        for (b, e, s) in timed {
            let cmdbuf = s.cmdbuf.unwrap_or(0);
            let Some(i) = self.lane_for(cmdbuf, b, e)? else {
                self.dropped_samples += 1;
                continue;
            };
            let uuid = self.lanes[i].uuid;
            self.begin(b, uuid, &sample_name(s))?;
            self.lanes[i].open.push(e);
        }
        // Close everything: a frame's slices are complete in its own record.
        for i in 0..self.lanes.len() {
            self.close_until(i, u64::MAX)?;
        }
        Ok(())
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
        let mut p = Msg::new();
        p.uint(field::PACKET_TIMESTAMP, t0)
            .uint(field::PACKET_TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC)
            .message(field::PACKET_CLOCK_SNAPSHOT, &snap);
        self.packet(p)?;
        self.track(
            FRAMES_UUID,
            Some(PROCESS_UUID),
            "frames (CPU, present to present)",
            |_| {},
        )?;
        self.track(GPU_UUID, Some(PROCESS_UUID), "GPU samples", |_| {})?;
        self.track(MARKS_UUID, Some(PROCESS_UUID), "marks (framescope ctl)", |_| {})?;
        self.track(GPU_BUSY_UUID, Some(PROCESS_UUID), "gpu_busy_ns", |d| {
            let mut c = Msg::new();
            c.uint(field::COUNTER_UNIT, UNIT_TIME_NS);
            d.message(field::TRACK_COUNTER, &c);
        })?;
        let mut names = Vec::new();
        for (k, c) in h.counters.iter().take(MAX_COUNTERS).enumerate() {
            if names.iter().any(|(n, _)| n == &c.name) {
                continue;
            }
            let uuid = COUNTER_UUID_BASE + k as u64;
            self.track(uuid, Some(PROCESS_UUID), &c.name, |d| {
                let mut cd = Msg::new();
                if !c.unit.is_empty() {
                    cd.string(field::COUNTER_UNIT_NAME, clip(&c.unit));
                }
                d.message(field::TRACK_COUNTER, &cd);
            })?;
            names.push((c.name.clone(), uuid));
        }
        self.counters = names;
        Ok(())
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
        self.begin(start, FRAMES_UUID, &format!("frame {}", f.frame))?;
        self.end(end, FRAMES_UUID)?;
        self.last_frame_end = Some(end);
        if let Some(g) = f.gpu_busy_ns {
            self.counter(f.t_ns, GPU_BUSY_UUID, g as f64)?;
        }
        let counters = std::mem::take(&mut self.counters);
        let mut res = Ok(());
        for (name, uuid) in &counters {
            if let Some(v) = f.counter(name) {
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
                "{} GPU sample(s) were left out: more than {MAX_GPU_TRACKS} GPU tracks would be needed",
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
            gpu_span_ns: None,
            gpu_begin_ns: None,
            draws: None,
            dispatches: None,
            submits: None,
            swapchain: None,
            counters: None,
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
