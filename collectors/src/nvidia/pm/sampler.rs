//! The PM sampler's loop over the [`CuptiApi`] seam: prepare once (CUDA context, device
//! support, chip, counter availability, one-pass validation of the metric set), then step
//! periodically — start a session when there is none, decode the hardware buffer, publish each
//! completed sample to a [`SampleSink`] (the shared ring), re-initialise the image — and stop.
//! The call sequence is the one measured on the H100 (`cupti-pm-sampling.md`).
//!
//! Failures become one reason each, said through the sink's state (readers put it in the
//! header's `unavailable`): no permission ([`WriterState::Failed`], naming
//! `NVreg_RestrictProfilingToAdminUsers=0` or root), an unsupported device (vGPU, MIG, SLI,
//! confidential computing), a set needing more than one pass; another profiler holding the
//! monitors ([`WriterState::Waiting`], "busy", retried with doubling back-off); a
//! hardware-buffer overflow, which no session recovers from, ends the session and starts a
//! new one (a gap in the samples, said as `Waiting` until it runs again).

use super::api::{code, CuptiApi, CuptiError, HostObject, Sampler, SamplingConfig, SupportLevel};
use super::attribute::PmSample;
use super::metrics::{validate, MetricSet, ValidatedSet, MAX_METRICS};
use super::ring::{RingWriter, WriterState};
use std::ffi::CStr;

/// Where samples and the sampler's state go.
pub trait SampleSink {
    fn publish(&mut self, sample: &PmSample, now_ns: u64);
    fn state(&mut self, state: &WriterState, now_ns: u64);
    /// The sampler is alive with nothing to publish.
    fn heartbeat(&mut self, now_ns: u64);
}

impl SampleSink for RingWriter {
    fn publish(&mut self, sample: &PmSample, now_ns: u64) {
        RingWriter::publish(self, sample, now_ns);
    }

    fn state(&mut self, state: &WriterState, now_ns: u64) {
        self.set_state(state, now_ns);
    }

    fn heartbeat(&mut self, now_ns: u64) {
        RingWriter::heartbeat(self, now_ns);
    }
}

/// What the sampler is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerConfig {
    /// CUDA ordinal of the GPU.
    pub device: usize,
    pub set: MetricSet,
    /// Sampling interval (1 ms and 100 µs measured without gaps on the H100).
    pub interval_ns: u64,
    /// How often [`PmSampler::step`] is called: sizes the counter-data image.
    pub decode_every_ns: u64,
    pub hardware_buffer_bytes: usize,
    /// First wait after "busy"; doubles up to `busy_backoff_max_ns`.
    pub busy_backoff_ns: u64,
    pub busy_backoff_max_ns: u64,
}

impl SamplerConfig {
    /// 1 kHz, decoded every 100 ms, a 64 MiB hardware buffer, busy retried after 250 ms
    /// doubling to 8 s. On the H100 under load, decoding every 100 ms left no time in gaps
    /// between samples where every 20 ms left 13 ms in 13 s, at no more CPU
    /// (docs/performance.md).
    pub fn new(device: usize, set: MetricSet) -> SamplerConfig {
        SamplerConfig {
            device,
            set,
            interval_ns: 1_000_000,
            decode_every_ns: 100_000_000,
            hardware_buffer_bytes: 64 << 20,
            busy_backoff_ns: 250_000_000,
            busy_backoff_max_ns: 8_000_000_000,
        }
    }

    /// Samples the image holds: one and a half times the count expected between two decodes.
    /// A late decode loses nothing (the samples wait in the hardware buffer, and a full image
    /// is decoded again in the same step), and re-initialising the image after each decode
    /// costs about 7 µs a slot on the H100 (docs/performance.md): four times the count made
    /// that a fifth of the sampler's own work.
    fn max_samples(&self) -> u32 {
        let per = self.decode_every_ns / self.interval_ns.max(1);
        u32::try_from((per.saturating_mul(3) / 2).max(32)).unwrap_or(u32::MAX)
    }
}

/// The reason for "no permission", naming both fixes.
pub fn privileges_reason(call: &str, e: &CuptiError) -> String {
    format!(
        "{call}: {e}: GPU performance counters are restricted to administrators; load the nvidia \
         kernel module with NVreg_RestrictProfilingToAdminUsers=0 (options nvidia \
         NVreg_RestrictProfilingToAdminUsers=0 in /etc/modprobe.d, then reboot) or run the sampler as root"
    )
}

fn busy_reason(call: &str, e: &CuptiError, retry_ns: u64) -> String {
    format!(
        "busy: {call}: {e}: another profiler (Nsight, DCGM profiling, another framescope sampler) \
         holds the GPU's performance monitors; retrying in {} ms",
        retry_ns / 1_000_000
    )
}

/// What a failed call means for the sampler.
enum Verdict {
    /// Will not work in this process: the reason.
    Fail(String),
    /// May work later: the reason and whether it is "busy" (back-off) or anything else.
    Retry { reason: String, busy: bool },
}

fn judge(call: &'static str, e: CuptiError) -> Verdict {
    if e.is_privileges() {
        return Verdict::Fail(privileges_reason(call, &e));
    }
    if e.is_busy() {
        return Verdict::Retry {
            reason: String::new(),
            busy: true,
        };
    }
    match e {
        CuptiError::Cupti(code::NOT_SUPPORTED) => Verdict::Fail(format!(
            "{call}: {e}: PM sampling is not supported on this GPU in this mode (MIG and vGPU are \
             not supported; it needs Turing or newer, with the time trigger GA10x or newer)"
        )),
        CuptiError::Cupti(code::VIRTUALIZED_DEVICE_NOT_SUPPORTED) => {
            Verdict::Fail(format!("{call}: {e}: profiling a virtual GPU (vGPU) is not supported"))
        }
        CuptiError::Cupti(code::CONFIDENTIAL_COMPUTING_NOT_SUPPORTED | code::CMP_DEVICE_NOT_SUPPORTED) => {
            Verdict::Fail(format!("{call}: {e}"))
        }
        CuptiError::FunctionNotFound(_) => Verdict::Fail(format!("{call}: {e}")),
        _ => Verdict::Retry {
            reason: format!("{call}: {e}"),
            busy: false,
        },
    }
}

/// What one session holds.
struct Session {
    sampler: Sampler,
    host: HostObject,
    image: Vec<u8>,
}

/// Where the sampler is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Prepared, no session yet.
    Ready,
    Running,
    /// No session; the next try at `retry_at_ns`.
    Waiting {
        reason: String,
        retry_at_ns: u64,
    },
    /// Will not sample in this process.
    Failed(String),
    Stopped,
}

/// What one [`PmSampler::step`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub published: usize,
    pub overflowed: bool,
}

/// Where the sampler's own CPU time goes, for `framescope gpu-sampler` to report at its end
/// (docs/performance.md: decoding less often in larger batches is what makes it small).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Costs {
    pub decodes: u64,
    pub samples: u64,
    /// `cuptiPmSamplingDecodeData`, summed.
    pub decode_ns: u64,
    /// Re-initialising the counter-data image after each decode.
    pub initialize_ns: u64,
    /// `cuptiPmSamplingCounterDataGetSampleInfo` and the counter-data info, summed.
    pub info_ns: u64,
    /// `cuptiProfilerHostEvaluateToGpuValues`, summed over samples.
    pub evaluate_ns: u64,
    /// Publishing into the ring.
    pub publish_ns: u64,
    /// Samples that began before the previous one ended, and after it ended (a gap), with the
    /// time in gaps: CUPTI's sample times as they come.
    pub overlaps: u64,
    pub gaps: u64,
    pub gap_ns: u64,
}

/// Nanoseconds since `t`.
fn since(t: std::time::Instant) -> u64 {
    t.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64
}

/// The sampler of one GPU.
pub struct PmSampler<'a> {
    api: &'a dyn CuptiApi,
    cfg: SamplerConfig,
    chip: String,
    availability: Vec<u8>,
    set: Option<ValidatedSet>,
    config_image: Vec<u8>,
    session: Option<Session>,
    phase: Phase,
    backoff_ns: u64,
    last_end_ns: u64,
    values: [f64; MAX_METRICS],
    profiler_initialised: bool,
    costs: Costs,
}

impl<'a> PmSampler<'a> {
    pub fn new(api: &'a dyn CuptiApi, cfg: SamplerConfig) -> PmSampler<'a> {
        let backoff_ns = cfg.busy_backoff_ns;
        PmSampler {
            api,
            cfg,
            chip: String::new(),
            availability: Vec::new(),
            set: None,
            config_image: Vec::new(),
            session: None,
            phase: Phase::Ready,
            backoff_ns,
            last_end_ns: 0,
            values: [f64::NAN; MAX_METRICS],
            profiler_initialised: false,
            costs: Costs::default(),
        }
    }

    /// Where its CPU time went so far.
    pub fn costs(&self) -> Costs {
        self.costs
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The validated set (after a successful [`PmSampler::prepare`]).
    pub fn set(&self) -> Option<&ValidatedSet> {
        self.set.as_ref()
    }

    pub fn chip(&self) -> &str {
        &self.chip
    }

    /// The host-side work, once: CUDA context, device support, profiler, chip name, counter
    /// availability, the set validated and its config image. `Err`: the reason sampling is
    /// unavailable (also the phase, [`Phase::Failed`]).
    pub fn prepare(&mut self) -> Result<(), String> {
        let r = self.try_prepare();
        if let Err(e) = &r {
            self.phase = Phase::Failed(e.clone());
        }
        r
    }

    fn try_prepare(&mut self) -> Result<(), String> {
        let api = self.api;
        let dev = self.cfg.device;
        let fail = |call: &'static str, e: CuptiError| match judge(call, e.clone()) {
            Verdict::Fail(r) => r,
            Verdict::Retry { reason, busy } => {
                if busy {
                    format!("{call}: {e}")
                } else {
                    reason
                }
            }
        };
        api.cuda_context(dev)
            .map_err(|e| fail("CUDA context (cuInit, cuDevicePrimaryCtxRetain)", e))?;
        let s = api
            .device_supported(dev)
            .map_err(|e| fail("cuptiProfilerDeviceSupported", e))?;
        if s.overall != SupportLevel::Supported {
            let mut why = Vec::new();
            let bad = |l: SupportLevel| l == SupportLevel::Unsupported || l == SupportLevel::Disabled;
            if bad(s.architecture) {
                why.push("the GPU architecture has no PM sampling");
            }
            if s.vgpu == SupportLevel::Disabled {
                why.push("vGPU with profiling disabled by the hypervisor");
            } else if bad(s.vgpu) {
                why.push("vGPU is not supported");
            }
            if bad(s.sli) {
                why.push("SLI is enabled");
            }
            if bad(s.confidential_compute) {
                why.push("confidential computing is enabled");
            }
            if bad(s.cmp) {
                why.push("crypto-mining processors are not supported");
            }
            if bad(s.wsl) {
                why.push("not supported under WSL");
            }
            if why.is_empty() {
                why.push("CUPTI gave no reason");
            }
            return Err(format!(
                "cuptiProfilerDeviceSupported: PM sampling unsupported on device {dev}: {}",
                why.join(", ")
            ));
        }
        api.profiler_initialize()
            .map_err(|e| fail("cuptiProfilerInitialize", e))?;
        self.profiler_initialised = true;
        self.chip = api.chip_name(dev).map_err(|e| fail("cuptiDeviceGetChipName", e))?;
        self.availability = api
            .counter_availability(dev)
            .map_err(|e| fail("cuptiPmSamplingGetCounterAvailability", e))?;
        let set = validate(api, &self.chip, &self.availability, &self.cfg.set).map_err(|e| e.to_string())?;
        // The config image the sessions use, from a host object of its own.
        let host = api
            .host_initialize(&self.chip, &self.availability)
            .map_err(|e| fail("cuptiProfilerHostInitialize", e))?;
        let image = self.config_for(host, &set);
        let _ = api.host_deinitialize(host);
        self.config_image = image.map_err(|(call, e)| fail(call, e))?;
        self.set = Some(set);
        self.phase = Phase::Ready;
        Ok(())
    }

    fn config_for(&self, host: HostObject, set: &ValidatedSet) -> Result<Vec<u8>, (&'static str, CuptiError)> {
        let names: Vec<&CStr> = set.c_names.iter().map(|c| c.as_c_str()).collect();
        self.api
            .config_add_metrics(host, &names)
            .map_err(|e| ("cuptiProfilerHostConfigAddMetrics", e))?;
        self.api
            .config_image(host)
            .map_err(|e| ("cuptiProfilerHostGetConfigImage", e))
    }

    /// One period: starts a session if there is none and its time has come, decodes what the
    /// hardware buffer holds and publishes the completed samples. Call it every
    /// `decode_every_ns`.
    pub fn step(&mut self, now_ns: u64, sink: &mut dyn SampleSink) -> Step {
        match &self.phase {
            Phase::Failed(_) | Phase::Stopped => return Step::default(),
            Phase::Waiting { retry_at_ns, .. } if now_ns < *retry_at_ns => {
                sink.heartbeat(now_ns);
                return Step::default();
            }
            _ => {}
        }
        if self.set.is_none() {
            if let Err(e) = self.prepare() {
                sink.state(&WriterState::Failed(e), now_ns);
                return Step::default();
            }
        }
        if self.session.is_none() {
            match self.start_session() {
                Ok(()) => {
                    self.backoff_ns = self.cfg.busy_backoff_ns;
                    self.phase = Phase::Running;
                    sink.state(&WriterState::Running, now_ns);
                }
                Err((call, e)) => {
                    self.after_error(call, e, now_ns, sink);
                    return Step::default();
                }
            }
            return Step::default();
        }
        match self.decode(now_ns, sink) {
            Ok(step) if step.overflowed => {
                self.end_session();
                let reason = "hardware buffer overflow: samples were lost and the session cannot recover; \
                              restarting it (a gap in the samples)"
                    .to_string();
                self.phase = Phase::Waiting {
                    reason: reason.clone(),
                    retry_at_ns: now_ns,
                };
                sink.state(&WriterState::Waiting(reason), now_ns);
                step
            }
            Ok(step) => {
                if step.published == 0 {
                    sink.heartbeat(now_ns);
                }
                step
            }
            Err((call, e)) => {
                self.end_session();
                self.after_error(call, e, now_ns, sink);
                Step::default()
            }
        }
    }

    fn after_error(&mut self, call: &'static str, e: CuptiError, now_ns: u64, sink: &mut dyn SampleSink) {
        match judge(call, e.clone()) {
            Verdict::Fail(reason) => {
                self.phase = Phase::Failed(reason.clone());
                sink.state(&WriterState::Failed(reason), now_ns);
            }
            Verdict::Retry { reason, busy } => {
                let wait = self.backoff_ns;
                let reason = if busy {
                    busy_reason(call, &e, wait)
                } else {
                    format!("{reason}; retrying in {} ms", wait / 1_000_000)
                };
                self.backoff_ns = (self.backoff_ns.saturating_mul(2)).min(self.cfg.busy_backoff_max_ns);
                self.phase = Phase::Waiting {
                    reason: reason.clone(),
                    retry_at_ns: now_ns.saturating_add(wait),
                };
                sink.state(&WriterState::Waiting(reason), now_ns);
            }
        }
    }

    fn start_session(&mut self) -> Result<(), (&'static str, CuptiError)> {
        let api = self.api;
        let Some(set) = self.set.as_ref() else {
            return Err(("start", CuptiError::InvalidArgument("no validated set")));
        };
        let host = api
            .host_initialize(&self.chip, &self.availability)
            .map_err(|e| ("cuptiProfilerHostInitialize", e))?;
        let names: Vec<&CStr> = set.c_names.iter().map(|c| c.as_c_str()).collect();
        // The host object that evaluates a session's samples holds the set's metrics.
        if let Err(e) = api.config_add_metrics(host, &names) {
            let _ = api.host_deinitialize(host);
            return Err(("cuptiProfilerHostConfigAddMetrics", e));
        }
        let sampler = match api.pm_enable(self.cfg.device) {
            Ok(s) => s,
            Err(e) => {
                let _ = api.host_deinitialize(host);
                return Err(("cuptiPmSamplingEnable", e));
            }
        };
        let undo = |call: &'static str, e: CuptiError| {
            let _ = api.pm_disable(sampler);
            let _ = api.host_deinitialize(host);
            (call, e)
        };
        let cfg = SamplingConfig {
            interval_ns: self.cfg.interval_ns,
            hardware_buffer_bytes: self.cfg.hardware_buffer_bytes,
        };
        api.pm_set_config(sampler, &self.config_image, cfg)
            .map_err(|e| undo("cuptiPmSamplingSetConfig", e))?;
        let size = api
            .pm_counter_data_size(sampler, &names, self.cfg.max_samples())
            .map_err(|e| undo("cuptiPmSamplingGetCounterDataSize", e))?;
        let mut image = vec![0u8; size];
        api.pm_counter_data_initialize(sampler, &mut image)
            .map_err(|e| undo("cuptiPmSamplingCounterDataImageInitialize", e))?;
        api.pm_start(sampler).map_err(|e| undo("cuptiPmSamplingStart", e))?;
        self.session = Some(Session { sampler, host, image });
        Ok(())
    }

    /// Decodes until the hardware buffer is drained (bounded), publishing completed samples.
    fn decode(&mut self, now_ns: u64, sink: &mut dyn SampleSink) -> Result<Step, (&'static str, CuptiError)> {
        let api = self.api;
        let Some(set) = self.set.as_ref() else {
            return Ok(Step::default());
        };
        let Some(s) = self.session.as_mut() else {
            return Ok(Step::default());
        };
        let names: Vec<&CStr> = set.c_names.iter().map(|c| c.as_c_str()).collect();
        let n = names.len().min(MAX_METRICS);
        let mut step = Step::default();
        // A full image is decoded again after it is emptied; a few rounds drain any backlog.
        for _ in 0..8 {
            let t = std::time::Instant::now();
            let d = api
                .pm_decode(s.sampler, &mut s.image)
                .map_err(|e| ("cuptiPmSamplingDecodeData", e))?;
            self.costs.decode_ns += since(t);
            self.costs.decodes += 1;
            if d.overflow {
                step.overflowed = true;
                return Ok(step);
            }
            let t = std::time::Instant::now();
            let info = api
                .pm_counter_data_info(&s.image)
                .map_err(|e| ("cuptiPmSamplingGetCounterDataInfo", e))?;
            self.costs.info_ns += since(t);
            for i in 0..info.completed {
                let t = std::time::Instant::now();
                let (start, end) = api
                    .pm_sample_info(s.sampler, &s.image, i)
                    .map_err(|e| ("cuptiPmSamplingCounterDataGetSampleInfo", e))?;
                let t2 = std::time::Instant::now();
                self.costs.info_ns += since(t);
                api.evaluate(s.host, &s.image, i, &names, &mut self.values[..n])
                    .map_err(|e| ("cuptiProfilerHostEvaluateToGpuValues", e))?;
                self.costs.evaluate_ns += since(t2);
                // Samples move forward in time; anything else (a repeat after a restart, a
                // zero-length record) is not published.
                if end <= start || end <= self.last_end_ns {
                    continue;
                }
                if self.last_end_ns > 0 && start < self.last_end_ns {
                    self.costs.overlaps += 1;
                } else if self.last_end_ns > 0 && start > self.last_end_ns {
                    self.costs.gaps += 1;
                    self.costs.gap_ns += start - self.last_end_ns;
                }
                self.last_end_ns = end;
                let t = std::time::Instant::now();
                sink.publish(&PmSample::new(start, end, &self.values[..n]), now_ns);
                self.costs.publish_ns += since(t);
                self.costs.samples += 1;
                step.published += 1;
            }
            let t = std::time::Instant::now();
            api.pm_counter_data_initialize(s.sampler, &mut s.image)
                .map_err(|e| ("cuptiPmSamplingCounterDataImageInitialize", e))?;
            self.costs.initialize_ns += since(t);
            if !d.counter_data_full {
                break;
            }
        }
        Ok(step)
    }

    fn end_session(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = self.api.pm_stop(s.sampler);
            let _ = self.api.pm_disable(s.sampler);
            let _ = self.api.host_deinitialize(s.host);
        }
    }

    /// Stops sampling: a last decode (its samples published), then the monitors released.
    pub fn stop(&mut self, now_ns: u64, sink: &mut dyn SampleSink) {
        if let Some(s) = self.session.as_ref() {
            let _ = self.api.pm_stop(s.sampler);
            let _ = self.decode(now_ns, sink);
            if let Some(s) = self.session.take() {
                let _ = self.api.pm_disable(s.sampler);
                let _ = self.api.host_deinitialize(s.host);
            }
        }
        if self.profiler_initialised {
            let _ = self.api.profiler_deinitialize();
            self.profiler_initialised = false;
        }
        self.phase = Phase::Stopped;
        sink.state(&WriterState::Stopped, now_ns);
    }
}

impl Drop for PmSampler<'_> {
    fn drop(&mut self) {
        self.end_session();
        if self.profiler_initialised {
            let _ = self.api.profiler_deinitialize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::api::{DeviceSupport, MetricType};
    use super::super::attribute::{integrate, Coverage, Layout, Window};
    use super::super::fake::{Call, FakeCupti, FakeMetric, FakeSample};
    use super::super::metrics::GRAPHICS_ACTIVE;
    use super::super::ring::{Liveness, RingReader};
    use super::*;

    const MS: u64 = 1_000_000;
    const T0: u64 = 1_764_000_000_000_000_000;

    #[derive(Default)]
    struct Sink {
        samples: Vec<PmSample>,
        states: Vec<WriterState>,
        beats: usize,
    }

    impl SampleSink for Sink {
        fn publish(&mut self, s: &PmSample, _now: u64) {
            self.samples.push(*s);
        }
        fn state(&mut self, s: &WriterState, _now: u64) {
            self.states.push(s.clone());
        }
        fn heartbeat(&mut self, _now: u64) {
            self.beats += 1;
        }
    }

    fn fake() -> FakeCupti {
        FakeCupti::new(
            "GH100",
            vec![
                FakeMetric::new("gr__cycles_active.avg", MetricType::Counter, "cycle", 1),
                FakeMetric::new("gr__cycles_elapsed.max", MetricType::Counter, "cycle", 1),
                FakeMetric::new(
                    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                    MetricType::Ratio,
                    "%",
                    2,
                ),
                FakeMetric::new("big__x.sum", MetricType::Counter, "cycle", 10),
            ],
            6,
        )
    }

    fn cfg() -> SamplerConfig {
        let set = MetricSet::parse(
            "gr__cycles_active.avg,gr__cycles_elapsed.max,sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        )
        .unwrap();
        SamplerConfig::new(0, set)
    }

    fn ms_sample(i: u64, active: f64) -> FakeSample {
        FakeSample::new(
            T0 + i * MS,
            T0 + (i + 1) * MS,
            &[
                ("gr__cycles_active.avg", active),
                ("gr__cycles_elapsed.max", 1000.0),
                ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", active / 10.0),
            ],
        )
    }

    #[test]
    fn a_session_publishes_decoded_samples_and_releases_everything_at_stop() {
        let api = fake();
        let mut s = PmSampler::new(&api, cfg());
        let mut sink = Sink::default();
        s.prepare().unwrap();
        assert_eq!(s.chip(), "GH100");
        s.step(0, &mut sink);
        assert_eq!(s.phase(), &Phase::Running);
        assert_eq!(sink.states, [WriterState::Running]);
        for i in 0..5 {
            api.produce(ms_sample(i, 100.0 * i as f64));
        }
        assert_eq!(s.step(20 * MS, &mut sink).published, 5);
        assert_eq!(
            sink.samples[3],
            PmSample::new(T0 + 3 * MS, T0 + 4 * MS, &[300.0, 1000.0, 30.0])
        );
        // Nothing new: a heartbeat, no sample.
        assert_eq!(s.step(40 * MS, &mut sink).published, 0);
        assert_eq!(sink.beats, 1);
        api.produce(ms_sample(5, 1.0));
        s.stop(60 * MS, &mut sink);
        assert_eq!(sink.samples.len(), 6, "the last decode at stop is published");
        assert_eq!(sink.states.last(), Some(&WriterState::Stopped));
        assert!(!api.monitors_held());
        assert_eq!(api.live_hosts(), 0);
        assert_eq!(api.open_profiler_inits(), 0);
    }

    #[test]
    fn more_samples_than_the_image_holds_are_decoded_in_rounds() {
        let api = fake();
        let mut c = cfg();
        c.decode_every_ns = 10 * MS; // 15 → 32 samples per image
        let mut s = PmSampler::new(&api, c);
        let mut sink = Sink::default();
        s.step(0, &mut sink);
        for i in 0..150 {
            api.produce(ms_sample(i, 1.0));
        }
        assert_eq!(s.step(MS, &mut sink).published, 150);
    }

    #[test]
    fn no_permission_names_the_module_option_and_root_and_is_not_retried() {
        let api = fake();
        api.fail(Call::PmEnable, CuptiError::Cupti(code::INSUFFICIENT_PRIVILEGES));
        let mut s = PmSampler::new(&api, cfg());
        let mut sink = Sink::default();
        s.step(0, &mut sink);
        let Some(WriterState::Failed(r)) = sink.states.last() else {
            panic!("{:?}", sink.states)
        };
        assert!(r.contains("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35)"), "{r}");
        assert!(r.contains("NVreg_RestrictProfilingToAdminUsers=0"), "{r}");
        assert!(r.contains("root"), "{r}");
        s.step(10_000 * MS, &mut sink);
        assert_eq!(api.calls(Call::PmEnable), 1);
        assert_eq!(api.live_hosts(), 0);
        // Refused already at counter availability (where the driver checks first): the same.
        let api = fake();
        api.fail(
            Call::CounterAvailability,
            CuptiError::Cupti(code::INSUFFICIENT_PRIVILEGES),
        );
        let mut s = PmSampler::new(&api, cfg());
        let e = s.prepare().unwrap_err();
        assert!(e.contains("NVreg_RestrictProfilingToAdminUsers=0"), "{e}");
    }

    #[test]
    fn busy_is_retried_with_doubling_back_off_until_the_monitors_are_free() {
        let api = fake();
        api.hold_monitors_elsewhere();
        let mut s = PmSampler::new(&api, cfg());
        let mut sink = Sink::default();
        s.step(0, &mut sink);
        let Some(WriterState::Waiting(r)) = sink.states.last() else {
            panic!("{:?}", sink.states)
        };
        assert!(
            r.starts_with("busy: cuptiPmSamplingEnable: CUPTI_ERROR_HARDWARE_BUSY (26)"),
            "{r}"
        );
        assert!(r.contains("retrying in 250 ms"), "{r}");
        s.step(249 * MS, &mut sink);
        assert_eq!(api.calls(Call::PmEnable), 1, "not before the back-off");
        s.step(250 * MS, &mut sink);
        assert_eq!(api.calls(Call::PmEnable), 2);
        let Some(WriterState::Waiting(r)) = sink.states.last() else {
            panic!()
        };
        assert!(r.contains("retrying in 500 ms"), "{r}");
        api.clear_failures();
        s.step(749 * MS, &mut sink);
        assert_eq!(api.calls(Call::PmEnable), 2);
        s.step(750 * MS, &mut sink);
        assert_eq!(s.phase(), &Phase::Running);
        assert_eq!(sink.states.last(), Some(&WriterState::Running));
        assert_eq!(api.live_hosts(), 1, "only the running session's host object");
    }

    #[test]
    fn an_overflow_restarts_the_session_and_says_so() {
        let api = fake();
        let mut s = PmSampler::new(&api, cfg());
        let mut sink = Sink::default();
        s.step(0, &mut sink);
        api.produce(ms_sample(0, 1.0));
        api.overflow_next_decode();
        assert!(s.step(20 * MS, &mut sink).overflowed);
        let Some(WriterState::Waiting(r)) = sink.states.last() else {
            panic!()
        };
        assert!(r.starts_with("hardware buffer overflow"), "{r}");
        assert!(!api.monitors_held(), "the broken session was ended");
        s.step(40 * MS, &mut sink);
        assert_eq!(api.calls(Call::PmEnable), 2);
        assert_eq!(sink.states.last(), Some(&WriterState::Running));
        api.produce(ms_sample(10, 2.0));
        assert_eq!(s.step(60 * MS, &mut sink).published, 1);
    }

    #[test]
    fn unsupported_devices_and_two_pass_sets_fail_with_their_reason() {
        let api = fake();
        api.set_support(DeviceSupport {
            overall: SupportLevel::Unsupported,
            vgpu: SupportLevel::Disabled,
            ..DeviceSupport::default()
        });
        let e = PmSampler::new(&api, cfg()).prepare().unwrap_err();
        assert!(e.contains("vGPU with profiling disabled"), "{e}");

        let api = fake();
        let mut c = cfg();
        c.set = MetricSet::parse("gr__cycles_active.avg,big__x.sum").unwrap();
        let mut s = PmSampler::new(&api, c);
        let mut sink = Sink::default();
        s.step(0, &mut sink);
        let Some(WriterState::Failed(r)) = sink.states.last() else {
            panic!()
        };
        assert!(r.contains("needs 2 passes") && r.contains("big__x.sum"), "{r}");
        assert_eq!(api.calls(Call::PmEnable), 0);

        let api = fake();
        api.fail(Call::PmEnable, CuptiError::Cupti(code::NOT_SUPPORTED));
        let mut s = PmSampler::new(&api, cfg());
        s.step(0, &mut sink);
        let Some(WriterState::Failed(r)) = sink.states.last() else {
            panic!()
        };
        assert!(r.contains("MIG and vGPU are not supported"), "{r}");
    }

    #[test]
    fn through_the_ring_a_reader_attributes_a_frame_exactly() {
        use std::os::unix::fs::DirBuilderExt;
        let dir = std::env::temp_dir().join(format!("fs-pm-sampler-{}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        let api = fake();
        let mut s = PmSampler::new(&api, cfg());
        s.prepare().unwrap();
        let set = s.set().unwrap().clone();
        let names: Vec<&str> = set.metrics.iter().map(|m| m.name.as_str()).collect();
        let kinds: Vec<_> = set.metrics.iter().map(|m| m.kind).collect();
        let mut ring = RingWriter::create_in(&dir, "0", &names, &kinds, 64, MS).unwrap();
        let mut reader = RingReader::open_in(&dir, "0").unwrap();
        s.step(0, &mut ring);
        for (i, a) in [1000.0, 500.0, 0.0, 250.0].iter().enumerate() {
            api.produce(ms_sample(i as u64, *a));
        }
        s.step(20 * MS, &mut ring);
        assert_eq!(
            reader.liveness(20 * MS, 100 * MS),
            Liveness::Alive(WriterState::Running)
        );
        let mut buf = [PmSample::new(0, 0, &[]); 16];
        let got = reader.read(&mut buf);
        assert_eq!(got.read, 4);
        let names: Vec<&str> = reader.names().iter().map(String::as_str).collect();
        let layout = Layout::new(&names, reader.kinds(), &[GRAPHICS_ACTIVE]);
        // A frame from 0.5 ms to 2.25 ms of GPU time.
        let a = integrate(
            &buf[..got.read],
            &layout,
            Window {
                start_ns: T0 + MS / 2,
                end_ns: T0 + 2 * MS + MS / 4,
            },
            buf[got.read - 1].end_ns,
        );
        assert_eq!(a.coverage, Coverage::Full);
        assert_eq!(a.values()[..2], [1000.0, 1750.0]);
        assert_eq!(a.derived(), &[1000.0 / 1750.0 * 100.0]);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
