//! Draw timing within a GPU-time budget (`samples=draw`, `sample_budget`).
//!
//! A timestamp after a draw makes a real GPU finish that draw before the next starts: on the
//! H100 a frame of 10 000 small draws went from 0.26 ms to 8.7 ms of GPU busy time with one
//! after every draw. So each frame times a window of consecutive draws per command buffer
//! (draw positions `first .. first + count` of every recording), and the window moves on by
//! `count` at every frame end, wrapping at the most draws any recording had: a steady workload
//! has every draw position timed within `ceil(max_draws / count)` frames.
//!
//! The budget is the share of GPU busy time the whole mode may add against `samples=off`, so
//! every 16th frame is a *quiet* baseline: its recordings take no sample of ours at all (no
//! command-buffer, pass, label or draw timestamp, no statistics), only the submission timing
//! that `samples=off` has too. The other frames pay for their samples; a frame's cost is
//! (busy − baseline busy), and one timed draw's is that over the frame's timed draws (pass and
//! label samples folded in). `count = 0.9 × budget × baseline busy / cost`: aimed under the
//! budget, which noise would otherwise exceed in half the runs.
//!
//! The count follows the estimate for [`SETTLE_FRAMES`] frames after a start or a workload
//! change (the baseline busy time halves or doubles, or a recording has a quarter more draws
//! than any before). After that it moves only on evidence: every [`CHECK_FRAMES`] frames the
//! mean cost of the frames with that count is compared with the budget, and the count is
//! rescaled to the aim when the cost is over the budget, or under three quarters of it, by
//! more than three standard errors of that comparison. A
//! 3 % overhead is the size of frame-to-frame noise on a loaded CPU (lavapipe), where the
//! count then holds; on a real GPU, whose frames repeat to within a microsecond, a settling
//! estimate that was off (on the H100 the settled cost per draw was 30 % under the steady one)
//! is corrected. The count never exceeds the largest of the first settling: the recording and
//! resolve buffers were sized for it then, and a larger count would allocate on the app's
//! threads in steady state. `sample_budget=100` times every draw of every frame. Command
//! buffers recorded once and resubmitted keep the window of their recording.

use framescope_core::frame::FrameRecord;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Every this many frames, one frame takes no sample of ours: the baseline costs are measured
/// against.
const BASELINE_EVERY: u64 = 16;
/// Window before any measurement.
const FIRST_COUNT: u32 = 16;
/// Frames remembered with the window they recorded with (frames emit a few frames late).
const RING: usize = 64;
/// Smoothing of the cost estimate (weight of the newest value).
const ALPHA: f64 = 0.2;
/// Frames over which the count follows the estimate after a start or a workload change
/// (three baselines); the count is then held.
const SETTLE_FRAMES: u64 = 48;
/// Frames of one steady-state check (eight baselines).
const CHECK_FRAMES: u64 = 128;
/// Standard errors by which the measured cost must miss the budget to move a held count.
const EVIDENCE: f64 = 3.0;
/// The share of the budget the count aims at, and the least share a held count may use
/// before it grows: frames that repeat to within noise still scatter the mode's cost around
/// its aim, so aiming at the budget itself would exceed it in half the runs (on the H100 one
/// run of five came out at 3.05 % against 3 %).
const AIM: f64 = 0.9;
const LEAST: f64 = 0.75;

/// The window recordings read (atomics: recording threads read it without a lock).
pub struct DrawWindow {
    first: AtomicU32,
    /// `u32::MAX`: every draw.
    count: AtomicU32,
    /// The most draws one recording has had.
    max_draws: AtomicU32,
    /// Recordings begun now take no samples at all (a baseline frame).
    quiet: AtomicBool,
}

impl DrawWindow {
    /// Every draw is timed until the first frame ends, also with a budget: the buffers that
    /// recordings and the resolve keep then have room for every draw position at once, so no
    /// later window, wherever it lands, makes them grow in steady state.
    pub fn new() -> Self {
        DrawWindow {
            first: AtomicU32::new(0),
            count: AtomicU32::new(u32::MAX),
            max_draws: AtomicU32::new(0),
            quiet: AtomicBool::new(false),
        }
    }

    /// `(first, count)` of the window a recording starting now uses.
    pub fn current(&self) -> (u32, u32) {
        (self.first.load(Ordering::Relaxed), self.count.load(Ordering::Relaxed))
    }

    /// Whether a recording starting now is part of a baseline frame: no samples of ours.
    pub fn quiet(&self) -> bool {
        self.quiet.load(Ordering::Relaxed)
    }

    /// A recording ended with `draws` draws.
    pub fn note_draws(&self, draws: u32) {
        self.max_draws.fetch_max(draws, Ordering::Relaxed);
    }

    pub fn max_draws(&self) -> u32 {
        self.max_draws.load(Ordering::Relaxed)
    }
}

/// Whether draw position `index` of a recording with window `(first, count)` is timed.
pub fn timed(window: (u32, u32), index: u32) -> bool {
    let (first, count) = window;
    count == u32::MAX || (index >= first && index - first < count)
}

/// Running mean and variance (Welford) of one kind of frame's busy time in a check.
#[derive(Clone, Copy, Default)]
struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        self.n += 1.0;
        let d = x - self.mean;
        self.mean += d / self.n;
        self.m2 += d * (x - self.mean);
    }

    /// Variance of the mean.
    fn var_of_mean(&self) -> f64 {
        if self.n < 2.0 {
            f64::INFINITY
        } else {
            self.m2 / (self.n - 1.0) / self.n
        }
    }
}

/// One steady-state check: baseline frames and frames timing `count` draws.
#[derive(Clone, Copy, Default)]
struct Check {
    count: u32,
    base: Moments,
    timed: Moments,
    until: u64,
}

/// The controller: owned by the device's frame state (under its lock).
pub struct Budget {
    /// Fraction of GPU busy time the samples may add; `None`: every draw (budget 100 %).
    fraction: Option<f64>,
    /// Window count each frame recorded with (0: a baseline), by frame index modulo [`RING`].
    used: [(u64, u32); RING],
    baseline_ns: Option<f64>,
    cost_per_draw_ns: Option<f64>,
    /// The count the next non-baseline frame uses.
    count: u32,
    /// Frames already taken into the estimates.
    seen: u64,
    /// The count follows the estimate for frames before this one.
    settle_until: u64,
    /// The baseline and the draw count the count was settled with.
    settled_base: Option<f64>,
    settled_draws: u32,
    /// The last baseline was off the settled one by more than 2x.
    baseline_changed: bool,
    /// The largest count used while first settling: later counts stay at or below it, since
    /// the resolve buffers were sized for it then (a larger one would allocate in steady
    /// state).
    max_count: u32,
    check: Check,
    /// The last check rescaled the count: down (`true`) or up.
    converging: Option<bool>,
}

impl Budget {
    pub fn new(percent: u64) -> Self {
        Budget {
            fraction: (percent < 100).then(|| percent as f64 / 100.0),
            used: [(u64::MAX, 0); RING],
            baseline_ns: None,
            cost_per_draw_ns: None,
            count: FIRST_COUNT,
            seen: 0,
            settle_until: SETTLE_FRAMES,
            settled_base: None,
            settled_draws: 0,
            baseline_changed: false,
            max_count: FIRST_COUNT,
            check: Check::default(),
            converging: None,
        }
    }

    /// Whether a budget applies (else every draw of every frame is timed).
    pub fn active(&self) -> bool {
        self.fraction.is_some()
    }

    /// The estimated GPU time timed draws add per timed draw, once measured.
    #[cfg(test)]
    pub fn cost_per_draw_ns(&self) -> Option<f64> {
        self.cost_per_draw_ns
    }

    /// At the end of frame `frame` (before the next frame's recordings): notes the window it
    /// used and sets the one frame `frame + 1` uses.
    pub fn end_frame(&mut self, w: &DrawWindow, frame: u64) {
        let (first, count) = w.current();
        if self.fraction.is_none() {
            return;
        }
        self.used[(frame % RING as u64) as usize] = (frame, count);
        let max = w.max_draws().max(1);
        if frame < self.settle_until {
            self.settled_draws = max;
        } else if max > self.settled_draws.saturating_add(self.settled_draws / 4) {
            self.settle(frame);
        }
        let next_first = if count == 0 {
            first
        } else {
            let f = first.saturating_add(count);
            if f >= max {
                0
            } else {
                f
            }
        };
        let baseline = (frame + 1).is_multiple_of(BASELINE_EVERY);
        w.first.store(next_first, Ordering::Relaxed);
        w.count.store(if baseline { 0 } else { self.count }, Ordering::Relaxed);
        w.quiet.store(baseline, Ordering::Relaxed);
    }

    /// A frame came out of the assembler with its GPU time: updates the estimates.
    pub fn on_emitted(&mut self, r: &FrameRecord) {
        let Some(fraction) = self.fraction else { return };
        if r.frame < self.seen {
            return;
        }
        self.seen = r.frame + 1;
        let (f, count) = self.used[(r.frame % RING as u64) as usize];
        let Some(busy) = r.gpu.busy_ns.filter(|_| f == r.frame) else {
            return;
        };
        // What the frame's recordings did, not only what the window said: a recording made
        // ahead of its frame has the window of the frame before.
        if (count == 0) != (r.counts.draws_timed == 0) {
            return;
        }
        let busy = busy as f64;
        if count == 0 {
            // Baselines come every 16th frame only: they follow the workload fast.
            let changed = self.settled_base.is_some_and(|s| busy > 2.0 * s || busy < 0.5 * s);
            // Two baselines in a row: one frame's spike (a burst of submissions, a stall) is
            // not a new workload.
            let persistent = changed && self.baseline_changed;
            self.baseline_changed = changed;
            if changed && !persistent {
                // Not yet taken into the baseline either: a stall smoothed in would make the
                // next frames' timed draws look free.
            } else if r.frame >= self.settle_until && persistent {
                // A new workload: its first baseline is the baseline.
                self.settle(r.frame);
                self.baseline_ns = Some(busy);
            } else {
                self.baseline_ns = Some(self.baseline_ns.map_or(busy, |o| o + 0.5 * (busy - o)));
                if !changed && r.frame >= self.settle_until {
                    self.check.base.add(busy);
                }
            }
        } else if let Some(base) = self.baseline_ns {
            let timed = f64::from(r.counts.draws_timed.max(1));
            let sample = (busy - base) / timed;
            if r.frame < self.settle_until {
                self.cost_per_draw_ns = Some(self.cost_per_draw_ns.map_or(sample, |o| o + ALPHA * (sample - o)));
            } else if count == self.check.count {
                self.check.timed.add(busy);
            }
        }
        if r.frame < self.settle_until {
            // An estimate at or below zero says the cost is under the noise, not that it is
            // free: the count is held. And the window at most doubles or halves per estimate.
            // On a loaded CPU (lavapipe) a stalled baseline once made the estimate negative and
            // the window every draw, more samples than the dump writer could take; and one
            // noisy frame took it from 16 to 2.
            if let (Some(base), Some(cost)) = (self.baseline_ns, self.cost_per_draw_ns.filter(|&c| c > 0.0)) {
                let count = self.count.max(1);
                let proposal =
                    ((AIM * fraction * base / cost.max(1.0)) as u32).clamp((count / 2).max(1), count.saturating_mul(2));
                if r.frame < SETTLE_FRAMES {
                    self.max_count = self.max_count.max(proposal);
                }
                self.count = proposal.min(self.max_count);
                self.settled_base = Some(base);
            }
            self.check = Check {
                count: self.count,
                until: self.settle_until + CHECK_FRAMES,
                ..Check::default()
            };
        } else if r.frame >= self.check.until {
            self.end_check(fraction, r.frame);
        }
    }

    /// The end of a steady-state check: the count is rescaled when the frames that timed
    /// draws cost, beyond the baselines, more or less than the budget by more than the
    /// noise can explain.
    fn end_check(&mut self, fraction: f64, frame: u64) {
        let c = self.check;
        self.check = Check {
            count: self.count,
            until: frame + CHECK_FRAMES,
            ..Check::default()
        };
        if c.count != self.count || c.base.n < 2.0 || c.timed.n < 2.0 || c.base.mean <= 0.0 {
            return;
        }
        let cost = c.timed.mean - c.base.mean;
        // The frames' overhead estimate follows the measurement, which has more frames behind
        // it than the settling estimate.
        self.cost_per_draw_ns = Some(cost / f64::from(c.count.max(1)));
        let budget = fraction * c.base.mean;
        let se = (c.base.var_of_mean() + c.timed.var_of_mean()).sqrt();
        // After a rescale the count keeps converging on the aim: a rescale in proportion to
        // the count undershoots when part of the cost (pass and label samples) does not scale
        // with it.
        let (high, low) = match self.converging {
            Some(true) => (AIM * budget, LEAST * budget),
            Some(false) => (budget, AIM * budget),
            None => (budget, LEAST * budget),
        };
        let over = cost - high > EVIDENCE * se;
        let under = low - cost > EVIDENCE * se && c.count < self.max_count;
        if !(over || under) || cost <= 0.0 {
            self.converging = None;
            return;
        }
        self.converging = Some(over);
        // Scaled by the draws' share of the cost only roughly: pass and label samples cost
        // the same whatever the count, so a rescale undershoots a little and the next check
        // finishes it.
        let next = ((f64::from(c.count) * AIM * budget / cost) as u32).clamp(1, self.max_count);
        self.count = next;
        self.check.count = next;
    }

    /// The workload changed: estimate the cost anew and let the count follow it for a while.
    fn settle(&mut self, frame: u64) {
        self.settle_until = frame + SETTLE_FRAMES;
        self.cost_per_draw_ns = None;
    }

    /// The overhead estimate of a frame that timed `timed` draws.
    pub fn overhead_ns(&self, timed: u32) -> Option<u64> {
        self.cost_per_draw_ns.map(|c| (c * f64::from(timed)) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU where the frame's work takes `base` ns and each timed draw adds `cost` ns.
    fn run(budget: u64, draws: u32, base: u64, cost: u64, frames: u64) -> (Budget, DrawWindow, Vec<(u32, u32)>) {
        let mut b = Budget::new(budget);
        let w = DrawWindow::new();
        let mut windows = Vec::new();
        for f in 0..frames {
            w.note_draws(draws);
            let (first, count) = w.current();
            windows.push((first, count));
            let timed = (0..draws).filter(|&i| timed((first, count), i)).count() as u32;
            b.end_frame(&w, f);
            let mut r = FrameRecord {
                frame: f,
                ..FrameRecord::default()
            };
            r.counts.draws_timed = timed;
            r.gpu.busy_ns = Some(base + cost * u64::from(timed));
            b.on_emitted(&r);
        }
        (b, w, windows)
    }

    #[test]
    fn the_window_is_sized_from_the_budget_and_covers_every_draw() {
        // 10 000 draws in 258 us, 850 ns per timed draw (the H100's numbers): 3 % is 9 draws.
        let (b, _, windows) = run(3, 10_000, 258_000, 850, 400);
        let (_, count) = *windows.last().unwrap();
        let c = if count == 0 {
            windows[windows.len() - 2].1
        } else {
            count
        };
        assert_eq!(c, (AIM * 0.03 * 258_000.0 / 850.0) as u32, "{windows:?}");
        assert!((b.cost_per_draw_ns().unwrap() - 850.0).abs() < 1.0);
        // A cheap timestamp (10 ns): 774 draws per frame, every draw within 13 frames + baselines.
        let (_, w, windows) = run(3, 10_000, 258_000, 10, 200);
        let mut covered = vec![false; 10_000];
        for &(first, count) in &windows[100..] {
            for i in 0..10_000u32 {
                covered[i as usize] |= timed((first, count), i);
            }
        }
        assert!(
            covered.iter().all(|&c| c),
            "every draw position timed within 100 frames"
        );
        assert_eq!(w.max_draws(), 10_000);
    }

    #[test]
    fn after_settling_the_count_moves_only_when_the_workload_changes() {
        let mut b = Budget::new(3);
        let w = DrawWindow::new();
        let mut counts = Vec::new();
        for f in 0..700u64 {
            w.note_draws(10_000);
            let (first, count) = w.current();
            let timed = (0..10_000).filter(|&i| timed((first, count), i)).count() as u32;
            b.end_frame(&w, f);
            // Noise of +-5 % on the base; the base quadruples at frame 300.
            let base =
                if f < 300 { 258_000.0 } else { 1_032_000.0 } * (1.0 + 0.05 * ((f * 7919 % 13) as f64 / 6.0 - 1.0));
            let mut r = FrameRecord {
                frame: f,
                ..FrameRecord::default()
            };
            r.counts.draws_timed = timed;
            r.gpu.busy_ns = Some(base as u64 + 850 * u64::from(timed));
            b.on_emitted(&r);
            if count != 0 {
                counts.push((f, count));
            }
        }
        let steady: Vec<u32> = counts
            .iter()
            .filter(|(f, _)| (60..300).contains(f))
            .map(|c| c.1)
            .collect();
        let mut distinct = steady.clone();
        distinct.dedup();
        // The overhead (3 %) is smaller than the noise (5 %): the settled estimate is good to
        // a factor of 3 here, and one check may correct it (ideal: 9 draws before, 36 after).
        assert!(distinct.len() <= 2, "the count moved more than once: {distinct:?}");
        let settled = *steady.last().unwrap();
        assert!((3..=27).contains(&settled), "settled count {settled}");
        let last = counts.last().unwrap().1;
        // A heavier frame would take a larger window, but not past the largest of the first
        // settling, which the buffers were sized for.
        assert!(
            last >= settled,
            "the heavier workload kept or grew the window: {settled} -> {last}"
        );
    }

    /// 2000 draws on a 5 ms frame, 100 us per timed draw; the baselines of frames where
    /// `stalled` holds take 10x as long, as a descheduled lavapipe thread shows. The largest
    /// window after the first frame, and the cost estimate.
    fn run_stalled(stalled: impl Fn(u64) -> bool) -> (u32, Option<f64>) {
        let mut b = Budget::new(3);
        let w = DrawWindow::new();
        let mut max_count = 0;
        for f in 0..120u64 {
            w.note_draws(2000);
            let (first, count) = w.current();
            let timed = (0..2000).filter(|&i| timed((first, count), i)).count() as u32;
            b.end_frame(&w, f);
            let base: u64 = if count == 0 && stalled(f) {
                50_000_000
            } else {
                5_000_000
            };
            let mut r = FrameRecord {
                frame: f,
                ..FrameRecord::default()
            };
            r.counts.draws_timed = timed;
            r.gpu.busy_ns = Some(base + 100_000 * u64::from(timed));
            b.on_emitted(&r);
            if f > 0 {
                max_count = max_count.max(count);
            }
        }
        (max_count, b.cost_per_draw_ns())
    }

    /// Stalled baselines make frames with timed draws look cheaper than the baseline: the
    /// window must not jump to every draw (on lavapipe under load it did, and the samples
    /// overflowed the dump writer's queue).
    #[test]
    fn a_stalled_baseline_does_not_open_the_window_to_every_draw() {
        // A stall after the first baseline is a spike, left out of the baseline.
        let (max_count, cost) = run_stalled(|f| f % 32 == 0);
        // Ideal: 3 % of 5 ms at 100 us a draw is 1 draw; the first window is 16.
        assert!(max_count <= 16, "window grew to {max_count}");
        let cost = cost.unwrap();
        assert!((50_000.0..200_000.0).contains(&cost), "cost {cost}");
        // A stalled first baseline cannot be told from the workload: timed frames then look
        // free (a negative cost), and the count is held.
        let (max_count, cost) = run_stalled(|f| f == 16);
        assert!(max_count <= 16, "window grew to {max_count}");
        assert!(cost.unwrap() < 0.0);
    }

    #[test]
    fn every_sixteenth_frame_is_a_quiet_baseline_and_budget_100_times_everything() {
        let (_, _, windows) = run(3, 100, 1000, 10, 64);
        for (f, &(_, count)) in windows.iter().enumerate() {
            assert_eq!(count == 0, f > 0 && f % 16 == 0, "frame {f}: {count}");
        }
        let mut b = Budget::new(3);
        let w = DrawWindow::new();
        for f in 0..40u64 {
            assert_eq!(w.quiet(), f > 0 && f % 16 == 0, "frame {f}");
            b.end_frame(&w, f);
        }
        let (b, _, windows) = run(100, 100, 1000, 10, 20);
        assert!(windows.iter().all(|&(_, c)| c == u32::MAX));
        assert_eq!(b.overhead_ns(5), None);
        assert!(timed((0, u32::MAX), 123_456));
        assert!(!timed((10, 5), 15) && timed((10, 5), 14) && !timed((10, 5), 9));
    }

    /// xorshift64: deterministic noise for the controller's tests.
    struct Rng(u64);

    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }

        /// About N(0, 1): the sum of 12 uniforms, less 6.
        fn normal(&mut self) -> f64 {
            (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
        }
    }

    /// Frames on a GPU that repeats to within `jitter` ns (standard deviation): quiet baselines take `base`, other
    /// frames `fixed` more for pass samples plus `cost(frame)` per timed draw. The counts of
    /// the frames that timed draws.
    fn run_steady(base: f64, fixed: f64, jitter: f64, cost: impl Fn(u64) -> f64, frames: u64) -> Vec<(u64, u32)> {
        let mut b = Budget::new(3);
        let w = DrawWindow::new();
        let mut counts = Vec::new();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for f in 0..frames {
            w.note_draws(10_000);
            let (first, count) = w.current();
            let quiet = w.quiet();
            let timed = (0..10_000).filter(|&i| timed((first, count), i)).count() as u32;
            b.end_frame(&w, f);
            let noise = jitter * rng.normal();
            let busy = base + noise + if quiet { 0.0 } else { fixed + cost(f) * f64::from(timed) };
            let mut r = FrameRecord {
                frame: f,
                ..FrameRecord::default()
            };
            r.counts.draws_timed = timed;
            r.gpu.busy_ns = Some(busy as u64);
            b.on_emitted(&r);
            if count != 0 {
                counts.push((f, count));
            }
        }
        counts
    }

    /// On the H100 the count settled from the first frames' cost (about 260 ns a timed draw)
    /// and the steady cost was 30 % higher, so the mode cost 3.9 % instead of 3. With frames
    /// that repeat to within a microsecond, the checks find that and bring the count down.
    #[test]
    fn a_settling_estimate_that_was_off_is_corrected_on_a_steady_gpu() {
        let counts = run_steady(258_700.0, 0.0, 300.0, |f| if f < 48 { 257.0 } else { 361.0 }, 1500);
        let settled = counts.iter().find(|c| c.0 == 60).unwrap().1;
        let last = counts.last().unwrap().1;
        let (budget, aim) = (0.03 * 258_700.0 / 361.0, AIM * 0.03 * 258_700.0 / 361.0);
        assert!(f64::from(settled) > budget, "settled {settled}, budget {budget}");
        assert!(
            f64::from(last) <= budget && f64::from(last) >= aim - 2.0,
            "last {last}, aim {aim}: {counts:?}"
        );
        // The whole mode counts against the budget: pass samples that cost 2 % of the frame
        // leave a third of it for draws, and the count converges under it.
        let (base, fixed, per_draw) = (258_700.0, 0.02 * 258_700.0, 300.0);
        let counts = run_steady(base, fixed, 300.0, |_| per_draw, 1500);
        let last = f64::from(counts.last().unwrap().1);
        let cost = fixed + per_draw * last;
        assert!(
            cost <= 0.03 * base && cost >= LEAST * 0.03 * base,
            "count {last}: cost {cost}: {counts:?}"
        );
    }

    /// Noise of 5 % of the frame (a loaded lavapipe) is larger than the 3 % budget: the settled
    /// count may be far under the ideal (safe), and a check finds evidence only against a
    /// count far over it, so the count does not wander.
    #[test]
    fn on_a_noisy_gpu_the_count_does_not_wander() {
        let counts = run_steady(5_000_000.0, 0.0, 250_000.0, |_| 20_000.0, 3000);
        let mut distinct: Vec<u32> = counts.iter().filter(|c| c.0 >= 60).map(|c| c.1).collect();
        distinct.dedup();
        assert!(distinct.len() <= 2, "{distinct:?}");
        let ideal = 0.03 * 5_000_000.0 / 20_000.0;
        let last = f64::from(*distinct.last().unwrap());
        assert!(last < ideal * 3.0, "last {last}, ideal {ideal}");
    }
}
