//! Per-device frame state: counts accumulated since the last present, the frame assembler that
//! joins them with GPU times retiring frames later, and (for the device that owns it) the dump.

use framescope_core::assembly::{AssemblerOptions, FrameAssembler};
use framescope_core::dump::DumpWriter;
use framescope_core::frame::{FrameCounts, FrameRecord, GpuMissing};
use framescope_core::history::FrameHistory;
use framescope_core::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// One dump per process: the first device created while dumping is configured takes it.
static DUMP_TAKEN: AtomicBool = AtomicBool::new(false);

pub struct FrameState {
    pub assembler: FrameAssembler,
    /// Counts of the open frame.
    pub counts: FrameCounts,
    pub dump: Option<DumpWriter>,
    dump_checked: bool,
    /// Presents since device creation (every frame end).
    pub frames_closed: u64,
    /// The newest emitted frames, for the HUD (issue 4); fed wherever records are emitted.
    pub history: FrameHistory,
    /// The most expensive label regions and passes, for the HUD.
    pub regions: framescope_core::regions::RegionTable,
    /// GPU-to-CLOCK_MONOTONIC offset (ns) from calibrated timestamps, when available.
    pub calibration: Option<i64>,
}

impl FrameState {
    pub fn new() -> Self {
        FrameState {
            assembler: FrameAssembler::new(AssemblerOptions {
                gpu_timing: crate::settings::get().gpu_timing,
                ..AssemblerOptions::default()
            }),
            counts: FrameCounts::default(),
            dump: None,
            dump_checked: false,
            frames_closed: 0,
            history: FrameHistory::default(),
            regions: Default::default(),
            calibration: None,
        }
    }

    /// Starts the dump on first use when the config asks for one and no other device has it.
    pub fn ensure_dump(&mut self, make: impl FnOnce() -> Option<DumpWriter>) {
        if self.dump_checked {
            return;
        }
        self.dump_checked = true;
        if crate::settings::get().dump.is_some() && !DUMP_TAKEN.swap(true, Ordering::AcqRel) {
            self.dump = make();
            if let Some(w) = &self.dump {
                w.finish_at_exit();
            }
        }
    }

    /// Closes the open frame with `record` (CPU part; counts are taken from the state).
    pub fn close(&mut self, mut record: FrameRecord) {
        record.counts = std::mem::take(&mut self.counts);
        self.frames_closed += 1;
        let dump = &self.dump;
        let history = &mut self.history;
        self.assembler.close_frame(record, |r| {
            history.push(r);
            if let Some(w) = dump {
                w.push(r);
            }
        });
    }

    /// A sample of a retired submission; goes to the dump ahead of its frame.
    pub fn push_sample(&mut self, s: framescope_core::sample::SampleRecord) {
        self.regions.add(&s);
        if let Some(w) = &self.dump {
            w.push_sample(s);
        }
    }

    pub fn retire(&mut self, frame: u64, interval: Option<(u64, u64)>) {
        self.assembler.on_submission_retired(frame, interval);
    }

    pub fn poll(&mut self, now_ns: u64) {
        let dump = &self.dump;
        let history = &mut self.history;
        self.assembler.poll(now_ns, |r| {
            history.push(r);
            if let Some(w) = dump {
                w.push(r);
            }
        });
    }

    /// At device destruction: emit what is pending and write the summary.
    pub fn finish(&mut self) {
        framescope_core::alloc_count::report();
        let dump = &self.dump;
        let history = &mut self.history;
        self.assembler.flush(GpuMissing::Timeout, |r| {
            history.push(r);
            if let Some(w) = dump {
                w.push(r);
            }
        });
        if let Some(w) = self.dump.take() {
            w.finish();
        }
    }
}

pub type SharedFrameState = Mutex<FrameState>;
