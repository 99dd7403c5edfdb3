//! Cost of counters on the app's thread: `FrameSession::close` with a full counter board
//! (96 counters, a publisher thread writing every 10 us, so reads race writes) against the
//! same session without a board. Prints one line: `closes N with_ns X without_ns Y added_ns Z`
//! (medians of 5 rounds, ns per frame). Run by `cargo xtask bench counters` in release.

use framescope_core::assembly::AssemblerOptions;
use framescope_core::counters::{Catalogue, CounterBoard, CounterWindow, MAX_COUNTERS};
use framescope_core::dump::CounterDesc;
use framescope_core::frame::FrameRecord;
use framescope_core::session::{FrameSession, SessionOptions};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

const CLOSES: u64 = 200_000;
const ROUNDS: usize = 5;

fn session(board: Option<Arc<CounterBoard>>) -> FrameSession {
    FrameSession::new(SessionOptions {
        assembler: AssemblerOptions {
            gpu_timing: false,
            ..AssemblerOptions::default()
        },
        history: true,
        counters: board,
    })
}

/// ns per close over `CLOSES` frames.
fn per_close(s: &mut FrameSession) -> f64 {
    let start = Instant::now();
    for i in 0..CLOSES {
        black_box(s.close(FrameRecord {
            t_ns: i,
            ..FrameRecord::default()
        }));
    }
    start.elapsed().as_nanos() as f64 / CLOSES as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let board = Arc::new(CounterBoard::default());
    board.set_catalogue(Catalogue {
        counters: (0..MAX_COUNTERS)
            .map(|i| CounterDesc {
                name: format!("c{i}"),
                unit: "%".into(),
                source: "bench".into(),
                scope: "device".into(),
            })
            .collect(),
        source_of: vec![0; MAX_COUNTERS],
        sources: vec!["bench".into()],
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (b, s) = (board.clone(), stop.clone());
    // A write every 10 us, 10 000 times more often than the collector's default 100 ms.
    let publisher = std::thread::spawn(move || {
        let mut k = 0u64;
        while !s.load(Ordering::Relaxed) {
            k += 1;
            let w = CounterWindow {
                begin_ns: k,
                end_ns: k + 1,
            };
            b.publish(0, w, (0..MAX_COUNTERS).map(|i| (i, k as f64)));
            std::thread::sleep(std::time::Duration::from_micros(10));
        }
    });
    let (mut with, mut without) = (session(Some(board)), session(None));
    let (mut w, mut wo) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        w.push(per_close(&mut with));
        wo.push(per_close(&mut without));
    }
    stop.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    let (w, wo) = (median(w), median(wo));
    println!(
        "closes {CLOSES} with_ns {w:.1} without_ns {wo:.1} added_ns {:.1}",
        w - wo
    );
}
