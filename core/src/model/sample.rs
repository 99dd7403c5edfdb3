//! GPU samples inside a frame: a begin/end pair of GPU timestamps around a command buffer, a
//! render pass, a debug-label region or a draw, with pipeline statistics where available.
//! Fixed size and `Copy`, like [`crate::model::frame::FrameRecord`], so the app's threads can hand
//! them to the dump writer without allocating.

use crate::model::command_kinds::DrawKind;

/// What a sample spans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// A primary command buffer, begin to end.
    #[default]
    CmdBuf,
    /// `vkCmdBeginRenderPass*`/`vkCmdBeginRendering*` to the matching end.
    RenderPass,
    /// A `VK_EXT_debug_utils` label region (may span command buffers of one queue).
    Label,
    /// One draw, dispatch or trace-rays command.
    Draw,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::CmdBuf => "cmdbuf",
            Scope::RenderPass => "renderpass",
            Scope::Label => "label",
            Scope::Draw => "draw",
        }
    }
}

/// Pipeline statistics, in `VkQueryPipelineStatisticFlagBits` order of the ones we ask for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineStats {
    pub ia_vertices: u64,
    pub ia_primitives: u64,
    pub vs_invocations: u64,
    pub clipping_invocations: u64,
    pub clipping_primitives: u64,
    pub fs_invocations: u64,
    pub cs_invocations: u64,
}

impl PipelineStats {
    pub const NAMES: [&'static str; 7] = [
        "ia_vertices",
        "ia_primitives",
        "vs_invocations",
        "clipping_invocations",
        "clipping_primitives",
        "fs_invocations",
        "cs_invocations",
    ];

    pub fn from_array(v: [u64; 7]) -> Self {
        PipelineStats {
            ia_vertices: v[0],
            ia_primitives: v[1],
            vs_invocations: v[2],
            clipping_invocations: v[3],
            clipping_primitives: v[4],
            fs_invocations: v[5],
            cs_invocations: v[6],
        }
    }

    pub fn as_array(&self) -> [u64; 7] {
        [
            self.ia_vertices,
            self.ia_primitives,
            self.vs_invocations,
            self.clipping_invocations,
            self.clipping_primitives,
            self.fs_invocations,
            self.cs_invocations,
        ]
    }

    /// Raw values add up; ratios are never averaged.
    pub fn add(&mut self, o: &PipelineStats) {
        let (a, b) = (self.as_array(), o.as_array());
        *self = PipelineStats::from_array(std::array::from_fn(|i| a[i].saturating_add(b[i])));
    }
}

/// The parameters of a draw sample, as recorded (indirect draws' counts live on the GPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrawParams {
    pub kind: Option<DrawKind>,
    pub vertex_count: u32,
    pub index_count: u32,
    pub instance_count: u32,
    pub indirect: bool,
    /// The pipeline bound where the draw ran (Vulkan: the `VkPipeline` handle of its bind
    /// point; GL: the current program), 0 when none was seen. Part of a draw's key.
    pub pipeline: u64,
}

/// Deepest label nesting a sample records; deeper levels are cut off (and counted).
pub const MAX_LABEL_DEPTH: usize = 8;

/// The label stack at a sample, as interned label ids ([`crate::model::labels`]), outermost first.
/// Equal and hashed by its levels only (a popped level's stale id does not count).
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelPath {
    len: u8,
    ids: [u32; MAX_LABEL_DEPTH],
}

impl PartialEq for LabelPath {
    fn eq(&self, o: &Self) -> bool {
        self.ids() == o.ids()
    }
}

impl Eq for LabelPath {}

impl std::hash::Hash for LabelPath {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.ids().hash(h);
    }
}

impl LabelPath {
    /// Appends a level; returns false (and keeps the path) when it is full.
    pub fn push(&mut self, id: u32) -> bool {
        if self.len as usize == MAX_LABEL_DEPTH {
            return false;
        }
        self.ids[self.len as usize] = id;
        self.len += 1;
        true
    }

    pub fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.ids[self.len as usize])
    }

    pub fn ids(&self) -> &[u32] {
        &self.ids[..self.len as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One sample of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleRecord {
    /// Frame the sample's submission belongs to.
    pub frame: u64,
    pub scope: Scope,
    /// Label stack at the sample; for a label sample it ends with the label itself.
    pub label: LabelPath,
    /// Index of the command buffer among the frame's submitted command buffers.
    pub cmdbuf: u32,
    /// Index of the draw within its command buffer's recording (draw samples only).
    pub draw: Option<u32>,
    /// Begin and end on the CPU clock (CLOCK_MONOTONIC) when calibrated, else GPU ns.
    pub gpu_begin_ns: Option<u64>,
    pub gpu_end_ns: Option<u64>,
    pub stats: Option<PipelineStats>,
    pub params: Option<DrawParams>,
    /// The command buffer was submitted again before these results were read: its query
    /// slots were rewritten, so no numbers are reported.
    pub overwritten: bool,
    /// Driver counters (`VK_KHR_performance_query`) over the sample, where it carried a query.
    pub driver: Option<crate::model::driver_values::DriverValues>,
}

impl SampleRecord {
    pub fn gpu_ns(&self) -> Option<u64> {
        Some(self.gpu_end_ns?.saturating_sub(self.gpu_begin_ns?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_path_stops_at_its_capacity_and_pops_in_order() {
        let mut p = LabelPath::default();
        for i in 0..MAX_LABEL_DEPTH as u32 {
            assert!(p.push(i));
        }
        assert!(!p.push(99));
        assert_eq!(p.ids().len(), MAX_LABEL_DEPTH);
        assert_eq!(p.pop(), Some(MAX_LABEL_DEPTH as u32 - 1));
        assert_eq!(p.ids(), &[0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn stats_add_raw_values() {
        let mut a = PipelineStats::from_array([1, 2, 3, 4, 5, 6, 7]);
        a.add(&PipelineStats::from_array([10, 20, 30, 40, 50, 60, 70]));
        assert_eq!(a.as_array(), [11, 22, 33, 44, 55, 66, 77]);
    }

    #[test]
    fn gpu_ns_needs_both_ends() {
        let s = SampleRecord {
            gpu_begin_ns: Some(100),
            gpu_end_ns: Some(350),
            ..Default::default()
        };
        assert_eq!(s.gpu_ns(), Some(250));
        assert_eq!(
            SampleRecord {
                gpu_end_ns: Some(5),
                ..Default::default()
            }
            .gpu_ns(),
            None
        );
    }
}
