//! The frame session: the one frame path both the Vulkan layer (one session per device) and
//! the GL shim (one per process) feed.
//!
//! A frame is closed at its end (present, swap, frame boundary) with its CPU part; the
//! session attaches the newest counter values from the [`CounterBoard`] and tells the
//! collector a frame ended, then the [`FrameAssembler`] holds it until its GPU time retired
//! (or its bound passed, when `gpu_missing` says why). Emitted frames go to the dump writer
//! and the HUD history; samples go to the dump ahead of their frame and to the regions table.
//! Everything here runs on the app's threads under the owner's frame lock: no I/O, no
//! allocation per frame.

pub mod assembly;
pub mod attribution;
pub mod counters;
pub mod draw_keys;
pub mod driver_latest;
pub mod history;
pub mod regions;

use crate::dump::DumpWriter;
use crate::model::frame::{FrameRecord, GpuMissing};
use crate::model::sample::SampleRecord;
use crate::session::assembly::{AssemblerOptions, FrameAssembler};
use crate::session::counters::{CounterBoard, CounterSnapshot};
use crate::session::history::FrameHistory;
use crate::session::regions::RegionTable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One dump at a time per process: the first session that asks while a dump is configured
/// takes it, and gives it back when it finishes, so a device created after another was
/// destroyed (a launcher's or a translation layer's probe device first, then the real one)
/// gets a dump of its own, in a numbered sibling file.
static DUMP_TAKEN: AtomicBool = AtomicBool::new(false);

/// What a session is built with.
pub struct SessionOptions {
    pub assembler: AssemblerOptions,
    /// Keep the newest frames and the regions table (for the HUD).
    pub history: bool,
    /// Where counter values come from; `None` with counters off.
    pub counters: Option<Arc<CounterBoard>>,
}

pub struct FrameSession {
    assembler: FrameAssembler,
    dump: Option<DumpWriter>,
    dump_checked: bool,
    history: Option<FrameHistory>,
    regions: Option<RegionTable>,
    counters: Option<Arc<CounterBoard>>,
    /// The last consistent copy of the board; a frame whose read raced a write gets this.
    snapshot: CounterSnapshot,
    frames_closed: u64,
    /// Driver counters' newest values, for the HUD.
    driver: crate::session::driver_latest::DriverLatest,
    /// Display reports from this session's display-time sources (to the dump and the HUD).
    display: Arc<crate::display::DisplayFeed>,
}

/// Where emitted frames go; split from the assembler so both can be borrowed at once.
struct Sinks<'a> {
    dump: &'a Option<DumpWriter>,
    history: &'a mut Option<FrameHistory>,
}

impl Sinks<'_> {
    fn emit(&mut self, r: FrameRecord) {
        if let Some(h) = self.history.as_mut() {
            h.push(r);
        }
        if let Some(w) = self.dump {
            w.push(r);
        }
    }
}

impl FrameSession {
    pub fn new(opts: SessionOptions) -> Self {
        FrameSession {
            assembler: FrameAssembler::new(opts.assembler),
            dump: None,
            dump_checked: false,
            history: opts.history.then(FrameHistory::default),
            regions: opts.history.then(RegionTable::default),
            counters: opts.counters,
            snapshot: CounterSnapshot::default(),
            frames_closed: 0,
            driver: Default::default(),
            display: Arc::default(),
        }
    }

    /// Starts the dump on first call when the config asks for one and no other session of
    /// the process has it; true when this session writes it.
    pub fn ensure_dump(&mut self, make: impl FnOnce() -> Option<DumpWriter>) -> bool {
        if self.dump_checked {
            return self.dump.is_some();
        }
        self.dump_checked = true;
        if crate::control::settings::get().dump.is_none() {
            return false;
        }
        if DUMP_TAKEN.swap(true, Ordering::AcqRel) {
            crate::runtime::log::info(format_args!(
                "another device of this process has the dump open: this one's frames are not dumped"
            ));
            return false;
        }
        self.dump = make();
        match &self.dump {
            Some(w) => {
                w.attach_display(Arc::clone(&self.display));
                w.finish_at_exit()
            }
            None => DUMP_TAKEN.store(false, Ordering::Release),
        }
        self.dump.is_some()
    }

    /// Where this session's display-time sources report (see [`crate::display`]).
    pub fn display(&self) -> &Arc<crate::display::DisplayFeed> {
        &self.display
    }

    pub fn dump(&self) -> Option<&DumpWriter> {
        self.dump.as_ref()
    }

    /// The assembler, for the owner's GPU bookkeeping (submissions, retirements, calibration,
    /// per-frame statistics).
    pub fn assembler(&mut self) -> &mut FrameAssembler {
        &mut self.assembler
    }

    pub fn assembler_ref(&self) -> &FrameAssembler {
        &self.assembler
    }

    pub fn history(&self) -> Option<&FrameHistory> {
        self.history.as_ref()
    }

    pub fn regions(&self) -> Option<&RegionTable> {
        self.regions.as_ref()
    }

    /// The counter board's catalogue, once the collector fixed it (names for the HUD).
    pub fn counters(&self) -> Option<&Arc<CounterBoard>> {
        self.counters.as_ref()
    }

    /// Frames closed so far.
    pub fn frames_closed(&self) -> u64 {
        self.frames_closed
    }

    /// Closes the open frame with its CPU part and returns its index. Counter values are the
    /// board's newest at this moment, each source with the window it covers.
    pub fn close(&mut self, mut record: FrameRecord) -> u64 {
        if let Some(b) = &self.counters {
            b.mark_frame(self.assembler.open_frame(), record.t_ns);
            b.read_into(&mut self.snapshot);
            record.counters = self.snapshot.values;
            record.counter_windows = self.snapshot.windows;
        }
        self.frames_closed += 1;
        let mut sinks = Sinks {
            dump: &self.dump,
            history: &mut self.history,
        };
        self.assembler.close_frame(record, |r| sinks.emit(r))
    }

    /// A sample of a retired submission: to the regions table, and to the dump ahead of its
    /// frame.
    /// The present (or swap) that ended `frame` returned at `t_ns`: see
    /// [`FrameAssembler::present_returned`].
    pub fn present_returned(&mut self, frame: u64, t_ns: u64) {
        let mut sinks = Sinks {
            dump: &self.dump,
            history: &mut self.history,
        };
        self.assembler.present_returned(frame, t_ns, |r| sinks.emit(r));
    }

    pub fn push_sample(&mut self, s: SampleRecord) {
        if let Some(r) = self.regions.as_mut() {
            r.add(&s);
        }
        if s.driver.is_some() {
            self.driver.add(&s);
        }
        if let Some(w) = &self.dump {
            w.push_sample(s);
        }
    }

    /// The driver-counter groups being collected (once they are known; a second device's or
    /// context's are ignored: the HUD shows the first's).
    pub fn set_driver_groups(&mut self, groups: &[crate::model::driver_values::DriverGroup]) {
        if self.driver.groups().is_empty() && !groups.is_empty() {
            self.driver.set_groups(groups.to_vec());
        }
    }

    /// Driver counters' newest values.
    pub fn driver_latest(&self) -> &crate::session::driver_latest::DriverLatest {
        &self.driver
    }

    /// Emits the frames whose GPU results are in (or whose bound passed).
    pub fn poll(&mut self, now_ns: u64) {
        let mut sinks = Sinks {
            dump: &self.dump,
            history: &mut self.history,
        };
        self.assembler.poll(now_ns, |r| sinks.emit(r));
    }

    /// Emits every closed frame now; those without GPU results get `missing`.
    pub fn flush(&mut self, missing: GpuMissing) {
        let mut sinks = Sinks {
            dump: &self.dump,
            history: &mut self.history,
        };
        self.assembler.flush(missing, |r| sinks.emit(r));
    }

    /// The end: emits what is pending and writes the dump's summary.
    pub fn finish(&mut self) {
        self.flush(GpuMissing::Timeout);
        if let Some(w) = self.dump.take() {
            w.finish();
            DUMP_TAKEN.store(false, Ordering::Release);
        }
    }
}
