//! The dump writer's side of [`crate::session::attribution`]: decides when a held frame may go out,
//! and replaces its window values of the attributing source with the values over exactly
//! its GPU span (and gives long enough samples their own).

use super::record::{FrameAttribution, IntervalValues};
use crate::model::frame::FrameRecord;
use crate::model::sample::SampleRecord;
use crate::session::attribution::{frame_window, Arrival, Attributor, Over, HOLD_BOUND_NS, SERIES_PER_LINE};

pub struct Attributing {
    attributor: Box<dyn Attributor>,
    /// The source's index in the header's `counter_sources`.
    source: usize,
    /// Board slot of each attributed counter (`None`: not in the catalogue).
    slots: Vec<Option<usize>>,
    arrival: Arrival,
    values: Vec<f64>,
    /// The note of the frame last attributed (its buffers reused).
    note: FrameAttribution,
    /// Raw samples for the next `series` lines: begin, end, then the values.
    series: Vec<f64>,
}

impl Attributing {
    /// `None` when the header's catalogue has none of the attributor's counters.
    pub fn new(
        attributor: Box<dyn Attributor>,
        catalogue: &[crate::model::counter_values::CounterDesc],
        sources: &[String],
    ) -> Option<Attributing> {
        let source = sources.iter().position(|s| s == attributor.source())?;
        let slots: Vec<Option<usize>> = attributor
            .counters()
            .iter()
            .map(|n| catalogue.iter().position(|c| &c.name == n))
            .collect();
        if slots.iter().all(Option::is_none) {
            return None;
        }
        let n = slots.len();
        let note = FrameAttribution {
            source: attributor.source().to_string(),
            over: None,
            covered: 0.0,
            missing: None,
            names: attributor.counters().to_vec(),
            samples: Vec::new(),
            interval: None,
        };
        Some(Attributing {
            attributor,
            source,
            slots,
            arrival: Arrival::Gone("not polled yet".into()),
            values: vec![f64::NAN; n],
            note,
            series: Vec::new(),
        })
    }

    /// Takes in what arrived; once per writer round.
    pub fn poll(&mut self, now_ns: u64) {
        self.arrival = self.attributor.poll(now_ns);
    }

    /// Appends `series` lines with the raw samples that arrived since the last call and lie in
    /// `[from_ns, until_ns)`.
    pub fn write_series(&mut self, from_ns: u64, until_ns: u64, out: &mut Vec<u8>) {
        let series = &mut self.series;
        series.clear();
        self.attributor.take_series(&mut |b, e, v| {
            if b >= from_ns && b < until_ns {
                series.push(b as f64);
                series.push(e as f64);
                series.extend_from_slice(v);
            }
        });
        let row = 2 + self.note.names.len();
        for chunk in self.series.chunks(row * SERIES_PER_LINE) {
            super::record::write_series(out, &self.note.source, &self.note.names, chunk, row);
        }
    }

    /// Whether `r` must wait for samples still to come.
    pub fn holds(&self, r: &FrameRecord, now_ns: u64) -> bool {
        let Arrival::Until(until) = self.arrival else {
            return false;
        };
        match needed_until(r) {
            Some(end) => end > until && now_ns < end.saturating_add(HOLD_BOUND_NS),
            None => false,
        }
    }

    /// The window end of the newest held frame is in: for a finish that waits a little.
    pub fn covers(&self, r: &FrameRecord) -> bool {
        match (&self.arrival, needed_until(r)) {
            (Arrival::Until(until), Some(end)) => end <= *until,
            _ => true,
        }
    }

    /// Attributes `r` (and those of `samples` long enough) and returns the dump's note.
    pub fn apply(&mut self, r: &mut FrameRecord, samples: &[SampleRecord]) -> &FrameAttribution {
        let note = &mut self.note;
        note.samples.clear();
        note.over = None;
        note.covered = 0.0;
        note.missing = None;
        note.interval = None;
        let Some((begin, end, over)) = frame_window(r) else {
            note.missing = Some("the first frame has no window".into());
            return note;
        };
        let missing = match &self.arrival {
            Arrival::Gone(why) => Some(why.clone()),
            Arrival::Until(until) if *until < end => Some(format!(
                "its samples had not arrived when it was written (held up to {} ms, less at the end of the run)",
                HOLD_BOUND_NS / 1_000_000
            )),
            Arrival::Until(_) => None,
        };
        let covered = self.attributor.integrate(begin, end, &mut self.values);
        // Samples that arrived before the sampler went away still cover their frames whole.
        let whole = covered >= 0.999;
        if let Some(why) = missing.filter(|_| !whole) {
            // The frame keeps the source's window values, with the window they cover.
            note.missing = Some(why);
            return note;
        }
        if covered <= 0.0 {
            note.missing = Some("no sample covers the frame's window".into());
            return note;
        }
        for (slot, v) in self.slots.iter().zip(&self.values) {
            if let Some(i) = slot {
                r.counters.set(*i, *v);
            }
        }
        if let Some(w) = r.counter_windows.get_mut(self.source) {
            w.begin_ns = begin;
            w.end_ns = end;
        }
        note.over = Some(over);
        note.covered = covered;
        // Samples' GPU times are on the CPU clock only where the frame's are (calibrated).
        if over == Over::GpuSpan {
            let min = self.attributor.min_span_ns();
            for (k, s) in samples.iter().enumerate() {
                let (Some(b), Some(e)) = (s.gpu_begin_ns, s.gpu_end_ns) else {
                    continue;
                };
                if s.overwritten || e.saturating_sub(b) < min {
                    continue;
                }
                let mut v = vec![f64::NAN; self.values.len()];
                if self.attributor.integrate(b, e, &mut v) > 0.0 {
                    note.samples.push((k, v));
                }
            }
        }
        // The frame's interval too (the previous frame's end to its own, on the CPU clock):
        // the GPU's activity over the frame's share of wall time, as overlays show a GPU load.
        // The next frame's CPU interval starts at this frame's end, which on a GPU that runs
        // behind (lavapipe's queue thread under load) can be before this frame's GPU begin.
        let mut forget = begin.min(r.t_ns);
        if let Some(d) = r.cpu_frame_ns.filter(|d| *d > 0) {
            let (b, e) = (r.t_ns.saturating_sub(d), r.t_ns);
            let mut values = vec![f64::NAN; self.values.len()];
            let covered = self.attributor.integrate(b, e, &mut values);
            if covered > 0.0 {
                note.interval = Some(IntervalValues {
                    begin_ns: b,
                    end_ns: e,
                    covered,
                    values,
                });
            }
            forget = forget.min(b);
        }
        self.attributor.forget_before(forget);
        note
    }
}

/// Until when the samples must be in for `r`: the end of its window and of its CPU interval.
fn needed_until(r: &FrameRecord) -> Option<u64> {
    let end = frame_window(r)?.1;
    Some(if r.cpu_frame_ns.is_some() { end.max(r.t_ns) } else { end })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counter_values::CounterDesc;

    /// A time series with one value per microsecond: `value(t) = t / 1000` on [0, until).
    struct Ramp {
        names: Vec<String>,
        until: u64,
        forgotten: u64,
        gone: bool,
    }

    impl Attributor for Ramp {
        fn source(&self) -> &str {
            "pm"
        }
        fn counters(&self) -> &[String] {
            &self.names
        }
        fn min_span_ns(&self) -> u64 {
            4_000
        }
        fn poll(&mut self, _now_ns: u64) -> Arrival {
            if self.gone {
                return Arrival::Gone("the sampler stopped".into());
            }
            Arrival::Until(self.until)
        }
        fn integrate(&mut self, b: u64, e: u64, out: &mut [f64]) -> f64 {
            out[0] = (b + e) as f64 / 2.0 / 1000.0;
            // The part of the window the samples so far (and not yet forgotten) cover.
            (self.until.min(e).saturating_sub(b.max(self.forgotten))) as f64 / (e - b) as f64
        }
        fn forget_before(&mut self, t_ns: u64) {
            self.forgotten = t_ns;
        }
    }

    fn desc(name: &str) -> CounterDesc {
        CounterDesc {
            name: name.into(),
            unit: "%".into(),
            source: "pm".into(),
            scope: "device".into(),
        }
    }

    fn attributing(until: u64) -> Attributing {
        let ramp = Ramp {
            names: vec!["pm_x".into()],
            until,
            forgotten: 0,
            gone: false,
        };
        let cat = [desc("other"), desc("pm_x")];
        let sources = ["nvml".to_string(), "pm".to_string()];
        Attributing::new(Box::new(ramp), &cat, &sources).unwrap()
    }

    fn frame(b: u64, e: u64) -> FrameRecord {
        let mut r = FrameRecord {
            t_ns: e + 100,
            cpu_frame_ns: Some(20_000),
            ..Default::default()
        };
        r.gpu.begin_ns = Some(b);
        r.gpu.end_ns = Some(e);
        r
    }

    #[test]
    fn a_frame_waits_for_its_samples_then_gets_values_over_its_gpu_span() {
        let mut a = attributing(15_000);
        a.poll(0);
        let mut r = frame(10_000, 20_000);
        assert!(a.holds(&r, 20_000), "its samples end at 15 µs");
        let mut a2 = attributing(20_000);
        a2.poll(0);
        assert!(
            a2.holds(&r, 20_000),
            "its CPU interval ends at 20.1 µs, after its GPU span"
        );
        assert!(!a.holds(&r, r.t_ns + HOLD_BOUND_NS), "not past the bound");
        let mut a = attributing(30_000);
        a.poll(0);
        assert!(!a.holds(&r, 20_000));
        let mut pass = SampleRecord {
            gpu_begin_ns: Some(11_000),
            gpu_end_ns: Some(16_000),
            ..Default::default()
        };
        let short = SampleRecord {
            gpu_begin_ns: Some(16_000),
            gpu_end_ns: Some(18_000),
            ..Default::default()
        };
        let note = a.apply(&mut r, &[short, pass]).clone();
        assert_eq!(note.over, Some(Over::GpuSpan));
        assert_eq!(r.counters.get(1), Some(15.0));
        assert_eq!(r.counter_windows[1].begin_ns, 10_000);
        assert_eq!(r.counter_windows[1].end_ns, 20_000);
        assert_eq!(note.samples, vec![(1, vec![13.5])], "only the 5 µs sample gets its own");
        // And over the frame's CPU interval, [t − 20 µs, t) with t = 20.1 µs.
        let iv = note.interval.as_ref().unwrap();
        assert_eq!((iv.begin_ns, iv.end_ns, &iv.values[..]), (100, 20_100, &[10.1][..]));
        pass.overwritten = true;
        assert!(a.apply(&mut frame(10_000, 20_000), &[pass]).samples.is_empty());
    }

    #[test]
    fn a_gpu_running_behind_does_not_lose_the_next_frames_interval() {
        let mut a = attributing(100_000);
        a.poll(0);
        // Its GPU work starts after the CPU marked its end (a queue thread under load).
        let mut first = frame(30_000, 40_000);
        first.t_ns = 25_000;
        first.cpu_frame_ns = None;
        assert_eq!(a.apply(&mut first, &[]).over, Some(Over::GpuSpan));
        let mut next = frame(46_000, 50_000);
        next.t_ns = 45_000;
        let iv = a.apply(&mut next, &[]).interval.clone().unwrap();
        assert_eq!((iv.begin_ns, iv.end_ns), (25_000, 45_000));
        assert_eq!(
            iv.covered, 1.0,
            "the samples from the first frame's end are still there"
        );
    }

    #[test]
    fn a_frame_past_the_bound_keeps_its_window_values_and_says_why() {
        let mut a = attributing(15_000);
        a.poll(0);
        let mut r = frame(10_000, 20_000);
        r.counters.set(1, 42.0);
        let note = a.apply(&mut r, &[]).clone();
        assert_eq!(note.over, None);
        assert!(note.missing.unwrap().contains("had not arrived"));
        assert_eq!(r.counters.get(1), Some(42.0));
    }

    #[test]
    fn after_the_sampler_went_frames_its_samples_covered_are_still_attributed() {
        let ramp = Ramp {
            names: vec!["pm_x".into()],
            until: 15_000,
            forgotten: 0,
            gone: true,
        };
        let cat = [desc("pm_x")];
        let mut a = Attributing::new(Box::new(ramp), &cat, &["pm".into()]).unwrap();
        a.poll(0);
        let mut covered = frame(5_000, 15_000);
        assert!(!a.holds(&covered, 0), "nothing is held for a sampler that went");
        assert_eq!(a.apply(&mut covered, &[]).over, Some(Over::GpuSpan));
        let note = a.apply(&mut frame(10_000, 20_000), &[]).clone();
        assert_eq!(note.over, None);
        assert_eq!(note.missing.as_deref(), Some("the sampler stopped"));
    }

    #[test]
    fn without_a_gpu_span_the_cpu_window_is_used_and_samples_get_none() {
        let mut a = attributing(u64::MAX);
        a.poll(0);
        let mut r = frame(10_000, 20_000);
        r.gpu = Default::default();
        let pass = SampleRecord {
            gpu_begin_ns: Some(1_000),
            gpu_end_ns: Some(9_000),
            ..Default::default()
        };
        let note = a.apply(&mut r, &[pass]).clone();
        assert_eq!(note.over, Some(Over::CpuWindow));
        assert!(note.samples.is_empty(), "uncalibrated sample times are GPU ticks");
        assert_eq!(r.counters.get(1), Some(10.1));
    }

    #[test]
    fn an_attributor_of_counters_not_in_the_catalogue_is_not_used() {
        let ramp = Ramp {
            names: vec!["pm_x".into()],
            until: 0,
            forgotten: 0,
            gone: false,
        };
        assert!(Attributing::new(Box::new(ramp), &[desc("other")], &["pm".into()]).is_none());
    }
}
