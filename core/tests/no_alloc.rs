//! The app-thread path (assembler + dump push) allocates nothing per frame in steady state.
//! framescope's counting global allocator counts allocations made on this test's thread.

mod common;

use framescope_core::alloc_count::{thread_allocations, CountingAlloc};
use framescope_core::assembly::{AssemblerOptions, FrameAssembler};
use framescope_core::dump::{Api, DumpOptions, DumpWriter, Header};
use framescope_core::frame::{DrawKind, FrameRecord};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Runs `f` and counts the allocations it makes on this thread (the writer thread allocates
/// freely by design).
fn armed<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = thread_allocations();
    let r = f();
    (r, thread_allocations() - before)
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
        r.counters.set(0, i as f64);
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

/// `core::sync`'s locks never allocate when they make a thread wait, however many threads wait
/// at once. parking_lot's locks do: its global table is reallocated at each new peak of waiting
/// threads (this test with parking_lot's `Mutex`/`RwLock`: 2 allocations on 5 of 48 threads),
/// and an app starting recording threads every frame hit that in steady state.
#[test]
fn contended_locks_allocate_nothing_however_many_threads_wait() {
    use framescope_core::sync::{Mutex, RwLock};
    use std::sync::{Arc, Barrier};
    const THREADS: usize = 48;
    let m = Arc::new(Mutex::new(0u64));
    let l = Arc::new(RwLock::new(0u64));
    let start = Arc::new(Barrier::new(THREADS + 1));
    let held = m.lock();
    let held_w = l.write();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (m, l, start) = (m.clone(), l.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let before = thread_allocations();
                // Both locks are held by the test's thread: every thread waits on each.
                *m.lock() += 1;
                let _ = *l.read();
                thread_allocations() - before
            })
        })
        .collect();
    start.wait();
    // Long enough for every thread to stop spinning and wait (they cannot get in before).
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(held);
    drop(held_w);
    let counts: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(*m.lock(), THREADS as u64);
    assert!(
        counts.iter().all(|&n| n == 0),
        "allocations per waiting thread: {counts:?}"
    );
}

/// The frame session with a counter board that another thread publishes on all the while:
/// closing, polling and copying the board allocate nothing on the app's thread, and the
/// frames carry the board's values and windows into the dump.
#[test]
fn session_frames_with_counters_do_not_allocate() {
    use framescope_core::counters::{Catalogue, CounterBoard, CounterWindow};
    use framescope_core::dump::CounterDesc;
    use framescope_core::session::{FrameSession, SessionOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let board = Arc::new(CounterBoard::default());
    board.set_catalogue(Catalogue {
        counters: ["cpu_load_pct", "ram_used_bytes"]
            .iter()
            .map(|n| CounterDesc {
                name: n.to_string(),
                unit: "%".into(),
                source: "system".into(),
                scope: "system".into(),
            })
            .collect(),
        source_of: vec![0, 0],
        sources: vec!["system".into()],
    });
    board.mark_started();
    let stop = Arc::new(AtomicBool::new(false));
    let (b, s) = (board.clone(), stop.clone());
    let publisher = std::thread::spawn(move || {
        let mut k = 1u64;
        while !s.load(Ordering::Relaxed) {
            let w = CounterWindow {
                begin_ns: k,
                end_ns: k + 1,
            };
            b.publish(0, w, [(0, 50.0), (1, k as f64)].into_iter());
            k += 1;
            // Far more often than the collector (every 100 ms), yet with room to read between.
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    });
    let path = common::temp_path("noalloc-session");
    let mut header = Header::new(Api::Vulkan);
    header.counter_board = Some(board.clone());
    let w = DumpWriter::start(DumpOptions::new(path.to_str().unwrap()), header);
    let mut session = FrameSession::new(SessionOptions {
        assembler: AssemblerOptions::default(),
        history: true,
        counters: Some(board.clone()),
    });
    let t0 = w.origin_ns();
    let frame = |i: u64, s: &mut FrameSession| {
        let f = s.assembler().on_submit();
        s.close(FrameRecord {
            t_ns: t0 + i * 1_000_000,
            ..FrameRecord::default()
        });
        if f >= 2 {
            s.assembler().on_submission_retired(f - 2, Some((i * 10, i * 10 + 5)));
        }
        s.poll(t0 + i * 1_000_000);
        // The session takes the process's dump only when the config asks for one: the test
        // feeds its writer from the history instead.
        if let Some(r) = s.history().and_then(|h| h.latest()) {
            w.push(*r);
        }
    };
    for i in 0..100 {
        frame(i, &mut session);
    }
    let ((), allocations) = armed(|| {
        for i in 100..5_000 {
            frame(i, &mut session);
        }
    });
    stop.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    assert_eq!(allocations, 0, "allocations on the app path");
    let last = *session.history().unwrap().latest().unwrap();
    assert_eq!(last.counters.get(0), Some(50.0));
    assert!(last.counters.get(1).is_some() && last.counter_windows[0].is_set());
    assert_eq!(
        board.last_frame().0,
        4_999,
        "every close marks the frame for the collector"
    );
    w.finish();
    let lines = common::read_lines(&path);
    assert_eq!(lines[0]["counters"][1]["name"], "ram_used_bytes");
    assert_eq!(lines[0]["counter_sources"][0], "system");
    let f = &lines[lines.len() - 2];
    assert_eq!(f["counters"]["cpu_load_pct"], 50.0);
    let win = &f["counter_windows"]["system"];
    assert_eq!(
        win["age_ns"].as_u64().unwrap(),
        f["t_ns"].as_u64().unwrap() - win["end_ns"].as_u64().unwrap()
    );
    let s = lines.last().unwrap();
    assert_eq!(s["counters"]["cpu_load_pct"]["mean"], 50.0);
    assert!(
        s["counters"]["ram_used_bytes"]["max"].as_f64().unwrap()
            >= s["counters"]["ram_used_bytes"]["min"].as_f64().unwrap()
    );
    std::fs::remove_file(&path).unwrap();
}
