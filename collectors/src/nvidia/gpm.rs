//! The `gpm` source: Hopper's GPU Performance Monitoring metrics between two samples.

use super::api::{GpmSample, GpmValue, NvmlApi, NvmlError};
use super::device::{pick_device, start_error, PickedDevice};
use crate::source::{CounterScope, CounterSource, GpuHint, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::sync::Arc;
use std::time::Duration;

/// GPM refreshes about every 100 ms: two samples closer than that return 0 (NaN for DRAM
/// bandwidth) unless a refresh happened to fall between them, and `nvml.h` says the gap "should
/// be greater than 100ms" (both measured on the H100, driver 580).
pub const GPM_MIN_INTERVAL: Duration = Duration::from_millis(100);
const GPM_MIN_INTERVAL_NS: u64 = 100_000_000;

/// (counter, unit, `nvmlGpmMetricId_t`). SM utilisation and occupancy are cycle ratios, so they
/// move with the SM clock as well as with the work.
const METRICS: [(&str, &str, u32); 9] = [
    ("gpm_graphics_util_pct", "%", 1),
    ("gpm_sm_util_pct", "%", 2),
    ("gpm_sm_occupancy_pct", "%", 3),
    ("gpm_dram_bw_util_pct", "%", 10),
    ("gpm_fp32_util_pct", "%", 12),
    ("gpm_fp16_util_pct", "%", 13),
    ("gpm_tensor_util_pct", "%", 5),
    ("gpm_pcie_tx_mibps", "MiB/s", 20),
    ("gpm_pcie_rx_mibps", "MiB/s", 21),
];

/// What `start` says when the device has no GPM.
pub const UNSUPPORTED_REASON: &str = "GPM needs Hopper or newer: nvmlGpmQueryDeviceSupport says unsupported";

fn no_permission(call: &str, e: NvmlError) -> String {
    // Whether `NVreg_RestrictProfilingToAdminUsers=1` is what blocks GPM is not documented; the
    // H100 it was measured on had it at 0 and GPM worked unprivileged. Name it as the likely
    // cause so the user knows where to look.
    format!(
        "{call}: {e}: GPM is refused to this user; the nvidia kernel module's \
         NVreg_RestrictProfilingToAdminUsers=1 restricts profiling to administrators"
    )
}

/// The `gpm` source (id `gpm`). Keeps the previous sample with its time; a read at least
/// 100 ms later takes a new one and reports the metrics between the two over that window. The
/// first read only takes a sample and says [`ReadError::NotYet`].
///
/// Not handled: MIG (`nvmlGpmMigSampleGet` per GPU instance); a GPU in MIG mode reports the
/// sample call's error.
pub struct GpmSource {
    api: Arc<dyn NvmlApi>,
    hint: GpuHint,
    catalogue: Vec<SourceCounter>,
    ids: [u32; METRICS.len()],
    initialised: bool,
    device: Option<PickedDevice>,
    /// Two buffers used in turn: the driver refuses the same sample as both ends.
    samples: Option<[GpmSample; 2]>,
    /// Which buffer holds the previous sample, and when (`CLOCK_MONOTONIC` ns) it was taken.
    previous: Option<(usize, u64)>,
    values: [GpmValue; METRICS.len()],
}

impl GpmSource {
    pub fn new(api: Arc<dyn NvmlApi>, hint: GpuHint) -> GpmSource {
        GpmSource {
            api,
            hint,
            catalogue: METRICS
                .iter()
                .map(|&(n, u, _)| SourceCounter::new(n, u, CounterScope::Device))
                .collect(),
            ids: METRICS.map(|(_, _, id)| id),
            initialised: false,
            device: None,
            samples: None,
            previous: None,
            values: [Ok(f64::NAN); METRICS.len()],
        }
    }

    /// The device read since the last successful `start`.
    pub fn device(&self) -> Option<&PickedDevice> {
        self.device.as_ref()
    }

    /// Why the device was a guess (several GPUs, no settling hint), for the header.
    pub fn note(&self) -> Option<&str> {
        self.device.as_ref().and_then(|d| d.note.as_deref())
    }

    fn release(&mut self) {
        self.device = None;
        self.previous = None;
        if let Some(s) = self.samples.take() {
            for x in s {
                let _ = self.api.gpm_sample_free(x);
            }
        }
        if self.initialised {
            self.initialised = false;
            let _ = self.api.shutdown();
        }
    }

    fn try_start(&mut self) -> Result<(), StartError> {
        self.api.init().map_err(|e| start_error("nvmlInit_v2", e))?;
        self.initialised = true;
        let picked = pick_device(&*self.api, &self.hint)?;
        let dev = picked.handle;
        match self.api.gpm_supported(dev) {
            Ok(true) => {}
            Ok(false) | Err(NvmlError::NotSupported) => return Err(StartError::Unavailable(UNSUPPORTED_REASON.into())),
            Err(e @ NvmlError::NoPermission) => {
                return Err(StartError::Unavailable(no_permission("nvmlGpmQueryDeviceSupport", e)))
            }
            Err(NvmlError::FunctionNotFound) => {
                return Err(StartError::Unavailable(
                    "this driver's NVML has no nvmlGpmQueryDeviceSupport (GPM arrived with CUDA 11.8's NVML)".into(),
                ))
            }
            Err(e) => return Err(start_error("nvmlGpmQueryDeviceSupport", e)),
        }
        let a = self
            .api
            .gpm_sample_alloc()
            .map_err(|e| start_error("nvmlGpmSampleAlloc", e))?;
        let b = match self.api.gpm_sample_alloc() {
            Ok(b) => b,
            Err(e) => {
                let _ = self.api.gpm_sample_free(a);
                return Err(start_error("nvmlGpmSampleAlloc", e));
            }
        };
        self.samples = Some([a, b]);
        // A probe sample (~53 µs), so a refusal shows here as a reason in `unavailable` rather
        // than as a lost source on every read.
        match self.api.gpm_sample_get(dev, a) {
            Ok(()) => {}
            Err(e @ NvmlError::NoPermission) => {
                return Err(StartError::Unavailable(no_permission("nvmlGpmSampleGet", e)))
            }
            Err(e) => return Err(start_error("nvmlGpmSampleGet", e)),
        }
        self.device = Some(picked);
        self.previous = None;
        Ok(())
    }

    fn read_inner(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        let (Some(dev), Some(samples)) = (self.device.as_ref().map(|d| d.handle), self.samples) else {
            return Err(ReadError::Lost("gpm: not started".into()));
        };
        let (older, then) = match self.previous {
            Some((_, t)) if now_ns.saturating_sub(t) < GPM_MIN_INTERVAL_NS => return Err(ReadError::NotYet),
            Some(p) => p,
            None => {
                self.take(dev, samples[0])?;
                self.previous = Some((0, now_ns));
                return Err(ReadError::NotYet);
            }
        };
        let newer = 1 - older;
        self.take(dev, samples[newer])?;
        self.previous = Some((newer, now_ns));
        let r = self
            .api
            .gpm_metrics_get(samples[older], samples[newer], &self.ids, &mut self.values);
        match r {
            Ok(()) => {}
            Err(e) if e.is_lost() => return Err(ReadError::Lost(format!("nvmlGpmMetricsGet: {e}"))),
            // Nothing this window; the new sample still starts the next one.
            Err(_) => self.values = [Ok(f64::NAN); METRICS.len()],
        }
        for (o, v) in out.iter_mut().zip(&self.values) {
            // A per-metric error, or the driver's own NaN (DRAM bandwidth right after a
            // refresh), is no value.
            *o = v.unwrap_or(f64::NAN);
        }
        Ok(CounterWindow {
            begin_ns: then,
            end_ns: now_ns,
        })
    }

    fn take(&self, dev: super::api::Device, s: GpmSample) -> Result<(), ReadError> {
        self.api.gpm_sample_get(dev, s).map_err(|e| {
            ReadError::Lost(match e {
                NvmlError::NoPermission => no_permission("nvmlGpmSampleGet", e),
                _ => format!("nvmlGpmSampleGet: {e}"),
            })
        })
    }
}

impl CounterSource for GpmSource {
    fn id(&self) -> &'static str {
        "gpm"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.release();
        let r = self.try_start();
        if r.is_err() {
            self.release();
        }
        r
    }

    fn min_interval(&self) -> Duration {
        GPM_MIN_INTERVAL
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        let r = self.read_inner(now_ns, out);
        if let Err(ReadError::Lost(_)) = &r {
            self.release();
        }
        r
    }
}

impl Drop for GpmSource {
    fn drop(&mut self) {
        self.release();
    }
}
