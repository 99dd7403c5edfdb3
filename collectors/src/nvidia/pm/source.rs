//! The app's side of PM sampling: a counter source on framescope's collector thread that reads
//! the ring a `framescope gpu-sampler` process publishes into, and reports the hardware
//! counters over the window since its last read. The app's process never loads CUDA.
//!
//! These are window values, like GPM's: the counters over the collector's interval, which a
//! frame carries with the window they cover. Attributing samples to exactly a frame's or a
//! render pass's GPU span is [`super::attribute`]'s, done where frames are assembled.

use super::attribute::{integrate, Layout, PmSample, Window};
use super::counters::{failed, fill, layout_of, slots_for, Slot, COUNTERS, STALE_AFTER};
use super::ring::{ring_key, Liveness, RingReader, WriterState};
use crate::source::{CounterScope, CounterSource, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::time::Duration;

/// Samples read per call; at 1 kHz and a 100 ms collector interval about 100 come.
const BATCH: usize = 4096;

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
                let silent = reader.silent_ns(framescope_core::clock::monotonic_now_ns());
                return Err(StartError::Retry(failed(&why, silent)));
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
        let offset = framescope_core::clock::realtime_offset_ns();
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
