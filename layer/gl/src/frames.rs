//! Per-context frame state and the frame protocol at swap time.
//!
//! A frame of a context runs from the end of one swap to the end of the next (the first one
//! from the make-current that first bound the context). For each frame the shim writes two
//! `GL_TIMESTAMP`s with `glQueryCounter`: one right after the previous swap returned (the
//! frame's begin) and one just before the real swap (its end). The pair goes into a ring of
//! [`RING`] slots and is read frames later, oldest first, only once
//! `GL_QUERY_RESULT_AVAILABLE` says so: never a wait, never `glFinish`. The frame's GPU time
//! (`gpu_busy_ns` = `gpu_span_ns`) is end − begin: the GPU time between the frame's first and
//! last command, idle gaps inside the frame included.
//!
//! Frames go through `framescope_core`'s [`FrameSession`] (the one shared with the Vulkan
//! layer): `on_submit` on its assembler once per frame whose pair was written,
//! `on_submission_retired` when the pair is read, `close` at swap.
//!
//! One frame session (assembler, dump, counters) per process, fed by every measured context: the frame
//! index counts swaps in the process. Apps recreate contexts (glmark2 makes one per scene,
//! games on a mode change), so the stream outlives them: destroying a context reads what it
//! has ready, frees its queries and, when it was the last live context, emits every pending
//! frame; the summary is written at process exit. Per-context state (queries, GL entry points,
//! samples, driver counters and the HUD's slot) lives in one registry keyed by (window system,
//! context handle), found once per swap phase, and is freed at context destruction.

use crate::gl::{GlFns, GlInfo};
use crate::winsys::{self, WinSys};
use crate::{draw_counts, driver_counters, samples};
use framescope_core::assembly::{AssemblerOptions, FrameAssembler};
use framescope_core::clock::monotonic_now_ns;
use framescope_core::dump::{Api, DeviceInfo, DumpWriter, Header, Unavailable};
use framescope_core::frame::{FrameCounts, FrameEnd, FrameRecord, GpuMissing};
use framescope_core::session::{FrameSession, SessionOptions};
use framescope_core::sync::Mutex;
use framescope_core::{guard, log, settings};
use framescope_overlay::{HudData, HudOptions};
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

/// Timestamp pairs in flight per context. Equal to the assembler's frame timeout, so a slot is
/// only reused for a frame the assembler has already given up on.
pub const RING: usize = 32;

/// How often the GPU-to-CPU clock offset is re-measured.
const CALIBRATION_INTERVAL_NS: u64 = 1_000_000_000;

#[derive(Clone, Copy, Default)]
struct Pair {
    begin: u32,
    end: u32,
    frame: u64,
}

/// Measurement state of one context.
struct Ctx {
    ws: WinSys,
    key: usize,
    /// Not measured (Zink, or GL could not be loaded): swaps pass through untouched.
    skip: bool,
    /// The context's entry points, shared with its samples and its HUD.
    gl: Option<Arc<GlFns>>,
    info: GlInfo,
    timing: bool,
    query_buffer: bool,
    /// Query names: `ring[i].begin`/`.end` are fixed per slot; `frame` is set per use.
    ring: [Pair; RING],
    /// Oldest pair written and not yet read.
    head: usize,
    /// Pairs written and not yet read.
    len: usize,
    /// Slot whose begin timestamp was written for the open frame (always `(head + len) % RING`).
    open_begin: Option<usize>,
    next_calibration_ns: u64,
    /// Pairs abandoned because the ring was full (the GPU was more than RING frames behind).
    abandoned: u64,
    frames: u64,
    /// Samples and per-frame statistics (`samples` module); `None` with `samples=off` or
    /// without timer queries.
    samples: Option<samples::CtxSamples>,
    /// Driver counters (`driver_counters=1`), or why there are none (`None`: not asked for).
    monitors: Result<driver_counters::Shared, Option<String>>,
    /// The context's HUD, set up by the HUD at the first frame it draws there.
    hud: HudSlot,
}

/// A context's HUD state, opaque here: the HUD sits above the frame protocol, which owns every
/// context's state; the HUD takes this lock itself, outside the frame lock.
pub type HudSlot = Arc<Mutex<Option<Box<dyn Any + Send>>>>;

struct State {
    contexts: Vec<Ctx>,
    /// The process's frame session, created with the first measured context (its timer
    /// support decides `gpu_timing`).
    session: Option<FrameSession>,
}

static STATE: Mutex<State> = Mutex::new(State {
    contexts: Vec::new(),
    session: None,
});

/// What `before_swap` hands to `after_swap`.
pub struct SwapToken {
    pub ws: WinSys,
    /// The context's handle.
    pub key: usize,
}

/// A frame closed by [`before_swap`], for what runs before the real swap (the HUD).
pub struct Closed {
    pub token: SwapToken,
    /// Index of the frame that this swap ends (the dump's `frame`).
    pub frame: u64,
    /// The context's entry points.
    pub gl: Arc<GlFns>,
    pub hud: HudSlot,
}

/// The session, created on first use (`first`: the first measured context).
fn session_of<'a>(slot: &'a mut Option<FrameSession>, first: &Ctx) -> &'a mut FrameSession {
    slot.get_or_insert_with(|| {
        FrameSession::new(SessionOptions {
            assembler: AssemblerOptions {
                timeout_frames: RING as u64,
                gpu_timing: first.timing,
                await_present_return: true,
                ..AssemblerOptions::default()
            },
            history: settings::get().hud,
            counters: session_board(first),
        })
    })
}

/// Starts the dump when the first measured context swaps, if one is configured.
fn ensure_dump(session: &mut FrameSession, first: &Ctx) {
    let started = session.ensure_dump(|| {
        let mut h = first.header();
        h.counter_board = session_board(first);
        DumpWriter::from_config(settings::get(), h)
    });
    if started {
        // Registered after the writer's own hook, so it runs first (atexit is LIFO) and the
        // frames still in the assembler reach the file before the summary.
        register_exit_flush();
    }
}

/// The process's counter board (the first context's renderer picks the GPU).
fn session_board(first: &Ctx) -> Option<std::sync::Arc<framescope_core::counters::CounterBoard>> {
    let hint = framescope_collectors::GpuHint::Name(first.info.renderer.clone());
    framescope_collectors::builtin::board_for(settings::get(), hint)
}

impl Ctx {
    /// Sets up a context that is current on the calling thread.
    fn new(ws: WinSys, key: usize) -> Ctx {
        let cfg = settings::get();
        let mut c = Ctx {
            ws,
            key,
            skip: true,
            gl: None,
            info: GlInfo::default(),
            timing: false,
            query_buffer: false,
            ring: [Pair::default(); RING],
            head: 0,
            len: 0,
            open_begin: None,
            next_calibration_ns: 0,
            abandoned: 0,
            frames: 0,
            samples: None,
            monitors: Err(None),
            hud: HudSlot::default(),
        };
        let Some((gl, info)) = GlFns::load(ws) else {
            log::error(format_args!(
                "cannot load glGetString for a {} context; not measuring it",
                ws.name()
            ));
            return c;
        };
        c.info = info;
        if c.info.is_zink() {
            log::debug(format_args!(
                "{} context on '{}' is Zink: left to the Vulkan layer",
                ws.name(),
                c.info.renderer
            ));
            return c;
        }
        let gl = Arc::new(gl);
        // gpu_timing=0: no timer queries of ours; frames close with gpu_missing = disabled.
        c.timing = cfg.gpu_timing && gl.supports_timestamps(&c.info);
        c.query_buffer = c.timing && gl.has_query_buffer(&c.info);
        if c.timing {
            let mut names = [0u32; 2 * RING];
            gl.gen_queries(&mut names);
            if names.contains(&0) {
                c.timing = false;
            } else {
                for (i, p) in c.ring.iter_mut().enumerate() {
                    p.begin = names[2 * i];
                    p.end = names[2 * i + 1];
                }
            }
        }
        if c.timing {
            c.samples = samples::create(&gl, &c.info, cfg.samples);
        }
        if cfg.driver_counters {
            // Debug groups are samples from `renderpass` on (GL has no render passes).
            use framescope_core::config::Samples;
            let by_group = matches!(
                cfg.effective_samples(),
                Samples::Renderpass | Samples::Label | Samples::Draw
            );
            c.monitors = driver_counters::create(ws, &gl, &c.info, by_group)
                .map(|m| std::sync::Arc::new(framescope_core::sync::Mutex::new(m)))
                .map_err(Some);
        }
        c.skip = false;
        c.gl = Some(gl);
        log::debug(format_args!(
            "measuring {} context on '{}' ({}), GPU timing {}, hud {}",
            ws.name(),
            c.info.renderer,
            c.info.version,
            if c.timing { "on" } else { "off" },
            if cfg.hud { "on" } else { "off" },
        ));
        c
    }

    fn api(&self) -> Api {
        if self.info.es {
            Api::OpenGLES
        } else {
            Api::OpenGL
        }
    }

    /// Writes the begin timestamp of the open frame into the next ring slot.
    fn begin_frame(&mut self) {
        let Some(gl) = &self.gl else { return };
        if !self.timing || self.open_begin.is_some() {
            return;
        }
        if self.len == RING {
            // The GPU is RING frames behind: the assembler has already timed the oldest frame
            // out, so its pair is abandoned rather than waited for.
            self.head = (self.head + 1) % RING;
            self.len -= 1;
            self.abandoned += 1;
        }
        let slot = (self.head + self.len) % RING;
        gl.timestamp_own_scene(self.ring[slot].begin);
        self.open_begin = Some(slot);
    }

    /// Ends the open frame's GPU part: writes its end timestamp and registers the pair.
    fn end_frame(&mut self, assembler: &mut FrameAssembler) {
        let Some(gl) = &self.gl else { return };
        match self.open_begin.take() {
            Some(slot) => {
                gl.timestamp_own_scene(self.ring[slot].end);
                self.ring[slot].frame = assembler.on_submit();
                self.len += 1;
            }
            // A context without timer queries in a stream that has them: say so per frame.
            None if !self.timing => {
                let f = assembler.on_submit();
                assembler.on_submission_retired(f, None);
            }
            // Ring slot not written (the context was set up at this swap): no pair.
            None => {}
        }
    }

    /// Reads every pair whose results are available, oldest first; stops at the first one that
    /// is not (so nothing ever waits).
    fn read_available(&mut self, assembler: &mut FrameAssembler) {
        let Some(gl) = &self.gl else { return };
        if self.len == 0 {
            return;
        }
        // A buffer bound to GL_QUERY_BUFFER would turn the reads into buffer writes.
        let saved = if self.query_buffer {
            gl.query_buffer_binding()
        } else {
            0
        };
        if saved != 0 {
            gl.bind_query_buffer(0);
        }
        while self.len > 0 {
            let p = self.ring[self.head];
            if !(gl.available(p.end) && gl.available(p.begin)) {
                break;
            }
            let (b, e) = (gl.result(p.begin), gl.result(p.end));
            assembler.on_submission_retired(p.frame, Some((b, e.max(b))));
            self.head = (self.head + 1) % RING;
            self.len -= 1;
        }
        if saved != 0 {
            gl.bind_query_buffer(saved);
        }
    }

    /// Maps GPU timestamps onto CLOCK_MONOTONIC from `glGetInteger64v(GL_TIMESTAMP)`.
    fn calibrate(&mut self, now_ns: u64, assembler: &mut FrameAssembler) {
        if !self.timing || now_ns < self.next_calibration_ns {
            return;
        }
        self.next_calibration_ns = now_ns + CALIBRATION_INTERVAL_NS;
        let Some(gl) = &self.gl else { return };
        if let Some(gpu) = gl.gpu_now() {
            let cpu = (now_ns as i64 + monotonic_now_ns() as i64) / 2;
            assembler.set_calibration(Some(cpu - gpu));
        }
    }

    fn header(&self) -> Header {
        let mut h = Header::new(self.api());
        let mut extra = serde_json::Map::new();
        extra.insert("window_system".into(), self.ws.name().into());
        extra.insert("gl_version".into(), self.info.version.clone().into());
        if let Some(v) = self.info.driver_version() {
            extra.insert("driver_version".into(), v.into());
        }
        // Once, at the first swap, with the context current (Mesa answers from its own state).
        let ids = self.gl.as_ref().and_then(|g| g.renderer_ids());
        h.device = Some(DeviceInfo {
            name: self.info.renderer.clone(),
            vendor_id: ids.map_or(0, |i| i.0),
            device_id: ids.map_or(0, |i| i.1),
            driver_name: Some(self.info.vendor.clone()),
            driver_info: Some(self.info.version.clone()),
            driver_version_raw: self.info.mesa_version_raw(),
            api_version_raw: (self.info.major.min(127) << 22) | (self.info.minor.min(1023) << 12),
            extra,
        });
        // GL timestamps are in nanoseconds.
        h.timestamp_period = self.timing.then_some(1.0);
        if !self.timing && settings::get().gpu_timing {
            h.unavailable.push(Unavailable {
                source: "gl_timer_query".into(),
                reason: "the context has no GL_TIMESTAMP queries (GL 3.3, GL_ARB_timer_query or GL_EXT_disjoint_timer_query)".into(),
            });
        }
        h.unavailable
            .extend(samples::unavailable(self.samples.as_ref(), self.timing, self.info.es));
        match &self.monitors {
            Ok(m) => h.driver_groups = m.lock().groups(),
            Err(why) => h.unavailable.push(Unavailable {
                source: "gl_performance_monitor".into(),
                reason: why.clone().unwrap_or_else(|| {
                    format!(
                        "driver_counters=0 (the default); driver_counters=1 reads {} or {} per frame, rotated",
                        driver_counters::AMD,
                        driver_counters::INTEL
                    )
                }),
            }),
        }
        // GL timestamps are mapped onto CLOCK_MONOTONIC from glGetInteger64v(GL_TIMESTAMP).
        h.extra.insert("calibrated_timestamps".into(), self.timing.into());
        h.extra.insert("hud_enabled".into(), settings::get().hud.into());
        h.extra.insert(
            "gl_draw_counting".into(),
            "every glDraw*/glMultiDraw* call, whether the app looked the entry point up (GetProcAddress/dlsym) or imports it from libGL; legacy glBegin/glEnd and display lists too"
                .into(),
        );
        h
    }
}

fn position(list: &[Ctx], ws: WinSys, key: usize) -> Option<usize> {
    list.iter().position(|c| c.ws == ws && c.key == key)
}

/// Index of context `key`'s state, created (GL set up, first frame begun) on first sight.
/// The context must be current on the calling thread.
fn find_or_create(st: &mut State, ws: WinSys, key: usize) -> usize {
    if let Some(i) = position(&st.contexts, ws, key) {
        return i;
    }
    let mut c = Ctx::new(ws, key);
    if !c.skip {
        let a = session_of(&mut st.session, &c).assembler();
        c.calibrate(monotonic_now_ns(), a);
        c.begin_frame();
        if let Some(s) = &c.samples {
            s.begin_frame();
        }
        if let Ok(m) = &c.monitors {
            m.lock().begin_frame();
        }
    }
    st.contexts.push(c);
    st.contexts.len() - 1
}

/// [`find_or_create`], and points the calling thread's sample hooks at the context.
fn find_current(st: &mut State, ws: WinSys, key: usize) -> usize {
    let i = find_or_create(st, ws, key);
    samples::set_current(st.contexts[i].samples.as_ref());
    driver_counters::set_current(st.contexts[i].monitors.as_ref().ok());
    i
}

/// Before the real swap of X window `window` (0: not a window we can watch): ends the open
/// frame of the current context. `None` when no measured context is current.
pub fn before_swap(ws: WinSys, window: u32) -> Option<Closed> {
    guard::maybe_panic("gl_swap");
    let key = winsys::current_context(ws);
    if key == 0 {
        return None;
    }
    let counts = FrameCounts {
        draws: draw_counts::take(),
        ..FrameCounts::default()
    };
    let (frame, gl, hud, t_ns) = close_frame(ws, key, counts)?;
    // Outside the frame lock: the first note starts the source's thread (and pins this
    // library with dlopen, which takes the dynamic loader's lock).
    crate::display_x11::presented(window, frame, t_ns);
    Some(Closed {
        token: SwapToken { ws, key },
        frame,
        gl,
        hud,
    })
}

/// Closes the open frame of context `key`; its index, the context's entry points and HUD, and
/// the frame's end, or `None` for a context not measured.
fn close_frame(ws: WinSys, key: usize, counts: FrameCounts) -> Option<(u64, Arc<GlFns>, HudSlot, u64)> {
    let mut guard = STATE.lock();
    let st = &mut *guard;
    let i = find_current(st, ws, key);
    let gl = st.contexts[i].gl.clone().filter(|_| !st.contexts[i].skip)?;
    framescope_core::alloc_count::on_frame_end();
    // The dump starts at the first swap, not at the first context: drivers make contexts
    // current for their own purposes (NVIDIA's Vulkan driver does, under our Vulkan layer),
    // and such a process must not get a second, empty GL dump. Read the frame's time after
    // it, so the first frame lies inside the dump's window.
    let session = session_of(&mut st.session, &st.contexts[i]);
    ensure_dump(session, &st.contexts[i]);
    if let Ok(m) = &st.contexts[i].monitors {
        if session.driver_latest().groups().is_empty() {
            session.set_driver_groups(&m.lock().groups());
        }
    }
    let now = monotonic_now_ns();
    let c = &mut st.contexts[i];
    let a = session.assembler();
    c.end_frame(a);
    // Before close_frame (the frame's samples belong to it) and before the HUD draws.
    if let Some(s) = &c.samples {
        s.end_frame(a);
    }
    if let Ok(m) = &c.monitors {
        m.lock().end_frame(|| a.on_submit());
    }
    c.frames += 1;
    let mut record = FrameRecord {
        end: FrameEnd::Present,
        t_ns: now,
        counts,
        ..FrameRecord::default()
    };
    record.cpu.waits = framescope_core::waits::take();
    record.cpu.creation = framescope_core::creation::take();
    crate::display_x11::attach(session.display());
    Some((session.close(record), gl, c.hud.clone(), now))
}

/// The frame session's display feed, once the session exists (a display-time source reports
/// through it).
pub fn display_feed() -> Option<Arc<framescope_core::display::DisplayFeed>> {
    STATE.lock().session.as_ref().map(|s| s.display().clone())
}

/// Refreshes the HUD's numbers from the frames emitted so far.
pub fn hud_data(data: &mut HudData, opts: &HudOptions) {
    if let Some(session) = &STATE.lock().session {
        data.fill_from(session, opts);
    }
}

/// Whether the frame history has a frame rate to show; never waits for the frame lock.
pub fn history_has_fps() -> bool {
    STATE.try_lock().is_some_and(|st| {
        st.session
            .as_ref()
            .and_then(|s| s.history())
            .is_some_and(|h| h.fps(1_000_000_000).is_some())
    })
}

/// After the real swap, which returned at `returned_ns`: the swap's frame gets its time in it, finished timestamps are read and the next frame starts. The context's
/// HUD, or `None` when the context is not known (any more).
pub fn after_swap(t: &SwapToken, frame: u64, returned_ns: u64) -> Option<HudSlot> {
    let mut guard = STATE.lock();
    let st = &mut *guard;
    let i = position(&st.contexts, t.ws, t.key)?;
    let c = &mut st.contexts[i];
    let now = monotonic_now_ns();
    let session = session_of(&mut st.session, c);
    session.present_returned(frame, returned_ns);
    c.read_available(session.assembler());
    c.calibrate(now, session.assembler());
    c.begin_frame();
    if let Some(s) = &c.samples {
        s.read_available(session);
        s.begin_frame();
    }
    if let Ok(m) = &c.monitors {
        let mut m = m.lock();
        m.read_available(|s| driver_counters::emit(session, s));
        m.begin_frame();
    }
    session.poll(now);
    Some(c.hud.clone())
}

/// Before the app's make-current of `key` (0: none): a change of context ends the outgoing
/// context's statistics queries while it is still current.
pub fn before_make_current(ws: WinSys, key: usize) {
    let now = winsys::current_context(ws);
    if now != 0 && now != key && end_stats_of_current(ws, now) && !samples::has_current() {
        log::debug(format_args!(
            "{}: statistics queries of the current context ended before it was unbound at exit",
            ws.name()
        ));
    }
}

/// Before the app closes a display (which destroys its contexts): a measured context current
/// on this thread ends its statistics queries while it still can. Nothing happens while no
/// context is measured, so an app without GL makes no GL call here.
pub fn before_display_close(ws: WinSys) {
    if !samples::has_current() && !measuring() {
        return;
    }
    let now = winsys::current_context(ws);
    if now != 0 && end_stats_of_current(ws, now) {
        log::debug(format_args!(
            "{}: statistics queries of the current context ended before its display closed",
            ws.name()
        ));
    }
}

/// How long a hook at exit waits for the frame state another thread may hold (as `exit_flush`).
const EXIT_LOCK_WAIT: Duration = Duration::from_millis(200);

/// Whether some context is measured (its state may have statistics queries active).
fn measuring() -> bool {
    STATE
        .try_lock_for(EXIT_LOCK_WAIT)
        .is_some_and(|st| !st.contexts.is_empty())
}

/// Ends the statistics queries of context `key`, current on this thread, while it still is;
/// whether any were active. Through the thread's own pointer when it has one (no global lock),
/// else through the context's entry: at process exit glibc runs the thread-local destructors
/// before the `atexit` handlers, and piglit (through waffle) unbinds, destroys and closes its
/// context from such a handler. Left active, the queries were freed by llvmpipe with the
/// context while a scene still held them (the heap corruption in docs/reliability.md).
fn end_stats_of_current(ws: WinSys, key: usize) -> bool {
    if samples::has_current() {
        return samples::before_context_change();
    }
    let Some(st) = STATE.try_lock_for(EXIT_LOCK_WAIT) else {
        return false;
    };
    position(&st.contexts, ws, key)
        .and_then(|i| st.contexts[i].samples.as_ref())
        .is_some_and(samples::suspend_stats_of)
}

/// After a successful make-current: sets the context up on first sight.
pub fn on_make_current(ws: WinSys, key: usize) {
    if key == 0 {
        samples::set_current(None);
        driver_counters::set_current(None);
        return;
    }
    find_current(&mut STATE.lock(), ws, key);
}

/// Before the real destroy: reads what the context has ready, frees its state and, when no
/// measured context is left, emits every pending frame. The context's HUD, for the HUD to free
/// outside the frame lock.
pub fn on_destroy(ws: WinSys, key: usize) -> Option<HudSlot> {
    if key == 0 {
        return None;
    }
    let mut guard = STATE.lock();
    let st = &mut *guard;
    let i = position(&st.contexts, ws, key)?;
    let mut c = st.contexts.swap_remove(i);
    if c.skip {
        return None;
    }
    let current = winsys::current_context(ws) == key;
    let session = session_of(&mut st.session, &c);
    if let Some(s) = &c.samples {
        s.destroy(current, session);
    }
    if let Ok(m) = &c.monitors {
        m.lock().destroy(current, |s| driver_counters::emit(session, s));
    }
    if current {
        // Current here: collect what is ready and free the query names.
        c.read_available(session.assembler());
        if let (Some(gl), true) = (&c.gl, c.timing) {
            let names: Vec<u32> = c.ring.iter().flat_map(|p| [p.begin, p.end]).collect();
            gl.delete_queries(&names);
        }
    }
    // Contexts that never swapped (probes, glmark2 --validate) are not worth an info line.
    let line = if c.frames > 0 { log::info } else { log::debug };
    line(format_args!(
        "{} context on '{}' destroyed after {} frames (GPU timing {}, {} timestamp pairs abandoned)",
        ws.name(),
        c.info.renderer,
        c.frames,
        if c.timing { "on" } else { "off" },
        c.abandoned,
    ));
    if st.contexts.iter().all(|c| c.skip) {
        session.flush(GpuMissing::Timeout);
    } else {
        session.poll(monotonic_now_ns());
    }
    Some(c.hud)
}

fn register_exit_flush() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `exit_flush` is an `extern "C" fn()` that never unwinds and only touches
        // 'static data.
        let rc = unsafe { libc::atexit(exit_flush) };
        if rc != 0 {
            log::error(format_args!(
                "cannot register the exit hook; frames still in flight at exit are lost"
            ));
        }
    });
}

/// At process exit: emits the pending frames (without GL calls: the contexts may be gone) and
/// writes the summary.
extern "C" fn exit_flush() {
    let _ = std::panic::catch_unwind(|| {
        // Another thread may be inside a swap hook; do not wait for it forever.
        if let Some(mut st) = STATE.try_lock_for(EXIT_LOCK_WAIT) {
            if let Some(session) = st.session.as_mut() {
                session.finish();
            }
        }
    });
}
