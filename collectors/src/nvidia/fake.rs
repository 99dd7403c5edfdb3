//! A scripted [`NvmlApi`] for tests: devices with PCI addresses and names, values a test changes
//! between reads, GPM that behaves like the driver measured on the H100 (0 between samples less
//! than 100 ms apart, NaN for DRAM bandwidth then), devices without GPM, and injected errors.
//! It counts every call, so a test can check that a source stopped asking.

use super::api::*;
use framescope_core::sync::Mutex;
use std::collections::HashMap;

/// GPM's refresh period on the H100: samples closer than this see no new data.
pub const GPM_REFRESH_NS: u64 = 100_000_000;
/// `NVML_GPM_METRIC_DRAM_BW_UTIL`, NaN rather than 0 between samples too close together.
const GPM_DRAM_BW_UTIL: u32 = 10;

/// The values one fake device answers with. Change them with [`FakeNvml::update`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FakeValues {
    pub utilization: Utilization,
    pub graphics_clock_mhz: u32,
    pub sm_clock_mhz: u32,
    pub mem_clock_mhz: u32,
    pub power_mw: u32,
    pub energy_mj: u64,
    pub temperature_c: i32,
    pub memory: MemoryInfo,
    pub event_reasons: u64,
    /// Every process's utilisation samples; a call returns those newer than its
    /// `lastSeenTimeStamp`, `NOT_FOUND` if there are none.
    pub process_samples: Vec<ProcessUtilSample>,
    pub graphics_processes: Vec<ProcessMemory>,
    pub compute_processes: Vec<ProcessMemory>,
    /// GPM metric id → what two samples ≥ 100 ms apart give (absent: 0).
    pub gpm: HashMap<u32, GpmValue>,
}

/// One fake GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeDevice {
    pub name: String,
    pub uuid: String,
    pub pci: PciInfo,
    pub gpm_supported: bool,
    pub values: FakeValues,
}

impl FakeDevice {
    /// A device with GPM (Hopper or newer) at `domain:bus:device`.
    pub fn new(name: &str, domain: u32, bus: u32, device: u32) -> FakeDevice {
        FakeDevice {
            name: name.to_string(),
            uuid: format!("GPU-fake-{domain:04x}-{bus:02x}-{device:02x}"),
            // An H100 80GB HBM3's ids (device 0x2330, NVIDIA's vendor id 0x10de).
            pci: PciInfo {
                domain,
                bus,
                device,
                ids: 0x2330_10de,
            },
            gpm_supported: true,
            values: FakeValues::default(),
        }
    }

    /// The same, without GPM (an Ampere or older part).
    pub fn without_gpm(mut self) -> FakeDevice {
        self.gpm_supported = false;
        self
    }
}

/// The calls the fake counts and can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    Init,
    Shutdown,
    DeviceCount,
    DeviceByIndex,
    PciInfo,
    Name,
    Uuid,
    Utilization,
    Clock(Clock),
    Power,
    Energy,
    Temperature,
    Memory,
    EventReasons,
    ProcessUtilization,
    RunningProcesses(ProcessKind),
    GpmSupported,
    GpmSampleAlloc,
    GpmSampleFree,
    GpmSampleGet,
    GpmMetricsGet,
}

#[derive(Default)]
struct State {
    devices: Vec<FakeDevice>,
    lost: Vec<bool>,
    now_ns: u64,
    inits: u32,
    /// (device index or `None` for calls without a device, call) → error it answers.
    failures: HashMap<(Option<usize>, Call), NvmlError>,
    calls: HashMap<(Option<usize>, Call), usize>,
    next_sample: u64,
    /// Live samples: handle → (device, time it was taken) once taken.
    samples: HashMap<u64, Option<(usize, u64)>>,
}

/// The fake library. Share it as `Arc<FakeNvml>` between the test and the sources.
#[derive(Default)]
pub struct FakeNvml {
    state: Mutex<State>,
}

/// Device handles are offset from indices so a source that confuses the two is caught.
const HANDLE_BASE: u64 = 0x1000;

impl FakeNvml {
    pub fn new(devices: Vec<FakeDevice>) -> FakeNvml {
        let lost = vec![false; devices.len()];
        FakeNvml {
            state: Mutex::new(State {
                devices,
                lost,
                next_sample: 1,
                ..Default::default()
            }),
        }
    }

    /// The fake's clock (`CLOCK_MONOTONIC` ns), which GPM samples are stamped with. A test sets
    /// it to the `now_ns` it passes to `read`.
    pub fn set_now_ns(&self, now_ns: u64) {
        self.state.lock().now_ns = now_ns;
    }

    /// Changes the values device `index` answers with.
    pub fn update(&self, index: usize, f: impl FnOnce(&mut FakeValues)) {
        if let Some(d) = self.state.lock().devices.get_mut(index) {
            f(&mut d.values);
        }
    }

    /// Makes `call` on device `index` answer `err` until [`FakeNvml::clear_failures`].
    pub fn fail(&self, index: usize, call: Call, err: NvmlError) {
        self.state.lock().failures.insert((Some(index), call), err);
    }

    /// Makes a call that takes no device (init, count, sample alloc) answer `err`.
    pub fn fail_global(&self, call: Call, err: NvmlError) {
        self.state.lock().failures.insert((None, call), err);
    }

    pub fn clear_failures(&self) {
        self.state.lock().failures.clear();
    }

    /// Device `index` falls off the bus: every call on it answers `GPU_IS_LOST`.
    pub fn lose(&self, index: usize) {
        if let Some(l) = self.state.lock().lost.get_mut(index) {
            *l = true;
        }
    }

    /// How many times `call` was made on device `index`.
    pub fn calls(&self, index: usize, call: Call) -> usize {
        self.state.lock().calls.get(&(Some(index), call)).copied().unwrap_or(0)
    }

    /// How many times a call without a device was made.
    pub fn global_calls(&self, call: Call) -> usize {
        self.state.lock().calls.get(&(None, call)).copied().unwrap_or(0)
    }

    /// Successful inits not yet shut down.
    pub fn open_inits(&self) -> u32 {
        self.state.lock().inits
    }

    /// GPM samples allocated and not freed.
    pub fn live_samples(&self) -> usize {
        self.state.lock().samples.len()
    }

    /// Counts a call without a device and answers its injected failure, if any.
    fn global(&self, s: &mut State, call: Call) -> NvmlResult<()> {
        *s.calls.entry((None, call)).or_default() += 1;
        match s.failures.get(&(None, call)) {
            Some(&e) => Err(e),
            None => Ok(()),
        }
    }

    /// Counts a call on `dev` and returns the device's index, or the error the call answers.
    fn on_device(s: &mut State, dev: Device, call: Call) -> NvmlResult<usize> {
        if s.inits == 0 {
            return Err(NvmlError::Uninitialized);
        }
        let i = dev
            .0
            .checked_sub(HANDLE_BASE)
            .map(|i| i as usize)
            .filter(|&i| i < s.devices.len())
            .ok_or(NvmlError::InvalidArgument)?;
        *s.calls.entry((Some(i), call)).or_default() += 1;
        if s.lost[i] {
            return Err(NvmlError::GpuIsLost);
        }
        match s.failures.get(&(Some(i), call)) {
            Some(&e) => Err(e),
            None => Ok(i),
        }
    }

    fn with_device<T>(&self, dev: Device, call: Call, f: impl FnOnce(&FakeDevice) -> NvmlResult<T>) -> NvmlResult<T> {
        let mut s = self.state.lock();
        let i = Self::on_device(&mut s, dev, call)?;
        f(&s.devices[i])
    }
}

impl NvmlApi for FakeNvml {
    fn init(&self) -> NvmlResult<()> {
        let mut s = self.state.lock();
        self.global(&mut s, Call::Init)?;
        s.inits += 1;
        Ok(())
    }

    fn shutdown(&self) -> NvmlResult<()> {
        let mut s = self.state.lock();
        self.global(&mut s, Call::Shutdown)?;
        if s.inits == 0 {
            return Err(NvmlError::Uninitialized);
        }
        s.inits -= 1;
        Ok(())
    }

    fn device_count(&self) -> NvmlResult<u32> {
        let mut s = self.state.lock();
        self.global(&mut s, Call::DeviceCount)?;
        if s.inits == 0 {
            return Err(NvmlError::Uninitialized);
        }
        Ok(s.devices.len() as u32)
    }

    fn device_by_index(&self, index: u32) -> NvmlResult<Device> {
        let mut s = self.state.lock();
        let dev = Device(HANDLE_BASE + u64::from(index));
        Self::on_device(&mut s, dev, Call::DeviceByIndex)?;
        Ok(dev)
    }

    fn pci_info(&self, dev: Device) -> NvmlResult<PciInfo> {
        self.with_device(dev, Call::PciInfo, |d| Ok(d.pci))
    }

    fn name(&self, dev: Device) -> NvmlResult<String> {
        self.with_device(dev, Call::Name, |d| Ok(d.name.clone()))
    }

    fn uuid(&self, dev: Device) -> NvmlResult<String> {
        self.with_device(dev, Call::Uuid, |d| Ok(d.uuid.clone()))
    }

    fn utilization(&self, dev: Device) -> NvmlResult<Utilization> {
        self.with_device(dev, Call::Utilization, |d| Ok(d.values.utilization))
    }

    fn clock_mhz(&self, dev: Device, clock: Clock) -> NvmlResult<u32> {
        self.with_device(dev, Call::Clock(clock), |d| {
            Ok(match clock {
                Clock::Graphics => d.values.graphics_clock_mhz,
                Clock::Sm => d.values.sm_clock_mhz,
                Clock::Memory => d.values.mem_clock_mhz,
            })
        })
    }

    fn power_mw(&self, dev: Device) -> NvmlResult<u32> {
        self.with_device(dev, Call::Power, |d| Ok(d.values.power_mw))
    }

    fn total_energy_mj(&self, dev: Device) -> NvmlResult<u64> {
        self.with_device(dev, Call::Energy, |d| Ok(d.values.energy_mj))
    }

    fn temperature_c(&self, dev: Device) -> NvmlResult<i32> {
        self.with_device(dev, Call::Temperature, |d| Ok(d.values.temperature_c))
    }

    fn memory(&self, dev: Device) -> NvmlResult<MemoryInfo> {
        self.with_device(dev, Call::Memory, |d| Ok(d.values.memory))
    }

    fn clocks_event_reasons(&self, dev: Device) -> NvmlResult<u64> {
        self.with_device(dev, Call::EventReasons, |d| Ok(d.values.event_reasons))
    }

    fn process_utilization(&self, dev: Device, last_seen_us: u64) -> NvmlResult<Vec<ProcessUtilSample>> {
        self.with_device(dev, Call::ProcessUtilization, |d| {
            let v: Vec<_> = d
                .values
                .process_samples
                .iter()
                .filter(|p| p.timestamp_us > last_seen_us)
                .copied()
                .collect();
            if v.is_empty() {
                Err(NvmlError::NotFound)
            } else {
                Ok(v)
            }
        })
    }

    fn running_processes(&self, dev: Device, kind: ProcessKind) -> NvmlResult<Vec<ProcessMemory>> {
        self.with_device(dev, Call::RunningProcesses(kind), |d| {
            Ok(match kind {
                ProcessKind::Graphics => d.values.graphics_processes.clone(),
                ProcessKind::Compute => d.values.compute_processes.clone(),
            })
        })
    }

    fn gpm_supported(&self, dev: Device) -> NvmlResult<bool> {
        self.with_device(dev, Call::GpmSupported, |d| Ok(d.gpm_supported))
    }

    fn gpm_sample_alloc(&self) -> NvmlResult<GpmSample> {
        let mut s = self.state.lock();
        self.global(&mut s, Call::GpmSampleAlloc)?;
        let h = s.next_sample;
        s.next_sample += 1;
        s.samples.insert(h, None);
        Ok(GpmSample(h))
    }

    fn gpm_sample_free(&self, sample: GpmSample) -> NvmlResult<()> {
        let mut s = self.state.lock();
        self.global(&mut s, Call::GpmSampleFree)?;
        match s.samples.remove(&sample.0) {
            Some(_) => Ok(()),
            None => Err(NvmlError::InvalidArgument),
        }
    }

    fn gpm_sample_get(&self, dev: Device, sample: GpmSample) -> NvmlResult<()> {
        let mut s = self.state.lock();
        let i = Self::on_device(&mut s, dev, Call::GpmSampleGet)?;
        if !s.devices[i].gpm_supported {
            return Err(NvmlError::NotSupported);
        }
        let now = s.now_ns;
        match s.samples.get_mut(&sample.0) {
            Some(slot) => {
                *slot = Some((i, now));
                Ok(())
            }
            None => Err(NvmlError::InvalidArgument),
        }
    }

    fn gpm_metrics_get(&self, older: GpmSample, newer: GpmSample, ids: &[u32], out: &mut [GpmValue]) -> NvmlResult<()> {
        let mut s = self.state.lock();
        let (Some(&Some((d1, t1))), Some(&Some((d2, t2)))) = (s.samples.get(&older.0), s.samples.get(&newer.0)) else {
            return Err(NvmlError::InvalidArgument);
        };
        let dev = Device(HANDLE_BASE + d1 as u64);
        Self::on_device(&mut s, dev, Call::GpmMetricsGet)?;
        if older == newer || d1 != d2 || ids.len() > GPM_IDS_PER_CALL || ids.len() != out.len() {
            return Err(NvmlError::InvalidArgument);
        }
        let values = &s.devices[d1].values.gpm;
        for (o, id) in out.iter_mut().zip(ids) {
            *o = if t2 < t1 {
                // Samples passed in reverse order: the driver answered nonsense (100 %).
                Ok(100.0)
            } else if t2 - t1 < GPM_REFRESH_NS {
                Ok(if *id == GPM_DRAM_BW_UTIL { f64::NAN } else { 0.0 })
            } else {
                values.get(id).copied().unwrap_or(Ok(0.0))
            };
        }
        Ok(())
    }
}
