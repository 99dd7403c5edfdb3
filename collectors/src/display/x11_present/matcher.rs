//! Which framescope frame a `PresentCompleteNotify` belongs to: the rule, without a server.
//!
//! The X server sends one `PresentCompleteNotify` (kind `Pixmap`) per `PresentPixmap` to every
//! client that selected `CompleteNotify` on the window: `Copy`/`Flip` when it reached the
//! screen, `Skip` when a later present for the same refresh replaced it. The serial is the
//! presenter's own number: Mesa's GLX (DRI3) and Vulkan WSI count 1 per present per
//! drawable/swapchain, the test app uses its frame number. Events do not come in serial order
//! (measured on Xvfb 21.1: `Skip`s of a burst of presents arrive shuffled), and framescope
//! cannot read the serial at the present, so the rule is:
//!
//! * Only presents noted after the watcher's subscription took effect are candidates (the
//!   watcher drops older notes): a present requested later surely produces an event for us.
//!   The window's notes are numbered in present order (`seq`).
//! * **Anchor**: with no match yet (or after a mapping that does not fit), a displayed event
//!   (`Copy`/`Flip`) belongs to the newest pending note requested before it was shown
//!   (`t_ns ≤ shown`). That is exact when the present was processed by the server before the
//!   refresh that followed its call: an app paced by its presents (vsync) and a next-refresh
//!   `Copy` (Xorg, Xvfb) are. With a deeper queue (a FIFO swapchain queueing refreshes ahead, or
//!   a server lagging behind the app's requests) the anchor is late by the queue's depth; the
//!   plausibility check below catches part of that. `Skip` events cannot anchor (no time).
//! * **Serial offset**: once anchored on (seq, serial), an event with serial `s` belongs to the
//!   note `seq + (s − serial)`, the difference taken as a signed 32-bit wrap-around step, so
//!   out-of-order events and the serial's wrap at 2³² map the same way. Notes no event maps
//!   to stay pending (their event may still come) until they expire, then their frames go out
//!   `no_report`. An event that maps past the newest note, or more than [`MAX_PENDING`] notes
//!   before the last match (a new presenter: a swapchain recreated, another client),
//!   re-anchors; one that maps to a recent note already matched or expired (a present from
//!   before the subscription) is ignored.
//! * **Plausibility**: a displayed event mapped to a note requested more than a refresh (or
//!   [`SLACK_NS`] before the refresh is known) after it was shown is impossible (a present is
//!   shown after it is requested; the slack covers servers that report an immediate execution
//!   with the previous refresh's ust): the event re-anchors.
//!
//! Pending notes are bounded ([`MAX_PENDING`], and [`STALE_NS`] old at most): a presenter
//! whose events never come (Mesa's software drivers on Xvfb put images with `PutImage`) must
//! not grow them.

use framescope_core::display::{DisplayReport, DisplaySource, PresentationMode};
use std::collections::VecDeque;

/// Notes held per window waiting for their event.
pub const MAX_PENDING: usize = 512;

/// Past this a pending note is dropped: the dump's join waits 1 s at most
/// (`framescope_core::display::join::BOUND_NS`), a later report is of no use.
pub const STALE_NS: u64 = 2_000_000_000;

/// How much earlier than requested a displayed event may say it was shown while the refresh
/// is unknown (a 30 Hz refresh is 33 ms).
pub const SLACK_NS: u64 = 40_000_000;

/// With no event at all for this long and [`SOFTWARE_MIN_NOTES`] presents, the window is
/// presented without Present.
pub const SOFTWARE_AFTER_NS: u64 = 1_000_000_000;
pub const SOFTWARE_MIN_NOTES: u64 = 10;

/// The most refreshes the refresh estimate spans.
const REFRESH_SPAN: u64 = 3600;

/// `PresentCompleteNotify`'s mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Copy,
    Flip,
    Skip,
    SuboptimalCopy,
}

/// One `PresentCompleteNotify` of kind `Pixmap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub serial: u32,
    /// The server's ust in µs (`CLOCK_MONOTONIC` on Xorg and Xvfb: `GetTimeInMicros`).
    pub ust_us: u64,
    pub msc: u64,
    pub mode: Mode,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    /// The window's present number since the subscription.
    seq: u64,
    frame: u64,
    t_ns: u64,
}

/// One watched window's matching state.
#[derive(Default)]
pub struct Matcher {
    pending: VecDeque<Pending>,
    /// The last match's (seq, serial); `None`: not anchored.
    anchor: Option<(u64, u32)>,
    /// A displayed event's (ust ns, msc), the base of the refresh estimate.
    refresh_base: Option<(u64, u64)>,
    refresh_ns: Option<u64>,
    /// Events and notes seen (for the software-present test).
    events: u64,
    notes: u64,
    first_note_ns: Option<u64>,
}

impl Matcher {
    /// A present noted after the subscription took effect.
    pub fn note(&mut self, frame: u64, t_ns: u64) {
        self.notes += 1;
        self.first_note_ns.get_or_insert(t_ns);
        while self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        let seq = self.notes - 1;
        self.pending.push_back(Pending { seq, frame, t_ns });
    }

    /// Drops notes no report could still be joined to.
    pub fn expire(&mut self, now_ns: u64) {
        while self
            .pending
            .front()
            .is_some_and(|p| now_ns.saturating_sub(p.t_ns) > STALE_NS)
        {
            self.pending.pop_front();
        }
    }

    /// Whether nothing came for this window although it was presented for a while.
    pub fn software_present(&self, now_ns: u64) -> bool {
        self.events == 0
            && self.notes >= SOFTWARE_MIN_NOTES
            && self
                .first_note_ns
                .is_some_and(|t| now_ns.saturating_sub(t) >= SOFTWARE_AFTER_NS)
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    /// The refresh period estimated from displayed events (ust step over msc step since a
    /// base event).
    pub fn refresh_ns(&self) -> Option<u64> {
        self.refresh_ns
    }

    /// The report for the frame `c` belongs to, if any (see the module's rule).
    pub fn complete(&mut self, c: Completion) -> Option<DisplayReport> {
        self.events += 1;
        let shown_ns = match c.mode {
            Mode::Skip => None,
            _ => Some(c.ust_us.saturating_mul(1000)),
        };
        if let Some(s) = shown_ns {
            // Over many refreshes: Xvfb's fake refresh reports the ust its timer fired at,
            // a millisecond or more late on a busy machine (measured 19 ms for one 16.7 ms
            // step); the error shrinks with the span. Rebased when the msc goes back (another
            // CRTC) or after a minute at 60 Hz (a mode change).
            match self.refresh_base {
                Some((s0, m0)) if c.msc > m0 && s > s0 && c.msc - m0 <= REFRESH_SPAN => {
                    self.refresh_ns = Some((s - s0) / (c.msc - m0));
                }
                Some((_, m0)) if c.msc == m0 => {}
                _ => self.refresh_base = Some((s, c.msc)),
            }
        }
        let mapped = self
            .anchor
            .map(|(seq, serial)| seq as i64 + i64::from(c.serial.wrapping_sub(serial) as i32));
        let at = mapped.and_then(|q| self.pending.iter().position(|p| p.seq as i64 == q));
        let i = match at.filter(|&i| self.plausible(i, shown_ns)) {
            Some(i) => i,
            None => {
                let newest = self.pending.back().map_or(-1, |p| p.seq as i64);
                let recent = self.anchor.map_or(0, |(seq, _)| seq as i64 - MAX_PENDING as i64);
                if at.is_none() && mapped.is_some_and(|q| q <= newest && q >= recent) {
                    // A note already matched or expired, or from before the subscription.
                    return None;
                }
                match shown_ns.and_then(|s| self.anchor_at(s)) {
                    Some(i) => i,
                    None => {
                        self.anchor = None;
                        return None;
                    }
                }
            }
        };
        let p = self.pending.remove(i)?;
        self.anchor = Some((p.seq, c.serial));
        Some(DisplayReport {
            frame: p.frame,
            source: DisplaySource::X11Present,
            shown_ns,
            mode: match c.mode {
                Mode::Copy | Mode::SuboptimalCopy => PresentationMode::Copy,
                Mode::Flip => PresentationMode::Flip,
                Mode::Skip => PresentationMode::Unknown,
            },
            refresh_ns: self.refresh_ns,
        })
    }

    fn plausible(&self, i: usize, shown_ns: Option<u64>) -> bool {
        let slack = self.refresh_ns.unwrap_or(SLACK_NS);
        match (self.pending.get(i), shown_ns) {
            (Some(p), Some(s)) => p.t_ns <= s.saturating_add(slack),
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The newest pending note requested before `shown_ns`.
    fn anchor_at(&self, shown_ns: u64) -> Option<usize> {
        let n = self.pending.partition_point(|p| p.t_ns <= shown_ns);
        n.checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ev(serial: u32, ust_ms: u64, msc: u64, mode: Mode) -> Completion {
        Completion {
            serial,
            ust_us: ust_ms * 1000,
            msc,
            mode,
        }
    }

    fn frames(reports: &[Option<DisplayReport>]) -> Vec<Option<(u64, Option<u64>)>> {
        reports.iter().map(|r| r.map(|r| (r.frame, r.shown_ns))).collect()
    }

    /// One present per refresh, requested 5 ms before it: each event is its frame's, the
    /// serial (the presenter's, 1000 + frame) never equals the frame.
    #[test]
    fn one_present_a_refresh_matches_frame_by_frame() {
        let mut m = Matcher::default();
        let mut out = Vec::new();
        for f in 0..4u64 {
            m.note(f, (16 * f + 11) * MS);
            out.push(m.complete(ev(1000 + f as u32, 16 * (f + 1), f + 1, Mode::Copy)));
        }
        assert_eq!(
            frames(&out),
            [(0, 16), (1, 32), (2, 48), (3, 64)].map(|(f, t)| Some((f, Some(t * MS))))
        );
        assert_eq!(m.refresh_ns(), Some(16 * MS));
        assert_eq!(out[3].unwrap().mode, PresentationMode::Copy);
    }

    /// Events of presents queued before the subscription (shown before any noted present was
    /// requested) match nothing; skips before the first displayed event cannot anchor; the
    /// anchor picks the newest present requested before the refresh, and from there serials
    /// map by offset.
    #[test]
    fn the_anchor_ignores_older_presents_and_takes_the_newest_before_the_refresh() {
        let mut m = Matcher::default();
        m.note(10, 20 * MS);
        assert_eq!(m.complete(ev(5, 16, 1, Mode::Copy)), None, "an older present's event");
        m.note(11, 25 * MS);
        assert_eq!(m.complete(ev(6, 0, 0, Mode::Skip)), None, "a skip cannot anchor");
        m.note(12, 30 * MS);
        let r = m.complete(ev(8, 33, 2, Mode::Flip)).unwrap();
        assert_eq!(
            (r.frame, r.shown_ns, r.mode),
            (12, Some(33 * MS), PresentationMode::Flip)
        );
        // Serial 7 (frame 11) comes late, after the anchor: mapped by offset all the same.
        let late = m.complete(ev(7, 0, 0, Mode::Skip)).unwrap();
        assert_eq!((late.frame, late.shown_ns), (11, None));
        m.note(13, 40 * MS);
        m.note(14, 45 * MS);
        let shown = m.complete(ev(10, 50, 3, Mode::Copy)).unwrap();
        assert_eq!((shown.frame, shown.shown_ns), (14, Some(50 * MS)));
        let skip = m.complete(ev(9, 0, 0, Mode::Skip)).unwrap();
        assert_eq!((skip.frame, skip.shown_ns), (13, None));
        assert_eq!(m.complete(ev(9, 0, 0, Mode::Skip)), None, "a note is matched once");
    }

    /// Skips arrive shuffled (as Xvfb sends a burst's): each maps to its own frame.
    #[test]
    fn shuffled_events_map_by_serial_offset() {
        let mut m = Matcher::default();
        m.note(100, 0);
        assert_eq!(m.complete(ev(40, 1, 1, Mode::Copy)).unwrap().frame, 100);
        for f in 101..108 {
            m.note(f, (f - 100) * MS);
        }
        let mut got = Vec::new();
        for serial in [43, 41, 46, 42, 44, 45] {
            got.push(m.complete(ev(serial, 0, 0, Mode::Skip)).unwrap().frame);
        }
        assert_eq!(got, [103, 101, 106, 102, 104, 105]);
        assert_eq!(m.complete(ev(47, 17, 2, Mode::Copy)).unwrap().frame, 107);
    }

    /// A present that produced no event stays pending; the serial's wrap maps like any step.
    #[test]
    fn serials_map_across_silent_presents_and_the_wrap() {
        let mut m = Matcher::default();
        for f in 0..4 {
            m.note(f, f * 16 * MS);
        }
        let a = m.complete(ev(u32::MAX - 1, 1, 1, Mode::Copy)).unwrap();
        assert_eq!(a.frame, 0);
        // Serial MAX (frame 1) has not come; 0 is frame 2 after the wrap.
        let b = m.complete(ev(0, 40, 3, Mode::Copy)).unwrap();
        assert_eq!(b.frame, 2);
        let c = m.complete(ev(1, 57, 4, Mode::Copy)).unwrap();
        assert_eq!(c.frame, 3);
        assert_eq!(m.pending.len(), 1, "frame 1 waits for its event until it expires");
        m.expire(STALE_NS + 17 * MS);
        assert!(m.pending.is_empty());
    }

    /// A new presenter numbers from elsewhere: its first event maps past the newest note and
    /// re-anchors.
    #[test]
    fn a_serial_past_the_newest_note_reanchors() {
        let mut m = Matcher::default();
        m.note(0, 0);
        assert_eq!(m.complete(ev(500, 10, 1, Mode::Copy)).unwrap().frame, 0);
        m.note(1, 20 * MS);
        m.note(2, 25 * MS);
        let r = m.complete(ev(900, 33, 2, Mode::Copy)).unwrap();
        assert_eq!(r.frame, 2, "the newest present before the refresh");
        // A presenter restarting from 1 maps far before the last match: re-anchors too.
        m.note(3, 40 * MS);
        let r = m.complete(ev(1, 50, 3, Mode::Copy)).unwrap();
        assert_eq!(r.frame, 3);
        m.note(4, 60 * MS);
        assert_eq!(m.complete(ev(2, 67, 4, Mode::Copy)).unwrap().frame, 4);
    }

    /// A mapping onto a note requested long after the event's refresh is impossible: the
    /// event re-anchors to the newest note before it.
    #[test]
    fn an_implausible_mapping_reanchors() {
        let mut m = Matcher::default();
        m.note(0, 0);
        assert_eq!(m.complete(ev(1, 1, 1, Mode::Copy)).unwrap().frame, 0);
        m.note(1, 10 * MS);
        m.note(2, 200 * MS);
        // Serial 3 maps to frame 2 (requested at 200 ms) but was shown at 17 ms.
        let r = m.complete(ev(3, 17, 2, Mode::Copy)).unwrap();
        assert_eq!(r.frame, 1);
    }

    #[test]
    fn a_window_without_events_is_software_presented_after_a_second_and_ten_presents() {
        let mut m = Matcher::default();
        for f in 0..10 {
            m.note(f, f * 100 * MS);
        }
        assert!(!m.software_present(999 * MS));
        assert!(m.software_present(1000 * MS));
        m.complete(ev(1, 0, 0, Mode::Skip));
        assert!(!m.software_present(2000 * MS), "an event says Present is used");
    }

    #[test]
    fn pending_notes_are_bounded_and_expire() {
        let mut m = Matcher::default();
        for f in 0..(MAX_PENDING as u64 + 5) {
            m.note(f, f);
        }
        assert_eq!(m.pending.len(), MAX_PENDING);
        assert_eq!(m.pending.front().unwrap().frame, 5);
        m.expire(STALE_NS + 100);
        assert_eq!(m.pending.front().unwrap().t_ns, 100);
    }
}
