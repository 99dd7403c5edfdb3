//! The frame model: one fixed-size, heap-free [`FrameRecord`] per frame.
//!
//! The layer fills the CPU part at present time (counts, swapchain, `t_ns`); the
//! [`crate::session::assembly::FrameAssembler`] fills the frame index, `cpu_frame_ns` and the GPU part
//! once the frame's submissions retire. Records are `Copy` so they travel through the dump
//! queue without allocation.

use std::ops::{Index, IndexMut};

pub use crate::model::command_kinds::{DispatchKind, DrawKind, KindCounts};
pub use crate::model::counter_values::{CounterValues, MAX_FRAME_COUNTERS};

pub type DrawCounts = KindCounts<{ DrawKind::COUNT }>;
pub type DispatchCounts = KindCounts<{ DispatchKind::COUNT }>;

impl Index<DrawKind> for DrawCounts {
    type Output = u32;
    fn index(&self, k: DrawKind) -> &u32 {
        &self.0[k as usize]
    }
}
impl IndexMut<DrawKind> for DrawCounts {
    fn index_mut(&mut self, k: DrawKind) -> &mut u32 {
        &mut self.0[k as usize]
    }
}
impl Index<DispatchKind> for DispatchCounts {
    type Output = u32;
    fn index(&self, k: DispatchKind) -> &u32 {
        &self.0[k as usize]
    }
}
impl IndexMut<DispatchKind> for DispatchCounts {
    fn index_mut(&mut self, k: DispatchKind) -> &mut u32 {
        &mut self.0[k as usize]
    }
}

/// Command and submission counts of one frame, accumulated by the layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameCounts {
    /// `vkQueueSubmit`/`vkQueueSubmit2` calls.
    pub submits: u32,
    /// Command buffers submitted.
    pub command_buffers: u32,
    pub draws: DrawCounts,
    pub dispatches: DispatchCounts,
    /// `vkCmdTraceRays*` commands.
    pub trace_rays: u32,
    /// `vkCmdBeginRenderPass*` plus `vkCmdBeginRendering*`.
    pub render_passes: u32,
    pub pipeline_binds: u32,
    /// `vkCmdPipelineBarrier*` commands.
    pub barriers: u32,
    /// Submissions of this frame to queues whose family has `timestampValidBits == 0`.
    pub queues_without_timestamps: u32,
    /// Draws that got a GPU time sample (`samples=draw`: those inside the frame's draw window).
    pub draws_timed: u32,
    /// Command buffers of this frame whose recording took pipeline statistics (Vulkan: those
    /// begun in a frame that carried them, `sample_stats_every`).
    pub stats_command_buffers: u32,
    /// Draws, dispatches, trace-rays, binds and barriers were not counted (Vulkan with
    /// `command_counts` off: their counts are 0, not measured).
    pub commands_uncounted: bool,
}

impl FrameCounts {
    /// All draws, every kind.
    pub fn draws_total(&self) -> u64 {
        self.draws.total()
    }
    /// All dispatches, every kind.
    pub fn dispatches_total(&self) -> u64 {
        self.dispatches.total()
    }
}

/// Why a frame has no GPU time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMissing {
    /// The frame submitted no work.
    NoSubmissions,
    /// The GPU results did not arrive within the assembler's bound.
    Timeout,
    /// Every submission went to queues that cannot write timestamps.
    QueueHasNoTimestamps,
    /// GPU timing is turned off or could not be set up on this device.
    Disabled,
    /// The device was lost before the results arrived.
    DeviceLost,
    /// No GPU time and no reason given (written when a record arrives without either).
    Unknown,
}

impl GpuMissing {
    /// Name in the dump's `gpu_missing` field.
    pub fn name(self) -> &'static str {
        match self {
            GpuMissing::NoSubmissions => "no_submissions",
            GpuMissing::Timeout => "timeout",
            GpuMissing::QueueHasNoTimestamps => "queue_has_no_timestamps",
            GpuMissing::Disabled => "disabled",
            GpuMissing::DeviceLost => "device_lost",
            GpuMissing::Unknown => "unknown",
        }
    }

    /// Every reason, for schemas and docs.
    pub const ALL: [GpuMissing; 6] = [
        GpuMissing::NoSubmissions,
        GpuMissing::Timeout,
        GpuMissing::QueueHasNoTimestamps,
        GpuMissing::Disabled,
        GpuMissing::DeviceLost,
        GpuMissing::Unknown,
    ];
}

/// GPU time of one frame. Either `busy_ns`/`span_ns` are set, or `missing` says why not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuFrameTime {
    /// Length of the union of the frame's submission intervals.
    pub busy_ns: Option<u64>,
    /// First submission begin to last submission end.
    pub span_ns: Option<u64>,
    /// First begin on the CPU clock (`CLOCK_MONOTONIC`), only with calibrated timestamps.
    pub begin_ns: Option<u64>,
    /// Last end on the CPU clock, only with calibrated timestamps.
    pub end_ns: Option<u64>,
    pub missing: Option<GpuMissing>,
}

/// The app's CPU side of a frame, on `CLOCK_MONOTONIC`: PresentMon's CPUStart, time in
/// Present, and the presenting thread's waits (see [`crate::model::waits`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFrameTime {
    /// When the previous frame's present (or swap) call returned: the frame's CPU start.
    /// `None` for the first frame, and after a present that did not return before this
    /// frame ended (another thread presenting meanwhile).
    pub start_ns: Option<u64>,
    /// From the frame's end (`t_ns`, the present call entered, after `fps_limit`) to the
    /// present call's return: framescope's HUD and the driver's present, as the app sees it.
    pub present_ns: Option<u64>,
    /// The presenting thread's waits from the previous present to this one.
    pub waits: crate::model::waits::WaitTimes,
    /// What the presenting thread created from the previous present to this one.
    pub creation: crate::model::creation::CreationTimes,
}

impl CpuFrameTime {
    /// The frame's CPU time before its present call that was not spent waiting: `t_ns`
    /// minus the start minus the waits.
    pub fn busy_ns(&self, t_ns: u64) -> Option<u64> {
        let start = self.start_ns?;
        Some(t_ns.saturating_sub(start).saturating_sub(self.waits.total()))
    }

    /// The waits plus the time in the present call (unknown when that is).
    pub fn wait_ns(&self) -> Option<u64> {
        Some(self.present_ns?.saturating_add(self.waits.total()))
    }
}

/// How the frame ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameEnd {
    /// `vkQueuePresentKHR` on [`FrameRecord::swapchain`].
    #[default]
    Present,
    /// A `VK_EXT_frame_boundary` marker (offscreen/compute apps).
    FrameBoundary,
}

impl FrameEnd {
    pub fn name(self) -> &'static str {
        match self {
            FrameEnd::Present => "present",
            FrameEnd::FrameBoundary => "frame_boundary",
        }
    }
}

/// The swapchain a frame was presented to. Enum values are raw Vulkan values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapchainInfo {
    /// `VkSwapchainKHR` handle value.
    pub handle: u64,
    pub width: u32,
    pub height: u32,
    /// `VkFormat`.
    pub format: i32,
    /// `VkPresentModeKHR`.
    pub present_mode: i32,
}

/// One frame. Fixed size, `Copy`, no heap.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameRecord {
    /// Frame index from 0, assigned by the assembler.
    pub frame: u64,
    pub end: FrameEnd,
    /// `None` for frames not ended by a present.
    pub swapchain: Option<SwapchainInfo>,
    /// CPU timestamp of the frame's end (present), `CLOCK_MONOTONIC` ns.
    pub t_ns: u64,
    /// Present-to-present CPU time; `None` for the first frame.
    pub cpu_frame_ns: Option<u64>,
    /// Where the frame's CPU time went: its start, its waits, its present call.
    pub cpu: CpuFrameTime,
    pub gpu: GpuFrameTime,
    /// When it reached the screen; set by the dump writer's join ([`crate::display`]).
    pub display: crate::display::FrameDisplay,
    pub counts: FrameCounts,
    /// The newest counter values when the frame closed (see [`crate::session::counters`]).
    pub counters: CounterValues,
    /// The window each counter source's values cover, by the catalogue's source index.
    pub counter_windows: [crate::model::counter_values::CounterWindow; crate::model::counter_values::MAX_SOURCES],
    /// Pipeline statistics of the whole frame, where the layer measures them per frame (the GL
    /// shim); `None` when not measured or not trustworthy for this frame.
    pub stats: Option<crate::model::sample::PipelineStats>,
    /// Set by the dump writer: the median frame time this frame is a stutter against
    /// ([`crate::model::stutter`]); `None` when it is none.
    pub stutter_median_ns: Option<u64>,
    /// `samples=draw` within a budget: the draw positions timed in every command buffer of the
    /// frame (`first`, `count`; `count` 0: a baseline frame) and the estimated GPU time they
    /// added, once measured.
    pub draw_window: Option<DrawWindowInfo>,
}

/// See [`FrameRecord::draw_window`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrawWindowInfo {
    pub first: u32,
    pub count: u32,
    /// The most draws one command buffer has had: the window wraps there.
    pub of: u32,
    pub overhead_ns: Option<u64>,
}

/// Name of a `VkFormat` commonly used for swapchains, if it is one.
pub fn vk_format_name(format: i32) -> Option<&'static str> {
    Some(match format {
        4 => "R5G6B5_UNORM_PACK16",
        37 => "R8G8B8A8_UNORM",
        43 => "R8G8B8A8_SRGB",
        44 => "B8G8R8A8_UNORM",
        50 => "B8G8R8A8_SRGB",
        58 => "A2R10G10B10_UNORM_PACK32",
        64 => "A2B10G10R10_UNORM_PACK32",
        91 => "R16G16B16A16_UNORM",
        97 => "R16G16B16A16_SFLOAT",
        _ => return None,
    })
}

/// Name of a `VkPresentModeKHR`, if known.
pub fn vk_present_mode_name(mode: i32) -> Option<&'static str> {
    Some(match mode {
        0 => "IMMEDIATE",
        1 => "MAILBOX",
        2 => "FIFO",
        3 => "FIFO_RELAXED",
        1000111000 => "SHARED_DEMAND_REFRESH",
        1000111001 => "SHARED_CONTINUOUS_REFRESH",
        1000361000 => "FIFO_LATEST_READY",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_every_kind() {
        let mut c = FrameCounts::default();
        for (i, k) in DrawKind::ALL.iter().enumerate() {
            c.draws[*k] += i as u32 + 1;
        }
        c.dispatches[DispatchKind::Indirect] = 4;
        c.dispatches[DispatchKind::Base] = 5;
        // 1 + 2 + ... + 13
        assert_eq!(c.draws_total(), 91);
        assert_eq!(c.dispatches_total(), 9);
    }

    #[test]
    fn kind_names_are_distinct_and_in_order() {
        assert_eq!(DrawKind::DrawIndexedIndirectCount.name(), "draw_indexed_indirect_count");
        assert_eq!(
            DrawKind::DrawMeshTasksIndirectCount.name(),
            "draw_mesh_tasks_indirect_count"
        );
        let mut names: Vec<&str> = DrawKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DrawKind::COUNT);
        assert_eq!(DispatchKind::Base.name(), "base");
    }

    #[test]
    fn counter_values_are_fixed_capacity() {
        let mut v = CounterValues::default();
        for i in 0..MAX_FRAME_COUNTERS {
            assert!(v.set(i, i as f64 * 0.5));
        }
        assert!(!v.set(MAX_FRAME_COUNTERS, 1.0));
        assert_eq!(v.len(), MAX_FRAME_COUNTERS);
        assert_eq!(v.get(3), Some(1.5));
        assert_eq!(v.get(MAX_FRAME_COUNTERS), None);
        assert_eq!(v.iter().nth(2), Some((2, 1.0)));
        v.clear();
        assert!(v.is_empty());
    }

    #[test]
    fn record_is_small_and_copy() {
        fn is_copy<T: Copy>() {}
        is_copy::<FrameRecord>();
        // Keeps the dump queue (1024 records) under 2 MiB.
        assert!(
            std::mem::size_of::<FrameRecord>() <= 1536,
            "{}",
            std::mem::size_of::<FrameRecord>()
        );
    }
}
