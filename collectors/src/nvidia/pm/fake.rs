//! A scripted [`CuptiApi`] for tests: a chip with a metric catalogue (each metric's properties
//! and how many hardware counters it takes, from which the pass count follows), a hardware
//! buffer the test fills with samples, injected errors per call, and a count of every call.
//!
//! The counter-data image is real bytes: `pm_decode` writes the ids of the samples it moved
//! into the image, and `pm_sample_info`/`evaluate` read them back from the image they are
//! given, so a sampler that forgets to re-initialise its image, or evaluates the wrong one,
//! gets the wrong answer here as it would from CUPTI.

use super::api::*;
use framescope_core::sync::Mutex;
use std::collections::{HashMap, VecDeque};
use std::ffi::CStr;

/// The calls the fake counts and can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    CudaContext,
    DeviceSupported,
    ProfilerInitialize,
    ProfilerDeinitialize,
    ChipName,
    CounterAvailability,
    HostInitialize,
    HostDeinitialize,
    MetricProperties,
    ConfigAddMetrics,
    ConfigImage,
    NumPasses,
    PmEnable,
    PmSetConfig,
    PmCounterDataSize,
    PmCounterDataInitialize,
    PmStart,
    PmStop,
    PmDecode,
    PmCounterDataInfo,
    PmSampleInfo,
    Evaluate,
    PmDisable,
}

/// One metric the fake chip offers.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeMetric {
    pub name: String,
    pub properties: MetricProperties,
    /// Hardware counters it needs; a pass holds [`FakeCupti::counters_per_pass`] of them.
    pub counters: usize,
}

impl FakeMetric {
    pub fn new(name: &str, metric_type: MetricType, dim_unit: &str, counters: usize) -> FakeMetric {
        FakeMetric {
            name: name.to_string(),
            properties: MetricProperties {
                description: format!("{name} (fake)"),
                hw_unit: name.split("__").next().unwrap_or("").to_string(),
                dim_unit: dim_unit.to_string(),
                metric_type,
            },
            counters,
        }
    }
}

/// One sample the fake hardware produces: GPU times (ns, Unix epoch) and values by metric name
/// (absent: 0).
#[derive(Clone, Debug, PartialEq)]
pub struct FakeSample {
    pub start_ns: u64,
    pub end_ns: u64,
    pub values: HashMap<String, f64>,
}

impl FakeSample {
    pub fn new(start_ns: u64, end_ns: u64, values: &[(&str, f64)]) -> FakeSample {
        FakeSample {
            start_ns,
            end_ns,
            values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }
}

#[derive(Default)]
struct State {
    chip: String,
    metrics: Vec<FakeMetric>,
    counters_per_pass: usize,
    support: DeviceSupport,
    devices: usize,
    failures: HashMap<Call, CuptiError>,
    /// Failures that answer once, then clear.
    once: HashMap<Call, VecDeque<CuptiError>>,
    calls: HashMap<Call, usize>,
    next_handle: u64,
    /// Live host objects and the metrics added to each.
    hosts: HashMap<u64, Vec<String>>,
    /// The device whose monitors are held, by which sampler.
    enabled: Option<(usize, u64)>,
    configured: bool,
    started: bool,
    /// Samples produced and not yet decoded.
    hardware: VecDeque<FakeSample>,
    /// Every sample ever decoded, by id (the image holds ids).
    decoded: Vec<FakeSample>,
    /// Set by the test: the next decode reports a hardware-buffer overflow.
    overflow_next: bool,
    profiler_inits: u32,
}

/// The fake CUPTI. Share it as `Arc<FakeCupti>` between the test and the sampler.
pub struct FakeCupti {
    state: Mutex<State>,
}

/// Bytes of the image before the sample ids: magic, max samples, count (u64 each).
const IMAGE_HEADER: usize = 24;
const IMAGE_MAGIC: u64 = 0x4641_4b45_4350_5449; // "FAKECPTI"
const HANDLE_BASE: u64 = 0x5000;

impl FakeCupti {
    /// A chip with `metrics`, `counters_per_pass` hardware counters per pass, and one device
    /// that supports PM sampling.
    pub fn new(chip: &str, metrics: Vec<FakeMetric>, counters_per_pass: usize) -> FakeCupti {
        FakeCupti {
            state: Mutex::new(State {
                chip: chip.to_string(),
                metrics,
                counters_per_pass,
                support: DeviceSupport {
                    overall: SupportLevel::Supported,
                    architecture: SupportLevel::Supported,
                    sli: SupportLevel::Supported,
                    vgpu: SupportLevel::Supported,
                    confidential_compute: SupportLevel::Supported,
                    cmp: SupportLevel::Supported,
                    wsl: SupportLevel::Supported,
                },
                devices: 1,
                next_handle: HANDLE_BASE,
                ..Default::default()
            }),
        }
    }

    /// What `cuptiProfilerDeviceSupported` answers.
    pub fn set_support(&self, s: DeviceSupport) {
        self.state.lock().support = s;
    }

    /// Hardware counters one pass holds.
    pub fn counters_per_pass(&self) -> usize {
        self.state.lock().counters_per_pass
    }

    /// Makes `call` answer `err` until [`FakeCupti::clear_failures`].
    pub fn fail(&self, call: Call, err: CuptiError) {
        self.state.lock().failures.insert(call, err);
    }

    /// Makes the next call of `call` answer `err` (queued: several calls fail in turn).
    pub fn fail_once(&self, call: Call, err: CuptiError) {
        self.state.lock().once.entry(call).or_default().push_back(err);
    }

    pub fn clear_failures(&self) {
        let mut s = self.state.lock();
        s.failures.clear();
        s.once.clear();
    }

    /// The hardware takes `sample` (only while started, as the monitors would).
    pub fn produce(&self, sample: FakeSample) {
        let mut s = self.state.lock();
        if s.started {
            s.hardware.push_back(sample);
        }
    }

    /// The next decode says the hardware buffer overflowed.
    pub fn overflow_next_decode(&self) {
        self.state.lock().overflow_next = true;
    }

    /// Another client takes the monitors: enabling answers `HARDWARE_BUSY` until
    /// [`FakeCupti::clear_failures`].
    pub fn hold_monitors_elsewhere(&self) {
        self.fail(Call::PmEnable, CuptiError::Cupti(code::HARDWARE_BUSY));
    }

    pub fn calls(&self, call: Call) -> usize {
        self.state.lock().calls.get(&call).copied().unwrap_or(0)
    }

    /// Whether a sampler holds the monitors (enabled and not disabled).
    pub fn monitors_held(&self) -> bool {
        self.state.lock().enabled.is_some()
    }

    /// Host objects not deinitialised.
    pub fn live_hosts(&self) -> usize {
        self.state.lock().hosts.len()
    }

    /// `cuptiProfilerInitialize` calls not matched by a deinitialise.
    pub fn open_profiler_inits(&self) -> u32 {
        self.state.lock().profiler_inits
    }

    fn enter(s: &mut State, call: Call) -> CuptiResult<()> {
        *s.calls.entry(call).or_default() += 1;
        if let Some(e) = s.once.get_mut(&call).and_then(VecDeque::pop_front) {
            return Err(e);
        }
        match s.failures.get(&call) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn device(s: &State, device: usize) -> CuptiResult<()> {
        if device < s.devices {
            Ok(())
        } else {
            Err(CuptiError::Cupti(code::INVALID_DEVICE))
        }
    }

    fn sampler(s: &State, sampler: Sampler) -> CuptiResult<()> {
        match s.enabled {
            Some((_, h)) if h == sampler.0 => Ok(()),
            _ => Err(CuptiError::InvalidArgument("not a live PM sampling object")),
        }
    }

    fn word(image: &[u8], i: usize) -> Option<u64> {
        let b = image.get(i * 8..i * 8 + 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    fn put(image: &mut [u8], i: usize, v: u64) {
        if let Some(b) = image.get_mut(i * 8..i * 8 + 8) {
            b.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// The sample ids an image holds; `INVALID_PARAMETER` for an image not initialised.
    fn ids(image: &[u8]) -> CuptiResult<Vec<u64>> {
        if Self::word(image, 0) != Some(IMAGE_MAGIC) {
            return Err(CuptiError::Cupti(code::INVALID_PARAMETER));
        }
        let n = Self::word(image, 2).unwrap_or(0) as usize;
        Ok((0..n).filter_map(|i| Self::word(image, 3 + i)).collect())
    }

    fn metric<'a>(s: &'a State, name: &CStr) -> CuptiResult<&'a FakeMetric> {
        let n = name
            .to_str()
            .map_err(|_| CuptiError::Cupti(code::INVALID_METRIC_NAME))?;
        s.metrics
            .iter()
            .find(|m| m.name == n)
            .ok_or(CuptiError::Cupti(code::INVALID_METRIC_NAME))
    }
}

impl CuptiApi for FakeCupti {
    fn cuda_context(&self, device: usize) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::CudaContext)?;
        Self::device(&s, device)
    }

    fn device_supported(&self, device: usize) -> CuptiResult<DeviceSupport> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::DeviceSupported)?;
        Self::device(&s, device)?;
        Ok(s.support)
    }

    fn profiler_initialize(&self) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::ProfilerInitialize)?;
        s.profiler_inits += 1;
        Ok(())
    }

    fn profiler_deinitialize(&self) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::ProfilerDeinitialize)?;
        s.profiler_inits = s.profiler_inits.saturating_sub(1);
        Ok(())
    }

    fn chip_name(&self, device: usize) -> CuptiResult<String> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::ChipName)?;
        Self::device(&s, device)?;
        Ok(s.chip.clone())
    }

    fn counter_availability(&self, device: usize) -> CuptiResult<Vec<u8>> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::CounterAvailability)?;
        Self::device(&s, device)?;
        Ok(vec![0xA5; 64])
    }

    fn host_initialize(&self, chip: &str, _availability: &[u8]) -> CuptiResult<HostObject> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::HostInitialize)?;
        if chip != s.chip {
            return Err(CuptiError::Cupti(code::INVALID_PARAMETER));
        }
        let h = s.next_handle;
        s.next_handle += 1;
        s.hosts.insert(h, Vec::new());
        Ok(HostObject(h))
    }

    fn host_deinitialize(&self, host: HostObject) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::HostDeinitialize)?;
        match s.hosts.remove(&host.0) {
            Some(_) => Ok(()),
            None => Err(CuptiError::InvalidArgument("not a live host object")),
        }
    }

    fn metric_properties(&self, host: HostObject, metric: &CStr) -> CuptiResult<MetricProperties> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::MetricProperties)?;
        if !s.hosts.contains_key(&host.0) {
            return Err(CuptiError::InvalidArgument("not a live host object"));
        }
        Ok(Self::metric(&s, metric)?.properties.clone())
    }

    fn config_add_metrics(&self, host: HostObject, metrics: &[&CStr]) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::ConfigAddMetrics)?;
        let mut names = Vec::new();
        for m in metrics {
            names.push(Self::metric(&s, m)?.name.clone());
        }
        match s.hosts.get_mut(&host.0) {
            Some(list) => {
                list.extend(names);
                Ok(())
            }
            None => Err(CuptiError::InvalidArgument("not a live host object")),
        }
    }

    fn config_image(&self, host: HostObject) -> CuptiResult<Vec<u8>> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::ConfigImage)?;
        let list = s
            .hosts
            .get(&host.0)
            .ok_or(CuptiError::InvalidArgument("not a live host object"))?;
        // The image records the hardware counters the metrics need.
        let counters: usize = list
            .iter()
            .filter_map(|n| s.metrics.iter().find(|m| &m.name == n))
            .map(|m| m.counters)
            .sum();
        Ok((counters as u64).to_le_bytes().to_vec())
    }

    fn num_passes(&self, config_image: &[u8]) -> CuptiResult<usize> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::NumPasses)?;
        let b: [u8; 8] = config_image
            .try_into()
            .map_err(|_| CuptiError::Cupti(code::INVALID_PARAMETER))?;
        let counters = u64::from_le_bytes(b) as usize;
        Ok(counters.div_ceil(s.counters_per_pass.max(1)).max(1))
    }

    fn pm_enable(&self, device: usize) -> CuptiResult<Sampler> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmEnable)?;
        Self::device(&s, device)?;
        if s.enabled.is_some() {
            return Err(CuptiError::Cupti(code::INVALID_OPERATION));
        }
        let h = s.next_handle;
        s.next_handle += 1;
        s.enabled = Some((device, h));
        s.configured = false;
        Ok(Sampler(h))
    }

    fn pm_set_config(&self, sampler: Sampler, config_image: &[u8], cfg: SamplingConfig) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmSetConfig)?;
        Self::sampler(&s, sampler)?;
        if cfg.interval_ns == 0 || cfg.hardware_buffer_bytes == 0 {
            return Err(CuptiError::Cupti(code::INVALID_PARAMETER));
        }
        let counters = config_image
            .try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| CuptiError::Cupti(code::INVALID_PARAMETER))? as usize;
        // A config needing more than one pass is NOT_SUPPORTED (`cupti_pmsampling.h`).
        if counters > s.counters_per_pass {
            return Err(CuptiError::Cupti(code::NOT_SUPPORTED));
        }
        s.configured = true;
        Ok(())
    }

    fn pm_counter_data_size(&self, sampler: Sampler, metrics: &[&CStr], max_samples: u32) -> CuptiResult<usize> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmCounterDataSize)?;
        Self::sampler(&s, sampler)?;
        for m in metrics {
            Self::metric(&s, m)?;
        }
        Ok(IMAGE_HEADER + 8 * max_samples as usize)
    }

    fn pm_counter_data_initialize(&self, sampler: Sampler, image: &mut [u8]) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmCounterDataInitialize)?;
        Self::sampler(&s, sampler)?;
        if image.len() < IMAGE_HEADER {
            return Err(CuptiError::Cupti(code::INVALID_PARAMETER));
        }
        image.fill(0);
        Self::put(image, 0, IMAGE_MAGIC);
        Self::put(image, 1, ((image.len() - IMAGE_HEADER) / 8) as u64);
        Ok(())
    }

    fn pm_start(&self, sampler: Sampler) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmStart)?;
        Self::sampler(&s, sampler)?;
        if !s.configured || s.started {
            return Err(CuptiError::Cupti(code::INVALID_OPERATION));
        }
        s.started = true;
        Ok(())
    }

    fn pm_stop(&self, sampler: Sampler) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmStop)?;
        Self::sampler(&s, sampler)?;
        if !s.started {
            return Err(CuptiError::Cupti(code::INVALID_OPERATION));
        }
        s.started = false;
        Ok(())
    }

    fn pm_decode(&self, sampler: Sampler, image: &mut [u8]) -> CuptiResult<Decoded> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmDecode)?;
        Self::sampler(&s, sampler)?;
        if std::mem::take(&mut s.overflow_next) {
            s.hardware.clear();
            return Ok(Decoded {
                counter_data_full: false,
                overflow: true,
            });
        }
        if Self::word(image, 0) != Some(IMAGE_MAGIC) {
            return Err(CuptiError::Cupti(code::INVALID_PARAMETER));
        }
        let max = Self::word(image, 1).unwrap_or(0) as usize;
        let mut n = Self::word(image, 2).unwrap_or(0) as usize;
        while n < max {
            let Some(sample) = s.hardware.pop_front() else { break };
            let id = s.decoded.len() as u64;
            s.decoded.push(sample);
            Self::put(image, 3 + n, id);
            n += 1;
        }
        Self::put(image, 2, n as u64);
        Ok(Decoded {
            counter_data_full: n >= max && !s.hardware.is_empty(),
            overflow: false,
        })
    }

    fn pm_counter_data_info(&self, image: &[u8]) -> CuptiResult<CounterDataInfo> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmCounterDataInfo)?;
        let ids = Self::ids(image)?;
        Ok(CounterDataInfo {
            total: Self::word(image, 1).unwrap_or(0) as usize,
            populated: ids.len(),
            completed: ids.len(),
        })
    }

    fn pm_sample_info(&self, sampler: Sampler, image: &[u8], index: usize) -> CuptiResult<(u64, u64)> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmSampleInfo)?;
        Self::sampler(&s, sampler)?;
        let id = *Self::ids(image)?
            .get(index)
            .ok_or(CuptiError::Cupti(code::INVALID_PARAMETER))?;
        let d = &s.decoded[id as usize];
        Ok((d.start_ns, d.end_ns))
    }

    fn evaluate(
        &self,
        host: HostObject,
        image: &[u8],
        index: usize,
        metrics: &[&CStr],
        out: &mut [f64],
    ) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::Evaluate)?;
        if !s.hosts.contains_key(&host.0) {
            return Err(CuptiError::InvalidArgument("not a live host object"));
        }
        if out.len() != metrics.len() {
            return Err(CuptiError::InvalidArgument("one output per metric"));
        }
        let id = *Self::ids(image)?
            .get(index)
            .ok_or(CuptiError::Cupti(code::INVALID_PARAMETER))?;
        for (o, m) in out.iter_mut().zip(metrics) {
            let name = Self::metric(&s, m)?.name.clone();
            *o = s.decoded[id as usize].values.get(&name).copied().unwrap_or(0.0);
        }
        Ok(())
    }

    fn pm_disable(&self, sampler: Sampler) -> CuptiResult<()> {
        let mut s = self.state.lock();
        Self::enter(&mut s, Call::PmDisable)?;
        Self::sampler(&s, sampler)?;
        s.enabled = None;
        s.started = false;
        s.configured = false;
        s.hardware.clear();
        Ok(())
    }
}
