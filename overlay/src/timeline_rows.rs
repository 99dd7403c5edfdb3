//! The HUD's frame-timeline rows: where the app's thread spent the frame (busy against
//! waiting), when frames reached the screen (display latency, from the session's display
//! feed) and how many never did, and the last hitch with its largest cause.
//!
//! Filled at HUD refreshes only, on the app's thread under the frame lock: O(history) work
//! into buffers that keep their capacity, no allocation once warm. The hitch is the dump's
//! stutter rule ([`framescope_core::stutter`]) against the median of the graph window rather
//! than the moving median of the 100 frames before each frame: the dump's own `stutter`
//! field is the exact one; the HUD shows the newest frame that broke the rule, kept until a
//! newer one does.

use framescope_core::display::DisplayFeed;
use framescope_core::history::FrameHistory;
use framescope_core::stutter::{self, MIN_NS};
use std::fmt::Write;

/// A hitch as the HUD shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hitch {
    pub frame: u64,
    pub frame_ms: f64,
    /// Its largest cause and that cause's time.
    pub cause: Option<(&'static str, f64)>,
}

/// What the display row says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum DisplayRow {
    /// No display feed (the layer has none) or nothing displayed yet.
    #[default]
    Waiting,
    /// The newest displayed frame's latency, and where it came from.
    Latency { ms: f64, source: &'static str },
    /// No source, and why.
    NoSource(&'static str),
}

#[derive(Clone, Debug, Default)]
pub struct TimelineRows {
    pub cpu_busy_ms: Option<f64>,
    pub cpu_wait_ms: Option<f64>,
    pub display: DisplayRow,
    pub displayed: u64,
    pub dropped: u64,
    pub hitch: Option<Hitch>,
    /// The newest frame in the history at the last update (for the hitch's age).
    pub newest: u64,
    scratch: Vec<u64>,
}

impl TimelineRows {
    /// Refreshes the rows from the newest `n` frames of `history` and the display feed.
    pub fn update(&mut self, history: &FrameHistory, n: usize, feed: Option<&DisplayFeed>) {
        let (mut busy, mut wait, mut k) = (0u64, 0u64, 0u64);
        self.scratch.clear();
        for r in history.last(n) {
            if let (Some(b), Some(w)) = (r.cpu.busy_ns(r.t_ns), r.cpu.wait_ns()) {
                busy += b;
                wait += w;
                k += 1;
            }
            if let Some(ft) = r.cpu_frame_ns {
                self.scratch.push(ft);
            }
        }
        let mean = |sum: u64| (k > 0).then(|| sum as f64 / k as f64 / 1e6);
        (self.cpu_busy_ms, self.cpu_wait_ms) = (mean(busy), mean(wait));
        self.newest = history.latest().map_or(0, |r| r.frame);
        self.find_hitch(history, n);
        if let Some(feed) = feed {
            self.update_display(history, feed);
        }
    }

    fn find_hitch(&mut self, history: &FrameHistory, n: usize) {
        if self.scratch.len() < stutter::MIN_HISTORY {
            return;
        }
        let mid = self.scratch.len() / 2;
        let median = *self.scratch.select_nth_unstable(mid).1;
        let is_hitch = |ft: u64| ft >= MIN_NS && u128::from(ft) * 2 >= u128::from(median) * 5;
        let newest = history.last(n).rev().find(|r| r.cpu_frame_ns.is_some_and(is_hitch));
        if let Some(r) = newest {
            if self.hitch.is_none_or(|h| h.frame < r.frame) {
                self.hitch = Some(Hitch {
                    frame: r.frame,
                    frame_ms: r.cpu_frame_ns.unwrap_or(0) as f64 / 1e6,
                    cause: stutter::largest_cause(&r.cpu).map(|c| (c.name, c.ns as f64 / 1e6)),
                });
            }
        }
    }

    fn update_display(&mut self, history: &FrameHistory, feed: &DisplayFeed) {
        let latest = feed.latest();
        (self.displayed, self.dropped) = (latest.displayed, latest.dropped);
        self.display = match (feed.source(), latest.frame) {
            (Err(why), _) => DisplayRow::NoSource(why.name()),
            (Ok(source), Some((frame, shown))) => {
                // The displayed frame is in the history once its GPU part came in; its CPU
                // start is the latency's other end.
                let start = history
                    .iter()
                    .rev()
                    .find(|r| r.frame == frame)
                    .and_then(|r| r.cpu.start_ns);
                match start {
                    Some(s) => DisplayRow::Latency {
                        ms: shown.saturating_sub(s) as f64 / 1e6,
                        source: source.name(),
                    },
                    None => self.display,
                }
            }
            (Ok(_), None) => DisplayRow::Waiting,
        };
    }

    /// `CPU busy 12.30 ms  wait 3.40 ms`.
    pub fn write_cpu(&self, t: &mut String) {
        match (self.cpu_busy_ms, self.cpu_wait_ms) {
            (Some(b), Some(w)) => {
                let _ = write!(t, "CPU busy   {b:8.2} ms  wait {w:.2} ms");
            }
            _ => t.push_str("CPU busy        - ms"),
        }
    }

    /// `Display    33.20 ms  x11_present` / `Display  no source: software_present`.
    pub fn write_display(&self, t: &mut String) {
        let _ = match self.display {
            DisplayRow::Latency { ms, source } => write!(t, "Display    {ms:8.2} ms  {source}"),
            DisplayRow::NoSource(why) => write!(t, "Display    no source: {why}"),
            DisplayRow::Waiting => write!(t, "Display         - ms"),
        };
    }

    /// `Dropped    3 of 1200`.
    pub fn write_dropped(&self, t: &mut String) {
        let _ = write!(t, "Dropped    {} of {}", self.dropped, self.dropped + self.displayed);
    }

    /// `Hitch      45.0 ms  pipeline 30.0 ms  120 frames ago`.
    pub fn write_hitch(&self, t: &mut String) {
        let Some(h) = self.hitch else {
            t.push_str("Hitch      none");
            return;
        };
        let _ = write!(t, "Hitch      {:6.1} ms  ", h.frame_ms);
        let _ = match h.cause {
            Some((name, ms)) => write!(t, "{name} {ms:.1} ms"),
            None => write!(t, "no known cause"),
        };
        let _ = write!(t, "  {} frames ago", self.newest.saturating_sub(h.frame));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framescope_core::creation::CreationKind;
    use framescope_core::display::{DisplayReport, DisplaySource, NoSourceReason, PresentationMode};
    use framescope_core::frame::FrameRecord;

    const MS: u64 = 1_000_000;

    fn history() -> FrameHistory {
        let mut h = FrameHistory::new(64);
        let mut t = 0;
        for i in 0..40u64 {
            let ft = if i == 30 { 50 * MS } else { 10 * MS };
            let start = t + 2 * MS;
            t += ft;
            let mut r = FrameRecord {
                frame: i,
                t_ns: t,
                cpu_frame_ns: (i > 0).then_some(ft),
                ..FrameRecord::default()
            };
            r.cpu.start_ns = Some(start);
            r.cpu.present_ns = Some(MS);
            r.cpu.waits.add(framescope_core::waits::WaitKind::Fence, 3 * MS);
            if i == 30 {
                r.cpu.creation.add(CreationKind::Pipeline, 38 * MS);
            }
            h.push(r);
        }
        h
    }

    #[test]
    fn cpu_split_hitch_and_display_rows_follow_the_frames_and_the_feed() {
        let h = history();
        let feed = DisplayFeed::default();
        let mut rows = TimelineRows::default();
        rows.update(&h, 64, Some(&feed));
        // 8 ms of each 10 ms frame before the present: 3 waiting, 5 busy; +1 ms in present.
        let busy = rows.cpu_busy_ms.unwrap();
        assert!(busy > 5.0 && busy < 6.1, "{busy}");
        assert_eq!(rows.display, DisplayRow::NoSource(NoSourceReason::NoneFound.name()));
        let hitch = rows.hitch.unwrap();
        assert_eq!((hitch.frame, hitch.frame_ms), (30, 50.0));
        assert_eq!(hitch.cause, Some(("pipeline", 38.0)));
        let mut t = String::new();
        rows.write_hitch(&mut t);
        assert_eq!(t, "Hitch        50.0 ms  pipeline 38.0 ms  9 frames ago");

        feed.set_source(DisplaySource::X11Present);
        let f = h.iter().find(|r| r.frame == 38).unwrap();
        feed.report(DisplayReport {
            frame: 38,
            source: DisplaySource::X11Present,
            shown_ns: Some(f.cpu.start_ns.unwrap() + 25 * MS),
            mode: PresentationMode::Copy,
            refresh_ns: None,
        });
        feed.report(DisplayReport {
            frame: 39,
            source: DisplaySource::X11Present,
            shown_ns: None,
            mode: PresentationMode::Copy,
            refresh_ns: None,
        });
        rows.update(&h, 64, Some(&feed));
        assert_eq!(
            rows.display,
            DisplayRow::Latency {
                ms: 25.0,
                source: "x11_present"
            }
        );
        let mut t = String::new();
        rows.write_dropped(&mut t);
        assert_eq!(t, "Dropped    1 of 2");
    }
}
