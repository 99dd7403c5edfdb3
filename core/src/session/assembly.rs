//! Frame assembly: joins a frame's CPU part (known at present) with its GPU time (known
//! frames later, when its submissions retire) and hands out complete frames in order.
//!
//! Protocol, for the layer:
//! - [`FrameAssembler::on_submit`] for each timed submission: it belongs to the open frame;
//!   keep the returned frame index with the submission's timestamp slots;
//! - [`FrameAssembler::on_submission_retired`] when that submission's results are read
//!   (`Some((begin, end))` in GPU ns, or `None` when it carried no timestamps);
//! - [`FrameAssembler::close_frame`] at present (or frame boundary) with the CPU part;
//! - [`FrameAssembler::present_returned`] when that present (or swap) call returns: the
//!   frame's time in it, and the next frame's CPU start;
//! - [`FrameAssembler::poll`] after a batch of retirements, and
//!   [`FrameAssembler::flush`] at device destruction.
//!
//! Frames come out strictly in frame order. A frame is complete when it is closed, its
//! present returned (or a later frame closed, or it ended on a frame boundary) and all its
//! submissions retired; one still waiting `timeout_frames` frames or `timeout_ns` after
//! its close comes out anyway with `gpu_missing = Timeout` (later results for it are
//! ignored). Not thread-safe by itself: the layer keeps it behind its own lock; every call is
//! O(1) amortised and allocation-free after [`FrameAssembler::new`].

use crate::model::frame::{FrameRecord, GpuFrameTime, GpuMissing};
use crate::model::gpu_time::IntervalSet;

/// Bounds and switches of a [`FrameAssembler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssemblerOptions {
    /// A frame with GPU results still missing after this many later frames closed is
    /// emitted with `Timeout`.
    pub timeout_frames: u64,
    /// ... or this long (CPU ns) after it closed.
    pub timeout_ns: u64,
    /// When false, frames are emitted at close with `gpu_missing = Disabled`.
    pub gpu_timing: bool,
    /// A frame ended by a present also waits for [`FrameAssembler::present_returned`] (or
    /// the next close), so it carries its time in the present call. The layers set it; off,
    /// a frame is emitted as soon as its GPU part is complete.
    pub await_present_return: bool,
}

impl Default for AssemblerOptions {
    fn default() -> Self {
        AssemblerOptions {
            timeout_frames: 32,
            timeout_ns: 2_000_000_000,
            gpu_timing: true,
            await_present_return: false,
        }
    }
}

/// Anomalies seen by the assembler; for debug logs and the dump header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssemblerStats {
    /// Retirements for frames already emitted (after a timeout).
    pub late_retirements: u64,
    /// Retirements naming a frame that was never opened (a layer bug).
    pub unknown_retirements: u64,
    /// Frames emitted with `Timeout`.
    pub timeouts: u64,
}

#[derive(Clone)]
struct Slot {
    submitted: u32,
    retired: u32,
    intervals: IntervalSet,
    record: FrameRecord,
    /// Why submissions of this frame went untimed, when the layer knew (its timing could not
    /// be set up): the frame's reason when none of them was timed.
    untimed: Option<GpuMissing>,
    /// The frame's present call returned (or it has none).
    returned: bool,
}

impl Slot {
    fn reset(&mut self) {
        self.submitted = 0;
        self.retired = 0;
        self.intervals.clear();
        self.untimed = None;
        self.returned = false;
    }
}

/// See the module docs.
pub struct FrameAssembler {
    slots: Box<[Slot]>,
    opts: AssemblerOptions,
    /// Oldest frame not yet emitted; every frame in `next_emit..open` is closed.
    next_emit: u64,
    /// The frame currently accepting submissions.
    open: u64,
    last_t_ns: Option<u64>,
    /// When the last closed frame's present returned: the open frame's CPU start.
    last_return_ns: Option<u64>,
    calibration: Option<i64>,
    stats: AssemblerStats,
}

impl FrameAssembler {
    /// Allocates the ring once: `timeout_frames + 2` slots (closed frames waiting plus the
    /// open one), each holding a fixed-capacity interval set.
    pub fn new(opts: AssemblerOptions) -> Self {
        let cap = opts.timeout_frames.max(1) as usize + 2;
        let slot = Slot {
            submitted: 0,
            retired: 0,
            intervals: IntervalSet::new(),
            record: FrameRecord::default(),
            untimed: None,
            returned: false,
        };
        FrameAssembler {
            slots: vec![slot; cap].into_boxed_slice(),
            opts,
            next_emit: 0,
            open: 0,
            last_t_ns: None,
            last_return_ns: None,
            calibration: None,
            stats: AssemblerStats::default(),
        }
    }

    /// Frames the ring holds (closed and waiting, plus the open one).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Index of the frame currently open.
    pub fn open_frame(&self) -> u64 {
        self.open
    }

    /// Closed frames not yet emitted.
    pub fn pending(&self) -> u64 {
        self.open - self.next_emit
    }

    pub fn stats(&self) -> AssemblerStats {
        self.stats
    }

    /// Whether frames wait for GPU time (false: emitted at close with `Disabled`).
    pub fn gpu_timing(&self) -> bool {
        self.opts.gpu_timing
    }

    /// Sets the offset (ns) that maps the GPU time domain of the retired intervals onto
    /// `CLOCK_MONOTONIC`, from calibrated timestamps; `None` leaves `gpu_begin_ns`/`gpu_end_ns`
    /// unset. Applied to frames as they are emitted.
    pub fn set_calibration(&mut self, gpu_to_cpu_offset_ns: Option<i64>) {
        self.calibration = gpu_to_cpu_offset_ns;
    }

    /// The offset last given to [`FrameAssembler::set_calibration`], for layers that map other
    /// GPU timestamps (samples) the same way.
    pub fn calibration(&self) -> Option<i64> {
        self.calibration
    }

    /// Sets the pipeline statistics of a closed frame not yet emitted (a layer that measures
    /// them per frame keeps a submission of the frame open until they are read, so they arrive
    /// before the frame is emitted). Ignored for frames emitted already or not closed yet.
    pub fn set_frame_stats(&mut self, frame: u64, stats: crate::model::sample::PipelineStats) {
        if frame < self.next_emit || frame >= self.open {
            return;
        }
        self.slot(frame).record.stats = Some(stats);
    }

    fn slot(&mut self, frame: u64) -> &mut Slot {
        let n = self.slots.len() as u64;
        &mut self.slots[(frame % n) as usize]
    }

    /// Registers a submission in the open frame; returns that frame's index.
    pub fn on_submit(&mut self) -> u64 {
        let f = self.open;
        let s = self.slot(f);
        s.submitted = s.submitted.saturating_add(1);
        f
    }

    /// A submission that will carry no timestamps, for `reason` (e.g. `Disabled`: the layer's
    /// timing could not be set up); retire it with [`Self::on_submission_retired`] as usual.
    pub fn on_untimed_submit(&mut self, reason: GpuMissing) -> u64 {
        let f = self.on_submit();
        self.slot(f).untimed = Some(reason);
        f
    }

    /// A submission of `frame` retired. `interval` is its `[begin, end]` in GPU ns (already
    /// masked and scaled), or `None` when it has no timestamps (e.g. its queue cannot write
    /// them). Unknown or already-emitted frames are counted in [`AssemblerStats`] and ignored.
    pub fn on_submission_retired(&mut self, frame: u64, interval: Option<(u64, u64)>) {
        if frame < self.next_emit {
            self.stats.late_retirements += 1;
            return;
        }
        if frame > self.open {
            self.stats.unknown_retirements += 1;
            return;
        }
        let s = self.slot(frame);
        s.retired = s.retired.saturating_add(1);
        if let Some((b, e)) = interval {
            s.intervals.push(b, e);
        }
    }

    /// Closes the open frame with its CPU part (`t_ns`, counts, swapchain, counters) and
    /// opens the next. The assembler sets `frame` and `cpu_frame_ns` (from the previous
    /// close) and the GPU part; the caller's values for those are overwritten. Emits, in
    /// order, every frame that is now complete or timed out. Returns the closed frame's index.
    pub fn close_frame<F: FnMut(FrameRecord)>(&mut self, mut record: FrameRecord, mut emit: F) -> u64 {
        let f = self.open;
        record.frame = f;
        record.cpu_frame_ns = self.last_t_ns.map(|last| record.t_ns.saturating_sub(last));
        record.cpu.start_ns = self.last_return_ns.take();
        record.cpu.present_ns = None;
        record.gpu = GpuFrameTime::default();
        self.last_t_ns = Some(record.t_ns);
        // A frame boundary is no call that returns: the next frame starts at this one's end.
        let returned = record.end != crate::model::frame::FrameEnd::Present || !self.opts.await_present_return;
        if returned {
            self.last_return_ns = Some(record.t_ns);
        }
        self.slot(f).record = record;
        self.slot(f).returned = returned;
        self.open += 1;
        if self.open - self.next_emit >= self.slots.len() as u64 {
            // The ring is full (cannot happen when timeouts run, kept for safety): the
            // oldest frame gives its slot to the new open one.
            self.emit_oldest(Some(GpuMissing::Timeout), &mut emit);
        }
        let next = self.open;
        self.slot(next).reset();
        self.poll(record.t_ns, &mut emit);
        f
    }

    /// The present (or swap) call that ended `frame` returned at `t_ns`: the frame's time in
    /// it, and the CPU start of the next frame; then emits what is complete. A frame emitted
    /// already, or one older than the last closed (another present came between), keeps no
    /// time in present, and the open frame no start.
    pub fn present_returned<F: FnMut(FrameRecord)>(&mut self, frame: u64, t_ns: u64, emit: F) {
        if frame + 1 == self.open {
            self.last_return_ns = Some(t_ns);
            if frame >= self.next_emit {
                let s = self.slot(frame);
                s.record.cpu.present_ns = Some(t_ns.saturating_sub(s.record.t_ns));
                s.returned = true;
            }
        }
        self.poll(t_ns, emit);
    }

    /// Emits, in order, every closed frame that is complete or has timed out at `now_ns`
    /// (`CLOCK_MONOTONIC`).
    pub fn poll<F: FnMut(FrameRecord)>(&mut self, now_ns: u64, mut emit: F) {
        while self.next_emit < self.open {
            let f = self.next_emit;
            let later_closed = self.open - f - 1;
            let timeout_frames = self.opts.timeout_frames;
            let timeout_ns = self.opts.timeout_ns;
            let gpu_timing = self.opts.gpu_timing;
            let s = self.slot(f);
            let gpu_done = !gpu_timing || s.retired >= s.submitted;
            let complete = gpu_done && (s.returned || later_closed > 0);
            let timed_out = later_closed >= timeout_frames || now_ns.saturating_sub(s.record.t_ns) >= timeout_ns;
            if complete {
                self.emit_oldest(None, &mut emit);
            } else if timed_out {
                self.emit_oldest((!gpu_done).then_some(GpuMissing::Timeout), &mut emit);
            } else {
                break;
            }
        }
    }

    /// Emits every closed frame now; those still waiting for GPU results get `reason`
    /// (`Timeout` at an orderly shutdown, `DeviceLost` after a device loss).
    pub fn flush<F: FnMut(FrameRecord)>(&mut self, reason: GpuMissing, mut emit: F) {
        while self.next_emit < self.open {
            let gpu_timing = self.opts.gpu_timing;
            let s = self.slot(self.next_emit);
            let complete = !gpu_timing || s.retired >= s.submitted;
            self.emit_oldest(if complete { None } else { Some(reason) }, &mut emit);
        }
    }

    /// Emits frame `next_emit`; `forced` is the reason when its GPU results are incomplete.
    fn emit_oldest<F: FnMut(FrameRecord)>(&mut self, forced: Option<GpuMissing>, emit: &mut F) {
        let f = self.next_emit;
        let gpu_timing = self.opts.gpu_timing;
        let calibration = self.calibration;
        let s = self.slot(f);
        let mut gpu = GpuFrameTime::default();
        if !gpu_timing {
            gpu.missing = Some(GpuMissing::Disabled);
        } else if s.submitted == 0 {
            gpu.missing = Some(GpuMissing::NoSubmissions);
        } else if let Some(reason) = forced {
            gpu.missing = Some(reason);
        } else if let Some(t) = s.intervals.compute() {
            gpu.busy_ns = Some(t.busy_ns);
            gpu.span_ns = Some(t.span_ns);
            if let Some(off) = calibration {
                gpu.begin_ns = Some(t.begin_ns.saturating_add_signed(off));
                gpu.end_ns = Some(t.end_ns.saturating_add_signed(off));
            }
        } else {
            gpu.missing = Some(s.untimed.unwrap_or(GpuMissing::QueueHasNoTimestamps));
        }
        let mut record = s.record;
        record.gpu = gpu;
        if forced == Some(GpuMissing::Timeout) && gpu_timing && s.submitted > 0 {
            self.stats.timeouts += 1;
        }
        self.next_emit += 1;
        emit(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn cpu(t_ns: u64) -> FrameRecord {
        FrameRecord {
            t_ns,
            ..FrameRecord::default()
        }
    }

    fn collect(out: &mut Vec<FrameRecord>) -> impl FnMut(FrameRecord) + '_ {
        move |r| out.push(r)
    }

    #[test]
    fn frame_waits_for_its_submissions_then_comes_out_in_order() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        assert_eq!(a.on_submit(), 0);
        assert_eq!(a.on_submit(), 0);
        assert_eq!(a.close_frame(cpu(100 * MS), collect(&mut out)), 0);
        assert_eq!(a.on_submit(), 1);
        a.close_frame(cpu(116 * MS), collect(&mut out));
        assert!(out.is_empty());
        // Frame 1 retires first: still nothing, frame 0 is older and incomplete.
        a.on_submission_retired(1, Some((5000, 6000)));
        a.poll(117 * MS, collect(&mut out));
        assert!(out.is_empty());
        a.on_submission_retired(0, Some((1000, 1400)));
        a.on_submission_retired(0, Some((1200, 2000)));
        a.poll(118 * MS, collect(&mut out));
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].frame, out[1].frame), (0, 1));
        assert_eq!(out[0].cpu_frame_ns, None);
        assert_eq!(out[1].cpu_frame_ns, Some(16 * MS));
        assert_eq!((out[0].gpu.busy_ns, out[0].gpu.span_ns), (Some(1000), Some(1000)));
        assert_eq!(out[0].gpu.missing, None);
        assert_eq!(out[1].gpu.busy_ns, Some(1000));
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn frame_without_submissions_is_emitted_at_close() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        a.close_frame(cpu(10), collect(&mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::NoSubmissions));
        assert_eq!(out[0].gpu.busy_ns, None);
    }

    #[test]
    fn submissions_without_timestamps_give_that_reason() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        let f = a.on_submit();
        a.close_frame(cpu(10), collect(&mut out));
        a.on_submission_retired(f, None);
        a.poll(11, collect(&mut out));
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::QueueHasNoTimestamps));
    }

    #[test]
    fn untimed_submissions_give_the_layers_reason_and_a_slot_forgets_it() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        let f = a.on_untimed_submit(GpuMissing::Disabled);
        a.close_frame(cpu(10), collect(&mut out));
        a.on_submission_retired(f, None);
        a.poll(11, collect(&mut out));
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::Disabled));
        // The ring reuses slots: a later frame of plain untimed submissions is not `disabled`.
        for t in 0..8u64 {
            let f = a.on_submit();
            a.close_frame(cpu(20 + t), collect(&mut out));
            a.on_submission_retired(f, None);
            a.poll(30 + t, collect(&mut out));
        }
        assert!(out[1..]
            .iter()
            .all(|r| r.gpu.missing == Some(GpuMissing::QueueHasNoTimestamps)));
    }

    #[test]
    fn timeout_after_n_frames_and_late_results_ignored() {
        let opts = AssemblerOptions {
            timeout_frames: 3,
            timeout_ns: u64::MAX,
            gpu_timing: true,
            await_present_return: false,
        };
        let mut a = FrameAssembler::new(opts);
        let mut out = Vec::new();
        let stuck = a.on_submit();
        a.close_frame(cpu(0), collect(&mut out));
        for i in 1..=2 {
            a.close_frame(cpu(i * MS), collect(&mut out));
        }
        // Two later frames closed: frame 0 still waits, and blocks the in-order output.
        assert!(out.is_empty());
        a.close_frame(cpu(3 * MS), collect(&mut out));
        // Third later frame: frame 0 times out, frames 1..=3 (no submissions) follow.
        assert_eq!(out.iter().map(|r| r.frame).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::Timeout));
        assert_eq!(out[0].gpu.busy_ns, None);
        a.on_submission_retired(stuck, Some((0, 10)));
        assert_eq!(a.stats().late_retirements, 1);
        assert_eq!(a.stats().timeouts, 1);
    }

    #[test]
    fn timeout_after_wall_time() {
        let opts = AssemblerOptions {
            timeout_frames: 1000,
            timeout_ns: 2_000 * MS,
            gpu_timing: true,
            await_present_return: false,
        };
        let mut a = FrameAssembler::new(opts);
        let mut out = Vec::new();
        a.on_submit();
        a.close_frame(cpu(1_000 * MS), collect(&mut out));
        a.poll(2_999 * MS, collect(&mut out));
        assert!(out.is_empty());
        a.poll(3_000 * MS, collect(&mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::Timeout));
    }

    #[test]
    fn flush_emits_everything_with_the_given_reason() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        a.on_submit();
        a.close_frame(cpu(1), collect(&mut out));
        let f = a.on_submit();
        a.close_frame(cpu(2), collect(&mut out));
        a.on_submission_retired(f, Some((0, 7)));
        a.flush(GpuMissing::DeviceLost, collect(&mut out));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::DeviceLost));
        assert_eq!(out[1].gpu.busy_ns, Some(7));
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn disabled_gpu_timing_emits_at_close() {
        let mut a = FrameAssembler::new(AssemblerOptions {
            gpu_timing: false,
            ..AssemblerOptions::default()
        });
        let mut out = Vec::new();
        a.on_submit();
        a.close_frame(cpu(5), collect(&mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::Disabled));
    }

    #[test]
    fn frame_stats_reach_the_emitted_record_only_while_the_frame_waits() {
        use crate::model::sample::PipelineStats;
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        let f0 = a.on_submit();
        // Not closed yet: ignored (close_frame sets the CPU part afresh).
        a.set_frame_stats(f0, PipelineStats::from_array([9; 7]));
        a.close_frame(cpu(MS), |r| out.push(r));
        assert!(out.is_empty());
        let st = PipelineStats::from_array([1, 2, 3, 4, 5, 6, 7]);
        a.set_frame_stats(f0, st);
        a.on_submission_retired(f0, Some((10, 20)));
        a.poll(2 * MS, |r| out.push(r));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].stats, Some(st));
        // Emitted already: ignored, nothing panics.
        a.set_frame_stats(f0, st);
        a.close_frame(cpu(3 * MS), |r| out.push(r));
        assert_eq!(out[1].stats, None);
        assert_eq!(a.calibration(), None);
        a.set_calibration(Some(-5));
        assert_eq!(a.calibration(), Some(-5));
    }

    #[test]
    fn calibration_maps_gpu_begin_and_end_to_cpu_clock() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        a.set_calibration(Some(-500));
        let f = a.on_submit();
        a.close_frame(cpu(10_000), collect(&mut out));
        a.on_submission_retired(f, Some((2_000, 3_000)));
        a.poll(10_001, collect(&mut out));
        assert_eq!((out[0].gpu.begin_ns, out[0].gpu.end_ns), (Some(1_500), Some(2_500)));
    }

    #[test]
    fn caller_values_for_assembler_fields_are_overwritten_and_cpu_part_kept() {
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let mut out = Vec::new();
        let mut r = cpu(50);
        r.frame = 77;
        r.cpu_frame_ns = Some(1);
        r.counts.draws.0[0] = 9;
        a.close_frame(r, collect(&mut out));
        assert_eq!(out[0].frame, 0);
        assert_eq!(out[0].cpu_frame_ns, None);
        assert_eq!(out[0].counts.draws_total(), 9);
    }

    #[test]
    fn ring_is_reused_over_many_frames_with_lagging_retirement() {
        // GPU results arrive 3 frames late, for 10x the ring capacity: every frame comes out
        // with its own interval, in order, and the ring never grows.
        let mut a = FrameAssembler::new(AssemblerOptions::default());
        let cap = a.capacity();
        let mut out = Vec::new();
        let n = 10 * cap as u64;
        let mut in_flight = std::collections::VecDeque::new();
        for i in 0..n {
            in_flight.push_back(a.on_submit());
            a.close_frame(cpu(i * 16 * MS), collect(&mut out));
            if in_flight.len() > 3 {
                let f = in_flight.pop_front().unwrap();
                a.on_submission_retired(f, Some((f * 100, f * 100 + f + 1)));
            }
        }
        while let Some(f) = in_flight.pop_front() {
            a.on_submission_retired(f, Some((f * 100, f * 100 + f + 1)));
        }
        a.poll(n * 16 * MS, collect(&mut out));
        assert_eq!(out.len() as u64, n);
        for (i, r) in out.iter().enumerate() {
            assert_eq!(r.frame, i as u64);
            assert_eq!(r.gpu.busy_ns, Some(i as u64 + 1));
        }
        assert_eq!(a.capacity(), cap);
        assert_eq!(a.stats(), AssemblerStats::default());
    }

    fn awaiting() -> AssemblerOptions {
        AssemblerOptions {
            await_present_return: true,
            ..AssemblerOptions::default()
        }
    }

    /// PresentMon's CPUStart is the previous present's return; the frame keeps its time in
    /// present, and waits for it before it is emitted.
    #[test]
    fn a_frame_carries_its_time_in_present_and_the_next_starts_at_the_return() {
        let mut a = FrameAssembler::new(awaiting());
        let mut out = Vec::new();
        let f0 = a.close_frame(cpu(100 * MS), collect(&mut out));
        assert!(out.is_empty(), "waits for its present to return");
        a.present_returned(f0, 103 * MS, collect(&mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cpu.present_ns, Some(3 * MS));
        assert_eq!(out[0].cpu.start_ns, None, "the first frame has no start");
        let f1 = a.close_frame(cpu(116 * MS), collect(&mut out));
        a.present_returned(f1, 117 * MS, collect(&mut out));
        assert_eq!(out[1].cpu.start_ns, Some(103 * MS));
        assert_eq!(out[1].cpu.present_ns, Some(MS));
        assert_eq!(out[1].cpu.busy_ns(out[1].t_ns), Some(13 * MS));
        assert_eq!(out[1].cpu.wait_ns(), Some(MS));
    }

    #[test]
    fn waits_and_present_split_the_frame_and_gpu_time_still_gates_emission() {
        let mut a = FrameAssembler::new(awaiting());
        let mut out = Vec::new();
        let f0 = a.close_frame(cpu(100 * MS), collect(&mut out));
        a.present_returned(f0, 101 * MS, collect(&mut out));
        a.on_submit();
        let mut r = cpu(117 * MS);
        r.cpu.waits.add(crate::model::waits::WaitKind::Fence, 4 * MS);
        r.cpu.waits.add(crate::model::waits::WaitKind::FpsLimit, 2 * MS);
        let f1 = a.close_frame(r, collect(&mut out));
        a.present_returned(f1, 118 * MS, collect(&mut out));
        assert_eq!(out.len(), 1, "frame 1 still waits for its GPU time");
        a.on_submission_retired(f1, Some((10, 20)));
        a.poll(119 * MS, collect(&mut out));
        let f = &out[1];
        assert_eq!(f.cpu.present_ns, Some(MS));
        // 117 - 101 = 16 ms before the present, 6 of them waiting.
        assert_eq!(f.cpu.busy_ns(f.t_ns), Some(10 * MS));
        assert_eq!(f.cpu.wait_ns(), Some(7 * MS));
    }

    /// A present that never returned before the next frame closed (another thread presented)
    /// holds nothing up: the frame goes out without its time in present, the next without a
    /// start.
    #[test]
    fn a_present_that_does_not_return_first_holds_nothing_up() {
        let mut a = FrameAssembler::new(awaiting());
        let mut out = Vec::new();
        let f0 = a.close_frame(cpu(100 * MS), collect(&mut out));
        let f1 = a.close_frame(cpu(110 * MS), collect(&mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cpu.present_ns, None);
        a.present_returned(f0, 111 * MS, collect(&mut out));
        a.present_returned(f1, 112 * MS, collect(&mut out));
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].cpu.start_ns, None);
        assert_eq!(out[1].cpu.present_ns, Some(2 * MS));
        // A lone close times out like a GPU wait would, without a GPU reason.
        let mut b = FrameAssembler::new(awaiting());
        let mut out = Vec::new();
        b.close_frame(cpu(100 * MS), collect(&mut out));
        b.poll(100 * MS + 2_000_000_000, collect(&mut out));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].gpu.missing, Some(GpuMissing::NoSubmissions));
    }

    #[test]
    fn a_frame_boundary_needs_no_return_and_starts_the_next_frame() {
        let mut a = FrameAssembler::new(awaiting());
        let mut out = Vec::new();
        let boundary = |t| FrameRecord {
            end: crate::model::frame::FrameEnd::FrameBoundary,
            ..cpu(t)
        };
        a.close_frame(boundary(100 * MS), collect(&mut out));
        a.close_frame(boundary(120 * MS), collect(&mut out));
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].cpu.start_ns, Some(100 * MS));
        assert_eq!(out[1].cpu.present_ns, None);
    }
}
