//! What a counter source is: a set of counters that framescope's collector thread reads
//! periodically from one kernel or driver interface (NVML, GPM, `/proc`, amdgpu sysfs, hwmon,
//! DRM fdinfo). Sources run only on the collector thread ([`crate::collector`]); the app's
//! threads never call them.

use framescope_core::counters::CounterWindow;
use std::time::Duration;

/// What a counter is measured over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterScope {
    /// The whole GPU (or the GPU the app renders on).
    Device,
    /// This process only.
    Process,
    /// The whole machine (CPU, RAM).
    System,
}

impl CounterScope {
    pub fn name(self) -> &'static str {
        match self {
            CounterScope::Device => "device",
            CounterScope::Process => "process",
            CounterScope::System => "system",
        }
    }
}

/// One counter of a source. Names are shared across vendors where the meaning is the same
/// (`gpu_util_pct` from NVML and from amdgpu sysfs), so one HUD config works on any GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceCounter {
    /// Lower-case snake case, unit suffix where it helps (`gpu_temp_c`, `vram_used_bytes`).
    pub name: String,
    /// `%`, `MHz`, `W`, `J`, `C`, `bytes`, `rpm`, `ns`, `MiB/s`, `count`, `bitmask`.
    pub unit: String,
    pub scope: CounterScope,
}

impl SourceCounter {
    pub fn new(name: impl Into<String>, unit: &str, scope: CounterScope) -> Self {
        SourceCounter {
            name: name.into(),
            unit: unit.to_string(),
            scope,
        }
    }
}

/// Which GPU the app renders on, for sources that must pick one device among several.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GpuHint {
    /// From `VK_EXT_pci_bus_info` (Vulkan).
    Pci {
        domain: u32,
        bus: u32,
        device: u32,
        function: u32,
    },
    /// The GL renderer string (`GL_RENDERER`), matched by the device's marketing name.
    Name(String),
    /// Not known: a source takes the only device there is, and says so when there are several.
    #[default]
    Unknown,
}

/// Why a source did not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartError {
    /// It cannot work in this process (no such device, library missing): reported once in
    /// the header's `unavailable`, never retried.
    Unavailable(String),
    /// It may work later (driver busy, device not ready): reported in `unavailable`, retried
    /// with back-off.
    Retry(String),
}

impl StartError {
    pub fn reason(&self) -> &str {
        match self {
            StartError::Unavailable(r) | StartError::Retry(r) => r,
        }
    }
}

/// A read that failed as a whole. Single counters that have no value this time are NaN in the
/// output instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing new this time (e.g. GPM needs 100 ms between samples); keep the old values.
    NotYet,
    /// The source broke (device gone, library error): it is stopped, reported in
    /// `unavailable`, and started again with back-off.
    Lost(String),
}

/// A counter source. Built on the collector thread (building may scan sysfs or load a
/// library, never block for long); its catalogue is fixed once built.
pub trait CounterSource: Send {
    /// Short id shown in the header (`system`, `nvml`, `gpm`, `amdgpu`, `hwmon`, `fdinfo`).
    fn id(&self) -> &'static str;

    /// The counters this source may report; `read` writes them in this order.
    fn catalogue(&self) -> &[SourceCounter];

    /// Opens what the source needs. Called on the collector thread, again after a `Retry`
    /// or `Lost` (with back-off).
    fn start(&mut self) -> Result<(), StartError>;

    /// The GPU this source reads, once started, where it can name its PCI ids.
    fn gpu(&self) -> Option<framescope_core::counters::GpuIdentity> {
        None
    }

    /// The shortest useful time between two reads (GPM refreshes about every 100 ms).
    fn min_interval(&self) -> Duration {
        Duration::ZERO
    }

    /// The newest frame end the app marked (`frame` number, `t_ns` on `CLOCK_MONOTONIC`),
    /// told just before each [`CounterSource::read`]: kernel backends tag the dump they take
    /// with it (libGPUCounters' `user_data`). Most sources ignore it.
    fn frame_marked(&mut self, _frame: u64, _t_ns: u64) {}

    /// How to build an attributor of this source's counters for the dump writer, where its
    /// values are a time series that can be integrated over any past window (PM sampling).
    /// Asked once, when the catalogue is fixed.
    fn attributor(&self) -> Option<framescope_core::attribution::AttributorFactory> {
        None
    }

    /// Reads every counter at `now_ns` (`CLOCK_MONOTONIC`) into `out` (`out.len()` equals the
    /// catalogue's length; NaN: no value this time) and returns the window the values cover:
    /// an instantaneous reading has `begin_ns == end_ns`, a rate or utilisation the interval
    /// it was computed over.
    fn read(&mut self, now_ns: u64, out: &mut [f64]) -> Result<CounterWindow, ReadError>;
}
