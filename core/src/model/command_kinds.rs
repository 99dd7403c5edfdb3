//! The kinds of recorded commands framescope counts: draws and dispatches by entry point.

/// Kinds of draw commands, counted separately. Counting is per recorded command: a multi-draw
/// or indirect draw counts once, whatever its draw count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrawKind {
    Draw,
    DrawIndexed,
    DrawIndirect,
    DrawIndexedIndirect,
    DrawIndirectCount,
    DrawIndexedIndirectCount,
    DrawMulti,
    DrawMultiIndexed,
    DrawMeshTasks,
    DrawMeshTasksIndirect,
    DrawMeshTasksIndirectCount,
    /// GL immediate mode: one `glBegin`..`glEnd`, counted at `glEnd`.
    DrawImmediate,
    /// GL display lists: one `glCallList`, or one per list of `glCallLists`; the draws inside
    /// a list run in the driver, unseen.
    DrawCallList,
}

impl DrawKind {
    pub const COUNT: usize = 13;
    pub const ALL: [DrawKind; Self::COUNT] = [
        DrawKind::Draw,
        DrawKind::DrawIndexed,
        DrawKind::DrawIndirect,
        DrawKind::DrawIndexedIndirect,
        DrawKind::DrawIndirectCount,
        DrawKind::DrawIndexedIndirectCount,
        DrawKind::DrawMulti,
        DrawKind::DrawMultiIndexed,
        DrawKind::DrawMeshTasks,
        DrawKind::DrawMeshTasksIndirect,
        DrawKind::DrawMeshTasksIndirectCount,
        DrawKind::DrawImmediate,
        DrawKind::DrawCallList,
    ];

    /// Name in the dump's `draws_by_kind` object.
    pub const fn name(self) -> &'static str {
        [
            "draw",
            "draw_indexed",
            "draw_indirect",
            "draw_indexed_indirect",
            "draw_indirect_count",
            "draw_indexed_indirect_count",
            "draw_multi",
            "draw_multi_indexed",
            "draw_mesh_tasks",
            "draw_mesh_tasks_indirect",
            "draw_mesh_tasks_indirect_count",
            "draw_immediate",
            "draw_call_list",
        ][self as usize]
    }
}

/// Kinds of compute dispatches (`vkCmdDispatch`, `vkCmdDispatchIndirect`, `vkCmdDispatchBase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchKind {
    Direct,
    Indirect,
    Base,
}

impl DispatchKind {
    pub const COUNT: usize = 3;
    pub const ALL: [DispatchKind; Self::COUNT] = [DispatchKind::Direct, DispatchKind::Indirect, DispatchKind::Base];

    /// Name in the dump's `dispatches_by_kind` object.
    pub const fn name(self) -> &'static str {
        ["direct", "indirect", "base"][self as usize]
    }
}

/// Per-kind command counts, indexable by the kind enum: `draws[DrawKind::DrawIndexed] += 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindCounts<const N: usize>(pub [u32; N]);

impl<const N: usize> KindCounts<N> {
    /// Sum over all kinds.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|&c| u64::from(c)).sum()
    }
}

impl<const N: usize> Default for KindCounts<N> {
    fn default() -> Self {
        KindCounts([0; N])
    }
}
