//! Per-device frame state: the device's [`FrameSession`] (shared frame path with the GL shim),
//! plus what only Vulkan has: counts accumulated since the last present and the GPU clock
//! calibration.

use framescope_core::assembly::AssemblerOptions;
use framescope_core::frame::{FrameCounts, FrameRecord};
use framescope_core::session::{FrameSession, SessionOptions};
use framescope_core::sync::Mutex;

pub struct FrameState {
    pub session: FrameSession,
    /// Counts of the open frame.
    pub counts: FrameCounts,
    /// GPU-to-CLOCK_MONOTONIC offset (ns) from calibrated timestamps, when available.
    pub calibration: Option<i64>,
    /// Sizes the draw window from its measured cost (`samples=draw`).
    pub budget: crate::samples::budget::Budget,
    /// Frames emitted so far (the budget learns from each once).
    emitted_seen: u64,
}

impl FrameState {
    pub fn new(hint: framescope_collectors::GpuHint) -> Self {
        let cfg = framescope_core::settings::get();
        FrameState {
            session: FrameSession::new(SessionOptions {
                assembler: AssemblerOptions {
                    gpu_timing: cfg.gpu_timing,
                    await_present_return: true,
                    ..AssemblerOptions::default()
                },
                // The HUD's history and regions; kept without a HUD too (a screenshot may
                // show it, and it costs a fixed ring).
                history: true,
                counters: framescope_collectors::builtin::board_for(cfg, hint),
            }),
            counts: FrameCounts::default(),
            calibration: None,
            budget: crate::samples::budget::Budget::new(cfg.sample_budget),
            emitted_seen: 0,
        }
    }

    /// Closes the open frame with `record` (CPU part; counts are taken from the state), ends
    /// the draw window of the frame and sets the next one; the closed frame's index.
    /// `counted`: whether the device counts draws and the like (`Device::count_commands`).
    pub fn close(
        &mut self,
        mut record: FrameRecord,
        window: Option<&crate::samples::budget::DrawWindow>,
        counted: bool,
    ) -> u64 {
        record.counts = std::mem::take(&mut self.counts);
        record.counts.commands_uncounted = !counted;
        if let Some(w) = window.filter(|_| self.budget.active()) {
            let frame = self.session.assembler_ref().open_frame();
            let (first, count) = w.current();
            let of = w.max_draws();
            record.draw_window = Some(framescope_core::frame::DrawWindowInfo {
                first,
                // The first frame times every draw (see `DrawWindow::new`).
                count: count.min(of),
                of,
                overhead_ns: self.budget.overhead_ns(record.counts.draws_timed),
            });
            self.budget.end_frame(w, frame);
        }
        let closed = self.session.close(record);
        // The frames emitted by this close and the polls before it teach the budget.
        if let Some(h) = self.session.history() {
            let total = h.total();
            let new = total.saturating_sub(self.emitted_seen).min(h.len() as u64) as usize;
            for r in h.last(new) {
                self.budget.on_emitted(r);
            }
            self.emitted_seen = total;
        }
        closed
    }

    /// The present that ended `frame` returned at `t_ns` (see `FrameAssembler::present_returned`).
    pub fn present_returned(&mut self, frame: u64, t_ns: u64) {
        self.session.present_returned(frame, t_ns);
    }

    /// A sample of a retired submission; goes to the dump ahead of its frame.
    pub fn push_sample(&mut self, s: framescope_core::sample::SampleRecord) {
        self.session.push_sample(s);
    }

    pub fn retire(&mut self, frame: u64, interval: Option<(u64, u64)>) {
        self.session.assembler().on_submission_retired(frame, interval);
    }

    pub fn poll(&mut self, now_ns: u64) {
        self.session.poll(now_ns);
    }

    /// At device destruction: emit what is pending and write the summary.
    pub fn finish(&mut self) {
        framescope_core::alloc_count::report();
        framescope_core::hud_time::report();
        self.session.finish();
    }
}

pub type SharedFrameState = Mutex<FrameState>;
