//! Per-frame pipeline statistics on desktop GL (`GL_ARB_pipeline_statistics_query`, core in
//! GL 4.6), for the frame record's `stats` object.
//!
//! One query per statistic is active from just after a swap to just before the next one (a
//! pipeline-statistics target allows one active query at a time, so nothing finer — labels or
//! draws — can have statistics on GL without nesting, which GL forbids). The queries are begun
//! only when no query of the same target is active in the context (the app may hold one across
//! the swap, or begin it through an entry point the shim does not see): beginning ours then
//! would raise `GL_INVALID_OPERATION` in the app's context. When the app begins or ends a query
//! of one of these targets while ours run, ours are ended first and that frame reports no
//! statistics (never partial or wrong numbers); they start again after the next swap.
//!
//! OpenGL ES has no pipeline-statistics queries.

use crate::frames::WinSys;
use crate::gl::{GlInfo, GL_QUERY_COUNTER_BITS};
use crate::samples::glfn;

pub const GL_VERTICES_SUBMITTED: u32 = 0x82EE;
pub const GL_PRIMITIVES_SUBMITTED: u32 = 0x82EF;
pub const GL_VERTEX_SHADER_INVOCATIONS: u32 = 0x82F0;
pub const GL_FRAGMENT_SHADER_INVOCATIONS: u32 = 0x82F4;
pub const GL_COMPUTE_SHADER_INVOCATIONS: u32 = 0x82F5;
pub const GL_CLIPPING_INPUT_PRIMITIVES: u32 = 0x82F6;
pub const GL_CLIPPING_OUTPUT_PRIMITIVES: u32 = 0x82F7;
pub const GL_CURRENT_QUERY: u32 = 0x8865;

/// Number of statistics (the dump's `stats` keys).
pub const COUNT: usize = 7;

/// The GL targets in the order of `PipelineStats::NAMES`: `ia_vertices`, `ia_primitives`,
/// `vs_invocations`, `clipping_invocations`, `clipping_primitives`, `fs_invocations`,
/// `cs_invocations`.
pub const TARGETS: [u32; COUNT] = [
    GL_VERTICES_SUBMITTED,
    GL_PRIMITIVES_SUBMITTED,
    GL_VERTEX_SHADER_INVOCATIONS,
    GL_CLIPPING_INPUT_PRIMITIVES,
    GL_CLIPPING_OUTPUT_PRIMITIVES,
    GL_FRAGMENT_SHADER_INVOCATIONS,
    GL_COMPUTE_SHADER_INVOCATIONS,
];

/// Index of `target` in [`TARGETS`].
pub fn index_of(target: u32) -> Option<usize> {
    TARGETS.iter().position(|&t| t == target)
}

type BeginQueryFn = unsafe extern "C" fn(u32, u32);
type EndQueryFn = unsafe extern "C" fn(u32);
type GetQueryivFn = unsafe extern "C" fn(u32, u32, *mut i32);

/// The entry points and the targets the context counts.
pub struct Stats {
    begin_query: BeginQueryFn,
    end_query: EndQueryFn,
    get_queryiv: GetQueryivFn,
    /// `glFlush` where our queries need scenes of their own (`GlFns::scene_break`).
    scene_break: Option<crate::gl::FlushFn>,
    /// `false` only for `cs_invocations` in a context without compute shaders, which reports 0
    /// (no compute shader can run there).
    counted: [bool; COUNT],
}

impl Stats {
    /// Statistics for a desktop context with the extension (or GL 4.6) whose targets all have
    /// counter bits; otherwise why not.
    pub fn detect(
        ws: WinSys,
        info: &GlInfo,
        has_ext: impl Fn(&str) -> bool,
        scene_break: Option<crate::gl::FlushFn>,
    ) -> Result<Stats, &'static str> {
        if info.es {
            return Err("OpenGL ES has no pipeline-statistics queries");
        }
        if !(info.at_least(4, 6) || has_ext("GL_ARB_pipeline_statistics_query")) {
            return Err("the context has no GL_ARB_pipeline_statistics_query (GL 4.6)");
        }
        let (Some(begin_query), Some(end_query), Some(get_queryiv)) = (
            glfn::<BeginQueryFn>(ws, c"glBeginQuery"),
            glfn::<EndQueryFn>(ws, c"glEndQuery"),
            glfn::<GetQueryivFn>(ws, c"glGetQueryiv"),
        ) else {
            return Err("glBeginQuery/glEndQuery/glGetQueryiv not found");
        };
        let compute = info.at_least(4, 3) || has_ext("GL_ARB_compute_shader");
        let mut counted = [true; COUNT];
        counted[COUNT - 1] = compute;
        for (t, &on) in TARGETS.iter().zip(&counted) {
            if !on {
                continue;
            }
            let mut bits = 0i32;
            // SAFETY: a pipeline-statistics target with the extension present, and a valid
            // pname; writes `bits`. Initialisation only, with the context current.
            unsafe { get_queryiv(*t, GL_QUERY_COUNTER_BITS, &mut bits) };
            if bits <= 0 {
                return Err("a pipeline-statistics target has no counter bits");
            }
        }
        Ok(Stats {
            begin_query,
            end_query,
            get_queryiv,
            scene_break,
            counted,
        })
    }

    /// Whether no query of any of our targets is active in the current context (the app's, or
    /// ours), i.e. whether beginning ours cannot raise an error.
    fn all_idle(&self) -> bool {
        TARGETS.iter().zip(&self.counted).all(|(t, &on)| {
            if !on {
                return true;
            }
            let mut cur = 0i32;
            // SAFETY: valid target and pname with the extension; only reads state, writes `cur`.
            unsafe { (self.get_queryiv)(*t, GL_CURRENT_QUERY, &mut cur) };
            cur == 0
        })
    }

    /// Begins our queries (`names`, one per target) unless a query of one of the targets is
    /// already active; returns whether they run.
    pub fn begin(&self, names: &[u32; COUNT]) -> bool {
        if !self.all_idle() {
            return false;
        }
        crate::gl::scene_break(self.scene_break);
        for ((t, n), &on) in TARGETS.iter().zip(names).zip(&self.counted) {
            if on {
                // SAFETY: our own query name on an idle target (checked above).
                unsafe { (self.begin_query)(*t, *n) };
            }
        }
        crate::gl::scene_break(self.scene_break);
        true
    }

    /// Ends our queries (they are active: [`Stats::begin`] returned true and nothing ended them).
    /// `own_scene`: in a scene of their own where the driver needs it (at swaps); not before an
    /// app's query, whose own begin or end lands in the same scene anyway.
    pub fn end(&self, own_scene: bool) {
        let brk = if own_scene { self.scene_break } else { None };
        crate::gl::scene_break(brk);
        for (t, &on) in TARGETS.iter().zip(&self.counted) {
            if on {
                // SAFETY: our query is the active one of this target.
                unsafe { (self.end_query)(*t) };
            }
        }
        crate::gl::scene_break(brk);
    }

    /// Whether statistic `i` is counted by a query (else it is 0 by construction).
    pub fn counted(&self, i: usize) -> bool {
        self.counted[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framescope_core::sample::PipelineStats;

    #[test]
    fn targets_follow_the_dump_names() {
        // The GL enum of each dump key, as the ARB_pipeline_statistics_query spec lists them.
        let by_name = [
            ("ia_vertices", 0x82EE),
            ("ia_primitives", 0x82EF),
            ("vs_invocations", 0x82F0),
            ("clipping_invocations", 0x82F6),
            ("clipping_primitives", 0x82F7),
            ("fs_invocations", 0x82F4),
            ("cs_invocations", 0x82F5),
        ];
        for (i, (name, target)) in by_name.iter().enumerate() {
            assert_eq!(PipelineStats::NAMES[i], *name);
            assert_eq!(TARGETS[i], *target, "{name}");
            assert_eq!(index_of(*target), Some(i));
        }
        // Statistics we do not collect stay the app's alone.
        assert_eq!(index_of(0x82F3), None); // GEOMETRY_SHADER_PRIMITIVES_EMITTED
        assert_eq!(index_of(0x8914), None); // SAMPLES_PASSED
    }
}
