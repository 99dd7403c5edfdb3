//! PM counters over exactly a frame's or a pass's GPU span, for the dump writer's thread
//! ([`framescope_core::attribution`]): its own reader of the sampler's ring, the samples of
//! the last few seconds, and [`super::attribute::integrate`] over any window asked.

use super::attribute::{integrate, Layout, PmSample, Window};
use super::counters::{counter_names, failed, fill, layout_of, slots_for, Slot, STALE_AFTER};
use super::ring::{ring_key, Liveness, RingReader, WriterState};
use framescope_core::attribution::{Arrival, Attributor};
use std::path::PathBuf;

/// Time kept for windows still to be asked: frames are held at most 1 s, and the writer may
/// come to them one flush interval and one sampler decode later.
const KEEP_NS: u64 = 3_000_000_000;

/// A ring that is not there is looked for again after this long.
const REOPEN_NS: u64 = 1_000_000_000;

/// A window gets its own values from this many sampling intervals on.
const MIN_INTERVALS: u64 = 4;

pub struct PmAttributor {
    /// The ring's directory (`None`: the private runtime directory) and key.
    dir: Option<PathBuf>,
    key: String,
    names: Vec<String>,
    reader: Option<RingReader>,
    next_open_ns: u64,
    layout: Option<Layout>,
    slots: Vec<Slot>,
    interval_ns: u64,
    /// Samples on the sampler's clock, oldest first.
    samples: Vec<PmSample>,
    batch: Vec<PmSample>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC at the last poll.
    offset_ns: i128,
    why_none: String,
    /// The end (sampler's clock) of the last sample handed to `take_series`.
    series_until_ns: u64,
    series_values: Vec<f64>,
}

impl PmAttributor {
    /// For the sampler of CUDA device `device`.
    pub fn new(device: usize) -> PmAttributor {
        Self::with_ring(None, ring_key(device))
    }

    /// For the ring `key` in `dir` (tests).
    pub fn with_ring(dir: Option<PathBuf>, key: String) -> PmAttributor {
        PmAttributor {
            dir,
            key,
            names: counter_names(),
            reader: None,
            next_open_ns: 0,
            layout: None,
            slots: Vec::new(),
            interval_ns: 1_000_000,
            samples: Vec::new(),
            batch: vec![PmSample::new(0, 0, &[]); 1024],
            offset_ns: 0,
            why_none: "no PM sampler".into(),
            series_until_ns: 0,
            series_values: Vec::new(),
        }
    }

    fn open(&mut self, now_ns: u64) {
        if now_ns < self.next_open_ns {
            return;
        }
        self.next_open_ns = now_ns.saturating_add(REOPEN_NS);
        let opened = match &self.dir {
            Some(d) => RingReader::open_in(d, &self.key),
            None => RingReader::open(&self.key),
        };
        match opened {
            Ok(r) => {
                self.slots = slots_for(r.names());
                self.layout = Some(layout_of(&r));
                self.interval_ns = r.interval_ns().max(1);
                self.samples.clear();
                self.reader = Some(r);
            }
            Err(e) => self.why_none = format!("no PM sampler ({e})"),
        }
    }

    fn to_real(&self, mono_ns: u64) -> u64 {
        u64::try_from((i128::from(mono_ns) + self.offset_ns).max(0)).unwrap_or(u64::MAX)
    }

    fn to_mono(&self, real_ns: u64) -> u64 {
        u64::try_from((i128::from(real_ns) - self.offset_ns).max(0)).unwrap_or(u64::MAX)
    }
}

impl Attributor for PmAttributor {
    fn source(&self) -> &str {
        "pm"
    }

    fn counters(&self) -> &[String] {
        &self.names
    }

    fn min_span_ns(&self) -> u64 {
        self.interval_ns.saturating_mul(MIN_INTERVALS)
    }

    fn poll(&mut self, now_ns: u64) -> Arrival {
        self.offset_ns = framescope_core::clock::realtime_offset_ns();
        if self.reader.as_ref().is_some_and(RingReader::replaced) {
            self.reader = None;
            self.next_open_ns = 0;
        }
        if self.reader.is_none() {
            self.open(now_ns);
        }
        let Some(reader) = self.reader.as_mut() else {
            return Arrival::Gone(self.why_none.clone());
        };
        // The first sample of a session spans from its start to the first trigger (about
        // 300 ms on the H100): an average over that, not a value of any frame inside it.
        let wide = self.interval_ns.saturating_mul(10);
        loop {
            let got = reader.read(&mut self.batch).read;
            for s in &self.batch[..got] {
                if s.end_ns <= s.start_ns || s.end_ns - s.start_ns > wide {
                    continue;
                }
                // Samples must not overlap for integration: one that starts before the last
                // one's end (CUPTI's sample times may touch or cross by a little) keeps only
                // its new part; one that does not advance is a repeat.
                let mut s = *s;
                if let Some(l) = self.samples.last() {
                    if s.end_ns <= l.end_ns {
                        continue;
                    }
                    s.start_ns = s.start_ns.max(l.end_ns);
                }
                self.samples.push(s);
            }
            if got < self.batch.len() {
                break;
            }
        }
        // Bounded by time whatever the rate (3000 samples at 1 kHz, 30 000 at 10 kHz).
        let keep = (KEEP_NS / self.interval_ns.max(1)).clamp(1024, 1 << 16) as usize;
        if self.samples.len() > keep {
            let extra = self.samples.len() - keep;
            self.samples.drain(..extra);
        }
        match reader.liveness(now_ns, STALE_AFTER.as_nanos() as u64) {
            Liveness::Alive(WriterState::Running) => {}
            Liveness::Alive(WriterState::Waiting(why)) => return Arrival::Gone(format!("the PM sampler waits: {why}")),
            Liveness::Alive(WriterState::Failed(why)) => return Arrival::Gone(failed(&why, reader.silent_ns(now_ns))),
            Liveness::Alive(WriterState::Stopped) => return Arrival::Gone("the PM sampler stopped".into()),
            Liveness::Stale { silent_ns } => {
                return Arrival::Gone(format!("the PM sampler is silent ({} ms)", silent_ns / 1_000_000))
            }
        }
        Arrival::Until(self.samples.last().map_or(0, |s| self.to_mono(s.end_ns)))
    }

    fn integrate(&mut self, begin_ns: u64, end_ns: u64, out: &mut [f64]) -> f64 {
        out.fill(f64::NAN);
        let Some(layout) = self.layout.as_ref() else {
            return 0.0;
        };
        if end_ns <= begin_ns {
            return 0.0;
        }
        let window = Window {
            start_ns: self.to_real(begin_ns),
            end_ns: self.to_real(end_ns),
        };
        let arrived = self.samples.last().map_or(0, |s| s.end_ns);
        let a = integrate(&self.samples, layout, window, arrived);
        if a.covered_ns == 0 {
            return 0.0;
        }
        fill(out, &a, &self.slots);
        a.covered_ns as f64 / (window.end_ns - window.start_ns) as f64
    }

    fn take_series(&mut self, out: &mut dyn FnMut(u64, u64, &[f64])) {
        let Some(layout) = self.layout.as_ref() else {
            return;
        };
        let first = self.samples.partition_point(|s| s.end_ns <= self.series_until_ns);
        self.series_values.resize(self.names.len(), f64::NAN);
        for s in &self.samples[first..] {
            if s.start_ns < self.series_until_ns {
                continue;
            }
            let window = Window {
                start_ns: s.start_ns,
                end_ns: s.end_ns,
            };
            let a = integrate(std::slice::from_ref(s), layout, window, s.end_ns);
            fill(&mut self.series_values, &a, &self.slots);
            let mono = |t: u64| u64::try_from((i128::from(t) - self.offset_ns).max(0)).unwrap_or(u64::MAX);
            out(mono(s.start_ns), mono(s.end_ns), &self.series_values);
            self.series_until_ns = s.end_ns;
        }
    }

    fn forget_before(&mut self, t_ns: u64) {
        let t = self.to_real(t_ns);
        let n = self.samples.partition_point(|s| s.end_ns <= t);
        if n > 0 {
            self.samples.drain(..n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvidia::pm::metrics::{MetricKind, GRAPHICS};
    use crate::nvidia::pm::ring::RingWriter;

    fn private_dir(tag: &str) -> PathBuf {
        use std::os::unix::fs::DirBuilderExt;
        let d = std::env::temp_dir().join(format!("fs-pm-attr-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    fn kinds() -> Vec<MetricKind> {
        GRAPHICS
            .iter()
            .map(|n| {
                if n.contains("pct") {
                    MetricKind::Ratio
                } else {
                    MetricKind::Count
                }
            })
            .collect()
    }

    fn idx(name: &str) -> usize {
        GRAPHICS.iter().position(|n| *n == name).unwrap()
    }

    #[test]
    fn frames_and_passes_get_the_counters_of_exactly_their_gpu_span() {
        let dir = private_dir("exact");
        let mut w = RingWriter::create_in(&dir, "gpu0", GRAPHICS, &kinds(), 1024, 1_000_000).unwrap();
        let now = framescope_core::clock::monotonic_now_ns();
        w.set_state(&WriterState::Running, now);
        let mut a = PmAttributor::with_ring(Some(dir.clone()), "gpu0".into());
        // Nothing published yet: samples up to 0 are in.
        assert_eq!(a.poll(now), Arrival::Until(0));
        // 20 samples of 1 ms on the sampler's clock, ending a second ago: graphics active 100 %
        // in the first ten, 20 % in the rest; SM active 10 % then 30 %.
        let real_now = framescope_core::clock::realtime_offset_ns() + i128::from(now);
        let t0 = real_now as u64 - 1_000_000_000;
        let ms = 1_000_000u64;
        // A session's wide first sample, left out.
        let mut v = [0.0f64; 8];
        v[idx("gr__cycles_elapsed.max")] = 1000.0;
        v[idx("gr__cycles_active.avg")] = 1000.0;
        w.publish(&PmSample::new(t0 - 300 * ms, t0, &v), now);
        for k in 0..20u64 {
            let hi = k < 10;
            v[idx("gr__cycles_active.avg")] = if hi { 1000.0 } else { 200.0 };
            v[idx("sm__cycles_active.avg.pct_of_peak_sustained_elapsed")] = if hi { 10.0 } else { 30.0 };
            w.publish(&PmSample::new(t0 + k * ms, t0 + (k + 1) * ms, &v), now);
        }
        let Arrival::Until(until) = a.poll(now) else { panic!() };
        let offset = a.offset_ns;
        let mono = |real: u64| (i128::from(real) - offset) as u64;
        assert!(
            until.abs_diff(mono(t0 + 20 * ms)) < 1_000,
            "samples are in up to the last one's end"
        );
        let names = a.counters().to_vec();
        let at = |out: &[f64], n: &str| out[names.iter().position(|x| x == n).unwrap()];
        let mut out = vec![0.0; names.len()];
        // A frame over samples 5..15 (half at 100 %, half at 20 %): 60 % active, SM 20 %.
        let covered = a.integrate(mono(t0 + 5 * ms), mono(t0 + 15 * ms), &mut out);
        assert!((covered - 1.0).abs() < 1e-3, "{covered}");
        assert!((at(&out, "pm_graphics_active_pct") - 60.0).abs() < 0.01, "{out:?}");
        assert!((at(&out, "pm_sm_active_pct") - 20.0).abs() < 0.01, "{out:?}");
        // A pass inside the busy half.
        a.integrate(mono(t0 + 2 * ms), mono(t0 + 8 * ms), &mut out);
        assert!((at(&out, "pm_graphics_active_pct") - 100.0).abs() < 0.01, "{out:?}");
        assert!(at(&out, "pm_dram_bw_pct").is_finite(), "metrics of the set have values");
        // Over the session start: nothing, because its sample was left out.
        assert_eq!(a.integrate(mono(t0 - 200 * ms), mono(t0 - 100 * ms), &mut out), 0.0);
        assert!(out.iter().all(|v| v.is_nan()));
        assert_eq!(a.min_span_ns(), 4 * ms);
        // The raw samples, each once, with the values of their own millisecond.
        let mut rows = Vec::new();
        a.take_series(&mut |b, e, v| rows.push((b, e, v[0])));
        assert_eq!(rows.len(), 20, "the session start is not a sample of the series");
        assert_eq!(rows[0].2, 100.0);
        assert_eq!(rows[19].2, 20.0);
        assert!(rows.iter().all(|(b, e, _)| e - b == ms));
        a.take_series(&mut |_, _, _| panic!("handed over twice"));
        a.forget_before(mono(t0 + 10 * ms));
        assert_eq!(a.samples.len(), 10);
        // The sampler stops: nothing more will come.
        w.set_state(&WriterState::Stopped, now);
        assert!(matches!(a.poll(now), Arrival::Gone(why) if why.contains("stopped")));
        drop(w);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_ring_nothing_is_held() {
        let dir = private_dir("none");
        let mut a = PmAttributor::with_ring(Some(dir.clone()), "gpu7".into());
        assert!(matches!(a.poll(0), Arrival::Gone(why) if why.contains("no PM sampler")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
