//! Cost of the frame timeline on the app's thread, per frame, as the layers pay it for a
//! typical Vulkan frame: one image acquire and one fence wait timed (two clock reads and a
//! tally add each), the wait and creation tallies taken at present, the clock read when the
//! present returns, and the session's `present_returned` (the frame's time in present, the
//! next frame's start). The frame close itself is not counted: it was there before.
//!
//! Without arguments: prints `frames N timeline_ns X` (median of 5 rounds of 200 000 frames,
//! the loop with the timeline's work minus the same loop without it). With `--callgrind N`:
//! runs N frames once, for `valgrind --tool=callgrind --toggle-collect='*timeline_frame*'`,
//! which counts the instructions of exactly that work. Run by `cargo xtask bench timeline`.

use framescope_core::assembly::AssemblerOptions;
use framescope_core::clock::monotonic_now_ns;
use framescope_core::frame::FrameRecord;
use framescope_core::session::{FrameSession, SessionOptions};
use framescope_core::waits::{self, WaitKind};
use std::hint::black_box;
use std::time::Instant;

const FRAMES: u64 = 200_000;
const ROUNDS: usize = 5;

fn session() -> FrameSession {
    FrameSession::new(SessionOptions {
        assembler: AssemblerOptions {
            gpu_timing: false,
            await_present_return: true,
            ..AssemblerOptions::default()
        },
        history: true,
        counters: None,
    })
}

/// The timeline's work for one frame (see the module docs).
#[inline(never)]
fn timeline_frame(s: &mut FrameSession, frame: u64) {
    waits::timed(WaitKind::Acquire, || black_box(0));
    waits::timed(WaitKind::Fence, || black_box(0));
    black_box(waits::take());
    black_box(framescope_core::creation::take());
    s.present_returned(frame, monotonic_now_ns());
}

/// ns per frame over `frames`, with or without the timeline's work.
fn per_frame(frames: u64, timeline: bool) -> f64 {
    let mut s = session();
    let start = Instant::now();
    for i in 0..frames {
        let f = s.close(FrameRecord {
            t_ns: i,
            ..FrameRecord::default()
        });
        if timeline {
            timeline_frame(&mut s, f);
        } else {
            // Without a return the frame waits for the next close: emitted one close later.
            black_box(f);
        }
    }
    start.elapsed().as_nanos() as f64 / frames as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(n) = args
        .iter()
        .position(|a| a == "--callgrind")
        .and_then(|i| args.get(i + 1))
    {
        let n: u64 = n.parse().expect("--callgrind N: a frame count");
        black_box(per_frame(n, true));
        return;
    }
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        with.push(per_frame(FRAMES, true));
        without.push(per_frame(FRAMES, false));
    }
    let added = median(with) - median(without);
    println!("frames {FRAMES} timeline_ns {added:.1}");
}
