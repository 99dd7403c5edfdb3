//! What one recording of a command buffer contains for sampling: the events (in recording
//! order) and the query blocks their slots live in. Only the recording thread touches it
//! while recording (external synchronisation of the command buffer), so its lock is
//! uncontended; the device-wide lock is taken only to take a new block.

use super::blocks::{Block, Kind, BLOCK};
use super::driver_counters::PerfScope;
use super::{BindPoint, Level, Sampling};
use crate::dispatch::vk_calls::{Recorder, Shared};
use ash::vk;
use framescope_core::sample::DrawParams;
use framescope_core::sync::Mutex;
use std::sync::Arc;

/// A command buffer's recording, shared by the command buffer's state and the primaries that
/// execute it.
pub type SharedRecording = Arc<Mutex<Recording>>;

/// A query slot: block index in the recording's list of that kind, index in the block, and
/// how many consecutive slots the query spans: in a multiview subpass a query takes one slot
/// per view (a timestamp is in the first, statistics are spread over all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRef {
    pub block: u16,
    pub index: u8,
    pub views: u8,
}

pub enum Event {
    CmdBufBegin(SlotRef),
    CmdBufEnd(SlotRef),
    PassBegin(SlotRef),
    /// Statistics of one subpass of a pass with several, ended at the subpass change; the
    /// pass's statistics are the sum of its parts and the statistics at `PassEnd`.
    PassStatsPart(SlotRef),
    PassEnd {
        ts: SlotRef,
        stats: Option<SlotRef>,
    },
    LabelBegin {
        ts: Option<SlotRef>,
        name: u32,
    },
    LabelEnd {
        ts: Option<SlotRef>,
    },
    Draw {
        begin: SlotRef,
        end: SlotRef,
        stats: Option<SlotRef>,
        params: DrawParams,
        index: u32,
    },
    /// Secondaries executed here: their events are resolved in place.
    Execute(SharedRecording),
    /// A driver-counter query of group `group` ended: its values belong to the sample the
    /// event before it closed (the command buffer's or the render pass's).
    Perf {
        slot: SlotRef,
        group: u8,
    },
}

#[derive(Clone, Copy, Default)]
struct Pass {
    /// Only vkCmdExecuteCommands may be recorded in it: no timestamps or queries of ours.
    secondary_contents: bool,
    /// Views of the current subpass (1 without multiview): each query takes that many slots.
    views: u8,
    /// The `VkRenderPass` (0 for dynamic rendering) and the current subpass, to find the views
    /// of the next subpass.
    render_pass: u64,
    subpass: u32,
    /// Our statistics queries cover every subpass so far (none was cut by an app query or
    /// missed in a subpass whose contents are secondaries).
    stats_ok: bool,
    /// The pass's statistics query waits for the first graphics pipeline bind
    /// (`SampleState::stats_after_bind`): nothing before it can draw.
    stats_deferred: bool,
}

/// Where a pass begins: whether its first subpass holds only secondaries, its views there,
/// and its `VkRenderPass` (0 for dynamic rendering).
#[derive(Clone, Copy, Debug)]
pub struct PassStart {
    pub secondary_contents: bool,
    pub views: u8,
    pub render_pass: u64,
}

#[derive(Default)]
pub struct Recording {
    pub events: Vec<Event>,
    pub ts_blocks: Vec<Arc<Block>>,
    pub stats_blocks: Vec<Arc<Block>>,
    pub perf_blocks: Vec<Arc<Block>>,
    ts_used: u32,
    stats_used: u32,
    perf_used: u32,
    /// The driver-counter group this recording carries and the rotation frame it was begun
    /// in (`driver_counters::PerfState::group_now`); set after [`Recording::restart`], primaries only.
    pub perf: Option<(u8, u64)>,
    perf_open: Option<SlotRef>,
    /// Bumped at every begin: samples of an older generation live in blocks no longer ours.
    pub generation: u64,
    /// Submissions of this generation, and how many of them had their results read.
    pub submits: u64,
    pub read: u64,
    pub primary: bool,
    pub simultaneous: bool,
    pass: Option<Pass>,
    app_stats_active: u32,
    our_stats: Option<SlotRef>,
    /// This recording takes pipeline statistics (begun in a frame that carries them, see
    /// `StatsRotation`); set after [`Recording::restart`].
    pub stats_on: bool,
    /// A graphics pipeline was bound in this recording (tracked only where
    /// `SampleState::stats_after_bind`).
    gfx_bound: bool,
    /// The pipeline bound at each [`BindPoint`] (raw handles; 0: none), tracked at draw level
    /// for the draws' keys. Pipeline state is not inherited by secondaries, so it starts empty.
    pipelines: [u64; 3],
    pub draws: u32,
    /// The draw window this recording times (`budget::timed`).
    window: (u32, u32),
    /// Part of a baseline frame of the draw budget: no samples of ours at all.
    pub quiet: bool,
    /// Samples not taken (no free block, app query in the way).
    pub skipped: u32,
}

impl Recording {
    /// Starts a new recording (vkBeginCommandBuffer); `inherited_views` is the view count of
    /// the subpass a secondary continues.
    /// `window` is the draw window, `quiet` whether the recording belongs to a baseline frame
    /// (`budget::DrawWindow::quiet`), and `max_draws` the most draws a recording has had.
    pub fn restart(
        &mut self,
        primary: bool,
        simultaneous: bool,
        inherited_views: Option<u8>,
        window: (u32, u32),
        quiet: bool,
        max_draws: u32,
    ) {
        self.window = window;
        self.quiet = quiet;
        // Room for every draw position up front: the window moves across frames and its count
        // may change with the workload, so a recording would otherwise grow its events the
        // first time a larger window reaches its densest part, long into steady state.
        if window.1 != u32::MAX {
            self.events.reserve(max_draws.min(4096) as usize + 32);
        }
        self.events.clear();
        self.ts_blocks.clear();
        self.stats_blocks.clear();
        self.perf_blocks.clear();
        self.ts_used = 0;
        self.stats_used = 0;
        self.perf_used = 0;
        self.perf = None;
        self.perf_open = None;
        self.generation += 1;
        self.submits = 0;
        self.read = 0;
        self.primary = primary;
        self.simultaneous = simultaneous;
        self.pass = inherited_views.map(|views| Pass {
            views,
            ..Pass::default()
        });
        self.app_stats_active = 0;
        self.our_stats = None;
        self.gfx_bound = false;
        self.pipelines = [0; 3];
        self.draws = 0;
        self.skipped = 0;
    }

    /// Slots for one query here: one per view of the current subpass, consecutive in a block.
    fn alloc(&mut self, d: &Sampling<'_>, kind: Kind) -> Option<SlotRef> {
        let s = d.state;
        let views = self.pass.map_or(1, |p| p.views.max(1));
        let (blocks, used, pool) = match kind {
            Kind::Timestamp => (&mut self.ts_blocks, &mut self.ts_used, Some(&s.ts)),
            Kind::Stats => (&mut self.stats_blocks, &mut self.stats_used, s.stats.as_ref()),
            Kind::Perf(g) => (
                &mut self.perf_blocks,
                &mut self.perf_used,
                s.perf
                    .as_ref()
                    .and_then(|p| p.groups.get(usize::from(g)))
                    .map(|g| &g.pool),
            ),
        };
        if u32::from(views) > BLOCK {
            return None;
        }
        if blocks.is_empty() || *used + u32::from(views) > BLOCK {
            if blocks.len() >= u16::MAX as usize {
                return None;
            }
            blocks.push(pool?.take()?);
            *used = 0;
        }
        let slot = SlotRef {
            block: (blocks.len() - 1) as u16,
            index: *used as u8,
            views,
        };
        *used += u32::from(views);
        Some(slot)
    }

    fn query(&self, kind: Kind, s: SlotRef) -> (Shared<vk::QueryPool>, u32) {
        let b = match kind {
            Kind::Timestamp => &self.ts_blocks[s.block as usize],
            Kind::Stats => &self.stats_blocks[s.block as usize],
            Kind::Perf(_) => &self.perf_blocks[s.block as usize],
        };
        (b.pool, b.first + u32::from(s.index))
    }

    /// Whether our queries may be recorded here (not in a subpass that holds only secondaries).
    fn can_query(&self) -> bool {
        !self.pass.is_some_and(|p| p.secondary_contents)
    }

    fn timestamp(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, stage: vk::PipelineStageFlags) -> Option<SlotRef> {
        if self.quiet {
            return None;
        }
        if !self.can_query() {
            self.skipped += 1;
            return None;
        }
        let Some(s) = self.alloc(d, Kind::Timestamp) else {
            self.skipped += 1;
            return None;
        };
        let (pool, q) = self.query(Kind::Timestamp, s);
        // The query (one slot per view in a multiview subpass, all in one block) was reset by
        // the reset buffer that precedes it in every submission.
        cb.cmd_write_timestamp(stage, pool, q);
        Some(s)
    }

    /// Whether the driver would crash on a statistics query begun here (see
    /// `samples::stats_need_bound_pipeline`).
    fn stats_wait_for_bind(&self, d: &Sampling<'_>) -> bool {
        !self.gfx_bound && d.state.stats_after_bind
    }

    fn begin_stats(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>) -> Option<SlotRef> {
        if self.quiet
            || !self.stats_on
            || !self.can_query()
            || self.app_stats_active > 0
            || self.our_stats.is_some()
            || self.stats_wait_for_bind(d)
        {
            return None;
        }
        let s = self.alloc(d, Kind::Stats)?;
        let (pool, q) = self.query(Kind::Stats, s);
        // No pipeline-statistics query is active in this command buffer (ours or the app's),
        // and this one is ended in the same subpass.
        cb.cmd_begin_query(pool, q);
        self.our_stats = Some(s);
        Some(s)
    }

    fn end_stats(&mut self, cb: &Recorder<'_>) -> Option<SlotRef> {
        let s = self.our_stats.take()?;
        let (pool, q) = self.query(Kind::Stats, s);
        cb.cmd_end_query(pool, q);
        Some(s)
    }

    /// The scope of this recording's driver-counter queries, when it carries a group.
    fn perf_scope(&self, d: &Sampling<'_>) -> Option<(u8, PerfScope)> {
        let (g, _) = self.perf?;
        let group = d.state.perf.as_ref()?.groups.get(usize::from(g))?;
        (self.primary && !self.quiet).then_some((g, group.scope))
    }

    /// Begins a driver-counter query of the recording's group where `scope` is its scope.
    fn begin_perf(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, scope: PerfScope) {
        let Some((g, s)) = self.perf_scope(d) else { return };
        if s != scope || self.perf_open.is_some() {
            return;
        }
        let Some(slot) = self.alloc(d, Kind::Perf(g)) else {
            self.skipped += 1;
            return;
        };
        let (pool, q) = self.query(Kind::Perf(g), slot);
        // A query of our performance pool of this command pool's family, reset by our reset
        // buffer at the start of each submission; the profiling lock is held since the device
        // was created; no other performance query is active in this command buffer.
        cb.cmd_begin_query(pool, q);
        self.perf_open = Some(slot);
    }

    fn end_perf(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, scope: PerfScope) {
        let Some((g, s)) = self.perf_scope(d) else { return };
        if s != scope {
            return;
        }
        let Some(slot) = self.perf_open.take() else { return };
        let (pool, q) = self.query(Kind::Perf(g), slot);
        cb.cmd_end_query(pool, q);
        self.events.push(Event::Perf { slot, group: g });
    }

    pub fn on_begin(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, level: Level) {
        // A command-buffer-scope query begins first (VUID-vkCmdBeginQuery-queryPool-03224).
        self.begin_perf(d, cb, PerfScope::CmdBuf);
        if self.primary && level >= Level::CmdBuf {
            if let Some(ts) = self.timestamp(d, cb, vk::PipelineStageFlags::TOP_OF_PIPE) {
                self.events.push(Event::CmdBufBegin(ts));
            }
        }
    }

    pub fn on_end(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, level: Level) {
        self.end_stats(cb);
        if self.primary && level >= Level::CmdBuf {
            if let Some(ts) = self.timestamp(d, cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE) {
                self.events.push(Event::CmdBufEnd(ts));
            }
        }
        // And ends last (VUID-vkCmdEndQuery-queryPool-03228).
        self.end_perf(d, cb, PerfScope::CmdBuf);
    }

    /// Before the app's begin-render-pass: the pass's begin timestamp (outside the pass).
    pub fn before_pass(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, level: Level) {
        if level >= Level::RenderPass {
            if let Some(ts) = self.timestamp(d, cb, vk::PipelineStageFlags::TOP_OF_PIPE) {
                self.events.push(Event::PassBegin(ts));
            }
        }
        // Outside the render pass instance (VUID-vkCmdBeginQuery-queryPool-03225).
        self.begin_perf(d, cb, PerfScope::Pass);
    }

    /// After the app's begin-render-pass: pass-level statistics unless draws carry them.
    pub fn after_pass_begin(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, level: Level, start: PassStart) {
        self.pass = Some(Pass {
            secondary_contents: start.secondary_contents,
            views: start.views,
            render_pass: start.render_pass,
            subpass: 0,
            stats_ok: false,
            stats_deferred: false,
        });
        if level >= Level::RenderPass && !Self::draw_stats(d) {
            let deferred = self.stats_wait_for_bind(d) && self.can_query();
            let begun = !deferred && self.begin_stats(d, cb).is_some();
            if let Some(p) = self.pass.as_mut() {
                p.stats_ok = begun;
                p.stats_deferred = deferred;
            }
        }
    }

    /// After the app bound a graphics pipeline: a pass statistics query that waited for one
    /// begins now (the pipeline is bound on the driver's side).
    /// The app bound `pipeline` at `point`.
    pub fn bound(&mut self, point: BindPoint, pipeline: u64) {
        self.pipelines[point as usize] = pipeline;
    }

    pub fn after_gfx_bind(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>) {
        self.gfx_bound = true;
        if !self.pass.is_some_and(|p| p.stats_deferred) {
            return;
        }
        let begun = self.begin_stats(d, cb).is_some();
        if let Some(p) = self.pass.as_mut() {
            p.stats_deferred = false;
            p.stats_ok = begun;
        }
    }

    fn draw_stats(d: &Sampling<'_>) -> bool {
        d.state.draw_stats
    }

    /// Before a subpass change: our pass statistics end here (a query ends in the subpass it
    /// began in) and become one part of the pass's sum.
    pub fn before_next_subpass(&mut self, cb: &Recorder<'_>) {
        if let Some(s) = self.end_stats(cb) {
            if self.pass.is_some_and(|p| p.stats_ok) {
                self.events.push(Event::PassStatsPart(s));
            }
        }
    }

    /// After a subpass change: the new subpass's views, and its own pass-statistics query.
    pub fn after_next_subpass(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, secondary_contents: bool) {
        let Some(p) = self.pass.as_mut() else { return };
        p.secondary_contents = secondary_contents;
        p.subpass += 1;
        if p.render_pass != 0 {
            p.views = d.state.subpass_views(p.render_pass, p.subpass);
        }
        if p.stats_ok && self.begin_stats(d, cb).is_none() {
            if let Some(p) = self.pass.as_mut() {
                p.stats_ok = false;
            }
        }
    }

    pub fn before_pass_end(&mut self, cb: &Recorder<'_>) -> Option<SlotRef> {
        let stats = self.end_stats(cb);
        let ok = self.pass.take().is_some_and(|p| p.stats_ok);
        stats.filter(|_| ok)
    }

    pub fn after_pass_end(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, level: Level, stats: Option<SlotRef>) {
        if level >= Level::RenderPass {
            if let Some(ts) = self.timestamp(d, cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE) {
                self.events.push(Event::PassEnd { ts, stats });
            }
        }
        self.end_perf(d, cb, PerfScope::Pass);
    }

    pub fn label_begin(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>, name: u32) {
        let ts = self.timestamp(d, cb, vk::PipelineStageFlags::TOP_OF_PIPE);
        self.events.push(Event::LabelBegin { ts, name });
    }

    pub fn label_end(&mut self, d: &Sampling<'_>, cb: &Recorder<'_>) {
        let ts = self.timestamp(d, cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
        self.events.push(Event::LabelEnd { ts });
    }

    /// Around one draw/dispatch/trace-rays: timestamps and statistics; `forward` records the
    /// app's command in between.
    /// Times the draw `forward` records when its position is in the window; whether it did.
    pub fn around_draw(
        &mut self,
        d: &Sampling<'_>,
        cb: &Recorder<'_>,
        mut params: DrawParams,
        point: BindPoint,
        forward: impl FnOnce(),
    ) -> bool {
        params.pipeline = self.pipelines[point as usize];
        let index = self.draws;
        self.draws += 1;
        if !super::budget::timed(self.window, index) {
            forward();
            return false;
        }
        // Right after another draw's sample, that draw's end is this one's begin: the time
        // from the previous draw's completion to this one's. Any other sample in between (a
        // label, a pass boundary, executed secondaries) is its own event and breaks the chain.
        let shared = match self.events.last() {
            Some(Event::Draw { end, .. }) if self.can_query() => Some(*end),
            _ => None,
        };
        // Otherwise the begin waits for the work before the draw to complete, as a shared one
        // does: a top-of-pipe begin would count the tail of the untimed draws still running
        // into the first draw of each window (on the H100's regions scene, per-draw means off
        // by up to 15 % against timing every draw).
        let begin = shared.or_else(|| self.timestamp(d, cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE));
        let draw_stats = d.state.draw_stats;
        let stats = begin.filter(|_| draw_stats).and_then(|_| self.begin_stats(d, cb));
        forward();
        if stats.is_some() {
            self.end_stats(cb);
        }
        if let (Some(begin), Some(end)) = (begin, self.timestamp(d, cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE)) {
            self.events.push(Event::Draw {
                begin,
                end,
                stats,
                params,
                index,
            });
            return true;
        }
        false
    }

    /// The app begins a pipeline-statistics query of its own: ours must not be active, so a
    /// pass-level one ends early and reports no statistics.
    pub fn app_stats_begin(&mut self, cb: &Recorder<'_>) {
        if self.end_stats(cb).is_some() {
            self.skipped += 1;
            if let Some(p) = self.pass.as_mut() {
                p.stats_ok = false;
            }
        }
        if let Some(p) = self.pass.as_mut() {
            p.stats_deferred = false;
        }
        self.app_stats_active += 1;
    }

    pub fn app_stats_end(&mut self) {
        self.app_stats_active = self.app_stats_active.saturating_sub(1);
    }
}
