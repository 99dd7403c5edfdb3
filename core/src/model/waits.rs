//! Where the app's thread waited between two frame ends, by kind: the hooks of the waiting
//! calls add their time to the calling thread's tally, and the present (or swap) takes the
//! presenting thread's tally into its frame. PresentMon sees only the time inside Present;
//! this splits the rest of the frame's waiting by what was waited on.
//!
//! Only the presenting thread's waits reach a frame: a loader thread waiting on its own
//! fences does not make the frame's CPU time idle. The tally is a thread-local array: no
//! lock, no allocation, a few nanoseconds a call.

use std::cell::Cell;

/// What the app's thread waited on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// `vkAcquireNextImageKHR`, `vkAcquireNextImage2KHR`.
    Acquire,
    /// `vkWaitForFences`, `vkWaitSemaphores`, `vkWaitSemaphoresKHR`.
    Fence,
    /// `vkQueueWaitIdle`, `vkDeviceWaitIdle`.
    Idle,
    /// `glFinish`, `glClientWaitSync`.
    GlSync,
    /// framescope's own frame limiter (`fps_limit`).
    FpsLimit,
}

impl WaitKind {
    pub const COUNT: usize = 5;
    pub const ALL: [WaitKind; WaitKind::COUNT] = [
        WaitKind::Acquire,
        WaitKind::Fence,
        WaitKind::Idle,
        WaitKind::GlSync,
        WaitKind::FpsLimit,
    ];

    /// The key in the dump's `cpu_wait_by_kind_ns`.
    pub const fn name(self) -> &'static str {
        match self {
            WaitKind::Acquire => "acquire",
            WaitKind::Fence => "fence",
            WaitKind::Idle => "idle",
            WaitKind::GlSync => "gl_sync",
            WaitKind::FpsLimit => "fps_limit",
        }
    }
}

/// Nanoseconds waited, by [`WaitKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitTimes(pub [u64; WaitKind::COUNT]);

impl WaitTimes {
    pub fn get(&self, k: WaitKind) -> u64 {
        self.0[k as usize]
    }

    pub fn add(&mut self, k: WaitKind, ns: u64) {
        self.0[k as usize] = self.0[k as usize].saturating_add(ns);
    }

    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, &b| a.saturating_add(b))
    }
}

thread_local! {
    static TALLY: Cell<WaitTimes> = const { Cell::new(WaitTimes([0; WaitKind::COUNT])) };
}

/// Adds `ns` of waiting on `kind` to the calling thread's tally. Silently nothing while the
/// thread is being torn down.
pub fn add(kind: WaitKind, ns: u64) {
    let _ = TALLY.try_with(|t| {
        let mut w = t.get();
        w.add(kind, ns);
        t.set(w);
    });
}

/// The calling thread's tally since its last `take`, which starts a new one.
pub fn take() -> WaitTimes {
    TALLY.try_with(|t| t.replace(WaitTimes::default())).unwrap_or_default()
}

/// Runs `f` (the real waiting call) and adds its wall time to the tally as `kind`.
pub fn timed<R>(kind: WaitKind, f: impl FnOnce() -> R) -> R {
    let t0 = crate::runtime::clock::monotonic_now_ns();
    let r = f();
    add(kind, crate::runtime::clock::monotonic_now_ns().saturating_sub(t0));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_is_per_thread_and_taking_it_starts_a_new_one() {
        add(WaitKind::Fence, 5);
        add(WaitKind::Fence, 7);
        add(WaitKind::Acquire, 3);
        std::thread::spawn(|| add(WaitKind::Idle, 1000)).join().unwrap();
        let w = take();
        assert_eq!(w.get(WaitKind::Fence), 12);
        assert_eq!(w.get(WaitKind::Acquire), 3);
        assert_eq!(w.get(WaitKind::Idle), 0, "another thread's wait");
        assert_eq!(w.total(), 15);
        assert_eq!(take(), WaitTimes::default());
    }

    #[test]
    fn a_timed_call_adds_at_least_its_duration() {
        take();
        timed(WaitKind::GlSync, || {
            std::thread::sleep(std::time::Duration::from_millis(2))
        });
        assert!(take().get(WaitKind::GlSync) >= 2_000_000);
    }

    #[test]
    fn names_are_distinct() {
        let mut n: Vec<&str> = WaitKind::ALL.iter().map(|k| k.name()).collect();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), WaitKind::COUNT);
        for (i, k) in WaitKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
