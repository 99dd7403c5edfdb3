//! Run-time control of the dump: capture on and off (from `framescope ctl` or the
//! `dump_toggle_key` hotkey) and marks. Each change is stamped with the frame clock
//! (CLOCK_MONOTONIC) when it is asked for; the dump writer applies the changes to frames by
//! time, so a `stop` lands on the frames presented after it even though frames reach the
//! writer later (their GPU results come frames later). Nothing here runs on the app's threads.

use crate::clock::monotonic_now_ns;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Changes held for the writer; past this a change is refused (the writer takes them every
/// flush interval, so only a flood of commands meets it).
pub const MAX_PENDING: usize = 256;
/// Longest mark label, in bytes.
pub const MAX_LABEL: usize = 256;

#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Capture { t_ns: u64, on: bool },
    Mark { t_ns: u64, label: String },
}

impl Change {
    pub fn t_ns(&self) -> u64 {
        match self {
            Change::Capture { t_ns, .. } | Change::Mark { t_ns, .. } => *t_ns,
        }
    }
}

struct State {
    pending: Mutex<VecDeque<Change>>,
    /// The state the last accepted capture change set (what `status` reports).
    capturing: AtomicBool,
    marks: AtomicU64,
}

static STATE: State = State {
    pending: Mutex::new(VecDeque::new()),
    capturing: AtomicBool::new(true),
    marks: AtomicU64::new(0),
};

/// Why a change was refused.
#[derive(Debug, PartialEq)]
pub enum Refused {
    Full,
    BadLabel,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::Full => "too many changes waiting for the dump writer",
            Refused::BadLabel => "a mark label is 1 to 256 bytes of printable text",
        })
    }
}

/// Sets the state capture starts in (`dump_paused`); called once, before the writer starts.
pub fn init(capturing: bool) {
    STATE.capturing.store(capturing, Ordering::Relaxed);
}

/// Whether frames are being written (as of the last change asked for).
pub fn capturing() -> bool {
    STATE.capturing.load(Ordering::Relaxed)
}

/// Marks asked for so far.
pub fn marks() -> u64 {
    STATE.marks.load(Ordering::Relaxed)
}

/// Queues the change `make` builds with the time now. The time is read under the lock, so a
/// change [`take`] has not seen is later than the horizon it returned.
fn push(make: impl FnOnce(u64) -> Change) -> Result<u64, Refused> {
    let mut q = STATE.pending.lock();
    if q.len() >= MAX_PENDING {
        return Err(Refused::Full);
    }
    let t = monotonic_now_ns();
    q.push_back(make(t));
    Ok(t)
}

/// Starts (`on`) or stops writing frames, from now; the time of the change.
pub fn set(on: bool) -> Result<u64, Refused> {
    let t = push(|t_ns| Change::Capture { t_ns, on })?;
    STATE.capturing.store(on, Ordering::Relaxed);
    Ok(t)
}

/// Flips capture (the hotkey).
pub fn toggle() -> Result<u64, Refused> {
    set(!capturing())
}

/// A mark named `label` at this moment.
pub fn mark(label: &str) -> Result<u64, Refused> {
    let ok = !label.is_empty() && label.len() <= MAX_LABEL && !label.chars().any(char::is_control);
    if !ok {
        return Err(Refused::BadLabel);
    }
    let label = label.to_owned();
    let t = push(|t_ns| Change::Mark { t_ns, label })?;
    STATE.marks.fetch_add(1, Ordering::Relaxed);
    Ok(t)
}

/// The writer's side: moves every change asked for so far into `out`, oldest first, and
/// returns the horizon: every change not taken is later than it.
pub fn take(out: &mut Vec<Change>) -> u64 {
    let mut q = STATE.pending.lock();
    out.extend(q.drain(..));
    monotonic_now_ns()
}

/// The writer's view of capture: the state at each frame's time, from the changes taken.
pub struct Timeline {
    on: bool,
    changes: VecDeque<Change>,
}

impl Timeline {
    pub fn new(on: bool) -> Self {
        Timeline {
            on,
            changes: VecDeque::new(),
        }
    }

    pub fn add(&mut self, c: Change) {
        self.changes.push_back(c);
    }

    /// Applies the changes up to `t_ns` (a frame's time): whether that frame is captured, and
    /// the marks up to it (into `marks`, oldest first).
    pub fn at(&mut self, t_ns: u64, marks: &mut Vec<(u64, String)>) -> bool {
        while self.changes.front().is_some_and(|c| c.t_ns() <= t_ns) {
            match self.changes.pop_front() {
                Some(Change::Capture { on, .. }) => self.on = on,
                Some(Change::Mark { t_ns, label }) => marks.push((t_ns, label)),
                None => {}
            }
        }
        self.on
    }

    /// Every mark still held (at the end of the dump).
    pub fn rest(&mut self, marks: &mut Vec<(u64, String)>) {
        for c in self.changes.drain(..) {
            if let Change::Mark { t_ns, label } = c {
                marks.push((t_ns, label));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_applies_changes_by_frame_time() {
        let mut t = Timeline::new(false);
        t.add(Change::Capture { t_ns: 100, on: true });
        t.add(Change::Mark {
            t_ns: 150,
            label: "boss".into(),
        });
        t.add(Change::Capture { t_ns: 200, on: false });
        let mut marks = Vec::new();
        assert!(!t.at(50, &mut marks));
        assert!(t.at(100, &mut marks), "a frame at the start time is captured");
        assert!(marks.is_empty());
        assert!(t.at(199, &mut marks));
        assert_eq!(marks, [(150, "boss".to_string())]);
        assert!(!t.at(200, &mut marks));
        t.add(Change::Mark {
            t_ns: 300,
            label: "late".into(),
        });
        let mut rest = Vec::new();
        t.rest(&mut rest);
        assert_eq!(rest, [(300, "late".to_string())]);
    }

    #[test]
    fn labels_are_bounded_printable_text() {
        assert_eq!(mark(""), Err(Refused::BadLabel));
        assert_eq!(mark("a\nb"), Err(Refused::BadLabel));
        assert_eq!(mark(&"x".repeat(MAX_LABEL + 1)), Err(Refused::BadLabel));
    }
}
