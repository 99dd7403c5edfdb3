//! Begin/end sample markers inside frames (config `samples`): per primary command buffer,
//! render pass, debug-label region and draw, with pipeline statistics on render passes, or on
//! draws with `sample_stats=draw` in `draw` mode. Levels are inclusive: `draw` also samples
//! labels, passes and command buffers. Consecutive draw samples share their boundary
//! timestamp: a draw's begin is the previous draw's end when nothing else was sampled in
//! between, so a draw costs one timestamp instead of two.
//!
//! Rules (vendor-counter-backends.md pitfalls 3, 4, 11): never two active statistics queries
//! in a command buffer, and none of ours while the app has one; queries begun in a render
//! pass end in its subpass (pass statistics are summed over one query per subpass); in a
//! multiview subpass a query takes one slot per view (timestamps read from the first,
//! statistics summed over all); no queries of ours in subpasses whose contents are secondary
//! command buffers (their samples come from inside the secondaries);
//! query slots belong to one recording and are reset by our own command buffers at the start
//! of each submission; a command buffer submitted again before its results were read reports
//! `overwritten` samples instead of numbers.

pub mod blocks;
pub mod budget;
pub mod driver_counters;
pub mod recording;
pub mod resolve;
pub mod span_reads;

use crate::dispatch::device::Device;
use ash::vk;
use blocks::{BlockPool, Kind, ResetPools};
use framescope_core::config::{SampleStats, Samples};
use framescope_core::sync::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off,
    CmdBuf,
    RenderPass,
    Label,
    Draw,
}

impl From<Samples> for Level {
    fn from(s: Samples) -> Level {
        match s {
            Samples::Off => Level::Off,
            Samples::Cmdbuf => Level::CmdBuf,
            Samples::Renderpass => Level::RenderPass,
            Samples::Label => Level::Label,
            Samples::Draw => Level::Draw,
        }
    }
}

/// Where a draw's pipeline is bound: draws use the graphics pipeline, dispatches the compute
/// one, trace-rays commands the ray-tracing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindPoint {
    Graphics = 0,
    Compute = 1,
    RayTracing = 2,
}

impl BindPoint {
    pub fn of(p: vk::PipelineBindPoint) -> Option<BindPoint> {
        match p {
            vk::PipelineBindPoint::GRAPHICS => Some(BindPoint::Graphics),
            vk::PipelineBindPoint::COMPUTE => Some(BindPoint::Compute),
            vk::PipelineBindPoint::RAY_TRACING_KHR => Some(BindPoint::RayTracing),
            _ => None,
        }
    }
}

/// A device that samples: its dispatch tables and its sampling state, what recording and
/// resolving samples need.
#[derive(Clone, Copy)]
pub struct Sampling<'a> {
    pub dev: &'a Device,
    pub state: &'a SampleState,
}

impl std::ops::Deref for Sampling<'_> {
    type Target = Device;
    fn deref(&self) -> &Device {
        self.dev
    }
}

/// Views a view mask renders (1 for a mask of 0: no multiview).
pub fn views_of_mask(mask: u32) -> u8 {
    mask.count_ones().max(1) as u8
}

/// Per-device sampling state.
pub struct SampleState {
    pub level: Level,
    /// Statistics per draw (`draw` mode with `sample_stats=draw`), else per render pass.
    pub draw_stats: bool,
    pub ts: BlockPool,
    /// `None` when the device has no `pipelineStatisticsQuery`.
    pub stats: Option<BlockPool>,
    pub reset_pools: ResetPools,
    /// View masks per subpass of the render passes that use multiview.
    pub multiview_passes: RwLock<HashMap<u64, Box<[u32]>>>,
    /// The app's pipeline-statistics query pools.
    pub app_stats_pools: RwLock<HashSet<u64>>,
    /// Our statistics queries begin only once the recording has bound a graphics pipeline
    /// ([`stats_need_bound_pipeline`]); a pass's query waits for the first bind in it.
    pub stats_after_bind: bool,
    /// The draw positions recordings time (`samples=draw`; every draw below it is moot).
    pub window: budget::DrawWindow,
    /// Which frames take pipeline statistics (`sample_stats_every`).
    pub stats_rotation: StatsRotation,
    /// Driver counters (`driver_counters`), when the device collects them.
    pub perf: Option<driver_counters::PerfState>,
}

/// Pipeline statistics on one frame in `every` (`sample_stats_every`): recordings begun in that
/// frame take them, the others do not. Per-pass statistics are then means over the frames that
/// carried them, which assumes a steady workload; what it saves is the statistics queries'
/// cost on the other frames (H100, 10 000 draws, against `samples=off`: pass timestamps alone
/// +0.73 %, with statistics on every frame +2.76 %, on one frame in 32 +0.82 %;
/// docs/hardware-verification.md, 2026-11-27).
pub struct StatsRotation {
    every: u64,
    frame: AtomicU64,
}

impl StatsRotation {
    pub fn new(every: u64) -> Self {
        StatsRotation {
            every: every.max(1),
            frame: AtomicU64::new(0),
        }
    }

    /// Whether a recording begun now takes statistics (the first frame does).
    pub fn carries_now(&self) -> bool {
        self.frame.load(Ordering::Relaxed).is_multiple_of(self.every)
    }

    /// A frame ended.
    pub fn end_frame(&self) {
        self.frame.fetch_add(1, Ordering::Relaxed);
    }
}

/// lavapipe up to at least Mesa 22.3.6 dereferences the bound graphics pipeline in
/// `vkCmdBeginQuery` (its `emit_state` -> `update_inline_shader_state`) whenever push
/// constants or push descriptors were recorded since, and segfaults in its queue thread when
/// none is bound yet: valid usage (vkd3d pushes before binding; `framescope-testapp
/// --push-first` is the minimal reproduction), so ours must not be the query that meets it.
/// Every lavapipe is treated so: the version that fixed it is not known.
pub fn stats_need_bound_pipeline(p: &vk::PhysicalDeviceProperties) -> bool {
    // VK_VENDOR_ID_MESA; lavapipe names its device "llvmpipe (LLVM x.y.z, ...)".
    const MESA: u32 = 0x10005;
    p.vendor_id == MESA
        && p.device_name_as_c_str()
            .is_ok_and(|n| n.to_bytes().starts_with(b"llvmpipe"))
}

impl SampleState {
    pub fn new(
        d: &Device,
        level: Level,
        stats_scope: SampleStats,
        with_stats: bool,
        stats_after_bind: bool,
        stats_every: u64,
    ) -> Option<SampleState> {
        if level == Level::Off {
            return None;
        }
        // Draw-level sampling of heavy frames needs many slots in flight.
        let ts_blocks = if level == Level::Draw { 4096 } else { 1024 };
        let ts = BlockPool::new(d, Kind::Timestamp, ts_blocks)?;
        let stats = if with_stats {
            BlockPool::new(d, Kind::Stats, ts_blocks / 2)
        } else {
            None
        };
        Some(SampleState {
            level,
            draw_stats: level == Level::Draw && stats_scope == SampleStats::Draw,
            ts,
            stats,
            reset_pools: ResetPools::default(),
            multiview_passes: RwLock::new(HashMap::new()),
            app_stats_pools: RwLock::new(HashSet::new()),
            stats_after_bind,
            window: budget::DrawWindow::new(),
            // In `samples=draw` the draw budget covers the statistics: its baseline frames take
            // none and every other frame does; rotating them as well made its cost estimate
            // wander (H100, 10 000 draws: +4.2 % of GPU busy against +2.5 %, 2026-11-27).
            stats_rotation: StatsRotation::new(if level == Level::Draw { 1 } else { stats_every }),
            perf: None,
        })
    }

    /// Views of subpass `subpass` of render pass `rp` (raw handle): a query there takes one
    /// slot per view. 1 outside multiview.
    pub fn subpass_views(&self, rp: u64, subpass: u32) -> u8 {
        let passes = self.multiview_passes.read();
        let mask = passes
            .get(&rp)
            .and_then(|masks| masks.get(subpass as usize))
            .copied()
            .unwrap_or(0);
        views_of_mask(mask)
    }

    /// At device destruction; nothing of ours is pending.
    pub fn destroy(&self) {
        self.ts.destroy();
        if let Some(s) = &self.stats {
            s.destroy();
        }
        if let Some(p) = &self.perf {
            p.destroy();
        }
        self.reset_pools.destroy();
    }
}
