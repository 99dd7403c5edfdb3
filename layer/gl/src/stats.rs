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

use crate::gl::{GlFns, GlInfo, GL_QUERY_COUNTER_BITS};

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

/// The targets the context counts (the entry points are those of its `GlFns`, passed in).
pub struct Stats {
    /// `false` only for `cs_invocations` in a context without compute shaders, which reports 0
    /// (no compute shader can run there).
    counted: [bool; COUNT],
}

impl Stats {
    /// Statistics for a desktop context with the extension (or GL 4.6) whose targets all have
    /// counter bits; otherwise why not.
    pub fn detect(gl: &GlFns, info: &GlInfo, has_ext: impl Fn(&str) -> bool) -> Result<Stats, &'static str> {
        if info.es {
            return Err("OpenGL ES has no pipeline-statistics queries");
        }
        if !(info.at_least(4, 6) || has_ext("GL_ARB_pipeline_statistics_query")) {
            return Err("the context has no GL_ARB_pipeline_statistics_query (GL 4.6)");
        }
        if gl.begin_query.is_none() || gl.end_query.is_none() || gl.get_queryiv.is_none() {
            return Err("glBeginQuery/glEndQuery/glGetQueryiv not found");
        }
        let compute = info.at_least(4, 3) || has_ext("GL_ARB_compute_shader");
        let mut counted = [true; COUNT];
        counted[COUNT - 1] = compute;
        for (t, &on) in TARGETS.iter().zip(&counted) {
            if !on {
                continue;
            }
            // A pipeline-statistics target with the extension present, and a valid pname.
            // Initialisation only, with the context current.
            if gl.query_int(*t, GL_QUERY_COUNTER_BITS) <= 0 {
                return Err("a pipeline-statistics target has no counter bits");
            }
        }
        Ok(Stats { counted })
    }

    /// Whether no query of any of our targets is active in the current context (the app's, or
    /// ours), i.e. whether beginning ours cannot raise an error.
    fn all_idle(&self, gl: &GlFns) -> bool {
        // Valid target and pname with the extension; only reads state.
        TARGETS
            .iter()
            .zip(&self.counted)
            .all(|(t, &on)| !on || gl.query_int(*t, GL_CURRENT_QUERY) == 0)
    }

    /// Begins our queries (`names`, one per target) unless a query of one of the targets is
    /// already active; returns whether they run.
    pub fn begin(&self, gl: &GlFns, names: &[u32; COUNT]) -> bool {
        if !self.all_idle(gl) {
            return false;
        }
        gl.scene_break();
        for ((t, n), &on) in TARGETS.iter().zip(names).zip(&self.counted) {
            if on {
                // Our own query name on an idle target (checked above).
                gl.begin_own_query(*t, *n);
            }
        }
        gl.scene_break();
        true
    }

    /// Ends our queries (they are active: [`Stats::begin`] returned true and nothing ended them).
    /// `own_scene`: in a scene of their own where the driver needs it (at swaps); not before an
    /// app's query, whose own begin or end lands in the same scene anyway.
    pub fn end(&self, gl: &GlFns, own_scene: bool) {
        if own_scene {
            gl.scene_break();
        }
        for (t, &on) in TARGETS.iter().zip(&self.counted) {
            if on {
                // Our query is the active one of this target.
                gl.end_own_query(*t);
            }
        }
        if own_scene {
            gl.scene_break();
        }
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
