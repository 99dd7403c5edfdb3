//! Counting the heap allocations framescope makes on the app's threads, to check the rule "no
//! per-frame heap allocation on the app's threads in steady state" on real apps.
//!
//! Each framescope library (the Vulkan layer, the GL shim) installs [`CountingAlloc`] as its
//! global allocator; it sees only framescope's own Rust allocations (the app and the drivers use
//! their own allocators). Threads framescope starts call [`mark_own_thread`] and are not
//! counted. Frame ends call [`on_frame_end`]; with `FRAMESCOPE_REPORT_ALLOCS=N` set, the
//! process's exit (or device destruction) logs the allocations after the first `N` frames, and
//! in how many frames they happened. Counting costs a thread-local read and an atomic add per
//! allocation, so it is always on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Allocations on threads not marked as framescope's own.
static APP_THREAD_ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static OWN_THREAD: Cell<bool> = const { Cell::new(false) };
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
    if !OWN_THREAD.try_with(Cell::get).unwrap_or(true) {
        APP_THREAD_ALLOCS.fetch_add(1, Ordering::Relaxed);
        if TRACING.load(Ordering::Relaxed) {
            trace();
        }
    }
}

/// Set after the warm-up with `FRAMESCOPE_TRACE_ALLOCS=1`: the first app-thread allocations
/// print their backtraces, to find what allocates.
static TRACING: AtomicBool = AtomicBool::new(false);
static TRACES_LEFT: AtomicU64 = AtomicU64::new(8);

thread_local! {
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
}

#[cold]
fn trace() {
    if IN_TRACE.try_with(|t| t.replace(true)).unwrap_or(true) {
        return;
    }
    if TRACES_LEFT.fetch_sub(1, Ordering::Relaxed) > 0 {
        eprintln!(
            "framescope: allocation on an app thread:\n{}",
            std::backtrace::Backtrace::force_capture()
        );
    } else {
        TRACING.store(false, Ordering::Relaxed);
    }
    let _ = IN_TRACE.try_with(|t| t.set(false));
}

/// The system allocator, counting allocations and reallocations.
pub struct CountingAlloc;

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged;
// counting touches only an atomic and const-initialised thread-locals without destructors,
// none of which allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Marks the calling thread as framescope's own (the dump writer, the PNG encoder): its
/// allocations are not the app's threads'.
pub fn mark_own_thread() {
    OWN_THREAD.with(|c| c.set(true));
}

/// Allocations made so far on the calling thread (any thread, own or not).
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.with(Cell::get)
}

/// Allocations made so far on threads not marked as framescope's own.
pub fn app_thread_allocations() -> u64 {
    APP_THREAD_ALLOCS.load(Ordering::Relaxed)
}

/// Per-frame bookkeeping of app-thread allocations after the warm-up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SteadyAllocs {
    /// Frames ended so far.
    pub frames: u64,
    /// Frames after the warm-up, and those of them in which anything was allocated.
    pub steady_frames: u64,
    pub frames_with_allocs: u64,
    /// Allocations in those frames.
    pub allocs: u64,
    last: u64,
}

impl SteadyAllocs {
    /// A frame ended with the app-thread allocation counter at `count`.
    pub fn on_frame_end(&mut self, count: u64, warmup: u64) {
        let delta = count.saturating_sub(self.last);
        self.last = count;
        self.frames += 1;
        if self.frames > warmup {
            self.steady_frames += 1;
            if delta > 0 {
                self.frames_with_allocs += 1;
                self.allocs += delta;
            }
        }
    }
}

static STEADY: crate::runtime::sync::Mutex<SteadyAllocs> = crate::runtime::sync::Mutex::new(SteadyAllocs {
    frames: 0,
    steady_frames: 0,
    frames_with_allocs: 0,
    allocs: 0,
    last: 0,
});

/// The warm-up from `FRAMESCOPE_REPORT_ALLOCS` and whether `FRAMESCOPE_TRACE_ALLOCS` is set,
/// or `None` when not reporting. The first call registers the report at process exit.
fn reporting() -> Option<(u64, bool)> {
    static REPORTING: OnceLock<Option<(u64, bool)>> = OnceLock::new();
    *REPORTING.get_or_init(|| {
        let w = std::env::var("FRAMESCOPE_REPORT_ALLOCS").ok()?.trim().parse().ok()?;
        let trace = std::env::var_os("FRAMESCOPE_TRACE_ALLOCS").is_some();
        // SAFETY: `report_at_exit` is an `extern "C" fn()` that never unwinds and only touches
        // 'static data, as atexit requires.
        if unsafe { libc::atexit(report_at_exit) } != 0 {
            crate::runtime::log::error(format_args!("cannot register the allocation report at exit"));
        }
        Some((w, trace))
    })
}

extern "C" fn report_at_exit() {
    let _ = std::panic::catch_unwind(report);
}

/// A frame ended (a present or a swap). Does nothing unless reporting was asked for.
pub fn on_frame_end() {
    if let Some((w, trace)) = reporting() {
        let mut s = STEADY.lock();
        s.on_frame_end(app_thread_allocations(), w);
        if trace && s.frames == w {
            TRACING.store(true, Ordering::Relaxed);
        }
    }
}

/// Logs the steady-state allocations once per process, when reporting was asked for.
pub fn report() {
    static DONE: AtomicBool = AtomicBool::new(false);
    let Some((w, _)) = reporting() else { return };
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    let s = *STEADY.lock();
    crate::runtime::log::error(format_args!(
        "heap allocations on app threads after frame {w}: {} in {} of {} frames",
        s.allocs, s.frames_with_allocs, s.steady_frames
    ));
}

#[cfg(test)]
mod tests {
    use super::SteadyAllocs;

    #[test]
    fn only_frames_after_the_warmup_count() {
        let mut s = SteadyAllocs::default();
        for count in [5, 9, 9, 9, 12, 12] {
            s.on_frame_end(count, 2);
        }
        assert_eq!((s.frames, s.steady_frames), (6, 4));
        assert_eq!((s.frames_with_allocs, s.allocs), (1, 3));
    }
}
