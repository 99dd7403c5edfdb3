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
}

impl FrameState {
    pub fn new(hint: framescope_collectors::GpuHint) -> Self {
        let cfg = crate::settings::get();
        FrameState {
            session: FrameSession::new(SessionOptions {
                assembler: AssemblerOptions {
                    gpu_timing: cfg.gpu_timing,
                    ..AssemblerOptions::default()
                },
                // The HUD's history and regions; kept without a HUD too (a screenshot may
                // show it, and it costs a fixed ring).
                history: true,
                counters: framescope_collectors::builtin::board_for(cfg, hint),
            }),
            counts: FrameCounts::default(),
            calibration: None,
        }
    }

    /// Closes the open frame with `record` (CPU part; counts are taken from the state).
    pub fn close(&mut self, mut record: FrameRecord) {
        record.counts = std::mem::take(&mut self.counts);
        self.session.close(record);
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
        self.session.finish();
    }
}

pub type SharedFrameState = Mutex<FrameState>;
