//! GPU samples inside GL frames (config `samples`) and the per-frame pipeline statistics.
//!
//! GL has no command buffers and no render passes, so the levels map onto what GL has, keeping
//! the rule that levels are inclusive:
//!
//! | `samples` | on GL |
//! |---|---|
//! | `off` | nothing (no samples, no statistics) |
//! | `cmdbuf` | the frame is GL's only "command buffer": its GPU time is already the frame's `gpu_busy_ns`, so this adds only the frame's pipeline statistics |
//! | `renderpass`, `label` | plus one `label` sample per debug group (`glPushDebugGroup` .. `glPopDebugGroup`, KHR variants on GLES): apps mark their passes with debug groups, the closest GL has to a render pass |
//! | `draw` | plus one `draw` sample per draw call the app looked up through us |
//!
//! On llvmpipe the levels above `cmdbuf` act as `cmdbuf` unless `FRAMESCOPE_GL_LLVMPIPE_SAMPLES=1`
//! (see [`mid_frame_forced`]): samples between the app's draws would change what it renders.
//!
//! Every sample is a pair of `glQueryCounter(GL_TIMESTAMP)`s (never `GL_TIME_ELAPSED`, which
//! cannot nest) written into a per-context ring of query names allocated once when the context
//! is set up. A frame's samples are read after a later swap, oldest frame first, only when
//! their results are available: never a wait, never `glFinish`. Until then the frame keeps one
//! "submission" open in the frame assembler, so its samples reach the dump writer before its
//! record does (the writer puts them in that frame's line) and its `stats` are set in time.
//! Rings are bounded: a sample that does not fit is dropped and counted in the summary's
//! `dropped_samples`. Label names are interned once (`framescope_core::labels`), so steady
//! state allocates nothing.
//!
//! Sample fields on GL: `cmdbuf` is always 0 (the frame), `draw` is the draw's index within the
//! frame (every draw seen through our hooks counts, sampled or not), `stats` is never set on a
//! sample (the frame record carries the statistics, see `stats`).
//!
//! The state lives per context behind a mutex; the thread a context is current on finds it
//! through a thread-local set at make-current, so the hooks for debug groups, draws and queries
//! never take the process-wide frame lock. Those hooks only `try_lock` it: the only way to find
//! it held is re-entrance (an app debug callback run synchronously inside one of our GL calls),
//! where skipping a sample beats a deadlock.

use crate::gl::{GlFns, GlInfo};
use crate::stats::{self, Stats};
use framescope_core::assembly::FrameAssembler;
use framescope_core::config::Samples;
use framescope_core::dump::Unavailable;
use framescope_core::frame::DrawKind;
use framescope_core::guard::{guarded, Site};
use framescope_core::labels;
use framescope_core::sample::{DrawParams, LabelPath, PipelineStats, SampleRecord, Scope, MAX_LABEL_DEPTH};
use framescope_core::session::FrameSession;
use framescope_core::settings;
use framescope_core::sync::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// What the `samples` key means on GL (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off,
    /// Per-frame statistics only.
    Frame,
    /// Plus debug-group samples.
    Labels,
    /// Plus draw samples.
    Draws,
}

impl Level {
    pub fn from_config(s: Samples) -> Level {
        match s {
            Samples::Off => Level::Off,
            Samples::Cmdbuf => Level::Frame,
            Samples::Renderpass | Samples::Label => Level::Labels,
            Samples::Draw => Level::Draws,
        }
    }
}

/// Frames whose samples may wait for their results. More than the frame assembler's timeout
/// (32 frames), so a frame is only given up here after the assembler has given up on it.
const FRAMES: usize = 40;
/// Debug groups tracked per context; deeper ones are counted but give no samples.
const MAX_OPEN_LABELS: usize = 16;
const GL_DEBUG_GROUP_STACK_DEPTH: u32 = 0x826D;
/// `glGetIntegerv` name of the program in use (GL 2.0 `GL_CURRENT_PROGRAM`).
const GL_CURRENT_PROGRAM: u32 = 0x8B8D;

/// (timestamp queries, samples) per context. A draw-sampling frame of 4000 draws uses 8000
/// queries; results arrive one or two frames later, so this holds about two such frames.
fn capacities(level: Level) -> (usize, usize) {
    match level {
        Level::Draws => (16384, 8192),
        Level::Labels => (2048, 1024),
        Level::Frame | Level::Off => (0, 0),
    }
}

/// The begin of a sample: a query not read yet, or its value (a debug group open across
/// frames has its begin read early, so its query does not hold the ring).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Begin {
    #[default]
    None,
    Pos(u64),
    Value(u64),
}

/// A finished sample whose timestamps are not read yet.
#[derive(Clone, Copy, Default)]
struct Pending {
    scope: Scope,
    label: LabelPath,
    draw: Option<u32>,
    begin: Begin,
    /// Ring position of the end timestamp.
    end: u64,
    params: Option<DrawParams>,
}

#[derive(Clone, Copy, Default)]
struct OpenLabel {
    name: u32,
    begin: Begin,
}

/// A closed frame waiting for its results.
#[derive(Clone, Copy, Default)]
struct FrameSlot {
    /// Query names of this slot's statistics, fixed when the context is set up.
    stats_names: [u32; stats::COUNT],
    frame: u64,
    /// A submission of the frame is open in the assembler (it has samples or statistics).
    submitted: bool,
    has_stats: bool,
    /// Oldest timestamp position its samples read.
    ts_min: u64,
    /// Its samples: positions `s_start..s_end` of the sample ring.
    s_start: u64,
    s_end: u64,
}

#[derive(Clone, Copy, Default)]
struct Open {
    active: bool,
    ts_min: u64,
    s_start: u64,
    /// Draws seen in the frame (the next draw sample's index).
    draws: u32,
    stats_active: bool,
    /// The app ran a query of a statistics target: no statistics for this frame.
    stats_broken: bool,
}

/// Sampling state of one context.
pub struct Sampler {
    alive: bool,
    level: Level,
    /// The context's entry points (shared with its `frames::Ctx` and HUD).
    gl: Arc<GlFns>,
    /// `GL_CURRENT_PROGRAM` is a valid query (GL and GLES 2.0): asking an older context would
    /// set a `GL_INVALID_ENUM` the app could see.
    programs: bool,
    /// Results are read with `GL_QUERY_RESULT_NO_WAIT` (one call per read).
    no_wait: bool,
    query_buffer: bool,
    /// Debug groups can be sampled (GL 4.3, GLES 3.2 or `GL_KHR_debug`).
    labels: bool,
    stats: Option<Stats>,
    /// Timestamp query names; positions count up forever, `pos % len` is the slot.
    ts_names: Box<[u32]>,
    ts_head: u64,
    ts_tail: u64,
    samples: Box<[Pending]>,
    s_head: u64,
    s_tail: u64,
    frames: Box<[FrameSlot]>,
    f_head: usize,
    f_len: usize,
    open: Open,
    stack: [OpenLabel; MAX_OPEN_LABELS],
    /// The app's debug groups on the stack as we know them (may exceed `MAX_OPEN_LABELS`).
    depth: usize,
    /// Values of one frame being read: begin/end per sample, then the statistics.
    scratch: Box<[u64]>,
    /// Samples dropped since the last report to the dump.
    dropped: u64,
}

/// A context's sampler, shared between its `frames::Ctx` and the thread it is current on.
pub struct Shared {
    level: Level,
    /// Why the frame records of this context have no `stats`, if they never will.
    stats_unavailable: Option<&'static str>,
    /// Debug-group and draw samples asked for but not taken: on this driver they would change
    /// what it renders (see [`mid_frame_forced`]).
    mid_frame_refused: bool,
    labels_unavailable: bool,
    sampler: Mutex<Sampler>,
}

pub type CtxSamples = Arc<Shared>;

thread_local! {
    /// The sampler of the context current on this thread (set at make-current).
    static CURRENT: RefCell<Option<CtxSamples>> = const { RefCell::new(None) };
    /// Whether that context samples draws: read by every draw wrapper without a lock.
    static DRAWS: Cell<bool> = const { Cell::new(false) };
}

/// Sets up sampling for the context current on this thread (called from `frames::Ctx::new`
/// once GPU timing is known to work). `None` with `samples=off`.
pub fn create(gl: &Arc<GlFns>, info: &GlInfo, config: Samples) -> Option<CtxSamples> {
    let mut level = Level::from_config(config);
    if level == Level::Off {
        return None;
    }
    let mid_frame_refused = level > Level::Frame && info.bins_queries_into_scenes() && !mid_frame_forced();
    if mid_frame_refused {
        level = Level::Frame;
    }
    if !gl.supports_timestamps(info) {
        return None;
    }
    let has = |e: &str| gl.has_extension(info, e);
    let labels = if info.es {
        info.at_least(3, 2) || has("GL_KHR_debug")
    } else {
        info.at_least(4, 3) || has("GL_KHR_debug")
    };
    let no_wait_ok = !info.es && (info.at_least(4, 4) || has("GL_ARB_query_buffer_object"));
    let stats_off = settings::get().sample_stats == framescope_core::config::SampleStats::Off;
    let (stats, stats_unavailable) = match Stats::detect(gl, info, has) {
        _ if stats_off => (None, Some("sample_stats=off")),
        Ok(s) => (Some(s), None),
        Err(why) => (None, Some(why)),
    };
    let (ts_cap, s_cap) = capacities(level);
    let mut ts_names = vec![0u32; ts_cap].into_boxed_slice();
    gl.gen_queries(&mut ts_names);
    if ts_names.contains(&0) {
        return None;
    }
    let mut frames = vec![FrameSlot::default(); FRAMES].into_boxed_slice();
    let mut stats = stats;
    if stats.is_some() {
        let mut names = [0u32; FRAMES * stats::COUNT];
        gl.gen_queries(&mut names);
        if names.contains(&0) {
            stats = None;
        } else {
            for (f, chunk) in frames.iter_mut().zip(names.chunks_exact(stats::COUNT)) {
                f.stats_names.copy_from_slice(chunk);
            }
        }
    }
    let sampler = Sampler {
        alive: true,
        level,
        programs: info.at_least(2, 0),
        no_wait: no_wait_ok && gl.get_query_objectui64v.is_some(),
        query_buffer: gl.has_query_buffer(info),
        labels,
        stats,
        ts_names,
        ts_head: 0,
        ts_tail: 0,
        samples: vec![Pending::default(); s_cap].into_boxed_slice(),
        s_head: 0,
        s_tail: 0,
        frames,
        f_head: 0,
        f_len: 0,
        open: Open::default(),
        stack: [OpenLabel::default(); MAX_OPEN_LABELS],
        depth: 0,
        scratch: vec![0u64; 2 * s_cap + stats::COUNT].into_boxed_slice(),
        dropped: 0,
        gl: gl.clone(),
    };
    Some(Arc::new(Shared {
        level,
        stats_unavailable,
        mid_frame_refused,
        labels_unavailable: !labels && level >= Level::Labels,
        sampler: Mutex::new(sampler),
    }))
}

/// `FRAMESCOPE_GL_LLVMPIPE_SAMPLES=1`: take debug-group and draw samples on llvmpipe although
/// they change its rendering. llvmpipe bins every query into each tile of the scene, and a tile
/// with a query runs the general triangle rasterizer instead of the linear one
/// (`lp_characterize_bin` in Mesa's `lp_rast.c`); keeping our query out of the app's scene
/// takes a flush, and a scene split at a draw changes which tiles hold only rectangles, so the
/// linear rasterizer then runs where it would not (the GL test app's full-screen `Post`
/// triangle alone in its scene: six tiles went linear, and llvmpipe counts no fragment-shader
/// invocations there). Either way piglit's `vs-*-main-return` tests, which fail bare on
/// llvmpipe 22.3, passed. Read once; tests set it to exercise the sampling machinery.
fn mid_frame_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var_os("FRAMESCOPE_GL_LLVMPIPE_SAMPLES").is_some_and(|v| v == "1"))
}

/// Where finished samples go: the dump, and the HUD's top-regions table when the HUD is on.
/// What the dump header says about samples and statistics of a context: the `unavailable`
/// entries (none when everything works).
pub fn unavailable(samples: Option<&CtxSamples>, timing: bool, es: bool) -> Vec<Unavailable> {
    let entry = |source: &str, reason: &str| Unavailable {
        source: source.into(),
        reason: reason.into(),
    };
    let config = Level::from_config(settings::get().effective_samples());
    match samples {
        Some(s) => {
            let mut v = Vec::new();
            if let Some(why) = s.stats_unavailable {
                v.push(entry("gl_pipeline_statistics", why));
            }
            if s.mid_frame_refused {
                v.push(entry(
                    "gl_samples",
                    "llvmpipe: a query between the app's draws (or a flush to keep it out of their scene) changes \
                     which rasterizer draws their tiles, so debug-group and draw samples would change the rendering; \
                     frame statistics only (FRAMESCOPE_GL_LLVMPIPE_SAMPLES=1 takes them anyway)",
                ));
            }
            if s.labels_unavailable {
                v.push(entry(
                    "gl_debug_groups",
                    "the context has no debug groups (GL 4.3, GLES 3.2 or GL_KHR_debug): no label samples",
                ));
            }
            v
        }
        None if config == Level::Off => vec![entry(
            "gl_pipeline_statistics",
            "samples=off (statistics come with samples)",
        )],
        None if !timing => vec![entry(
            "gl_samples",
            "the context has no GL_TIMESTAMP queries: no samples and no statistics",
        )],
        None if es => vec![entry(
            "gl_pipeline_statistics",
            "OpenGL ES has no pipeline-statistics queries",
        )],
        None => vec![entry("gl_samples", "sampling could not be set up in this context")],
    }
}

/// Points this thread's hooks at the sampler of the context just made current (`None`: no
/// context, or one that is not measured).
pub fn set_current(s: Option<&CtxSamples>) {
    let _ = CURRENT.try_with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            let same = match (c.as_ref(), s) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if !same {
                *c = s.cloned();
            }
        }
    });
    let _ = DRAWS.try_with(|d| d.set(s.is_some_and(|s| s.level == Level::Draws)));
}

/// The app is about to make another context (or none) current on this thread: the frame
/// statistics queries of the current one end now, while it is still current, and its frame
/// reports no statistics. Left active, they would outlive the binding, and an app that
/// unbinds a context before destroying it (glmark2) destroys it with our queries active.
/// Returns whether queries were ended.
pub fn before_context_change() -> bool {
    with_current(|s| s.suspend_stats()).unwrap_or(false)
}

/// As [`before_context_change`] for `s`, the sampler of the context current on this thread,
/// reached without the thread's own pointer (gone at process exit).
pub fn suspend_stats_of(s: &CtxSamples) -> bool {
    let Some(mut s) = s.sampler.try_lock() else {
        return false;
    };
    s.alive && s.suspend_stats()
}

/// Whether a measured context is current on this thread (no GL call).
pub fn has_current() -> bool {
    CURRENT
        .try_with(|c| c.try_borrow().is_ok_and(|c| c.is_some()))
        .unwrap_or(false)
}

/// Runs `f` on the sampler of the context current on this thread, if it samples and is alive.
fn with_current<R>(f: impl FnOnce(&mut Sampler) -> R) -> Option<R> {
    CURRENT
        .try_with(|c| {
            let c = c.try_borrow().ok()?;
            let mut s = c.as_ref()?.sampler.try_lock()?;
            if !s.alive {
                return None;
            }
            Some(f(&mut s))
        })
        .ok()
        .flatten()
}

/// Whether draws on this thread are sampled (no lock: a thread-local flag).
#[inline]
pub fn draws_sampled() -> bool {
    DRAWS.try_with(Cell::get).unwrap_or(false)
}

static DRAW_SITE: Site = Site::new("draw sample");

/// Runs the app's draw `real` between a begin and an end timestamp. The sampler is not locked
/// while the draw runs.
pub fn around_draw(kind: DrawKind, params: impl FnOnce() -> (u32, u32, u32, bool), real: impl FnOnce()) {
    let token = guarded(&DRAW_SITE, || with_current(|s| s.draw_begin()))
        .flatten()
        .flatten();
    real();
    if let Some((begin, index)) = token {
        guarded(&DRAW_SITE, || {
            let (vertex_count, index_count, instance_count, indirect) = params();
            let p = DrawParams {
                kind: Some(kind),
                vertex_count,
                index_count,
                instance_count,
                indirect,
                pipeline: 0,
            };
            with_current(|s| s.draw_end(begin, index, p));
        });
    }
}

/// Before the app's `glPushDebugGroup*` runs: the GL stack depth then, if groups are sampled.
pub fn pushing_group() -> Option<usize> {
    with_current(Sampler::pushing).flatten()
}

/// After the app's `glPushDebugGroup*` returned, with what [`pushing_group`] returned.
pub fn pushed_group(before: usize, message: &[u8]) {
    with_current(|s| s.pushed(before, message));
}

/// Before the app's `glPopDebugGroup*` runs.
pub fn popping_group() {
    with_current(Sampler::popping);
}

/// Before the app begins or ends a query of one of the statistics targets.
pub fn app_query(target: u32) {
    if stats::index_of(target).is_some() {
        with_current(Sampler::app_query);
    }
}

/// After the app's `glGetQuery*iv(target, GL_CURRENT_QUERY)`: hides our own active query.
pub fn hide_current_query(target: u32, value: &mut i32) {
    if let Some(i) = stats::index_of(target) {
        with_current(|s| {
            if s.open.stats_active && *value as u32 == s.open_stats_names()[i] {
                *value = 0;
            }
        });
    }
}

impl Shared {
    /// Starts the frame's samples and statistics (after a swap, or when the context is first
    /// set up), with the context current.
    pub fn begin_frame(&self) {
        self.sampler.lock().begin_frame();
    }

    /// Ends the frame before the real swap: ends the statistics and registers the frame's
    /// samples with the assembler (its open frame is this frame).
    pub fn end_frame(&self, a: &mut FrameAssembler) {
        self.sampler.lock().end_frame(a);
    }

    /// Reads every finished frame whose results are available (never waits); samples go to
    /// the dump ahead of their frame.
    pub fn read_available(&self, session: &mut FrameSession) {
        self.sampler.lock().read_available(session);
    }

    /// The context is being destroyed: reads what is ready (`current`: the context is current
    /// on this thread, so GL may be called), frees the queries, and releases the frames still
    /// waiting so their GPU times are not held back. Later hooks on it do nothing.
    pub fn destroy(&self, current: bool, session: &mut FrameSession) {
        let mut s = self.sampler.lock();
        if !s.alive {
            return;
        }
        if s.open.stats_active && !current {
            // Nothing ends them now; llvmpipe frees active queries with the context while a
            // scene may still hold them. Tests look for this line.
            framescope_core::log::info(format_args!(
                "a context was destroyed with framescope's statistics queries active, not current on this thread"
            ));
        }
        if current {
            if s.open.stats_active {
                if let Some(st) = &s.stats {
                    st.end(&s.gl, true);
                }
                s.open.stats_active = false;
            }
            s.read_available(session);
            let mut names: Vec<u32> = s.ts_names.to_vec();
            if s.stats.is_some() {
                names.extend(s.frames.iter().flat_map(|f| f.stats_names));
            }
            s.gl.delete_queries(&names);
        }
        while s.f_len > 0 {
            let f = s.frames[s.f_head];
            if f.submitted {
                session.assembler().on_submission_retired(f.frame, None);
                s.dropped += f.s_end - f.s_start;
            }
            s.f_head = (s.f_head + 1) % FRAMES;
            s.f_len -= 1;
        }
        if let Some(d) = session.dump() {
            d.add_dropped_samples(s.dropped);
        }
        s.dropped = 0;
        s.alive = false;
    }
}

impl Sampler {
    fn open_slot(&self) -> usize {
        (self.f_head + self.f_len) % FRAMES
    }

    fn open_stats_names(&self) -> [u32; stats::COUNT] {
        self.frames[self.open_slot()].stats_names
    }

    fn ts_name(&self, pos: u64) -> u32 {
        self.ts_names[(pos % self.ts_names.len() as u64) as usize]
    }

    /// Writes a timestamp into the next ring slot; `None` (and a drop) when the ring is full.
    fn timestamp(&mut self) -> Option<u64> {
        let cap = self.ts_names.len() as u64;
        if self.ts_tail - self.ts_head >= cap {
            self.dropped += 1;
            return None;
        }
        let pos = self.ts_tail;
        self.ts_tail += 1;
        self.gl.timestamp(self.ts_name(pos));
        Some(pos)
    }

    fn push_sample(&mut self, p: Pending) {
        let cap = self.samples.len() as u64;
        if self.s_tail - self.s_head >= cap {
            self.dropped += 1;
            return;
        }
        self.samples[(self.s_tail % cap) as usize] = p;
        self.s_tail += 1;
    }

    /// The label path of the innermost `depth` open groups, outermost first.
    fn path(&self, depth: usize) -> LabelPath {
        let mut p = LabelPath::default();
        for l in self.stack[..depth.min(MAX_OPEN_LABELS)].iter().take(MAX_LABEL_DEPTH) {
            p.push(l.name);
        }
        p
    }

    fn begin_frame(&mut self) {
        if !self.alive || self.open.active {
            return;
        }
        if self.f_len == FRAMES {
            // Results 40 frames late: the assembler timed this frame out long ago, so its
            // samples are dropped rather than waited for.
            let f = self.frames[self.f_head];
            self.dropped += f.s_end - f.s_start;
            self.f_head = (self.f_head + 1) % FRAMES;
            self.f_len -= 1;
            self.release();
        }
        self.open = Open {
            active: true,
            ts_min: self.ts_tail,
            s_start: self.s_tail,
            ..Open::default()
        };
        if let Some(st) = &self.stats {
            let names = self.open_stats_names();
            if st.begin(&self.gl, &names) {
                self.open.stats_active = true;
            } else {
                // An app query of a statistics target is active (across the swap, or begun
                // through an entry point we do not see): this frame has no statistics.
                self.open.stats_broken = true;
            }
        }
    }

    fn suspend_stats(&mut self) -> bool {
        if !self.open.stats_active {
            return false;
        }
        if let Some(st) = &self.stats {
            st.end(&self.gl, true);
        }
        self.open.stats_active = false;
        self.open.stats_broken = true;
        true
    }

    fn end_frame(&mut self, a: &mut FrameAssembler) {
        if !self.alive || !self.open.active {
            return;
        }
        let mut has_stats = false;
        if self.open.stats_active {
            if let Some(st) = &self.stats {
                st.end(&self.gl, true);
            }
            self.open.stats_active = false;
            has_stats = !self.open.stats_broken;
        }
        let i = self.open_slot();
        let s_end = self.s_tail;
        let submitted = has_stats || s_end > self.open.s_start;
        let f = &mut self.frames[i];
        f.has_stats = has_stats;
        f.ts_min = self.open.ts_min;
        f.s_start = self.open.s_start;
        f.s_end = s_end;
        f.submitted = submitted;
        if submitted {
            f.frame = a.on_submit();
        }
        self.f_len += 1;
        self.open.active = false;
    }

    /// One query result if it is available, without waiting.
    fn read(&self, name: u32) -> Option<u64> {
        if self.no_wait {
            self.gl.result_no_wait(name)
        } else {
            self.gl.available(name).then(|| self.gl.result(name))
        }
    }

    fn read_available(&mut self, session: &mut FrameSession) {
        if !self.alive {
            return;
        }
        // A buffer bound to GL_QUERY_BUFFER would turn the reads into buffer writes.
        let saved = if self.query_buffer {
            self.gl.query_buffer_binding()
        } else {
            0
        };
        if saved != 0 {
            self.gl.bind_query_buffer(0);
        }
        while self.f_len > 0 {
            if !self.read_frame(self.f_head, session) {
                break;
            }
            self.f_head = (self.f_head + 1) % FRAMES;
            self.f_len -= 1;
        }
        self.resolve_open_labels();
        if saved != 0 {
            self.gl.bind_query_buffer(saved);
        }
        self.release();
        if let Some(d) = session.dump() {
            d.add_dropped_samples(self.dropped);
        }
        self.dropped = 0;
    }

    /// Reads and emits closed frame `i`; false when one of its results is not available yet.
    fn read_frame(&mut self, i: usize, session: &mut FrameSession) -> bool {
        let f = self.frames[i];
        if !f.submitted {
            return true;
        }
        let mut vals = std::mem::take(&mut self.scratch);
        let ok = self.read_values(&f, &mut vals).is_some();
        if ok {
            let off = session.assembler_ref().calibration();
            let map = |v: u64| match off {
                Some(o) => v.saturating_add_signed(o),
                None => v,
            };
            let cap = self.samples.len() as u64;
            for (k, pos) in (f.s_start..f.s_end).enumerate() {
                let s = self.samples[(pos % cap) as usize];
                let (b, e) = (vals[2 * k], vals[2 * k + 1]);
                let r = SampleRecord {
                    frame: f.frame,
                    scope: s.scope,
                    label: s.label,
                    cmdbuf: 0,
                    draw: s.draw,
                    gpu_begin_ns: Some(map(b)),
                    gpu_end_ns: Some(map(e.max(b))),
                    stats: None,
                    params: s.params,
                    overwritten: false,
                    driver: None,
                };
                session.push_sample(r);
            }
            if f.has_stats {
                let n = (f.s_end - f.s_start) as usize * 2;
                let v: [u64; stats::COUNT] = std::array::from_fn(|k| vals[n + k]);
                session
                    .assembler()
                    .set_frame_stats(f.frame, PipelineStats::from_array(v));
            }
            session.assembler().on_submission_retired(f.frame, None);
        }
        self.scratch = vals;
        ok
    }

    /// Reads frame `f`'s timestamps (begin/end per sample) and statistics into `vals`; `None`
    /// as soon as one is not available.
    fn read_values(&self, f: &FrameSlot, vals: &mut [u64]) -> Option<()> {
        let cap = self.samples.len() as u64;
        let n = (f.s_end - f.s_start) as usize;
        // Results arrive in order: try the frame's last one first, so a frame that is not
        // ready costs one call.
        if n > 0 {
            self.read(self.ts_name(self.samples[((f.s_end - 1) % cap) as usize].end))?;
        }
        for (k, pos) in (f.s_start..f.s_end).enumerate() {
            let s = self.samples[(pos % cap) as usize];
            vals[2 * k] = match s.begin {
                Begin::Pos(p) => self.read(self.ts_name(p))?,
                Begin::Value(v) => v,
                Begin::None => 0,
            };
            vals[2 * k + 1] = self.read(self.ts_name(s.end))?;
        }
        if f.has_stats {
            let st = self.stats.as_ref()?;
            for k in 0..stats::COUNT {
                vals[2 * n + k] = if st.counted(k) { self.read(f.stats_names[k])? } else { 0 };
            }
        }
        Some(())
    }

    /// Debug groups still open whose begin was written in an earlier frame: read the begin now
    /// (it is available once that frame's results are), so a group that stays open for the
    /// whole run does not hold the timestamp ring.
    fn resolve_open_labels(&mut self) {
        let limit = if self.open.active {
            self.open.ts_min
        } else {
            self.ts_tail
        };
        for i in 0..self.depth.min(MAX_OPEN_LABELS) {
            if let Begin::Pos(p) = self.stack[i].begin {
                if p < limit {
                    if let Some(v) = self.read(self.ts_name(p)) {
                        self.stack[i].begin = Begin::Value(v);
                    }
                }
            }
        }
    }

    /// Frees the ring positions nothing waits for any more.
    fn release(&mut self) {
        let mut ts_min = self.ts_tail;
        let mut s_min = self.s_tail;
        if self.open.active {
            ts_min = ts_min.min(self.open.ts_min);
            s_min = s_min.min(self.open.s_start);
        }
        for k in 0..self.f_len {
            let f = &self.frames[(self.f_head + k) % FRAMES];
            ts_min = ts_min.min(f.ts_min);
            s_min = s_min.min(f.s_start);
        }
        for l in &self.stack[..self.depth.min(MAX_OPEN_LABELS)] {
            if let Begin::Pos(p) = l.begin {
                ts_min = ts_min.min(p);
            }
        }
        self.ts_head = self.ts_head.max(ts_min);
        self.s_head = self.s_head.max(s_min);
    }

    /// The program in use now (a draw's "pipeline"), 0 where it cannot be asked.
    fn current_program(&self) -> u64 {
        if !self.programs {
            return 0;
        }
        // Valid pname since GL/GLES 2.0 (checked at set-up). A state query answered from the
        // context's own state: it neither flushes nor changes rendering.
        self.gl.integer(GL_CURRENT_PROGRAM).map_or(0, |p| p as u32 as u64)
    }

    /// The app's debug groups on the GL stack now (the default group not counted).
    fn gl_depth(&self) -> Option<usize> {
        // Valid pname with debug groups (checked at set-up).
        let d = self.gl.integer(GL_DEBUG_GROUP_STACK_DEPTH)?;
        Some((d.max(1) - 1) as usize)
    }

    fn push_entry(&mut self, e: OpenLabel) {
        if self.depth < MAX_OPEN_LABELS {
            self.stack[self.depth] = e;
        }
        self.depth += 1;
    }

    /// Makes our stack `n` groups deep: deeper entries are stale (popped where we could not see
    /// it), missing ones were pushed where we could not see it (their names are unknown).
    fn sync_depth(&mut self, n: usize) {
        if self.depth > n {
            self.depth = n;
        }
        while self.depth < n {
            self.push_entry(OpenLabel {
                name: labels::intern(b"?"),
                begin: Begin::None,
            });
        }
    }

    fn pushing(&mut self) -> Option<usize> {
        if self.level < Level::Labels || !self.labels {
            return None;
        }
        self.gl_depth()
    }

    /// After the app's push. The GL stack depth before and after keeps ours in step even when
    /// the push failed (`GL_STACK_OVERFLOW`, a bad argument) or the app pushed or popped
    /// through an entry point we do not see.
    fn pushed(&mut self, before: usize, message: &[u8]) {
        let Some(after) = self.gl_depth() else { return };
        self.sync_depth(before);
        if after != before + 1 {
            return; // the push failed
        }
        if self.depth >= MAX_OPEN_LABELS {
            // Too deep to track: counted, never sampled.
            self.dropped += 1;
            self.depth += 1;
            return;
        }
        let begin = if self.open.active {
            self.timestamp().map_or(Begin::None, Begin::Pos)
        } else {
            Begin::None
        };
        self.push_entry(OpenLabel {
            name: labels::intern(message),
            begin,
        });
    }

    /// Before the app's pop: ends the innermost group's sample.
    fn popping(&mut self) {
        if self.level < Level::Labels || !self.labels {
            return;
        }
        let Some(now) = self.gl_depth() else { return };
        self.sync_depth(now);
        if now == 0 {
            return; // the pop will fail (GL_STACK_UNDERFLOW)
        }
        let top = now - 1;
        if top < MAX_OPEN_LABELS && self.open.active {
            let begin = self.stack[top].begin;
            if begin != Begin::None {
                if let Some(end) = self.timestamp() {
                    if let Begin::Pos(p) = begin {
                        self.open.ts_min = self.open.ts_min.min(p);
                    }
                    let label = self.path(now);
                    self.push_sample(Pending {
                        scope: Scope::Label,
                        label,
                        draw: None,
                        begin,
                        end,
                        params: None,
                    });
                }
            }
        }
        self.depth = top;
    }

    fn draw_begin(&mut self) -> Option<(u64, u32)> {
        if self.level < Level::Draws || !self.open.active {
            return None;
        }
        let index = self.open.draws;
        self.open.draws = self.open.draws.wrapping_add(1);
        Some((self.timestamp()?, index))
    }

    fn draw_end(&mut self, begin: u64, index: u32, mut params: DrawParams) {
        if !self.open.active {
            return;
        }
        params.pipeline = self.current_program();
        let Some(end) = self.timestamp() else { return };
        let label = self.path(self.depth);
        self.push_sample(Pending {
            scope: Scope::Draw,
            label,
            draw: Some(index),
            begin: Begin::Pos(begin),
            end,
            params: Some(params),
        });
    }

    /// The app begins or ends a query of a statistics target: ours end first, so the app's
    /// call sees the state it would see without us, and this frame reports no statistics.
    fn app_query(&mut self) {
        if self.open.stats_active {
            if let Some(st) = &self.stats {
                st.end(&self.gl, false);
            }
            self.open.stats_active = false;
            self.open.stats_broken = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_inclusive_and_map_onto_what_gl_has() {
        assert_eq!(Level::from_config(Samples::Off), Level::Off);
        assert_eq!(Level::from_config(Samples::Cmdbuf), Level::Frame);
        assert_eq!(Level::from_config(Samples::Renderpass), Level::Labels);
        assert_eq!(Level::from_config(Samples::Label), Level::Labels);
        assert_eq!(Level::from_config(Samples::Draw), Level::Draws);
        assert!(Level::Off < Level::Frame && Level::Frame < Level::Labels && Level::Labels < Level::Draws);
        // Frame-only sampling writes no timestamps; draw sampling holds two draw-heavy frames.
        assert_eq!(capacities(Level::Frame), (0, 0));
        let (ts, s) = capacities(Level::Draws);
        assert!(ts >= 2 * s && s >= 4096);
    }
}
