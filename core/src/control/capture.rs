//! Run-time control of the dump: capture on and off (from `framescope ctl` or the
//! `dump_toggle_key` hotkey) and marks. Each change is stamped with the frame clock
//! (CLOCK_MONOTONIC) when it is asked for; the dump writer applies the changes to frames by
//! time, so a `stop` lands on the frames presented after it even though frames reach the
//! writer later (their GPU results come frames later). Nothing here runs on the app's threads.

use crate::runtime::clock::monotonic_now_ns;
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

/// Writers whose dump has not ended, and why the last one ended.
#[derive(Clone, Copy)]
struct Writers {
    live: u32,
    last_end: Option<&'static str>,
}

struct State {
    pending: Mutex<VecDeque<Change>>,
    writers: Mutex<Writers>,
    /// The state the last accepted capture change set (what `status` reports).
    capturing: AtomicBool,
    marks: AtomicU64,
}

static STATE: State = State::new();

/// Why a change was refused.
#[derive(Debug, PartialEq)]
pub enum Refused {
    Full,
    BadLabel,
    /// The dump has ended, for this reason (its summary's `ended_by`).
    Ended(&'static str),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Full => f.write_str("too many changes waiting for the dump writer"),
            Refused::BadLabel => f.write_str("a mark label is 1 to 256 bytes of printable text"),
            Refused::Ended(why) => write!(
                f,
                "the dump has ended ({why}) and its summary is written; nothing more reaches it"
            ),
        }
    }
}

impl State {
    const fn new() -> State {
        State {
            pending: Mutex::new(VecDeque::new()),
            writers: Mutex::new(Writers {
                live: 0,
                last_end: None,
            }),
            capturing: AtomicBool::new(true),
            marks: AtomicU64::new(0),
        }
    }

    fn writer_started(&self, capturing: bool) {
        self.capturing.store(capturing, Ordering::Relaxed);
        let mut w = self.writers.lock();
        w.live += 1;
        w.last_end = None;
    }

    fn writer_ended(&self, why: &'static str) {
        let mut w = self.writers.lock();
        w.live = w.live.saturating_sub(1);
        w.last_end = Some(why);
    }

    /// Why the dump ended, once every writer that started has ended.
    fn ended(&self) -> Option<&'static str> {
        let w = *self.writers.lock();
        (w.live == 0).then_some(w.last_end).flatten()
    }

    fn capturing(&self) -> bool {
        self.ended().is_none() && self.capturing.load(Ordering::Relaxed)
    }

    /// Queues the change `make` builds with the time now. The time is read under the lock, so
    /// a change [`take`] has not seen is later than the horizon it returned.
    fn push(&self, make: impl FnOnce(u64) -> Change) -> Result<u64, Refused> {
        if let Some(why) = self.ended() {
            return Err(Refused::Ended(why));
        }
        let mut q = self.pending.lock();
        if q.len() >= MAX_PENDING {
            return Err(Refused::Full);
        }
        let t = monotonic_now_ns();
        q.push_back(make(t));
        Ok(t)
    }

    fn set(&self, on: bool) -> Result<u64, Refused> {
        let t = self.push(|t_ns| Change::Capture { t_ns, on })?;
        self.capturing.store(on, Ordering::Relaxed);
        Ok(t)
    }

    fn mark(&self, label: &str) -> Result<u64, Refused> {
        let ok = !label.is_empty() && label.len() <= MAX_LABEL && !label.chars().any(char::is_control);
        if !ok {
            return Err(Refused::BadLabel);
        }
        let label = label.to_owned();
        let t = self.push(|t_ns| Change::Mark { t_ns, label })?;
        self.marks.fetch_add(1, Ordering::Relaxed);
        Ok(t)
    }
}

/// A dump writer starts, in the state capture starts in (`dump_paused`); called before its
/// thread starts.
pub fn init(capturing: bool) {
    STATE.writer_started(capturing);
}

/// A dump writer has ended (its summary is written, or it failed), because of `why`; once
/// every writer has, changes are refused with that reason. Called once per [`init`].
pub fn end(why: &'static str) {
    STATE.writer_ended(why);
}

/// Why the dump ended, once it has (every writer of the process has).
pub fn ended() -> Option<&'static str> {
    STATE.ended()
}

/// Whether frames are being written (as of the last change asked for; never after the dump
/// ended).
pub fn capturing() -> bool {
    STATE.capturing()
}

/// Marks asked for so far.
pub fn marks() -> u64 {
    STATE.marks.load(Ordering::Relaxed)
}

/// Starts (`on`) or stops writing frames, from now; the time of the change.
pub fn set(on: bool) -> Result<u64, Refused> {
    STATE.set(on)
}

/// Flips capture (the hotkey).
pub fn toggle() -> Result<u64, Refused> {
    set(!capturing())
}

/// A mark named `label` at this moment.
pub fn mark(label: &str) -> Result<u64, Refused> {
    STATE.mark(label)
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
    fn once_every_writer_has_ended_changes_are_refused_with_why() {
        let st = State::new();
        st.writer_started(true);
        st.writer_started(true);
        assert!(st.set(false).is_ok());
        st.writer_ended("finish");
        assert_eq!(st.ended(), None, "one writer still runs");
        assert!(st.mark("still").is_ok());
        st.writer_ended("dump_duration");
        assert_eq!(st.ended(), Some("dump_duration"));
        assert!(!st.capturing());
        assert_eq!(st.set(true), Err(Refused::Ended("dump_duration")));
        assert_eq!(st.mark("late"), Err(Refused::Ended("dump_duration")));
        assert!(Refused::Ended("dump_duration")
            .to_string()
            .contains("ended (dump_duration)"));
        // A new writer (a device created later) takes changes again.
        st.writer_started(false);
        assert_eq!(st.ended(), None);
        assert!(st.set(true).is_ok() && st.capturing());
    }

    #[test]
    fn labels_are_bounded_printable_text() {
        assert_eq!(mark(""), Err(Refused::BadLabel));
        assert_eq!(mark("a\nb"), Err(Refused::BadLabel));
        assert_eq!(mark(&"x".repeat(MAX_LABEL + 1)), Err(Refused::BadLabel));
    }
}
