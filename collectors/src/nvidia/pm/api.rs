//! The seam between the PM sampler and CUPTI: exactly the calls of the PM-sampling sequence
//! measured on the H100 (`shared/reference/cupti-pm-sampling.md`, "Call sequence that worked"),
//! in Rust types. [`super::dl`] implements it over the real `libcupti.so.12` (opened with
//! `dlopen`), [`super::fake`] over a script, so metric-set validation, decoding and the
//! sampler's restarts are tested on machines without an NVIDIA GPU.
//!
//! Handles ([`HostObject`], [`Sampler`]) cross the seam as integers; an implementation accepts
//! only handles it issued and has not released (the dlopen binding checks, so a forged value
//! never reaches CUPTI as a pointer).

use std::ffi::CStr;
use std::fmt;

/// A profiler host object (`CUpti_Profiler_Host_Object*`): config images and metric
/// evaluation for one chip. Live from [`CuptiApi::host_initialize`] to
/// [`CuptiApi::host_deinitialize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostObject(pub u64);

/// A PM-sampling object (`CUpti_PmSampling_Object*`) of one device. Live from
/// [`CuptiApi::pm_enable`] to [`CuptiApi::pm_disable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sampler(pub u64);

/// `CUptiResult` codes the sampler tells apart (`cupti_result.h`).
pub mod code {
    pub const INVALID_PARAMETER: u32 = 1;
    pub const INVALID_DEVICE: u32 = 2;
    pub const INVALID_OPERATION: u32 = 7;
    /// What `cuptiPmSamplingDecodeData` answers on a record overflow of the hardware buffer
    /// (`cupti_pmsampling.h`).
    pub const OUT_OF_MEMORY: u32 = 8;
    pub const NOT_INITIALIZED: u32 = 15;
    pub const INVALID_METRIC_NAME: u32 = 17;
    pub const DISABLED: u32 = 23;
    /// Another client (Nsight, DCGM profiling, a second sampler) holds the monitors.
    pub const HARDWARE_BUSY: u32 = 26;
    pub const NOT_SUPPORTED: u32 = 27;
    pub const VIRTUALIZED_DEVICE_NOT_SUPPORTED: u32 = 33;
    /// Profiling restricted to administrators (`NVreg_RestrictProfilingToAdminUsers=1`).
    pub const INSUFFICIENT_PRIVILEGES: u32 = 35;
    pub const VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES: u32 = 40;
    pub const CONFIDENTIAL_COMPUTING_NOT_SUPPORTED: u32 = 41;
    pub const CMP_DEVICE_NOT_SUPPORTED: u32 = 42;
    pub const UNKNOWN: u32 = 999;
}

/// What a CUPTI or CUDA call answered, other than success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CuptiError {
    /// A `CUptiResult` (see [`code`]).
    Cupti(u32),
    /// A `CUresult` of the CUDA driver API (the sampler's own context).
    Cuda(u32),
    /// The loaded library lacks this symbol (a CUPTI older than 12.6 has no PM sampling).
    FunctionNotFound(&'static str),
    /// A handle this implementation did not issue, or already released; or an argument the
    /// binding refuses before calling (a metric name with a NUL, an empty set).
    InvalidArgument(&'static str),
}

impl CuptiError {
    /// The `cupti_result.h` name of a CUPTI code, without `CUPTI_ERROR_`.
    pub fn cupti_name(c: u32) -> &'static str {
        match c {
            1 => "INVALID_PARAMETER",
            2 => "INVALID_DEVICE",
            3 => "INVALID_CONTEXT",
            7 => "INVALID_OPERATION",
            8 => "OUT_OF_MEMORY",
            9 => "HARDWARE",
            10 => "PARAMETER_SIZE_NOT_SUFFICIENT",
            11 => "API_NOT_IMPLEMENTED",
            12 => "MAX_LIMIT_REACHED",
            13 => "NOT_READY",
            14 => "NOT_COMPATIBLE",
            15 => "NOT_INITIALIZED",
            17 => "INVALID_METRIC_NAME",
            23 => "DISABLED",
            26 => "HARDWARE_BUSY",
            27 => "NOT_SUPPORTED",
            33 => "VIRTUALIZED_DEVICE_NOT_SUPPORTED",
            35 => "INSUFFICIENT_PRIVILEGES",
            36 => "OLD_PROFILER_API_INITIALIZED",
            39 => "MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
            40 => "VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
            41 => "CONFIDENTIAL_COMPUTING_NOT_SUPPORTED",
            42 => "CMP_DEVICE_NOT_SUPPORTED",
            999 => "UNKNOWN",
            _ => "UNLISTED",
        }
    }

    /// The CUPTI code, if this is one.
    pub fn cupti_code(&self) -> Option<u32> {
        match self {
            CuptiError::Cupti(c) => Some(*c),
            _ => None,
        }
    }

    /// Another client holds the performance monitors: worth retrying later.
    pub fn is_busy(&self) -> bool {
        self.cupti_code() == Some(code::HARDWARE_BUSY)
    }

    /// The user may not read the counters.
    pub fn is_privileges(&self) -> bool {
        matches!(
            self.cupti_code(),
            Some(code::INSUFFICIENT_PRIVILEGES | code::VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
        )
    }
}

impl fmt::Display for CuptiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CuptiError::Cupti(c) => write!(f, "CUPTI_ERROR_{} ({c})", CuptiError::cupti_name(*c)),
            CuptiError::Cuda(c) => write!(f, "CUDA driver error {c}"),
            CuptiError::FunctionNotFound(s) => write!(
                f,
                "{s} not found in the loaded CUPTI (PM sampling needs CUPTI 12.6 or newer)"
            ),
            CuptiError::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
        }
    }
}

impl std::error::Error for CuptiError {}

pub type CuptiResult<T> = Result<T, CuptiError>;

/// `CUpti_Profiler_Support_Level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SupportLevel {
    #[default]
    Unknown,
    Unsupported,
    /// Supported by the hardware but turned off (vGPU without profiling enabled).
    Disabled,
    Supported,
}

impl SupportLevel {
    /// From the C enum's value.
    pub fn from_code(c: u32) -> SupportLevel {
        match c {
            1 => SupportLevel::Unsupported,
            2 => SupportLevel::Disabled,
            3 => SupportLevel::Supported,
            _ => SupportLevel::Unknown,
        }
    }
}

/// `cuptiProfilerDeviceSupported` for the PM-sampling API: the overall answer and the
/// configuration flags that explain a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceSupport {
    pub overall: SupportLevel,
    pub architecture: SupportLevel,
    pub sli: SupportLevel,
    pub vgpu: SupportLevel,
    pub confidential_compute: SupportLevel,
    pub cmp: SupportLevel,
    pub wsl: SupportLevel,
}

/// `CUpti_MetricType` of a base metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Ratio,
    Throughput,
}

impl MetricType {
    pub fn from_code(c: u32) -> Option<MetricType> {
        match c {
            0 => Some(MetricType::Counter),
            1 => Some(MetricType::Ratio),
            2 => Some(MetricType::Throughput),
            _ => None,
        }
    }
}

/// `cuptiProfilerHostGetMetricProperties`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricProperties {
    pub description: String,
    /// The hardware unit the metric counts in (`gr`, `sm`, `dram`).
    pub hw_unit: String,
    /// The dimension of the values (`cycle`, `byte`, `%`, `ns`).
    pub dim_unit: String,
    pub metric_type: MetricType,
}

/// `cuptiPmSamplingDecodeData`'s outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Decoded {
    /// `CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL`: the image filled before the
    /// hardware buffer was drained; decode again after re-initialising it.
    pub counter_data_full: bool,
    /// The hardware buffer overflowed: samples were lost, and the session cannot recover
    /// (`cupti-pm-sampling.md`, "Known limits").
    pub overflow: bool,
}

/// `cuptiPmSamplingGetCounterDataInfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CounterDataInfo {
    pub total: usize,
    pub populated: usize,
    pub completed: usize,
}

/// What `cuptiPmSamplingSetConfig` is given besides the config image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplingConfig {
    /// `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL`: nanoseconds between samples (1 ms
    /// and 100 µs were measured without gaps on the H100).
    pub interval_ns: u64,
    /// Bytes of the hardware buffer the raw records go to until decoded.
    pub hardware_buffer_bytes: usize,
}

/// The CUPTI calls of the PM-sampling sequence, in the order the reference doc lists them.
/// Device indices are CUDA ordinals. All calls happen on the sampler's own thread; the trait
/// still requires `Send` so the sampler can be moved onto it.
pub trait CuptiApi: Send {
    /// `cuInit`, `cuDeviceGet`, `cuDevicePrimaryCtxRetain` and `cuCtxSetCurrent`: PM sampling
    /// needs a CUDA context of the sampler's own (the observed work need not be CUDA).
    fn cuda_context(&self, device: usize) -> CuptiResult<()>;
    /// `cuptiProfilerDeviceSupported` with `api = CUPTI_PROFILER_PM_SAMPLING`.
    fn device_supported(&self, device: usize) -> CuptiResult<DeviceSupport>;
    /// `cuptiProfilerInitialize`.
    fn profiler_initialize(&self) -> CuptiResult<()>;
    /// `cuptiProfilerDeInitialize`.
    fn profiler_deinitialize(&self) -> CuptiResult<()>;
    /// `cuptiDeviceGetChipName` (`GH100`).
    fn chip_name(&self, device: usize) -> CuptiResult<String>;
    /// `cuptiPmSamplingGetCounterAvailability`, size then image.
    fn counter_availability(&self, device: usize) -> CuptiResult<Vec<u8>>;
    /// `cuptiProfilerHostInitialize` for PM sampling on `chip`.
    fn host_initialize(&self, chip: &str, availability: &[u8]) -> CuptiResult<HostObject>;
    /// `cuptiProfilerHostDeinitialize`.
    fn host_deinitialize(&self, host: HostObject) -> CuptiResult<()>;
    /// `cuptiProfilerHostGetMetricProperties` of one metric (base name or full name).
    fn metric_properties(&self, host: HostObject, metric: &CStr) -> CuptiResult<MetricProperties>;
    /// `cuptiProfilerHostConfigAddMetrics`: adds to what the host object already holds.
    fn config_add_metrics(&self, host: HostObject, metrics: &[&CStr]) -> CuptiResult<()>;
    /// `cuptiProfilerHostGetConfigImageSize` then `…GetConfigImage`.
    fn config_image(&self, host: HostObject) -> CuptiResult<Vec<u8>>;
    /// `cuptiProfilerHostGetNumOfPasses` of a config image (PM sampling needs 1).
    fn num_passes(&self, config_image: &[u8]) -> CuptiResult<usize>;
    /// `cuptiPmSamplingEnable`.
    fn pm_enable(&self, device: usize) -> CuptiResult<Sampler>;
    /// `cuptiPmSamplingSetConfig` with the time trigger.
    fn pm_set_config(&self, s: Sampler, config_image: &[u8], cfg: SamplingConfig) -> CuptiResult<()>;
    /// `cuptiPmSamplingGetCounterDataSize` for `max_samples` samples of `metrics`.
    fn pm_counter_data_size(&self, s: Sampler, metrics: &[&CStr], max_samples: u32) -> CuptiResult<usize>;
    /// `cuptiPmSamplingCounterDataImageInitialize` over the whole of `image`.
    fn pm_counter_data_initialize(&self, s: Sampler, image: &mut [u8]) -> CuptiResult<()>;
    /// `cuptiPmSamplingStart`.
    fn pm_start(&self, s: Sampler) -> CuptiResult<()>;
    /// `cuptiPmSamplingStop`.
    fn pm_stop(&self, s: Sampler) -> CuptiResult<()>;
    /// `cuptiPmSamplingDecodeData`: moves what the hardware buffer holds into `image`.
    fn pm_decode(&self, s: Sampler, image: &mut [u8]) -> CuptiResult<Decoded>;
    /// `cuptiPmSamplingGetCounterDataInfo`.
    fn pm_counter_data_info(&self, image: &[u8]) -> CuptiResult<CounterDataInfo>;
    /// `cuptiPmSamplingCounterDataGetSampleInfo`: (start, end) of sample `index` in GPU
    /// nanoseconds on the Unix epoch.
    fn pm_sample_info(&self, s: Sampler, image: &[u8], index: usize) -> CuptiResult<(u64, u64)>;
    /// `cuptiProfilerHostEvaluateToGpuValues`: `out[i]` gets `metrics[i]` of sample `index`
    /// (`out.len() == metrics.len()`).
    fn evaluate(
        &self,
        host: HostObject,
        image: &[u8],
        index: usize,
        metrics: &[&CStr],
        out: &mut [f64],
    ) -> CuptiResult<()>;
    /// `cuptiPmSamplingDisable`.
    fn pm_disable(&self, s: Sampler) -> CuptiResult<()>;
}
