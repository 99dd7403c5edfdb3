//! The frame timeline over a run: CPU busy/wait and time in present, waits by kind, stutters
//! by cause, and when frames reached the screen. Shared by the dump writer's summary and
//! `framescope report`, fed from a frame's dump fields, so both say the same for the same
//! frames. Bounded memory ([`Values`], fixed arrays); names that are no known kind are
//! ignored.

use crate::display::{DisplaySource, DisplayState};
use crate::model::creation::CreationKind;
use crate::model::waits::WaitKind;
use crate::stats::distribution::{Distribution, Values};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every name a stutter cause can have: the creation kinds, then the wait kinds.
pub fn cause_names() -> impl Iterator<Item = &'static str> {
    CreationKind::ALL
        .iter()
        .map(|k| k.name())
        .chain(WaitKind::ALL.iter().map(|k| k.name()))
}

const CAUSES: usize = CreationKind::COUNT + WaitKind::COUNT;

#[derive(Clone, Debug, Default)]
pub struct TimelineStats {
    busy: Values,
    wait: Values,
    present: Values,
    by_kind: [u64; WaitKind::COUNT],
    frames_with_waits: u64,
    stutters: u64,
    explained: u64,
    /// By cause (see [`cause_names`]): stutter frames it appears in, and its time in them.
    causes: [(u64, u64); CAUSES],
    /// Frames by [`DisplayState`], and displayed frames by [`DisplaySource`].
    states: [u64; DisplayState::ALL.len()],
    sources: [u64; DisplaySource::ALL.len()],
    latency: Values,
    displayed_time: Values,
    first_shown: Option<u64>,
    last_shown: u64,
}

/// One stutter cause as `report --json` and the summary give it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseSummary {
    pub cause: String,
    /// Stutter frames it appeared in.
    pub stutters: u64,
    /// Its time in them.
    pub ns: u64,
}

/// When frames reached the screen, over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DisplaySummary {
    /// Frames by `display` state (`displayed`, `dropped`, `no_report`, `no_source`).
    pub frames: BTreeMap<String, u64>,
    /// Displayed frames by `display_source`.
    pub sources: BTreeMap<String, u64>,
    /// Displayed frames over the time from the first to the last reaching the screen (the
    /// frame rate the viewer saw; the summary's `fps_mean` is the presented rate).
    pub displayed_fps: Option<f64>,
    pub display_latency_ns: Option<Distribution>,
    pub displayed_time_ns: Option<Distribution>,
}

/// The run's frame timeline: the summary's and `report --json`'s `timeline`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineSummary {
    pub cpu_busy_ns: Option<Distribution>,
    pub cpu_wait_ns: Option<Distribution>,
    pub present_call_ns: Option<Distribution>,
    /// Summed over the frames that carried waits by kind.
    pub cpu_wait_by_kind_ns: BTreeMap<String, u64>,
    pub frames_with_waits: u64,
    pub stutters: u64,
    pub stutters_explained: u64,
    pub stutter_causes: Vec<CauseSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<DisplaySummary>,
}

impl TimelineStats {
    /// A frame's CPU side; `waits` by kind name (`None`: the frame had no such field).
    pub fn add_cpu<'a>(
        &mut self,
        busy: Option<u64>,
        wait: Option<u64>,
        present: Option<u64>,
        waits: Option<impl Iterator<Item = (&'a str, u64)>>,
    ) {
        if let Some(v) = busy {
            self.busy.add(v);
        }
        if let Some(v) = wait {
            self.wait.add(v);
        }
        if let Some(v) = present {
            self.present.add(v);
        }
        if let Some(waits) = waits {
            self.frames_with_waits += 1;
            for (name, ns) in waits {
                if let Some(i) = WaitKind::ALL.iter().position(|k| k.name() == name) {
                    self.by_kind[i] = self.by_kind[i].saturating_add(ns);
                }
            }
        }
    }

    /// A stutter frame: whether a cause explains it, and its causes `(name, ns)`.
    pub fn add_stutter<'a>(&mut self, explained: bool, causes: impl Iterator<Item = (&'a str, u64)>) {
        self.stutters += 1;
        self.explained += u64::from(explained);
        for (name, ns) in causes {
            if let Some(i) = cause_names().position(|n| n == name) {
                self.causes[i].0 += 1;
                self.causes[i].1 = self.causes[i].1.saturating_add(ns);
            }
        }
    }

    /// A frame's display fields, by their dump names; unknown states are ignored.
    pub fn add_display(
        &mut self,
        state: &str,
        source: Option<&str>,
        shown_ns: Option<u64>,
        latency_ns: Option<u64>,
        displayed_time_ns: Option<u64>,
    ) {
        let Some(i) = DisplayState::ALL.iter().position(|s| s.name() == state) else {
            return;
        };
        self.states[i] += 1;
        if DisplayState::ALL[i] != DisplayState::Displayed {
            return;
        }
        if let Some(j) = source.and_then(|s| DisplaySource::ALL.iter().position(|x| x.name() == s)) {
            self.sources[j] += 1;
        }
        if let Some(t) = shown_ns {
            self.first_shown.get_or_insert(t);
            self.last_shown = self.last_shown.max(t);
        }
        if let Some(v) = latency_ns {
            self.latency.add(v);
        }
        if let Some(v) = displayed_time_ns {
            self.displayed_time.add(v);
        }
    }

    fn is_empty(&self) -> bool {
        self.busy.count() == 0
            && self.wait.count() == 0
            && self.present.count() == 0
            && self.frames_with_waits == 0
            && self.stutters == 0
            && self.states.iter().all(|&n| n == 0)
    }

    /// `None` when no frame carried timeline fields (dumps that predate them).
    pub fn summary(&self) -> Option<TimelineSummary> {
        if self.is_empty() {
            return None;
        }
        let displayed = self.states[DisplayState::Displayed as usize];
        let display = self.states.iter().any(|&n| n > 0).then(|| DisplaySummary {
            frames: DisplayState::ALL
                .iter()
                .zip(self.states)
                .map(|(s, n)| (s.name().to_string(), n))
                .collect(),
            sources: DisplaySource::ALL
                .iter()
                .zip(self.sources)
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| (s.name().to_string(), n))
                .collect(),
            displayed_fps: self.first_shown.and_then(|first| {
                let span = self.last_shown.saturating_sub(first);
                (displayed > 1 && span > 0).then(|| (displayed - 1) as f64 * 1e9 / span as f64)
            }),
            display_latency_ns: self.latency.distribution(),
            displayed_time_ns: self.displayed_time.distribution(),
        });
        Some(TimelineSummary {
            cpu_busy_ns: self.busy.distribution(),
            cpu_wait_ns: self.wait.distribution(),
            present_call_ns: self.present.distribution(),
            cpu_wait_by_kind_ns: WaitKind::ALL
                .iter()
                .zip(self.by_kind)
                .map(|(k, ns)| (k.name().to_string(), ns))
                .collect(),
            frames_with_waits: self.frames_with_waits,
            stutters: self.stutters,
            stutters_explained: self.explained,
            stutter_causes: cause_names()
                .zip(self.causes)
                .filter(|(_, (n, _))| *n > 0)
                .map(|(name, (n, ns))| CauseSummary {
                    cause: name.to_string(),
                    stutters: n,
                    ns,
                })
                .collect(),
            display,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn known_waits_are_summed_and_unknown_names_ignored() {
        let mut t = TimelineStats::default();
        assert!(t.summary().is_none());
        let waits = [("fence", 4 * MS), ("fps_limit", MS), ("bogus", u64::MAX)];
        for _ in 0..2 {
            t.add_cpu(Some(10 * MS), Some(5 * MS), Some(MS / 2), Some(waits.iter().copied()));
        }
        t.add_stutter(true, [("pipeline", 30 * MS), ("fence", 2 * MS)].into_iter());
        t.add_stutter(false, [("nonsense", 1)].into_iter());
        let s = t.summary().unwrap();
        assert_eq!(s.cpu_wait_by_kind_ns["fence"], 8 * MS);
        assert_eq!(s.cpu_wait_by_kind_ns["acquire"], 0);
        assert!(!s.cpu_wait_by_kind_ns.contains_key("bogus"));
        assert_eq!(s.cpu_busy_ns.unwrap().p50, 10 * MS);
        assert_eq!((s.stutters, s.stutters_explained), (2, 1));
        assert_eq!(s.stutter_causes.len(), 2);
        assert_eq!(s.stutter_causes[0].cause, "pipeline");
        assert!(s.display.is_none());
    }

    /// 4 frames shown 20 ms apart with one dropped: the viewer saw 3 frames over 40 ms, 50 fps.
    #[test]
    fn display_counts_states_sources_and_the_displayed_rate() {
        let mut t = TimelineStats::default();
        t.add_display(
            "displayed",
            Some("x11_present"),
            Some(100 * MS),
            Some(30 * MS),
            Some(20 * MS),
        );
        t.add_display("dropped", Some("x11_present"), None, None, None);
        t.add_display(
            "displayed",
            Some("x11_present"),
            Some(120 * MS),
            Some(32 * MS),
            Some(20 * MS),
        );
        t.add_display("displayed", Some("x11_present"), Some(140 * MS), Some(34 * MS), None);
        t.add_display("no_source", None, None, None, None);
        t.add_display("sideways", None, None, None, None);
        let d = t.summary().unwrap().display.unwrap();
        assert_eq!(d.frames["displayed"], 3);
        assert_eq!(
            (d.frames["dropped"], d.frames["no_source"], d.frames["no_report"]),
            (1, 1, 0)
        );
        assert_eq!(d.sources["x11_present"], 3);
        assert!((d.displayed_fps.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(d.display_latency_ns.unwrap().p50, 32 * MS);
        assert_eq!(d.displayed_time_ns.unwrap().count, 2);
    }
}
