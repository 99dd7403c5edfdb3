//! The `nvml` source: per-device values NVML keeps anyway, plus this process's share.

use super::api::{Clock, NvmlApi, NvmlError, NvmlResult, ProcessKind, ProcessUtilSample};
use super::device::{pick_device, start_error, PickedDevice};
use crate::source::{CounterScope, CounterSource, GpuHint, ReadError, SourceCounter, StartError};
use framescope_core::counters::CounterWindow;
use std::sync::Arc;
use std::time::Duration;

// Slots of the catalogue, in `read`'s order.
const GPU_UTIL: usize = 0;
const GPU_MEM_UTIL: usize = 1;
const GPU_CLOCK: usize = 2;
const GPU_SM_CLOCK: usize = 3;
const GPU_MEM_CLOCK: usize = 4;
const GPU_POWER: usize = 5;
const GPU_ENERGY: usize = 6;
const GPU_TEMP: usize = 7;
const VRAM_USED: usize = 8;
const VRAM_TOTAL: usize = 9;
const THROTTLE: usize = 10;
const PROC_UTIL: usize = 11;
const PROC_VRAM: usize = 12;
const COUNTERS: usize = 13;

const CATALOGUE: [(&str, &str, CounterScope); COUNTERS] = [
    ("gpu_util_pct", "%", CounterScope::Device),
    ("gpu_mem_util_pct", "%", CounterScope::Device),
    ("gpu_clock_mhz", "MHz", CounterScope::Device),
    ("gpu_sm_clock_mhz", "MHz", CounterScope::Device),
    ("gpu_mem_clock_mhz", "MHz", CounterScope::Device),
    ("gpu_power_w", "W", CounterScope::Device),
    ("gpu_energy_j", "J", CounterScope::Device),
    ("gpu_temp_c", "C", CounterScope::Device),
    ("vram_used_bytes", "bytes", CounterScope::Device),
    ("vram_total_bytes", "bytes", CounterScope::Device),
    ("gpu_throttle_reasons", "bitmask", CounterScope::Device),
    ("proc_gpu_util_pct", "%", CounterScope::Process),
    ("proc_vram_bytes", "bytes", CounterScope::Process),
];

/// The NVML calls `read` makes, each remembered separately once it proves unsupported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Query {
    Utilization,
    GraphicsClock,
    SmClock,
    MemClock,
    Power,
    Energy,
    Temperature,
    Memory,
    EventReasons,
    ProcessUtilization,
    GraphicsProcesses,
    ComputeProcesses,
}

const QUERIES: usize = 12;

impl Query {
    fn call(self) -> &'static str {
        match self {
            Query::Utilization => "nvmlDeviceGetUtilizationRates",
            Query::GraphicsClock | Query::SmClock | Query::MemClock => "nvmlDeviceGetClockInfo",
            Query::Power => "nvmlDeviceGetPowerUsage",
            Query::Energy => "nvmlDeviceGetTotalEnergyConsumption",
            Query::Temperature => "nvmlDeviceGetTemperature",
            Query::Memory => "nvmlDeviceGetMemoryInfo_v2",
            Query::EventReasons => "nvmlDeviceGetCurrentClocksEventReasons",
            Query::ProcessUtilization => "nvmlDeviceGetProcessUtilization",
            Query::GraphicsProcesses => "nvmlDeviceGetGraphicsRunningProcesses_v3",
            Query::ComputeProcesses => "nvmlDeviceGetComputeRunningProcesses_v3",
        }
    }
}

/// How often the two slow calls are made by default. `nvmlDeviceGetTotalEnergyConsumption`
/// took 3–12 ms and `nvmlDeviceGetProcessUtilization` 2–3 ms on the H100, against well under
/// 1 ms for the clocks, memory and reasons: at a 10 Hz read rate they would keep the collector
/// thread in the driver up to 15 % of the time. Neither loses anything by being read less
/// often: energy is a running total, and process utilisation returns every driver sample since
/// the previous call.
pub const DEFAULT_SLOW_INTERVAL: Duration = Duration::from_millis(500);

/// Reads no more often than this: `nvmlUtilization_t` covers a driver period of ⅙ s to 1 s and
/// power is a 1 s average on Ampere and newer, so faster reads repeat values while the fast
/// calls still cost ~5 ms (utilisation ~3 ms, power ~1.5 ms, measured on the H100).
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The `nvml` source (id `nvml`). Never calls `nvmlDeviceGetPcieThroughput`: it blocks ~21 ms
/// (measured); PCIe traffic comes from the `gpm` source instead.
///
/// Values are instantaneous readings of averages NVML keeps over periods it does not disclose
/// (⅙–1 s), so the window `read` returns is the instant of the read. A call that answers
/// `NOT_SUPPORTED`, `NO_PERMISSION` or `FUNCTION_NOT_FOUND` gives NaN for its counters and is
/// not made again; `GPU_IS_LOST` (and the other lost-device codes) fails the read with
/// [`ReadError::Lost`].
pub struct NvmlSource {
    api: Arc<dyn NvmlApi>,
    hint: GpuHint,
    catalogue: Vec<SourceCounter>,
    pid: u32,
    initialised: bool,
    device: Option<PickedDevice>,
    /// The permanent failure of each [`Query`], once seen.
    disabled: [Option<NvmlError>; QUERIES],
    slow_interval_ns: u64,
    last_slow_ns: Option<u64>,
    /// Energy: the driver's total at the previous reading (mJ), and what accumulated since the
    /// source first started (mJ). Kept across restarts so the counter never goes back.
    energy_last_mj: Option<u64>,
    energy_acc_mj: u64,
    /// `lastSeenTimeStamp` for `nvmlDeviceGetProcessUtilization`.
    proc_last_seen_us: u64,
    /// The slow counters' latest values, repeated between slow reads.
    energy_j: f64,
    proc_util_pct: f64,
}

impl NvmlSource {
    pub fn new(api: Arc<dyn NvmlApi>, hint: GpuHint) -> NvmlSource {
        NvmlSource {
            api,
            hint,
            catalogue: CATALOGUE.iter().map(|&(n, u, s)| SourceCounter::new(n, u, s)).collect(),
            pid: std::process::id(),
            initialised: false,
            device: None,
            disabled: [None; QUERIES],
            slow_interval_ns: DEFAULT_SLOW_INTERVAL.as_nanos() as u64,
            last_slow_ns: None,
            energy_last_mj: None,
            energy_acc_mj: 0,
            proc_last_seen_us: 0,
            energy_j: f64::NAN,
            proc_util_pct: f64::NAN,
        }
    }

    /// Reads the slow counters (energy, process utilisation) at most every `interval`; zero reads
    /// them every time.
    pub fn with_slow_interval(mut self, interval: Duration) -> NvmlSource {
        self.slow_interval_ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// Reports process counters for `pid` instead of this process (tests, or a launcher that
    /// profiles its child).
    pub fn with_pid(mut self, pid: u32) -> NvmlSource {
        self.pid = pid;
        self
    }

    /// The device read since the last successful `start`.
    pub fn device(&self) -> Option<&PickedDevice> {
        self.device.as_ref()
    }

    /// Why the device was a guess (several GPUs, no settling hint), for the header.
    pub fn note(&self) -> Option<&str> {
        self.device.as_ref().and_then(|d| d.note.as_deref())
    }

    /// The permanent error a counter's call gave, if it was turned off.
    pub fn disabled_reason(&self, counter: &str) -> Option<String> {
        let q = match counter {
            "gpu_util_pct" | "gpu_mem_util_pct" => Query::Utilization,
            "gpu_clock_mhz" => Query::GraphicsClock,
            "gpu_sm_clock_mhz" => Query::SmClock,
            "gpu_mem_clock_mhz" => Query::MemClock,
            "gpu_power_w" => Query::Power,
            "gpu_energy_j" => Query::Energy,
            "gpu_temp_c" => Query::Temperature,
            "vram_used_bytes" | "vram_total_bytes" => Query::Memory,
            "gpu_throttle_reasons" => Query::EventReasons,
            "proc_gpu_util_pct" => Query::ProcessUtilization,
            _ => return None,
        };
        self.disabled[q as usize].map(|e| format!("{}: {e}", q.call()))
    }

    fn release(&mut self) {
        self.device = None;
        if self.initialised {
            self.initialised = false;
            let _ = self.api.shutdown();
        }
    }

    /// One call: `Ok(None)` when it is turned off, unsupported (now turned off) or failed this
    /// time only; `Err` when the device is gone.
    fn ask<T>(
        &mut self,
        q: Query,
        f: impl FnOnce(&dyn NvmlApi, super::api::Device) -> NvmlResult<T>,
    ) -> Result<Option<T>, ReadError> {
        if self.disabled[q as usize].is_some() {
            return Ok(None);
        }
        let Some(dev) = self.device.as_ref().map(|d| d.handle) else {
            return Err(ReadError::Lost("nvml: not started".into()));
        };
        match f(&*self.api, dev) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_lost() => Err(ReadError::Lost(format!("{}: {e}", q.call()))),
            Err(e) if e.is_permanent() => {
                self.disabled[q as usize] = Some(e);
                Ok(None)
            }
            // TIMEOUT, UNKNOWN, …: no value this time, asked again next time.
            Err(_) => Ok(None),
        }
    }

    fn read_energy(&mut self) -> Result<(), ReadError> {
        if let Some(now) = self.ask(Query::Energy, |a, d| a.total_energy_mj(d))? {
            match self.energy_last_mj {
                // The driver's total counts from its load; a smaller value means it reloaded.
                Some(last) if now >= last => self.energy_acc_mj += now - last,
                _ => {}
            }
            self.energy_last_mj = Some(now);
            self.energy_j = self.energy_acc_mj as f64 / 1000.0;
        } else if self.disabled[Query::Energy as usize].is_some() {
            self.energy_j = f64::NAN;
        }
        Ok(())
    }

    fn read_process_utilization(&mut self) -> Result<(), ReadError> {
        let last_seen = self.proc_last_seen_us;
        let samples = self.ask(Query::ProcessUtilization, |a, d| {
            match a.process_utilization(d, last_seen) {
                // The documented answer when no process used the GPU since `last_seen`.
                Err(NvmlError::NotFound) => Ok(Vec::new()),
                r => r,
            }
        })?;
        match samples {
            Some(s) => {
                self.proc_util_pct = mean_sm_util(&s, self.pid);
                if let Some(newest) = s.iter().map(|x| x.timestamp_us).max() {
                    self.proc_last_seen_us = self.proc_last_seen_us.max(newest);
                }
            }
            None if self.disabled[Query::ProcessUtilization as usize].is_some() => self.proc_util_pct = f64::NAN,
            None => {}
        }
        Ok(())
    }

    /// This process's device memory: the larger of its graphics and compute entries (a process
    /// doing both is listed in both lists with the same memory), 0 when it is in neither.
    fn process_vram(&mut self) -> Result<f64, ReadError> {
        let pid = self.pid;
        let mut answered = false;
        let mut unknown = false;
        let mut bytes: Option<u64> = None;
        for (q, kind) in [
            (Query::GraphicsProcesses, ProcessKind::Graphics),
            (Query::ComputeProcesses, ProcessKind::Compute),
        ] {
            if let Some(list) = self.ask(q, |a, d| a.running_processes(d, kind))? {
                answered = true;
                for p in list.iter().filter(|p| p.pid == pid) {
                    match p.used_bytes {
                        Some(b) => bytes = Some(bytes.map_or(b, |x| x.max(b))),
                        None => unknown = true,
                    }
                }
            }
        }
        Ok(match (answered, bytes, unknown) {
            (false, _, _) => f64::NAN,
            (true, Some(b), _) => b as f64,
            (true, None, true) => f64::NAN,
            (true, None, false) => 0.0,
        })
    }

    fn read_inner(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        let mut v = [f64::NAN; COUNTERS];
        if let Some(u) = self.ask(Query::Utilization, |a, d| a.utilization(d))? {
            v[GPU_UTIL] = f64::from(u.gpu);
            v[GPU_MEM_UTIL] = f64::from(u.memory);
        }
        for (slot, q, c) in [
            (GPU_CLOCK, Query::GraphicsClock, Clock::Graphics),
            (GPU_SM_CLOCK, Query::SmClock, Clock::Sm),
            (GPU_MEM_CLOCK, Query::MemClock, Clock::Memory),
        ] {
            if let Some(mhz) = self.ask(q, |a, d| a.clock_mhz(d, c))? {
                v[slot] = f64::from(mhz);
            }
        }
        if let Some(mw) = self.ask(Query::Power, |a, d| a.power_mw(d))? {
            v[GPU_POWER] = f64::from(mw) / 1000.0;
        }
        if let Some(t) = self.ask(Query::Temperature, |a, d| a.temperature_c(d))? {
            v[GPU_TEMP] = f64::from(t);
        }
        if let Some(m) = self.ask(Query::Memory, |a, d| a.memory(d))? {
            v[VRAM_USED] = m.used as f64;
            v[VRAM_TOTAL] = m.total as f64;
        }
        if let Some(r) = self.ask(Query::EventReasons, |a, d| a.clocks_event_reasons(d))? {
            v[THROTTLE] = r as f64;
        }
        v[PROC_VRAM] = self.process_vram()?;
        let slow_due = match self.last_slow_ns {
            None => true,
            Some(t) => now_ns.saturating_sub(t) >= self.slow_interval_ns,
        };
        if slow_due {
            self.last_slow_ns = Some(now_ns);
            self.read_energy()?;
            self.read_process_utilization()?;
        }
        v[GPU_ENERGY] = self.energy_j;
        v[PROC_UTIL] = self.proc_util_pct;
        for (o, x) in out.iter_mut().zip(v) {
            *o = x;
        }
        Ok(CounterWindow {
            begin_ns: now_ns,
            end_ns: now_ns,
        })
    }
}

/// The mean SM utilisation of `pid`'s samples; 0 when it has none (it did not use the GPU).
fn mean_sm_util(samples: &[ProcessUtilSample], pid: u32) -> f64 {
    let (sum, n) = samples
        .iter()
        .filter(|s| s.pid == pid)
        .fold((0u64, 0u64), |(sum, n), s| (sum + u64::from(s.sm_pct), n + 1));
    if n == 0 {
        0.0
    } else {
        sum as f64 / n as f64
    }
}

impl CounterSource for NvmlSource {
    fn id(&self) -> &'static str {
        "nvml"
    }

    fn catalogue(&self) -> &[SourceCounter] {
        &self.catalogue
    }

    fn gpu(&self) -> Option<framescope_core::counters::GpuIdentity> {
        let p = self.device.as_ref()?.pci?;
        (p.ids != 0).then(|| framescope_core::counters::GpuIdentity {
            vendor_id: p.ids & 0xffff,
            device_id: p.ids >> 16,
            pci_bus: format!("{:04x}:{:02x}:{:02x}.0", p.domain, p.bus, p.device),
            source: "nvml".into(),
        })
    }

    fn start(&mut self) -> Result<(), StartError> {
        self.release();
        self.api.init().map_err(|e| start_error("nvmlInit_v2", e))?;
        self.initialised = true;
        let picked = match pick_device(&*self.api, &self.hint) {
            Ok(p) => p,
            Err(e) => {
                self.release();
                return Err(e);
            }
        };
        let dev = picked.handle;
        self.device = Some(picked);
        // Baselines, so the first read reports energy and process utilisation since now rather
        // than since the driver loaded or over whatever the driver still buffers.
        self.energy_last_mj = None;
        if self.disabled[Query::Energy as usize].is_none() {
            match self.api.total_energy_mj(dev) {
                Ok(mj) => self.energy_last_mj = Some(mj),
                Err(e) if e.is_permanent() => self.disabled[Query::Energy as usize] = Some(e),
                Err(_) => {}
            }
        }
        if self.disabled[Query::ProcessUtilization as usize].is_none() {
            match self.api.process_utilization(dev, self.proc_last_seen_us) {
                Ok(s) => {
                    if let Some(newest) = s.iter().map(|x| x.timestamp_us).max() {
                        self.proc_last_seen_us = self.proc_last_seen_us.max(newest);
                    }
                }
                Err(e) if e.is_permanent() => self.disabled[Query::ProcessUtilization as usize] = Some(e),
                Err(_) => {}
            }
        }
        self.last_slow_ns = None;
        Ok(())
    }

    fn min_interval(&self) -> Duration {
        MIN_INTERVAL
    }

    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError> {
        let r = self.read_inner(now_ns, out);
        if let Err(ReadError::Lost(_)) = &r {
            // Re-initialise on the next start: handles from before the loss are not asked again.
            self.release();
        }
        r
    }
}

impl Drop for NvmlSource {
    fn drop(&mut self) {
        self.release();
    }
}
