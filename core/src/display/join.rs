//! The dump writer's join of display reports to frames (see [`super`]).
//!
//! A presented frame waits until its report arrived and, when it was displayed, until a
//! later frame's displayed report ends its time on screen, or until [`BOUND_NS`] after its
//! present, whichever comes first. Reports normally arrive in frame order; one for a frame
//! already written is dropped.

use super::feed::DisplayFeed;
use super::model::{DisplayReport, DisplayState, FrameDisplay, NoSourceReason};
use crate::model::frame::{FrameEnd, FrameRecord};
use std::collections::VecDeque;
use std::sync::Arc;

/// How long after its present a frame waits for display reports: a FIFO swapchain of 3
/// images at 30 Hz shows a frame 100 ms after its present, a 2 fps app's next frame comes
/// 500 ms later; past this the frame goes out `no_report` or without its displayed time.
pub const BOUND_NS: u64 = 1_000_000_000;

/// Reports held at most (a source reporting frames the writer never sees must not grow it).
const MAX_HELD: usize = 2 * super::feed::CAPACITY;

#[derive(Clone, Copy)]
struct Previous {
    shown_ns: u64,
    cpu_start_ns: Option<u64>,
}

pub struct DisplayJoin {
    feed: Arc<DisplayFeed>,
    /// Reports not yet joined, by frame.
    reports: VecDeque<DisplayReport>,
    /// The last displayed frame written.
    previous: Option<Previous>,
    /// A source reported at least once: frames without a report are `no_report`, not
    /// `no_source`.
    reported: bool,
}

impl DisplayJoin {
    pub fn new(feed: Arc<DisplayFeed>) -> Self {
        DisplayJoin {
            feed,
            reports: VecDeque::new(),
            previous: None,
            reported: false,
        }
    }

    /// Takes what the sources reported; once per writer round.
    pub fn poll(&mut self) {
        let reports = &mut self.reports;
        let mut any = false;
        self.feed.drain(|r| {
            any = true;
            // Sorted by frame; a source reports in order, so this is a push at the back.
            let at = reports.partition_point(|x| x.frame <= r.frame);
            reports.insert(at, r);
        });
        self.reported |= any;
        while self.reports.len() > MAX_HELD {
            self.reports.pop_front();
        }
    }

    fn find(&self, frame: u64) -> Option<&DisplayReport> {
        let i = self.reports.partition_point(|x| x.frame < frame);
        self.reports.get(i).filter(|r| r.frame == frame)
    }

    /// The first displayed report after `frame`.
    fn next_shown(&self, frame: u64) -> Option<u64> {
        let i = self.reports.partition_point(|x| x.frame <= frame);
        self.reports.range(i..).find_map(|r| r.shown_ns)
    }

    fn source_runs(&self) -> bool {
        self.reported || self.feed.source().is_ok()
    }

    /// Whether `head` (the oldest frame not yet written) should wait for more reports.
    pub fn holds(&self, head: &FrameRecord, now_ns: u64) -> bool {
        if head.end != FrameEnd::Present || now_ns.saturating_sub(head.t_ns) >= BOUND_NS {
            return false;
        }
        match self.find(head.frame) {
            Some(r) => r.shown_ns.is_some() && self.next_shown(head.frame).is_none(),
            None => self.source_runs(),
        }
    }

    /// Sets `r.display` from its report (consumed with any older ones).
    pub fn apply(&mut self, r: &mut FrameRecord) {
        let mut d = FrameDisplay::default();
        if r.end != FrameEnd::Present {
            d.why_none = Some(NoSourceReason::NotPresented);
            r.display = d;
            return;
        }
        let report = self.find(r.frame).copied();
        let next = self.next_shown(r.frame);
        while self.reports.front().is_some_and(|x| x.frame <= r.frame) {
            self.reports.pop_front();
        }
        let Some(rep) = report else {
            match self.feed.source() {
                Ok(s) => {
                    d.state = DisplayState::NoReport;
                    d.source = Some(s);
                }
                Err(_) if self.reported => d.state = DisplayState::NoReport,
                Err(why) => d.why_none = Some(why),
            }
            r.display = d;
            return;
        };
        d.source = Some(rep.source);
        d.mode = rep.mode;
        d.refresh_ns = rep.refresh_ns;
        d.shown_ns = rep.shown_ns;
        match rep.shown_ns {
            None => d.state = DisplayState::Dropped,
            Some(shown) => {
                d.state = DisplayState::Displayed;
                d.displayed_ns = next.map(|n| n.saturating_sub(shown));
                if let Some(p) = self.previous {
                    let display_step = shown as i64 - p.shown_ns as i64;
                    d.between_changes_ns = Some(display_step.max(0) as u64);
                    if let (Some(now), Some(then)) = (r.cpu.start_ns, p.cpu_start_ns) {
                        d.animation_error_ns = Some((now as i64 - then as i64) - display_step);
                    }
                }
                self.previous = Some(Previous {
                    shown_ns: shown,
                    cpu_start_ns: r.cpu.start_ns,
                });
            }
        }
        r.display = d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::model::{DisplaySource, PresentationMode};

    const MS: u64 = 1_000_000;

    fn frame(i: u64, start: u64, t: u64) -> FrameRecord {
        let mut r = FrameRecord {
            frame: i,
            t_ns: t,
            ..FrameRecord::default()
        };
        r.cpu.start_ns = Some(start);
        r
    }

    fn report(frame: u64, shown: Option<u64>) -> DisplayReport {
        DisplayReport {
            frame,
            source: DisplaySource::X11Present,
            shown_ns: shown,
            mode: PresentationMode::Flip,
            refresh_ns: Some(16_666_667),
        }
    }

    #[test]
    fn without_a_source_frames_pass_and_say_why() {
        let feed = Arc::new(DisplayFeed::default());
        feed.set_none(NoSourceReason::SoftwarePresent);
        let mut j = DisplayJoin::new(feed);
        let mut r = frame(0, 0, 10 * MS);
        assert!(!j.holds(&r, 10 * MS));
        j.apply(&mut r);
        assert_eq!(r.display.state, DisplayState::NoSource);
        assert_eq!(r.display.why_none, Some(NoSourceReason::SoftwarePresent));
        let mut b = FrameRecord {
            end: FrameEnd::FrameBoundary,
            ..frame(1, 0, 0)
        };
        j.apply(&mut b);
        assert_eq!(b.display.why_none, Some(NoSourceReason::NotPresented));
    }

    /// Frames 0..3 presented every 10 ms; 0 shown at 20, 1 replaced (dropped), 2 at 40, 3 at
    /// 50: displayed times 20 (0 until 2), none, 10; latency from CPU start.
    #[test]
    fn displayed_time_runs_to_the_next_displayed_frame_and_drops_are_skipped() {
        let feed = Arc::new(DisplayFeed::default());
        feed.set_source(DisplaySource::X11Present);
        let mut j = DisplayJoin::new(feed.clone());
        let mut frames: Vec<FrameRecord> = (0..4).map(|i| frame(i, i * 10 * MS, i * 10 * MS + 5 * MS)).collect();
        assert!(j.holds(&frames[0], 6 * MS), "waits for its report");
        feed.report(report(0, Some(20 * MS)));
        j.poll();
        assert!(j.holds(&frames[0], 21 * MS), "waits for the next displayed frame");
        feed.report(report(1, None));
        feed.report(report(2, Some(40 * MS)));
        j.poll();
        assert!(!j.holds(&frames[0], 41 * MS));
        j.apply(&mut frames[0]);
        assert!(!j.holds(&frames[1], 41 * MS), "a dropped frame waits for nothing more");
        j.apply(&mut frames[1]);
        assert!(j.holds(&frames[2], 41 * MS));
        assert!(!j.holds(&frames[2], frames[2].t_ns + BOUND_NS), "bounded");
        feed.report(report(3, Some(50 * MS)));
        j.poll();
        j.apply(&mut frames[2]);
        j.apply(&mut frames[3]);
        let d: Vec<_> = frames.iter().map(|f| f.display).collect();
        assert_eq!(d[0].state, DisplayState::Displayed);
        assert_eq!(d[0].displayed_ns, Some(20 * MS));
        assert_eq!(d[0].latency_ns(frames[0].cpu.start_ns), Some(20 * MS));
        assert_eq!(d[0].until_displayed_ns(frames[0].t_ns), Some(15 * MS));
        assert_eq!(d[0].between_changes_ns, None);
        assert_eq!(d[1].state, DisplayState::Dropped);
        assert_eq!((d[1].shown_ns, d[1].displayed_ns), (None, None));
        assert_eq!(d[2].displayed_ns, Some(10 * MS));
        assert_eq!(d[2].between_changes_ns, Some(20 * MS));
        // CPU start stepped 20 ms, the display 20 ms: no animation error.
        assert_eq!(d[2].animation_error_ns, Some(0));
        assert_eq!(d[3].displayed_ns, None, "no later frame yet");
        assert_eq!(d[3].animation_error_ns, Some(0));
        assert_eq!(d[3].mode, PresentationMode::Flip);
    }

    #[test]
    fn a_running_source_that_says_nothing_gives_no_report_after_the_bound() {
        let feed = Arc::new(DisplayFeed::default());
        feed.set_source(DisplaySource::PresentWait);
        let mut j = DisplayJoin::new(feed);
        let mut r = frame(0, 0, 5 * MS);
        assert!(j.holds(&r, 6 * MS));
        assert!(!j.holds(&r, 5 * MS + BOUND_NS));
        j.apply(&mut r);
        assert_eq!(r.display.state, DisplayState::NoReport);
        assert_eq!(r.display.source, Some(DisplaySource::PresentWait));
    }

    #[test]
    fn animation_error_is_the_cpu_step_against_the_display_step() {
        let feed = Arc::new(DisplayFeed::default());
        feed.set_source(DisplaySource::WaylandPresentation);
        let mut j = DisplayJoin::new(feed.clone());
        feed.report(report(0, Some(30 * MS)));
        // The app's second frame started 10 ms after the first but was shown 25 ms later.
        feed.report(report(1, Some(55 * MS)));
        j.poll();
        let mut a = frame(0, 0, 5 * MS);
        let mut b = frame(1, 10 * MS, 15 * MS);
        j.apply(&mut a);
        j.apply(&mut b);
        assert_eq!(b.display.animation_error_ns, Some(-15 * MS as i64));
        // Reports for frames already written are dropped.
        feed.report(report(0, Some(1)));
        j.poll();
        let mut c = frame(2, 20 * MS, 25 * MS);
        j.apply(&mut c);
        assert_eq!(c.display.state, DisplayState::NoReport);
    }
}
