//! What the app's thread created between two frame ends, and how long it took: pipelines and
//! shaders (the usual cause of a hitch: a driver compiling on first use), device memory, and
//! the first draw with a GL program (where GL drivers compile the program's variant), with
//! what the Vulkan driver itself reported of its pipeline creations
//! (`VK_EXT_pipeline_creation_feedback`).
//! The layers' creation hooks add to the calling thread's tally; the present (or swap) takes
//! the presenting thread's tally into its frame, as with [`crate::model::waits`]. A loader thread's
//! creations do not reach a frame: they do not hold the frame up.

use std::cell::Cell;

/// What was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationKind {
    /// `vkCreateGraphicsPipelines`, `vkCreateComputePipelines`,
    /// `vkCreateRayTracingPipelinesKHR`.
    Pipeline,
    /// `vkCreateShaderModule`, `vkCreateShadersEXT`; GL `glCompileShader`.
    Shader,
    /// GL `glLinkProgram`, `glProgramBinary`.
    Program,
    /// `vkAllocateMemory`.
    Memory,
    /// GL: the first draw after a program that was never drawn with (or was linked again)
    /// became current with `glUseProgram`. Mesa compiles a program's shader variant for the
    /// current state at that draw, not at the link (llvmpipe with its shader cache off, the GL
    /// test app's program: link 0.6 ms, first draw 23 ms). Not counted on Vulkan, where the
    /// driver compiles at pipeline creation.
    FirstUse,
}

impl CreationKind {
    pub const COUNT: usize = 5;
    pub const ALL: [CreationKind; CreationKind::COUNT] = [
        CreationKind::Pipeline,
        CreationKind::Shader,
        CreationKind::Program,
        CreationKind::Memory,
        CreationKind::FirstUse,
    ];

    /// The key in the dump's `creation_by_kind`.
    pub const fn name(self) -> &'static str {
        match self {
            CreationKind::Pipeline => "pipeline",
            CreationKind::Shader => "shader",
            CreationKind::Program => "program",
            CreationKind::Memory => "memory",
            CreationKind::FirstUse => "first_use",
        }
    }
}

/// Calls and nanoseconds, by [`CreationKind`], and the driver's own account of the pipelines
/// created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreationTimes {
    pub ns: [u64; CreationKind::COUNT],
    pub calls: [u32; CreationKind::COUNT],
    pub pipelines: PipelineFeedback,
}

/// What `VK_EXT_pipeline_creation_feedback` reported of the pipelines created: only pipelines
/// whose feedback the driver marked valid count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineFeedback {
    /// Pipelines with valid feedback.
    pub count: u32,
    /// Their creation time as the driver measured it (`VkPipelineCreationFeedback::duration`).
    pub driver_ns: u64,
    /// Those the driver made from the app's pipeline cache without compiling
    /// (`VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT`).
    pub cache_hits: u32,
}

impl PipelineFeedback {
    /// Adds one pipeline's valid feedback.
    pub fn add(&mut self, driver_ns: u64, cache_hit: bool) {
        self.count = self.count.saturating_add(1);
        self.driver_ns = self.driver_ns.saturating_add(driver_ns);
        self.cache_hits = self.cache_hits.saturating_add(u32::from(cache_hit));
    }
}

impl CreationTimes {
    pub fn add(&mut self, k: CreationKind, ns: u64) {
        let i = k as usize;
        self.ns[i] = self.ns[i].saturating_add(ns);
        self.calls[i] = self.calls[i].saturating_add(1);
    }

    pub fn ns(&self, k: CreationKind) -> u64 {
        self.ns[k as usize]
    }

    pub fn calls(&self, k: CreationKind) -> u32 {
        self.calls[k as usize]
    }
}

thread_local! {
    static TALLY: Cell<CreationTimes> = const {
        Cell::new(CreationTimes {
            ns: [0; CreationKind::COUNT],
            calls: [0; CreationKind::COUNT],
            pipelines: PipelineFeedback { count: 0, driver_ns: 0, cache_hits: 0 },
        })
    };
}

/// Adds one call of `kind` that took `ns` to the calling thread's tally (nothing while the
/// thread is being torn down).
pub fn add(kind: CreationKind, ns: u64) {
    let _ = TALLY.try_with(|t| {
        let mut c = t.get();
        c.add(kind, ns);
        t.set(c);
    });
}

/// Adds pipeline feedback to the calling thread's tally (nothing while the thread is being
/// torn down).
pub fn add_feedback(f: PipelineFeedback) {
    let _ = TALLY.try_with(|t| {
        let mut c = t.get();
        let p = &mut c.pipelines;
        p.count = p.count.saturating_add(f.count);
        p.driver_ns = p.driver_ns.saturating_add(f.driver_ns);
        p.cache_hits = p.cache_hits.saturating_add(f.cache_hits);
        t.set(c);
    });
}

/// Runs `f` (the real creating call) and adds it, with its wall time, as one call of `kind`.
pub fn timed<R>(kind: CreationKind, f: impl FnOnce() -> R) -> R {
    let t0 = crate::runtime::clock::monotonic_now_ns();
    let r = f();
    add(kind, crate::runtime::clock::monotonic_now_ns().saturating_sub(t0));
    r
}

/// The calling thread's tally since its last `take`, which starts a new one.
pub fn take() -> CreationTimes {
    TALLY
        .try_with(|t| t.replace(CreationTimes::default()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_times_are_tallied_per_thread() {
        take();
        timed(CreationKind::Pipeline, || {
            std::thread::sleep(std::time::Duration::from_millis(2))
        });
        timed(CreationKind::Pipeline, || ());
        std::thread::spawn(|| timed(CreationKind::Memory, || ()))
            .join()
            .unwrap();
        let mut fb = PipelineFeedback::default();
        fb.add(1_500, true);
        fb.add(2_500, false);
        add_feedback(fb);
        let c = take();
        assert_eq!(c.calls(CreationKind::Pipeline), 2);
        assert_eq!(
            c.pipelines,
            PipelineFeedback {
                count: 2,
                driver_ns: 4_000,
                cache_hits: 1
            }
        );
        assert!(c.ns(CreationKind::Pipeline) >= 2_000_000);
        assert_eq!(c.calls(CreationKind::Memory), 0, "another thread's");
        assert_eq!(take(), CreationTimes::default());
        for (i, k) in CreationKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
