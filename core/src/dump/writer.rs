//! The dump writer: a bounded lock-free queue filled by the app's threads and drained by
//! one writer thread that does all serialisation and I/O.
//!
//! Crash safety: lines are built in memory and handed to the kernel with one `write` per
//! batch, so a killed process leaves whole lines (the page cache outlives the process). The
//! only damage possible is a line cut by a kill in the middle of that `write`, always the
//! last one; `framescope report` tolerates it.
//!
//! Never hurting the app: the file is opened by [`super::open`] (no blocking open, no
//! truncation, no symbolic links), writes to a FIFO or device wait for the reader only on
//! this thread, and [`DumpWriter::finish`] waits for the thread a bounded time
//! ([`FINISH_LIMIT`]), then leaves it with one log line.

use super::attributing::Attributing;
use super::open::{self, Kind};
use super::path;
use super::record::{write_frame, write_header, DriverFrame, Header, ProcessFacts, SummaryRecord};
use crate::control::config::{Config, LogLevel};
use crate::model::frame::FrameRecord;
use crate::model::sample::LabelPath;
use crate::model::sample::SampleRecord;
use crate::runtime::clock::monotonic_now_ns;
use crate::session::draw_keys::{DrawTable, TOP};
use crate::stats::SummaryBuilder;
use crossbeam_queue::ArrayQueue;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long after the end of `dump_duration` the writer still waits for frames of the window
/// (their GPU results may lag by up to the assembler's 2 s timeout) when no later frame comes.
pub const END_GRACE_NS: u64 = 2_500_000_000;

/// How long [`DumpWriter::finish`] waits for the writer thread before leaving it. The thread
/// writes at least every 100 ms, so a healthy finish has little left to do; what takes longer
/// is a FIFO whose reader stopped reading or a stalled file system, which must not hold the
/// app's `vkDestroyDevice` or exit.
pub const FINISH_LIMIT: Duration = Duration::from_secs(3);

/// Settings of a [`DumpWriter`].
#[derive(Clone, Debug, PartialEq)]
pub struct DumpOptions {
    /// Path template (see [`path::expand_os`]); bytes, as paths are.
    pub path_template: OsString,
    /// Frames with `t_ns` before writer start + this are not written.
    pub dump_start_s: f64,
    /// Frames with `t_ns` at or after writer start + `dump_start_s` + this are not written;
    /// the summary is written when the first such frame arrives (or [`END_GRACE_NS`] later).
    pub dump_duration_s: Option<f64>,
    /// Frames the queue holds; a push into a full queue is counted as dropped.
    pub queue_capacity: usize,
    /// Samples the sample queue holds (see [`DumpWriter::push_sample`]).
    pub sample_queue_capacity: usize,
    /// How often the writer wakes to write what is queued (at most 100 ms by contract).
    pub flush_interval: Duration,
    pub log: LogLevel,
    /// Start with capture off (`dump_paused`): frames are written only between a capture
    /// start and stop ([`crate::control::capture`]).
    pub paused: bool,
    /// Serve the control socket ([`crate::control::ctl`]) while the writer runs.
    pub ctl: bool,
}

impl DumpOptions {
    /// Options for `path_template` with the defaults.
    pub fn new(path_template: impl Into<OsString>) -> Self {
        DumpOptions {
            path_template: path_template.into(),
            dump_start_s: 0.0,
            dump_duration_s: None,
            queue_capacity: 1024,
            sample_queue_capacity: 16 * 1024,
            flush_interval: Duration::from_millis(50),
            log: LogLevel::Info,
            paused: false,
            ctl: false,
        }
    }

    /// Options from the config; `None` when `dump` is unset.
    pub fn from_config(c: &Config) -> Option<Self> {
        let mut o = Self::new(c.dump.clone()?);
        o.dump_start_s = c.dump_start;
        o.dump_duration_s = c.dump_duration;
        o.log = c.log;
        o.paused = c.dump_paused;
        o.ctl = c.ctl;
        Some(o)
    }
}

struct Shared {
    queue: ArrayQueue<FrameRecord>,
    samples: ArrayQueue<SampleRecord>,
    dropped_samples: AtomicU64,
    /// False once dumping is off (unwritable file, window over, finished): pushes are no-ops.
    accepting: AtomicBool,
    stop: AtomicBool,
    /// Set when `finish` stopped waiting: a write waiting for a stream reader gives up.
    abandon: AtomicBool,
    /// Whether the writer thread has returned (or never started), with its condition variable.
    done: Mutex<bool>,
    done_cv: Condvar,
    dropped: AtomicU64,
    origin_ns: u64,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The summary's `ended_by` once the writer ends it; what a writer that failed says.
    ended_by: Mutex<&'static str>,
    /// Faults the layer saw (a lost device), written as `fault` records as they come.
    faults: Mutex<Vec<Fault>>,
    /// Where display reports come from, once the session attached it.
    display: Mutex<Option<Arc<crate::display::DisplayFeed>>>,
}

/// Something that went wrong below framescope and ended or changed the measurement: a `fault`
/// record in the dump (docs/dump-schema.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// `device_lost`, `surface_lost`.
    pub kind: &'static str,
    /// The Vulkan command that answered it (`vkQueueSubmit`, `vkQueuePresentKHR`, ...).
    pub call: &'static str,
    /// Its result, as the Vulkan headers name it.
    pub result: String,
    /// The frames closed before it (the frame it happened in is the next), when known.
    pub frame: Option<u64>,
    pub t_ns: u64,
}

/// Faults kept per dump; a driver that keeps failing adds nothing past these.
const MAX_FAULTS: usize = 16;

/// Handle to a dump writer. Cheap to clone; all clones feed the same file.
#[derive(Clone)]
pub struct DumpWriter {
    shared: Arc<Shared>,
}

impl DumpWriter {
    /// Starts a writer from the config (filling `header.config` with the config in effect);
    /// `None` when the config asks for no dump.
    pub fn from_config(config: &Config, mut header: Header) -> Option<DumpWriter> {
        let opts = DumpOptions::from_config(config)?;
        header.config = config.to_json();
        Some(Self::start(opts, header))
    }

    /// Starts the writer thread, which opens the file, writes the header and then the frames.
    /// Never fails: if the file cannot be written (or the thread not started), one stderr
    /// line says so and the writer ignores pushes.
    pub fn start(opts: DumpOptions, mut header: Header) -> DumpWriter {
        if header.config.is_null() {
            // Started without a Config: record what these options amount to.
            let c = Config {
                dump: Some(opts.path_template.clone()),
                dump_start: opts.dump_start_s,
                dump_duration: opts.dump_duration_s,
                log: opts.log,
                ..Config::default()
            };
            header.config = c.to_json();
        }
        crate::control::capture::init(!opts.paused);
        let shared = Arc::new(Shared {
            queue: ArrayQueue::new(opts.queue_capacity.max(1)),
            samples: ArrayQueue::new(opts.sample_queue_capacity.max(1)),
            dropped_samples: AtomicU64::new(0),
            accepting: AtomicBool::new(true),
            stop: AtomicBool::new(false),
            abandon: AtomicBool::new(false),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
            dropped: AtomicU64::new(0),
            origin_ns: monotonic_now_ns(),
            thread: Mutex::new(None),
            ended_by: Mutex::new("write error"),
            faults: Mutex::new(Vec::new()),
            display: Mutex::new(None),
        });
        let for_thread = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("framescope-dump".into())
            .spawn(move || {
                crate::runtime::alloc_count::mark_own_thread();
                open::block_sigpipe_on_this_thread();
                let _done = DoneOnDrop(&for_thread);
                run(&for_thread, &opts, &header)
            });
        match spawned {
            Ok(h) => *shared.thread.lock() = Some(h),
            Err(e) => {
                eprintln!("framescope: cannot start the dump writer thread: {e}; dumping disabled");
                shared.accepting.store(false, Ordering::Relaxed);
                crate::control::capture::end("no writer thread");
            }
        }
        DumpWriter { shared }
    }

    /// The session's display feed: frames then wait (bounded) for their display reports.
    pub fn attach_display(&self, feed: Arc<crate::display::DisplayFeed>) {
        *self.shared.display.lock() = Some(feed);
    }

    /// Records a fault for the writer (rare: allocates; at most [`MAX_FAULTS`] a dump).
    pub fn fault(&self, f: Fault) {
        if !self.shared.accepting.load(Ordering::Relaxed) {
            return;
        }
        let mut q = self.shared.faults.lock();
        if q.len() < MAX_FAULTS {
            q.push(f);
        }
    }

    /// Queues a finished frame. Never blocks, allocates or does I/O; when the queue is full
    /// the frame is counted as dropped. A no-op once dumping is off.
    pub fn push(&self, record: FrameRecord) {
        let s = &*self.shared;
        if !s.accepting.load(Ordering::Relaxed) {
            return;
        }
        if s.queue.push(record).is_err() {
            s.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queues a sample. Call it before pushing the sample's frame: the writer puts each frame's
    /// samples into its frame line. Never blocks or allocates; a full queue counts a drop.
    pub fn push_sample(&self, sample: SampleRecord) {
        let s = &*self.shared;
        if !s.accepting.load(Ordering::Relaxed) {
            return;
        }
        if s.samples.push(sample).is_err() {
            s.dropped_samples.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts samples the layer had to drop before they reached the queue (its own bounded
    /// rings were full); they appear in the summary's `dropped_samples`. Never blocks.
    pub fn add_dropped_samples(&self, n: u64) {
        if n > 0 {
            self.shared.dropped_samples.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Frames dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Whether pushes are still taken (false after an open/write error, the end of
    /// `dump_duration`, or [`DumpWriter::finish`]).
    pub fn is_active(&self) -> bool {
        self.shared.accepting.load(Ordering::Relaxed)
    }

    /// `CLOCK_MONOTONIC` ns when the writer started; `dump_start` counts from here.
    pub fn origin_ns(&self) -> u64 {
        self.shared.origin_ns
    }

    /// Writes what is queued and the summary (exactly once over all calls and clones), and
    /// joins the writer thread. Idempotent. Blocks for the final write, at most
    /// [`FINISH_LIMIT`] (then the thread is left and one line says so): call it at
    /// `vkDestroyDevice` and at exit, after flushing the assembler, never per frame.
    pub fn finish(&self) {
        finish_shared(&self.shared);
    }

    /// Registers an `atexit` hook that calls [`DumpWriter::finish`] at process exit, for a
    /// run that never destroys its device. In a `dlopen`ed library glibc runs it at
    /// `dlclose` instead, which is also the last moment the code exists.
    pub fn finish_at_exit(&self) {
        AT_EXIT.lock().push(Arc::downgrade(&self.shared));
        static REGISTER: std::sync::Once = std::sync::Once::new();
        REGISTER.call_once(|| {
            // SAFETY: `run_at_exit` is a plain `extern "C" fn()` that never unwinds (it catches
            // panics) and only touches 'static data, as atexit requires.
            let rc = unsafe { libc::atexit(run_at_exit) };
            if rc != 0 {
                eprintln!("framescope: cannot register the exit hook; the dump summary needs vkDestroyDevice");
            }
        });
    }
}

static AT_EXIT: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

extern "C" fn run_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let writers = std::mem::take(&mut *AT_EXIT.lock());
        for w in writers.iter().filter_map(Weak::upgrade) {
            finish_shared(&w);
        }
    });
}

/// Marks the writer thread done when its body returns or unwinds.
struct DoneOnDrop<'a>(&'a Shared);

impl Drop for DoneOnDrop<'_> {
    fn drop(&mut self) {
        crate::control::capture::end(*self.0.ended_by.lock());
        *self.0.done.lock() = true;
        self.0.done_cv.notify_all();
    }
}

/// Waits until the writer thread is done or `limit` passed; true when done.
fn wait_done(s: &Shared, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    let mut done = s.done.lock();
    while !*done {
        if s.done_cv.wait_until(&mut done, deadline).timed_out() {
            return *done;
        }
    }
    true
}

fn finish_shared(s: &Shared) {
    s.accepting.store(false, Ordering::Relaxed);
    crate::control::ctl::stop();
    // Its exit hook entry goes (a process making dump after dump must not collect them),
    // with any whose writer is gone.
    AT_EXIT
        .lock()
        .retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), s));
    // Holding the lock through the join makes a concurrent second finish wait for the
    // summary instead of returning before it is written.
    let mut guard = s.thread.lock();
    if let Some(h) = guard.take() {
        if h.thread().id() == std::thread::current().id() {
            return;
        }
        s.stop.store(true, Ordering::Release);
        h.thread().unpark();
        // Most of the limit for the summary; then a write stuck on a stream reader is told to
        // give up (it notices within its 100 ms poll step) and gets the rest to return.
        let mut done = wait_done(s, FINISH_LIMIT.mul_f32(0.8));
        if !done {
            s.abandon.store(true, Ordering::Release);
            done = wait_done(s, FINISH_LIMIT.mul_f32(0.2));
        }
        if done {
            // A panic on the writer thread has already lost the file; nothing to add here.
            let _ = h.join();
        } else {
            // Dropping the handle detaches the thread; it ends with the process.
            eprintln!(
                "framescope: the dump writer did not finish within {} s (its file system or reader \
                 is stalled); leaving it, so the dump may lack its summary",
                FINISH_LIMIT.as_secs()
            );
        }
    }
}

fn exe_name_and_path() -> (String, String) {
    let path = std::env::current_exe()
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
        .or_else(|| std::env::args_os().next().map(|a| a.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let name = path.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("unknown");
    (name.to_string(), path)
}

/// Moves the samples of `frame` into `out`; older ones (their frame was never written) are
/// dropped, those of later frames stay.
fn collect_samples(q: &mut VecDeque<SampleRecord>, frame: u64, out: &mut Vec<SampleRecord>) {
    while let Some(x) = q.front() {
        if x.frame > frame {
            return;
        }
        if let Some(x) = q.pop_front().filter(|x| x.frame == frame) {
            out.push(x);
        }
    }
}

/// A `mark` record: `label` asked for at `t_ns`, before frame `frame` (the first frame at
/// or after it), or after the last frame.
fn write_mark(out: &mut Vec<u8>, t_ns: u64, frame: Option<u64>, label: &str) {
    let line = serde_json::json!({"type": "mark", "t_ns": t_ns, "frame": frame, "label": label});
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
}

/// A `fault` record.
fn write_fault(out: &mut Vec<u8>, f: &Fault) {
    let line = serde_json::json!({
        "type": "fault",
        "kind": f.kind,
        "call": f.call,
        "result": f.result,
        "frame": f.frame,
        "t_ns": f.t_ns,
    });
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
}

/// How many times its queues' capacities the writer holds while attributed counters arrive.
const HELD: usize = 4;

/// How long a finishing writer waits for the attributed counters of the last frames (the
/// NVIDIA sampler publishes every 100 ms).
const FINISH_HOLD: Duration = Duration::from_millis(200);

/// At finish: waits up to [`FINISH_HOLD`] for the samples of the newest frame.
fn wait_for_last(a: &mut Attributing, last: Option<&FrameRecord>) {
    let Some(last) = last else { return };
    let start = std::time::Instant::now();
    while !a.covers(last) && start.elapsed() < FINISH_HOLD {
        std::thread::sleep(Duration::from_millis(10));
        a.poll(monotonic_now_ns());
    }
}

/// How long the writer waits for the collector's first round (library loads, device scans)
/// before it writes the header without counters.
const COUNTERS_WAIT: Duration = Duration::from_secs(3);

/// Fills the header's counter catalogue and the sources that could not run from the
/// collector's board, on the writer's thread.
fn complete_counters(h: &mut Header, s: &Shared) {
    let Some(board) = h.counter_board.clone() else {
        return;
    };
    // In short steps, and no longer once the frame or the sample queue is half full: frames
    // and samples queued meanwhile must not be dropped for the sake of a complete header (a
    // fresh-clone CI run lost 3637 draw samples to this wait on a loaded machine).
    let start = std::time::Instant::now();
    while !board.wait_started(Duration::from_millis(10)) {
        let half_full = |len: usize, cap: usize| len * 2 >= cap;
        if start.elapsed() >= COUNTERS_WAIT
            || s.stop.load(Ordering::Acquire)
            || half_full(s.queue.len(), s.queue.capacity())
            || half_full(s.samples.len(), s.samples.capacity())
        {
            break;
        }
    }
    if !board.is_started() {
        h.unavailable.push(crate::model::counter_values::Unavailable {
            source: "counters".into(),
            reason: format!(
                "the collector's sources were not ready when the header was written (after {:.1} s): no counters in this dump",
                start.elapsed().as_secs_f64()
            ),
        });
        return;
    }
    if let Some(c) = board.catalogue() {
        h.counters = c.counters.clone();
        h.counter_sources = c.sources.clone();
    }
    h.unavailable.extend(board.unavailable());
    if let (Some(d), Some(g)) = (h.device.as_mut(), board.gpu()) {
        fill_pci_ids(d, g);
    }
}

/// A device the API could not name by PCI ids (NVIDIA's GL) takes those of the GPU a counter
/// source picked for it, and says where they came from.
fn fill_pci_ids(d: &mut super::record::DeviceInfo, g: &crate::session::counters::GpuIdentity) {
    if d.vendor_id != 0 || d.device_id != 0 {
        return;
    }
    d.vendor_id = g.vendor_id;
    d.device_id = g.device_id;
    d.extra.insert("pci_bus".into(), g.pci_bus.clone().into());
    d.extra.insert("pci_ids_from".into(), g.source.clone().into());
}

/// A written frame's timeline fields into the summary, as `report` reads them back.
fn add_timeline(
    t: &mut crate::stats::timeline_stats::TimelineStats,
    r: &FrameRecord,
    causes: &mut Vec<crate::model::stutter::Cause>,
) {
    use crate::model::waits::WaitKind;
    let cpu = &r.cpu;
    let waits = WaitKind::ALL.iter().zip(cpu.waits.0).map(|(k, ns)| (k.name(), ns));
    t.add_cpu(cpu.busy_ns(r.t_ns), cpu.wait_ns(), cpu.present_ns, Some(waits));
    if let Some(median) = r.stutter_median_ns {
        crate::model::stutter::causes(cpu, causes);
        let excess = r.cpu_frame_ns.unwrap_or(0).saturating_sub(median);
        let explained = crate::model::stutter::explained(causes, excess);
        t.add_stutter(explained, causes.iter().map(|c| (c.name, c.ns)));
    }
    let d = &r.display;
    t.add_display(
        d.state.name(),
        d.source.map(|s| s.name()),
        d.shown_ns,
        d.latency_ns(cpu.start_ns),
        d.displayed_ns,
    );
}

/// The dump file, opened by the writer thread, and what the header says about the process.
struct Output {
    file: std::fs::File,
    /// The path as messages show it.
    shown: String,
    facts: ProcessFacts,
}

/// Opens the dump (a sibling file when the asked one exists), announces it, and says so;
/// `None` after one line saying why it cannot be written.
fn open_dump(s: &Shared, opts: &DumpOptions) -> Option<Output> {
    let pid = std::process::id();
    let (exe_name, exe_path) = exe_name_and_path();
    let start_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let home = std::env::var_os("HOME");
    let asked = std::path::PathBuf::from(path::expand_os(
        &opts.path_template,
        pid,
        &exe_name,
        start_unix_ns / 1_000_000_000,
        home.as_deref(),
    ));
    let mut shown = open::display(asked.as_os_str());
    let opened = match open::open_output(&asked, true) {
        Ok(o) => o,
        Err(e) => {
            fail(s, &shown, e);
            return None;
        }
    };
    if opened.sibling {
        let now = open::display(opened.path.as_os_str());
        if opts.log >= LogLevel::Info {
            eprintln!(
                "framescope: '{shown}' already exists; writing the dump to '{now}' instead \
                 (put %p in the dump path for one file per process)"
            );
        }
        shown = now;
    } else if opts.log >= LogLevel::Debug {
        eprintln!("framescope: writing dump to '{shown}'");
    }
    if opened.kind == Kind::NewFile {
        super::announce::announce(&opened.path);
    }
    if opened.kind == Kind::Stream && opts.log >= LogLevel::Debug {
        eprintln!("framescope: '{shown}' is a FIFO or device: the dump streams to it");
    }
    let facts = ProcessFacts {
        pid,
        exe: exe_path,
        args: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
        path: opened.path.to_string_lossy().into_owned(),
        start_ns: s.origin_ns,
        start_unix_ns,
        queue_capacity: s.queue.capacity(),
    };
    Some(Output {
        file: opened.file,
        shown,
        facts,
    })
}

/// The dump cannot be written: one line, and pushes stop.
fn fail(s: &Shared, shown: &str, e: std::io::Error) {
    eprintln!("framescope: cannot write dump '{shown}': {e}; dumping disabled");
    s.accepting.store(false, Ordering::Relaxed);
}

/// What the writer thread keeps between rounds: the frames and samples taken from the queues
/// and waiting, the capture timeline, and what the summary is built from.
struct Rounds<'a> {
    s: &'a Shared,
    header: &'a Header,
    batch: Vec<u8>,
    window_start: u64,
    window_end: Option<u64>,
    stats: SummaryBuilder,
    /// Judges each written frame against the ones written before it.
    stutters: crate::model::stutter::Detector,
    draws: DrawTable<LabelPath>,
    /// Frames and samples taken from the queues wait here: a frame later than the capture
    /// changes taken so far, or one whose attributed counters or display report have not
    /// arrived (bounded by the queues' capacities and the hold bounds).
    frames: VecDeque<FrameRecord>,
    samples: VecDeque<SampleRecord>,
    attributing: Option<Attributing>,
    display: Option<crate::display::join::DisplayJoin>,
    frame_samples: Vec<SampleRecord>,
    driver: Vec<super::driver_frames::FrameGroupValues>,
    /// Capture changes and marks, applied to frames by their time.
    timeline: crate::control::capture::Timeline,
    changes: Vec<crate::control::capture::Change>,
    marks: Vec<(u64, String)>,
    faults: Vec<Fault>,
    causes: Vec<crate::model::stutter::Cause>,
}

impl<'a> Rounds<'a> {
    fn new(s: &'a Shared, opts: &DumpOptions, header: &'a Header) -> Self {
        let secs = |x: f64| (x * 1e9) as u64;
        let window_start = s.origin_ns.saturating_add(secs(opts.dump_start_s));
        Rounds {
            s,
            header,
            batch: Vec::with_capacity(64 * 1024),
            window_start,
            window_end: opts.dump_duration_s.map(|d| window_start.saturating_add(secs(d))),
            stats: SummaryBuilder::new(),
            stutters: crate::model::stutter::Detector::default(),
            draws: DrawTable::new(),
            frames: VecDeque::new(),
            samples: VecDeque::new(),
            attributing: header
                .counter_board
                .as_ref()
                .and_then(|b| b.attributor())
                .and_then(|a| Attributing::new(a, &header.counters, &header.counter_sources)),
            display: None,
            frame_samples: Vec::new(),
            driver: Vec::new(),
            timeline: crate::control::capture::Timeline::new(!opts.paused),
            changes: Vec::new(),
            marks: Vec::new(),
            faults: Vec::new(),
            causes: Vec::new(),
        }
    }

    /// Takes the capture changes; the time up to which frames may be judged by them.
    fn take_changes(&mut self, stopping: bool) -> u64 {
        let horizon = if stopping {
            crate::control::capture::take(&mut self.changes);
            u64::MAX
        } else {
            crate::control::capture::take(&mut self.changes)
        };
        for c in self.changes.drain(..) {
            self.timeline.add(c);
        }
        horizon
    }

    /// Takes what the queues, the faults list and the display feed hold. Faults first: a frame
    /// pushed before a fault is then taken too, so the fault goes out after it (the layer
    /// flushes a lost device's frames, then faults).
    fn drain(&mut self) {
        let s = self.s;
        self.faults.extend(s.faults.lock().drain(..));
        while let Some(r) = s.queue.pop() {
            self.frames.push_back(r);
        }
        while let Some(x) = s.samples.pop() {
            self.samples.push_back(x);
        }
        if self.display.is_none() {
            self.display = s.display.lock().clone().map(crate::display::join::DisplayJoin::new);
        }
        if let Some(d) = self.display.as_mut() {
            d.poll();
        }
    }

    /// Takes the attributed counters' news; at the end, waits (bounded) for the last frame's.
    fn attribute(&mut self, stopping: bool) {
        if let Some(a) = self.attributing.as_mut() {
            a.poll(monotonic_now_ns());
            if stopping {
                wait_for_last(a, self.frames.back());
            }
            a.write_series(self.window_start, self.window_end.unwrap_or(u64::MAX), &mut self.batch);
        }
    }

    /// Whether the oldest frame waits for more (attributed counters, its display report).
    fn holds(&self, head: &FrameRecord) -> bool {
        let now = monotonic_now_ns();
        self.attributing.as_ref().is_some_and(|a| a.holds(head, now))
            || self.display.as_ref().is_some_and(|d| d.holds(head, now))
    }

    /// Writes every frame that may go out; true when one past `dump_duration` came.
    fn emit_frames(&mut self, horizon: u64, stopping: bool) -> bool {
        // Held frames past four times the queues' capacities go out without waiting longer
        // (4096 frames of 1264 bytes and 65 536 samples of 184 by default: 17 MB at most, on
        // this thread; a light app at 10 000 frames/s fills 1000 frames in the 100 ms the
        // PM sampler takes between publishes).
        let s = self.s;
        let overfull =
            self.frames.len() >= HELD * s.queue.capacity() || self.samples.len() >= HELD * s.samples.capacity();
        let hold = !stopping && !overfull;
        while let Some(head) = self.frames.front() {
            if head.t_ns > horizon || (hold && self.holds(head)) {
                break;
            }
            let Some(r) = self.frames.pop_front() else { break };
            let captured = self.timeline.at(r.t_ns, &mut self.marks);
            for (t_ns, label) in self.marks.drain(..) {
                write_mark(&mut self.batch, t_ns, Some(r.frame), &label);
            }
            if self.window_end.is_some_and(|end| r.t_ns >= end) {
                return true;
            }
            // Taken also for a frame not written, so its samples do not pile up.
            self.frame_samples.clear();
            collect_samples(&mut self.samples, r.frame, &mut self.frame_samples);
            if r.t_ns >= self.window_start && captured {
                self.write(r);
            }
        }
        false
    }

    /// Writes one frame with its samples, and adds it to the summary.
    fn write(&mut self, mut r: FrameRecord) {
        let header = self.header;
        for x in &self.frame_samples {
            self.draws.add_sample(x);
        }
        r.stutter_median_ns = self.stutters.push(r.cpu_frame_ns);
        if let Some(d) = self.display.as_mut() {
            d.apply(&mut r);
        }
        let note = self.attributing.as_mut().map(|a| a.apply(&mut r, &self.frame_samples));
        super::driver_frames::frame_values(&header.driver_groups, &self.frame_samples, &mut self.driver);
        write_frame(
            &mut self.batch,
            &r,
            &header.counters,
            &header.counter_sources,
            &self.frame_samples,
            note,
            DriverFrame {
                groups: &header.driver_groups,
                values: &self.driver,
            },
        );
        let stats = &mut self.stats;
        stats.add(r.t_ns, r.cpu_frame_ns, r.gpu.busy_ns);
        add_timeline(&mut stats.timeline, &r, &mut self.causes);
        for (i, v) in r.counters.iter() {
            if let Some(c) = header.counters.get(i) {
                stats.add_counter(&c.name, v);
            }
        }
        // Means over the frames that carried each counter's group (summary `counters`).
        for v in &self.driver {
            if let Some(g) = header.driver_groups.get(usize::from(v.group)) {
                for (name, x) in g.names.iter().zip(&v.values) {
                    stats.add_counter(&crate::model::driver_values::summary_name(name), *x);
                }
            }
        }
    }

    /// After the frames taken so far, which came before them: the app may abort right after
    /// a lost device, so the record is written at once rather than with the summary.
    fn emit_faults(&mut self) {
        for f in self.faults.drain(..) {
            write_fault(&mut self.batch, &f);
        }
    }

    /// The end: the marks left, then the summary line.
    fn finish(&mut self, ended_by: &'static str) {
        let s = self.s;
        s.accepting.store(false, Ordering::Relaxed);
        *s.ended_by.lock() = ended_by;
        crate::control::capture::take(&mut self.changes);
        for c in self.changes.drain(..) {
            self.timeline.add(c);
        }
        self.timeline.rest(&mut self.marks);
        for (t_ns, label) in self.marks.drain(..) {
            write_mark(&mut self.batch, t_ns, None, &label);
        }
        let mut summary = self.stats.summary();
        summary.draws_top = self.draws.top(TOP, |l| crate::model::labels::path_string(l.ids()));
        summary.draw_keys = self.draws.keys() as u64;
        summary.draws_untracked = self.draws.untracked();
        let summary = SummaryRecord {
            summary,
            dropped_frames: s.dropped.load(Ordering::Relaxed),
            dropped_samples: s.dropped_samples.load(Ordering::Relaxed),
            produced_by: "writer".into(),
            ended_by: ended_by.into(),
        };
        self.batch.extend_from_slice(summary.to_line().as_bytes());
        self.batch.push(b'\n');
    }
}

/// The writer thread's body.
fn run(s: &Shared, opts: &DumpOptions, header: &Header) {
    // Here, not on the app's thread: it makes a directory and binds a socket.
    if opts.ctl {
        crate::control::ctl::start();
    }
    let Some(out) = open_dump(s, opts) else { return };
    // The file exists before the (bounded) wait for the counter catalogue: an app killed in
    // its first seconds leaves a dump, not no file (glxgears under `timeout 2` on a loaded
    // machine did).
    let mut header = header.clone();
    complete_counters(&mut header, s);
    let give_up = || s.abandon.load(Ordering::Acquire);
    let mut rounds = Rounds::new(s, opts, &header);
    write_header(&mut rounds.batch, &header, &out.facts);
    let flush_interval = opts.flush_interval.min(Duration::from_millis(100));
    loop {
        // Read `stop` before draining: every push that happened before finish() is then
        // already in the queue.
        let stopping = s.stop.load(Ordering::Acquire);
        let horizon = rounds.take_changes(stopping);
        rounds.drain();
        rounds.attribute(stopping);
        let mut window_over = rounds.emit_frames(horizon, stopping);
        rounds.emit_faults();
        if rounds
            .window_end
            .is_some_and(|end| monotonic_now_ns() >= end.saturating_add(END_GRACE_NS))
        {
            window_over = true;
        }
        let ended_by = match (window_over, stopping) {
            (true, _) => Some("dump_duration"),
            (false, true) => Some("finish"),
            (false, false) => None,
        };
        if let Some(ended_by) = ended_by {
            rounds.finish(ended_by);
        }
        if !rounds.batch.is_empty() {
            // One write per batch of whole lines; see the module docs.
            if let Err(e) = open::write_all(&out.file, &rounds.batch, &give_up) {
                return fail(s, &out.shown, e);
            }
            rounds.batch.clear();
        }
        if ended_by.is_some() {
            return;
        }
        std::thread::park_timeout(flush_interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::record::DeviceInfo;
    use crate::session::counters::GpuIdentity;

    fn device(vendor_id: u32, device_id: u32) -> DeviceInfo {
        DeviceInfo {
            name: "NVIDIA H100 80GB HBM3/PCIe/SSE2".into(),
            vendor_id,
            device_id,
            driver_name: None,
            driver_info: None,
            driver_version_raw: 0,
            api_version_raw: 0,
            extra: Default::default(),
        }
    }

    #[test]
    fn a_device_without_pci_ids_takes_those_the_counter_source_picked() {
        let g = GpuIdentity {
            vendor_id: 0x10de,
            device_id: 0x2330,
            pci_bus: "0000:18:00.0".into(),
            source: "nvml".into(),
        };
        let mut d = device(0, 0);
        fill_pci_ids(&mut d, &g);
        assert_eq!((d.vendor_id, d.device_id), (0x10de, 0x2330));
        assert_eq!(d.extra["pci_bus"], "0000:18:00.0");
        assert_eq!(d.extra["pci_ids_from"], "nvml");

        // The API's own ids (Vulkan, Mesa's GLX) are kept.
        let mut d = device(0x1002, 0x744c);
        fill_pci_ids(&mut d, &g);
        assert_eq!((d.vendor_id, d.device_id), (0x1002, 0x744c));
        assert!(d.extra.is_empty());
    }
}
