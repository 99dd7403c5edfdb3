//! The collector: one thread per process that reads every counter source and publishes the
//! values on a [`CounterBoard`], shared by every Vulkan device and GL context of the process.
//!
//! The app's threads never call a source: they only mark frame ends on the board (two atomic
//! stores) and copy the board at frame close. The thread builds the sources, fixes the
//! catalogue (the dump header's `counters`), starts each source (failures go to the header's
//! `unavailable`, retried with back-off when they may pass), then reads each due source every
//! `interval` (or its own `min_interval`, if longer) while frames come; with no frame for a
//! second it only checks back every interval, so a paused app costs no driver calls.

use crate::source::{CounterSource, GpuHint, ReadError, StartError};
use framescope_core::counters::{Catalogue, CounterBoard, CounterWindow, MAX_COUNTERS, MAX_SOURCES};
use framescope_core::dump::CounterDesc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A built source, or why one could not be built: (source id, reason).
pub type Built = Result<Box<dyn CounterSource>, (&'static str, String)>;

/// First retry of a source that failed; doubled each time up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Reads pause when no frame ended for this long.
const IDLE_AFTER_NS: u64 = 1_000_000_000;

enum State {
    Running,
    /// Retry at this time (ns) with this back-off next.
    Waiting {
        at_ns: u64,
        backoff: Duration,
    },
    /// Never again (reported as unavailable).
    Off,
}

struct Slot {
    source: Box<dyn CounterSource>,
    /// Board slot of each of the source's counters (`None`: cut or a duplicate name).
    board_slot: Vec<Option<usize>>,
    out: Vec<f64>,
    state: State,
    last_read_ns: u64,
    interval_ns: u64,
}

/// The process's counter board; the first call starts the collector thread with `hint` (the
/// first device's GPU) and the sources `build` makes; later calls return the same board.
pub fn process_board(hint: GpuHint, interval: Duration, build: fn(&GpuHint) -> Vec<Built>) -> Arc<CounterBoard> {
    static BOARD: OnceLock<Arc<CounterBoard>> = OnceLock::new();
    BOARD
        .get_or_init(|| {
            let board = Arc::new(CounterBoard::default());
            let b = board.clone();
            let spawned = std::thread::Builder::new()
                .name("framescope-counters".into())
                .spawn(move || {
                    framescope_core::alloc_count::mark_own_thread();
                    let built = build(&hint);
                    run(&b, built, interval, framescope_core::clock::monotonic_now_ns, |d| {
                        std::thread::sleep(d);
                        true
                    });
                });
            if let Err(e) = spawned {
                board.set_unavailable("collector", &format!("cannot start the collector thread: {e}"));
                board.set_catalogue(Catalogue::default());
                board.mark_started();
            }
            board
        })
        .clone()
}

/// Starts every source once, then fixes the catalogue from the catalogues of those that
/// started or may start later: the first source that names a counter owns it; a source that
/// can never run (no such device) adds nothing; counters past [`MAX_COUNTERS`] and sources
/// past [`MAX_SOURCES`] are cut (and said so in `unavailable`).
fn catalogue(board: &CounterBoard, built: Vec<Built>, interval: Duration, now_ns: u64) -> Vec<Slot> {
    let mut cat = Catalogue::default();
    let mut slots = Vec::new();
    for b in built {
        let mut source = match b {
            Ok(s) => s,
            Err((id, reason)) => {
                board.set_unavailable(id, &reason);
                continue;
            }
        };
        let state = match source.start() {
            Ok(()) => {
                if let Some(g) = source.gpu() {
                    board.set_gpu(g);
                }
                State::Running
            }
            Err(StartError::Unavailable(reason)) => {
                board.set_unavailable(source.id(), &reason);
                continue;
            }
            Err(StartError::Retry(reason)) => {
                board.set_unavailable(source.id(), &reason);
                State::Waiting {
                    at_ns: now_ns.saturating_add(FIRST_BACKOFF.as_nanos() as u64),
                    backoff: FIRST_BACKOFF * 2,
                }
            }
        };
        if cat.sources.len() == MAX_SOURCES {
            board.set_unavailable(source.id(), &format!("more than {MAX_SOURCES} counter sources"));
            continue;
        }
        let source_index = cat.sources.len() as u8;
        let mut board_slot = Vec::new();
        let mut cut = 0;
        for c in source.catalogue() {
            if cat.index_of(&c.name).is_some() {
                board_slot.push(None);
            } else if cat.counters.len() == MAX_COUNTERS {
                board_slot.push(None);
                cut += 1;
            } else {
                board_slot.push(Some(cat.counters.len()));
                cat.counters.push(CounterDesc {
                    name: c.name.clone(),
                    unit: c.unit.clone(),
                    source: source.id().to_string(),
                    scope: c.scope.name().to_string(),
                });
                cat.source_of.push(source_index);
            }
        }
        if cut > 0 {
            board.set_unavailable(
                source.id(),
                &format!("{cut} of its counters left out: a frame holds {MAX_COUNTERS} counters"),
            );
        }
        cat.sources.push(source.id().to_string());
        if let Some(f) = source.attributor() {
            board.set_attributor(f);
        }
        let n = source.catalogue().len();
        let interval_ns = interval.max(source.min_interval()).as_nanos().min(u128::from(u64::MAX)) as u64;
        slots.push(Slot {
            source,
            board_slot,
            out: vec![f64::NAN; n],
            state,
            last_read_ns: 0,
            interval_ns,
        });
    }
    board.set_catalogue(cat);
    slots
}

fn try_start(board: &CounterBoard, s: &mut Slot, now_ns: u64) {
    let State::Waiting { at_ns, backoff } = s.state else {
        return;
    };
    if now_ns < at_ns {
        return;
    }
    match s.source.start() {
        Ok(()) => {
            board.clear_unavailable(s.source.id());
            if let Some(g) = s.source.gpu() {
                board.set_gpu(g);
            }
            s.state = State::Running;
        }
        Err(StartError::Unavailable(reason)) => {
            board.set_unavailable(s.source.id(), &reason);
            s.state = State::Off;
        }
        Err(StartError::Retry(reason)) => {
            board.set_unavailable(s.source.id(), &reason);
            s.state = State::Waiting {
                at_ns: now_ns.saturating_add(backoff.as_nanos() as u64),
                backoff: (backoff * 2).min(MAX_BACKOFF),
            };
        }
    }
}

fn read(board: &CounterBoard, source_index: usize, s: &mut Slot, now_ns: u64) {
    if !matches!(s.state, State::Running) || now_ns.saturating_sub(s.last_read_ns) < s.interval_ns {
        return;
    }
    s.out.fill(f64::NAN);
    match s.source.read(now_ns, &mut s.out) {
        Ok(window) => {
            s.last_read_ns = now_ns;
            let values = s
                .board_slot
                .iter()
                .zip(&s.out)
                .filter_map(|(slot, v)| slot.map(|i| (i, *v)));
            board.publish(source_index, window, values);
        }
        Err(ReadError::NotYet) => {}
        Err(ReadError::Lost(reason)) => {
            board.set_unavailable(s.source.id(), &reason);
            // Its old values would look current: clear them.
            let none = s.board_slot.iter().flatten().map(|&i| (i, f64::NAN));
            board.publish(source_index, CounterWindow::default(), none);
            s.state = State::Waiting {
                at_ns: now_ns.saturating_add(FIRST_BACKOFF.as_nanos() as u64),
                backoff: FIRST_BACKOFF * 2,
            };
        }
    }
}

/// The collector loop, with the clock and the sleep injected (tests drive it step by step;
/// `sleep` returning false ends it).
pub fn run(
    board: &CounterBoard,
    built: Vec<Built>,
    interval: Duration,
    now: impl Fn() -> u64,
    mut sleep: impl FnMut(Duration) -> bool,
) {
    let mut slots = catalogue(board, built, interval, now());
    board.mark_started();
    let tick = interval.max(Duration::from_millis(1));
    loop {
        let t = now();
        for s in slots.iter_mut() {
            try_start(board, s, t);
        }
        let (_, last_frame_ns) = board.last_frame();
        let active = last_frame_ns != 0 && t.saturating_sub(last_frame_ns) < IDLE_AFTER_NS;
        if active {
            let (frame, frame_ns) = board.last_frame();
            for (i, s) in slots.iter_mut().enumerate() {
                s.source.frame_marked(frame, frame_ns);
                read(board, i, s, t);
            }
        }
        if !sleep(tick) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{CounterScope, SourceCounter};
    use std::cell::Cell;
    use std::rc::Rc;

    struct Fake {
        id: &'static str,
        cat: Vec<SourceCounter>,
        starts: Vec<Result<(), StartError>>,
        reads: u32,
        lose_at: Option<u32>,
    }

    impl CounterSource for Fake {
        fn id(&self) -> &'static str {
            self.id
        }
        fn catalogue(&self) -> &[SourceCounter] {
            &self.cat
        }
        fn start(&mut self) -> Result<(), StartError> {
            if self.starts.is_empty() {
                Ok(())
            } else {
                self.starts.remove(0)
            }
        }
        fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
            self.reads += 1;
            if Some(self.reads) == self.lose_at {
                return Err(ReadError::Lost("device lost".into()));
            }
            for (i, o) in out.iter_mut().enumerate() {
                *o = f64::from(self.reads) * 10.0 + i as f64;
            }
            Ok(CounterWindow {
                begin_ns: now_ns.saturating_sub(5),
                end_ns: now_ns,
            })
        }
    }

    fn fake(id: &'static str, names: &[&str]) -> Fake {
        Fake {
            id,
            cat: names
                .iter()
                .map(|n| SourceCounter::new(*n, "%", CounterScope::Device))
                .collect(),
            starts: Vec::new(),
            reads: 0,
            lose_at: None,
        }
    }

    /// Runs `steps` ticks of 10 ms on a fake clock, with a frame marked before each.
    fn drive(board: &CounterBoard, built: Vec<Built>, steps: u32, frames: bool) {
        let clock = Rc::new(Cell::new(1_000_000_000u64));
        let c = clock.clone();
        let mut n = 0;
        if frames {
            board.mark_frame(0, clock.get());
        }
        run(
            board,
            built,
            Duration::from_millis(10),
            move || c.get(),
            |d| {
                n += 1;
                clock.set(clock.get() + d.as_nanos() as u64);
                if frames {
                    board.mark_frame(u64::from(n), clock.get());
                }
                n < steps
            },
        );
    }

    #[test]
    fn values_reach_the_board_by_catalogue_slot_and_duplicates_go_to_the_first_source() {
        let board = CounterBoard::default();
        let built: Vec<Built> = vec![
            Ok(Box::new(fake("a", &["x", "y"]))),
            Err(("nvml", "libnvidia-ml.so.1 not found".into())),
            Ok(Box::new(fake("b", &["y", "z"]))),
        ];
        drive(&board, built, 3, true);
        let cat = board.catalogue().unwrap();
        let names: Vec<&str> = cat.counters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z"]);
        assert_eq!(cat.sources, ["a", "b"]);
        assert_eq!(cat.source_of, [0, 0, 1]);
        assert_eq!(board.unavailable()[0].source, "nvml");
        let mut s = Default::default();
        assert!(board.read_into(&mut s));
        // Three ticks, one read each: reads == 3; "z" is b's second counter.
        assert_eq!(s.values.get(0), Some(30.0));
        assert_eq!(s.values.get(1), Some(31.0), "y is a's");
        assert_eq!(s.values.get(2), Some(31.0), "z is b's index 1");
        assert!(s.windows[1].is_set());
    }

    #[test]
    fn nothing_is_read_while_no_frame_comes() {
        let board = CounterBoard::default();
        drive(&board, vec![Ok(Box::new(fake("a", &["x"])))], 5, false);
        let mut s = Default::default();
        board.read_into(&mut s);
        assert!(s.values.is_empty());
        assert!(board.is_started());
    }

    #[test]
    fn a_source_that_may_start_later_is_retried_with_back_off_and_then_read() {
        let board = CounterBoard::default();
        let mut f = fake("fdinfo", &["proc_gpu_busy_pct"]);
        f.starts = vec![Err(StartError::Retry("no DRM fd yet".into())), Ok(())];
        // 1 s back-off at 10 ms a tick: started by tick ~101.
        drive(&board, vec![Ok(Box::new(f))], 120, true);
        assert!(board.unavailable().is_empty(), "{:?}", board.unavailable());
        let mut s = Default::default();
        board.read_into(&mut s);
        assert!(s.values.get(0).is_some());
    }

    #[test]
    fn an_unavailable_source_is_never_retried_and_a_lost_one_is_cleared() {
        let board = CounterBoard::default();
        let mut off = fake("amdgpu", &["gpu_util_pct"]);
        off.starts = vec![Err(StartError::Unavailable("no amdgpu device".into())), Ok(())];
        let mut lost = fake("nvml", &["gpu_temp_c"]);
        lost.lose_at = Some(2);
        drive(&board, vec![Ok(Box::new(off)), Ok(Box::new(lost))], 3, true);
        let u = board.unavailable();
        assert_eq!(u.len(), 2, "{u:?}");
        assert_eq!(u[0].reason, "no amdgpu device");
        assert_eq!(u[1].reason, "device lost");
        let cat = board.catalogue().unwrap();
        assert_eq!(cat.sources, ["nvml"], "a source that can never run adds no counters");
        let mut s = Default::default();
        board.read_into(&mut s);
        assert_eq!(s.values.get(0), None, "a lost source's values are cleared");
    }
}
