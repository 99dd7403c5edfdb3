//! The seam between the NVIDIA counter sources and NVML: exactly the calls the `nvml` and `gpm`
//! sources make, in Rust types. [`super::dl`] implements it over the real `libnvidia-ml.so.1`,
//! [`super::fake`] over a script, so every source behaviour is tested on machines without an
//! NVIDIA GPU.

use std::fmt;

/// A device as NVML hands it out (`nvmlDevice_t`). The value is opaque: an implementation only
/// accepts handles it issued itself (the dlopen binding checks, so a forged handle never reaches
/// the driver as a pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device(pub u64);

/// A GPM sample buffer (`nvmlGpmSample_t`), opaque like [`Device`]; live from
/// [`NvmlApi::gpm_sample_alloc`] to [`NvmlApi::gpm_sample_free`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpmSample(pub u64);

/// `nvmlReturn_t` values other than success. Codes from `nvml.h`; [`NvmlError::Other`] keeps any
/// code a newer driver adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NvmlError {
    Uninitialized,
    InvalidArgument,
    NotSupported,
    NoPermission,
    AlreadyInitialized,
    NotFound,
    InsufficientSize,
    InsufficientPower,
    DriverNotLoaded,
    Timeout,
    IrqIssue,
    LibraryNotFound,
    /// Also what the dlopen binding answers for a symbol the installed driver lacks (a driver
    /// older than the call), as NVML's own loader stubs do.
    FunctionNotFound,
    CorruptedInforom,
    GpuIsLost,
    ResetRequired,
    OperatingSystem,
    LibRmVersionMismatch,
    InUse,
    Memory,
    NoData,
    InsufficientResources,
    ArgumentVersionMismatch,
    Deprecated,
    NotReady,
    GpuNotFound,
    InvalidState,
    Unknown,
    Other(u32),
}

impl NvmlError {
    /// The error for an `nvmlReturn_t`; `None` for `NVML_SUCCESS` (0).
    pub fn from_code(code: u32) -> Option<NvmlError> {
        use NvmlError::*;
        Some(match code {
            0 => return None,
            1 => Uninitialized,
            2 => InvalidArgument,
            3 => NotSupported,
            4 => NoPermission,
            5 => AlreadyInitialized,
            6 => NotFound,
            7 => InsufficientSize,
            8 => InsufficientPower,
            9 => DriverNotLoaded,
            10 => Timeout,
            11 => IrqIssue,
            12 => LibraryNotFound,
            13 => FunctionNotFound,
            14 => CorruptedInforom,
            15 => GpuIsLost,
            16 => ResetRequired,
            17 => OperatingSystem,
            18 => LibRmVersionMismatch,
            19 => InUse,
            20 => Memory,
            21 => NoData,
            23 => InsufficientResources,
            25 => ArgumentVersionMismatch,
            26 => Deprecated,
            27 => NotReady,
            28 => GpuNotFound,
            29 => InvalidState,
            999 => Unknown,
            c => Other(c),
        })
    }

    /// The `nvmlReturn_t` code.
    pub fn code(self) -> u32 {
        use NvmlError::*;
        match self {
            Uninitialized => 1,
            InvalidArgument => 2,
            NotSupported => 3,
            NoPermission => 4,
            AlreadyInitialized => 5,
            NotFound => 6,
            InsufficientSize => 7,
            InsufficientPower => 8,
            DriverNotLoaded => 9,
            Timeout => 10,
            IrqIssue => 11,
            LibraryNotFound => 12,
            FunctionNotFound => 13,
            CorruptedInforom => 14,
            GpuIsLost => 15,
            ResetRequired => 16,
            OperatingSystem => 17,
            LibRmVersionMismatch => 18,
            InUse => 19,
            Memory => 20,
            NoData => 21,
            InsufficientResources => 23,
            ArgumentVersionMismatch => 25,
            Deprecated => 26,
            NotReady => 27,
            GpuNotFound => 28,
            InvalidState => 29,
            Unknown => 999,
            Other(c) => c,
        }
    }

    /// The `nvml.h` name without its `NVML_ERROR_` prefix.
    pub fn name(self) -> &'static str {
        use NvmlError::*;
        match self {
            Uninitialized => "UNINITIALIZED",
            InvalidArgument => "INVALID_ARGUMENT",
            NotSupported => "NOT_SUPPORTED",
            NoPermission => "NO_PERMISSION",
            AlreadyInitialized => "ALREADY_INITIALIZED",
            NotFound => "NOT_FOUND",
            InsufficientSize => "INSUFFICIENT_SIZE",
            InsufficientPower => "INSUFFICIENT_POWER",
            DriverNotLoaded => "DRIVER_NOT_LOADED",
            Timeout => "TIMEOUT",
            IrqIssue => "IRQ_ISSUE",
            LibraryNotFound => "LIBRARY_NOT_FOUND",
            FunctionNotFound => "FUNCTION_NOT_FOUND",
            CorruptedInforom => "CORRUPTED_INFOROM",
            GpuIsLost => "GPU_IS_LOST",
            ResetRequired => "RESET_REQUIRED",
            OperatingSystem => "OPERATING_SYSTEM",
            LibRmVersionMismatch => "LIB_RM_VERSION_MISMATCH",
            InUse => "IN_USE",
            Memory => "MEMORY",
            NoData => "NO_DATA",
            InsufficientResources => "INSUFFICIENT_RESOURCES",
            ArgumentVersionMismatch => "ARGUMENT_VERSION_MISMATCH",
            Deprecated => "DEPRECATED",
            NotReady => "NOT_READY",
            GpuNotFound => "GPU_NOT_FOUND",
            InvalidState => "INVALID_STATE",
            Unknown => "UNKNOWN",
            Other(_) => "UNLISTED",
        }
    }

    /// The device or the driver under it is gone: a source reading it must stop and start over
    /// (re-init) later, not keep asking the same handle.
    pub fn is_lost(self) -> bool {
        matches!(
            self,
            NvmlError::GpuIsLost
                | NvmlError::ResetRequired
                | NvmlError::GpuNotFound
                | NvmlError::DriverNotLoaded
                | NvmlError::Uninitialized
        )
    }

    /// The answer will not change for this device while the process lives: the call is not
    /// worth making again.
    pub fn is_permanent(self) -> bool {
        matches!(
            self,
            NvmlError::NotSupported | NvmlError::NoPermission | NvmlError::FunctionNotFound | NvmlError::Deprecated
        )
    }
}

impl fmt::Display for NvmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NVML_ERROR_{} ({})", self.name(), self.code())
    }
}

impl std::error::Error for NvmlError {}

pub type NvmlResult<T> = Result<T, NvmlError>;

/// `nvmlPciInfo_t`'s identifying part. NVML has no PCI function: NVIDIA GPUs are function 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PciInfo {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
    /// `pciDeviceId`: the device id in the high 16 bits, the vendor id (0x10de) in the low.
    pub ids: u32,
}

impl PciInfo {
    /// Whether both name the same bus address (the ids aside: a GPU hint has none).
    pub fn same_address(&self, o: &PciInfo) -> bool {
        (self.domain, self.bus, self.device) == (o.domain, o.bus, o.device)
    }
}

/// `nvmlUtilization_t`: percent of the driver's last sample period (⅙ s to 1 s) in which a kernel
/// ran (`gpu`) or device memory was read or written (`memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Utilization {
    pub gpu: u32,
    pub memory: u32,
}

/// `nvmlClockType_t` for the clocks the source reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Clock {
    Graphics,
    Sm,
    Memory,
}

impl Clock {
    /// The `nvmlClockType_t` value.
    pub fn code(self) -> u32 {
        match self {
            Clock::Graphics => 0,
            Clock::Sm => 1,
            Clock::Memory => 2,
        }
    }
}

/// Device memory in bytes (`nvmlMemory_v2_t` where the driver has it, which keeps memory the
/// driver reserves out of `used`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryInfo {
    pub used: u64,
    pub total: u64,
}

/// One `nvmlProcessUtilizationSample_t`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessUtilSample {
    pub pid: u32,
    /// The driver's CPU timestamp in µs; only compared with other such timestamps and passed back
    /// as `lastSeenTimeStamp`.
    pub timestamp_us: u64,
    pub sm_pct: u32,
    pub mem_pct: u32,
}

/// Which running-process list to ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcessKind {
    Graphics,
    Compute,
}

/// One `nvmlProcessInfo_t` entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    pub pid: u32,
    /// `None`: `NVML_VALUE_NOT_AVAILABLE` (WDDM, some container setups).
    pub used_bytes: Option<u64>,
}

/// One metric of [`NvmlApi::gpm_metrics_get`]: the value, or the per-metric `nvmlReturn` the
/// driver put next to it.
pub type GpmValue = Result<f64, NvmlError>;

/// The NVML calls the NVIDIA sources make. Implementations must be callable from any thread
/// (NVML documents itself as thread-safe); the sources call them from the collector thread only.
pub trait NvmlApi: Send + Sync {
    /// `nvmlInit_v2`. Reference-counted by NVML: every successful call is paired with a
    /// [`NvmlApi::shutdown`].
    fn init(&self) -> NvmlResult<()>;
    /// `nvmlShutdown`.
    fn shutdown(&self) -> NvmlResult<()>;
    /// `nvmlDeviceGetCount_v2`.
    fn device_count(&self) -> NvmlResult<u32>;
    /// `nvmlDeviceGetHandleByIndex_v2`.
    fn device_by_index(&self, index: u32) -> NvmlResult<Device>;
    /// `nvmlDeviceGetPciInfo_v3`.
    fn pci_info(&self, dev: Device) -> NvmlResult<PciInfo>;
    /// `nvmlDeviceGetName` ("NVIDIA H100 80GB HBM3").
    fn name(&self, dev: Device) -> NvmlResult<String>;
    /// `nvmlDeviceGetUUID` ("GPU-…").
    fn uuid(&self, dev: Device) -> NvmlResult<String>;
    /// `nvmlDeviceGetUtilizationRates` (~3 ms on the H100).
    fn utilization(&self, dev: Device) -> NvmlResult<Utilization>;
    /// `nvmlDeviceGetClockInfo`, MHz.
    fn clock_mhz(&self, dev: Device, clock: Clock) -> NvmlResult<u32>;
    /// `nvmlDeviceGetPowerUsage`, mW.
    fn power_mw(&self, dev: Device) -> NvmlResult<u32>;
    /// `nvmlDeviceGetTotalEnergyConsumption`, mJ since the driver loaded (3–12 ms on the H100).
    fn total_energy_mj(&self, dev: Device) -> NvmlResult<u64>;
    /// GPU core temperature, °C (`nvmlDeviceGetTemperatureV`, or `nvmlDeviceGetTemperature` on
    /// drivers without it).
    fn temperature_c(&self, dev: Device) -> NvmlResult<i32>;
    /// `nvmlDeviceGetMemoryInfo_v2` (or `nvmlDeviceGetMemoryInfo` on drivers without it).
    fn memory(&self, dev: Device) -> NvmlResult<MemoryInfo>;
    /// `nvmlDeviceGetCurrentClocksEventReasons` (formerly `…ThrottleReasons`): a bitmask.
    fn clocks_event_reasons(&self, dev: Device) -> NvmlResult<u64>;
    /// `nvmlDeviceGetProcessUtilization`: every process's samples newer than `last_seen_us`
    /// (2–3 ms on the H100). `Err(NotFound)`: no samples since then (an idle GPU).
    fn process_utilization(&self, dev: Device, last_seen_us: u64) -> NvmlResult<Vec<ProcessUtilSample>>;
    /// `nvmlDeviceGet{Graphics,Compute}RunningProcesses_v3`.
    fn running_processes(&self, dev: Device, kind: ProcessKind) -> NvmlResult<Vec<ProcessMemory>>;
    /// `nvmlGpmQueryDeviceSupport`: false before Hopper.
    fn gpm_supported(&self, dev: Device) -> NvmlResult<bool>;
    /// `nvmlGpmSampleAlloc`.
    fn gpm_sample_alloc(&self) -> NvmlResult<GpmSample>;
    /// `nvmlGpmSampleFree`.
    fn gpm_sample_free(&self, sample: GpmSample) -> NvmlResult<()>;
    /// `nvmlGpmSampleGet` (~53 µs on the H100).
    fn gpm_sample_get(&self, dev: Device, sample: GpmSample) -> NvmlResult<()>;
    /// `nvmlGpmMetricsGet` for `ids` between `older` and `newer`; `out[i]` gets metric `ids[i]`
    /// (`out.len() == ids.len()`). At most [`GPM_IDS_PER_CALL`] ids (~1.4 ms per call).
    fn gpm_metrics_get(&self, older: GpmSample, newer: GpmSample, ids: &[u32], out: &mut [GpmValue]) -> NvmlResult<()>;
}

/// Ids one `nvmlGpmMetricsGet` call may ask for. `NVML_GPM_METRIC_MAX` was 98 in the 11.8–12.8
/// headers and grew since with the struct version left at 1; driver 580 rejected the whole call
/// past 210 (`nvml-gpm.md`), so the smallest maximum any GPM driver accepts is the safe bound.
pub const GPM_IDS_PER_CALL: usize = 98;
