//! The app-thread path (assembler + dump push) allocates nothing per frame in steady state.
//! A counting global allocator counts allocations made on this test's thread while armed.

mod common;

use framescope_core::assembly::{AssemblerOptions, FrameAssembler};
use framescope_core::dump::{Api, DumpOptions, DumpWriter, Header};
use framescope_core::frame::{DrawKind, FrameRecord};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Only the armed thread counts: the writer thread allocates freely by design.
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

fn note() {
    if ARMED.try_with(Cell::get).unwrap_or(false) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged;
// counting touches only an atomic and a const-initialised thread-local, neither allocates.
unsafe impl GlobalAlloc for Counting {
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

#[global_allocator]
static GLOBAL: Counting = Counting;

fn armed<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCS.load(Ordering::Relaxed);
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    (r, ALLOCS.load(Ordering::Relaxed) - before)
}

#[test]
fn steady_state_frames_do_not_allocate() {
    // The counter works: an allocation while armed is seen.
    let (b, n) = armed(|| Box::new(7u64));
    assert_eq!((*b, n), (7, 1));

    let path = common::temp_path("noalloc");
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), Header::new(Api::Vulkan));
    let mut a = FrameAssembler::new(AssemblerOptions::default());
    let t0 = w.origin_ns();
    let frame = |i: u64, a: &mut FrameAssembler| {
        let f = a.on_submit();
        let mut r = FrameRecord {
            t_ns: t0 + i * 1_000_000,
            ..FrameRecord::default()
        };
        r.counts.draws[DrawKind::Draw] = 3;
        r.counters.push(0, i as f64);
        a.close_frame(r, |f| w.push(f));
        if f >= 2 {
            a.on_submission_retired(f - 2, Some((i * 10, i * 10 + 5)));
        }
        a.poll(t0 + i * 1_000_000, |f| w.push(f));
    };
    for i in 0..100 {
        frame(i, &mut a);
    }
    let ((), allocations) = armed(|| {
        for i in 100..20_000 {
            frame(i, &mut a);
        }
    });
    assert_eq!(allocations, 0, "allocations on the app path");
    w.finish();
    let lines = common::read_lines(&path);
    // Everything pushed was written or counted as dropped: the loop really ran.
    let s = lines.last().unwrap();
    assert_eq!(
        s["frames"].as_u64().unwrap() + s["dropped_frames"].as_u64().unwrap(),
        19_998
    );
    std::fs::remove_file(&path).unwrap();
}
