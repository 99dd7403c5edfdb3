//! What the app's thread created between two frame ends, and how long it took: pipelines and
//! shaders (the usual cause of a hitch: a driver compiling on first use), and device memory.
//! The layers' creation hooks add to the calling thread's tally; the present (or swap) takes
//! the presenting thread's tally into its frame, as with [`crate::waits`]. A loader thread's
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
}

impl CreationKind {
    pub const COUNT: usize = 4;
    pub const ALL: [CreationKind; CreationKind::COUNT] = [
        CreationKind::Pipeline,
        CreationKind::Shader,
        CreationKind::Program,
        CreationKind::Memory,
    ];

    /// The key in the dump's `creation_by_kind`.
    pub const fn name(self) -> &'static str {
        match self {
            CreationKind::Pipeline => "pipeline",
            CreationKind::Shader => "shader",
            CreationKind::Program => "program",
            CreationKind::Memory => "memory",
        }
    }
}

/// Calls and nanoseconds, by [`CreationKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreationTimes {
    pub ns: [u64; CreationKind::COUNT],
    pub calls: [u32; CreationKind::COUNT],
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
        Cell::new(CreationTimes { ns: [0; CreationKind::COUNT], calls: [0; CreationKind::COUNT] })
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

/// Runs `f` (the real creating call) and adds it, with its wall time, as one call of `kind`.
pub fn timed<R>(kind: CreationKind, f: impl FnOnce() -> R) -> R {
    let t0 = crate::clock::monotonic_now_ns();
    let r = f();
    add(kind, crate::clock::monotonic_now_ns().saturating_sub(t0));
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
        let c = take();
        assert_eq!(c.calls(CreationKind::Pipeline), 2);
        assert!(c.ns(CreationKind::Pipeline) >= 2_000_000);
        assert_eq!(c.calls(CreationKind::Memory), 0, "another thread's");
        assert_eq!(take(), CreationTimes::default());
        for (i, k) in CreationKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
