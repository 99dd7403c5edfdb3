//! The app's side of PM sampling: a counter source on framescope's collector thread that reads
//! the ring a `framescope gpu-sampler` process publishes into, and reports the hardware
//! counters over the window since its last read. The app's process never loads CUDA.
//!
//! These are window values, like GPM's: the counters over the collector's interval, which a
//! frame carries with the window they cover. Attributing samples to exactly a frame's or a
//! render pass's GPU span is [`super::attribute`]'s, done where frames are assembled.

use super::attribute::{integrate, Attribution, Layout, PmSample, Window};
use super::metrics::GRAPHICS_ACTIVE;
use super::ring::{Liveness, RingReader, WriterState};
use crate::source::{CounterScope, CounterSource, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::time::Duration;

/// The counters this source reports: framescope's name, and the PM metric it is (or
/// [`GRAPHICS_ACTIVE`], derived from two counts). A sampler whose set lacks one leaves it NaN.
const COUNTERS: &[(&str, &str)] = &[
    ("pm_graphics_active_pct", GRAPHICS_ACTIVE.name),
    (
        "pm_sm_active_pct",
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "pm_sm_issue_pct",
        "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "pm_ps_warps_pct",
        "sm__warps_active_shader_ps_realtime.avg.pct_of_peak_sustained_elapsed",
    ),
    (
        "pm_cs_warps_pct",
        "sm__warps_active_shader_cs_realtime.avg.pct_of_peak_sustained_elapsed",
    ),
    ("pm_dram_bw_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
];

/// How long a sampler may say nothing (no sample, no heartbeat) before it counts as gone.
pub(super) const STALE_AFTER: Duration = Duration::from_secs(2);

/// Samples read per call; at 1 kHz and a 100 ms collector interval about 100 come.
const BATCH: usize = 4096;

/// The ring's key for CUDA device `device` (what `framescope gpu-sampler --device` writes).
pub fn ring_key(device: usize) -> String {
    format!("gpu{device}")
}

/// How to turn PM sampling on, for the header's `unavailable`.
pub fn how_to_start(device: usize) -> String {
    format!(
        "NVIDIA PM sampling is off: run `framescope gpu-sampler --device {device}` beside the app (as root, or \
         as this user with the nvidia module loaded with NVreg_RestrictProfilingToAdminUsers=0)"
    )
}

/// Reads the ring of one GPU's sampler.
pub struct PmSource {
    device: usize,
    catalogue: Vec<SourceCounter>,
    reader: Option<RingReader>,
    layout: Option<Layout>,
    /// Per catalogue entry: index into the ring's metrics, or into the layout's derived values.
    slots: Vec<Slot>,
    batch: Vec<PmSample>,
    /// The ring's sampling interval: a sample much wider than it spans a session's start.
    interval_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    Metric(usize),
    Derived(usize),
    Missing,
}

impl PmSource {
    pub fn new(device: usize) -> PmSource {
        PmSource {
            device,
            catalogue: COUNTERS
                .iter()
                .map(|(name, _)| SourceCounter::new(*name, "%", CounterScope::Device))
                .collect(),
            reader: None,
            layout: None,
            slots: Vec::new(),
            batch: Vec::new(),
            interval_ns: 0,
        }
    }

    fn attach(&mut self, reader: RingReader) {
        self.slots = slots_for(reader.names());
        self.interval_ns = reader.interval_ns();
        self.layout = Some(layout_of(&reader));
        self.reader = Some(reader);
    }
}

/// The layout of a ring's metrics, with the derived graphics-active share.
pub(super) fn layout_of(reader: &RingReader) -> Layout {
    let names: Vec<&str> = reader.names().iter().map(String::as_str).collect();
    Layout::new(&names, reader.kinds(), &[GRAPHICS_ACTIVE])
}

/// Where each of [`COUNTERS`] is among a ring's metrics (`names`).
pub(super) fn slots_for(names: &[String]) -> Vec<Slot> {
    let has = |n: &str| names.iter().any(|x| x == n);
    COUNTERS
        .iter()
        .map(|(_, metric)| {
            if *metric == GRAPHICS_ACTIVE.name {
                // Derived only where the sampler's set has both counts.
                if has(GRAPHICS_ACTIVE.numerator) && has(GRAPHICS_ACTIVE.denominator) {
                    Slot::Derived(0)
                } else {
                    Slot::Missing
                }
            } else {
                names
                    .iter()
                    .position(|n| n == metric)
                    .map_or(Slot::Missing, Slot::Metric)
            }
        })
        .collect()
}

/// Writes [`COUNTERS`] from `a` into `out`.
pub(super) fn fill(out: &mut [f64], a: &Attribution, slots: &[Slot]) {
    for (o, slot) in out.iter_mut().zip(slots) {
        *o = match *slot {
            Slot::Metric(i) => a.values().get(i).copied().unwrap_or(f64::NAN),
            Slot::Derived(i) => a.derived().get(i).copied().unwrap_or(f64::NAN),
            Slot::Missing => f64::NAN,
        };
    }
}

/// The names of [`COUNTERS`], for an attributor.
pub(super) fn counter_names() -> Vec<String> {
    COUNTERS.iter().map(|(n, _)| (*n).to_string()).collect()
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns: PM samples carry GPU time on the Unix epoch
/// (`cupti-pm-sampling.md`), counter windows are on CLOCK_MONOTONIC.
pub(super) fn realtime_offset_ns() -> i128 {
    framescope_core::clock::realtime_offset_ns()
}

impl CounterSource for PmSource {
    fn id(&self) -> &'static str {
        "pm"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        let reader = RingReader::open(&ring_key(self.device))
            .map_err(|e| StartError::Retry(format!("{} ({e})", how_to_start(self.device))))?;
        match reader.liveness(
            framescope_core::clock::monotonic_now_ns(),
            STALE_AFTER.as_nanos() as u64,
        ) {
            Liveness::Alive(WriterState::Running) => {}
            Liveness::Alive(WriterState::Waiting(why)) => {
                return Err(StartError::Retry(format!("the PM sampler waits: {why}")))
            }
            Liveness::Alive(WriterState::Failed(why)) => {
                return Err(StartError::Retry(format!("the PM sampler failed: {why}")))
            }
            Liveness::Alive(WriterState::Stopped) | Liveness::Stale { .. } => {
                return Err(StartError::Retry(format!(
                    "{} (its ring is there but no sampler writes it)",
                    how_to_start(self.device)
                )))
            }
        }
        self.batch = vec![PmSample::new(0, 0, &[]); BATCH];
        let mut reader = reader;
        // Values from before this process started are not its.
        reader.skip_to_newest();
        self.attach(reader);
        Ok(())
    }

    fn attributor(&self) -> Option<framescope_core::attribution::AttributorFactory> {
        let device = self.device;
        Some(Box::new(move || {
            Some(Box::new(super::attributor::PmAttributor::new(device))
                as Box<dyn framescope_core::attribution::Attributor>)
        }))
    }

    fn min_interval(&self) -> Duration {
        // A sample is 1 ms at the default rate: below ten a window is mostly its edges.
        Duration::from_millis(10)
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        let (Some(reader), Some(layout)) = (self.reader.as_mut(), self.layout.as_ref()) else {
            return Err(ReadError::Lost("not started".into()));
        };
        if reader.replaced() {
            self.reader = None;
            return Err(ReadError::Lost("the PM sampler was restarted".into()));
        }
        let got = reader.read(&mut self.batch).read;
        if got == 0 {
            return match reader.liveness(now_ns, STALE_AFTER.as_nanos() as u64) {
                Liveness::Alive(WriterState::Running) => Err(ReadError::NotYet),
                Liveness::Alive(state) => Err(ReadError::Lost(format!("the PM sampler stopped sampling: {state:?}"))),
                Liveness::Stale { silent_ns } => Err(ReadError::Lost(format!(
                    "the PM sampler is silent ({} ms)",
                    silent_ns / 1_000_000
                ))),
            };
        }
        // The first sample of a session spans from the session's start to the first trigger
        // (293 ms measured on the H100, against 1 ms for the others): not a value of this
        // window.
        let wide = self.interval_ns.saturating_mul(10).max(1);
        let samples: &[PmSample] = &self.batch[..got];
        let first = samples.iter().position(|s| s.end_ns - s.start_ns <= wide);
        let Some(first) = first else {
            return Err(ReadError::NotYet);
        };
        let samples = &samples[first..];
        let window = Window {
            start_ns: samples[0].start_ns,
            end_ns: samples[samples.len() - 1].end_ns,
        };
        let a = integrate(samples, layout, window, window.end_ns);
        fill(out, &a, &self.slots);
        let offset = realtime_offset_ns();
        let mono = |t: u64| u64::try_from((i128::from(t) - offset).max(0)).unwrap_or(0);
        Ok(CounterWindow {
            begin_ns: mono(window.start_ns),
            end_ns: mono(window.end_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvidia::pm::metrics::{MetricKind, GRAPHICS};
    use crate::nvidia::pm::ring::RingWriter;

    /// A fresh 0700 directory (removed at the end of the test).
    fn private_dir() -> std::path::PathBuf {
        use std::os::unix::fs::DirBuilderExt;
        let d = std::env::temp_dir().join(format!("fs-pm-source-{}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    #[test]
    fn window_values_come_from_the_ring_and_the_session_start_is_left_out() {
        let dir = private_dir();
        let kinds: Vec<MetricKind> = GRAPHICS
            .iter()
            .map(|n| {
                if n.contains("pct") {
                    MetricKind::Ratio
                } else {
                    MetricKind::Count
                }
            })
            .collect();
        let mut w = RingWriter::create_in(&dir, "gpu0", GRAPHICS, &kinds, 1024, 1_000_000).unwrap();
        let now = framescope_core::clock::monotonic_now_ns();
        w.set_state(&WriterState::Running, now);
        let mut src = PmSource::new(0);
        let reader = RingReader::open_in(&dir, "gpu0").unwrap();
        src.batch = vec![PmSample::new(0, 0, &[]); BATCH];
        src.attach(reader);
        // A session start 300 ms wide, then ten 1 ms samples: 750 of 1000 cycles active, SM
        // 2 % and 4 % alternately.
        // GPU time on the Unix epoch, a second ago.
        let t0 = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            - 1_000_000_000;
        let mut values = [0.0f64; 8];
        let idx = |name: &str| GRAPHICS.iter().position(|n| *n == name).unwrap();
        values[idx("gr__cycles_active.avg")] = 1000.0;
        values[idx("gr__cycles_elapsed.max")] = 1000.0;
        w.publish(&PmSample::new(t0, t0 + 300_000_000, &values), now);
        let mut t = t0 + 300_000_000;
        for k in 0..10 {
            values[idx("gr__cycles_active.avg")] = 750.0;
            values[idx("sm__cycles_active.avg.pct_of_peak_sustained_elapsed")] = if k % 2 == 0 { 2.0 } else { 4.0 };
            w.publish(&PmSample::new(t, t + 1_000_000, &values), now);
            t += 1_000_000;
        }
        let mut out = vec![f64::NAN; src.catalogue().len()];
        let win = src.read(now, &mut out).unwrap();
        let at = |name: &str| out[COUNTERS.iter().position(|(n, _)| *n == name).unwrap()];
        assert!((at("pm_graphics_active_pct") - 75.0).abs() < 1e-9, "{out:?}");
        assert!((at("pm_sm_active_pct") - 3.0).abs() < 1e-9, "{out:?}");
        assert_eq!(
            win.end_ns - win.begin_ns,
            10_000_000,
            "the session start is not in the window"
        );
        // Nothing new: not yet.
        assert_eq!(src.read(now, &mut out), Err(ReadError::NotYet));
        drop((src, w));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_sampler_the_reason_says_how_to_start_one() {
        let mut src = PmSource::new(3);
        match src.start() {
            Err(StartError::Retry(why)) => assert!(why.contains("framescope gpu-sampler --device 3"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
