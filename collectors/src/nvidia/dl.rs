//! The real [`NvmlApi`]: `libnvidia-ml.so.1` opened with `dlopen` at run time.
//!
//! Why a thin binding of our own rather than the `nvml-wrapper` crate: framescope is loaded into
//! every Vulkan/GL process as a layer, so it must never fail to load where there is no NVIDIA
//! driver (no link-time dependency), and it needs GPM with the struct quirks measured on the
//! H100 (`nvml-gpm.md`): version is the plain integer 1, and `NVML_GPM_METRIC_MAX` differs
//! between headers and drivers. `nvml-wrapper` 0.12 is built with a 98-entry array and asserts on
//! it, pulls in `libloading` and a wrapper type per call, while the sources need about twenty
//! functions whose layouts are pinned below.
//!
//! Handles ([`Device`], [`GpmSample`]) cross the seam as integers. So that a safe caller can
//! never make the driver dereference a pointer it made up, this binding passes only handles it
//! got from the driver itself and still holds (devices until the last `nvmlShutdown`, samples
//! until `nvmlGpmSampleFree`); anything else is `INVALID_ARGUMENT`.

use super::api::*;
use framescope_core::sync::Mutex;
use std::ffi::{c_char, c_uint, c_ulonglong, c_void, CStr};
use std::ptr;

type Ret = c_uint;
type RawDevice = *mut c_void;
type RawSample = *mut c_void;

const SUCCESS: Ret = 0;
const INSUFFICIENT_SIZE: Ret = 7;

/// `NVML_DEVICE_NAME_V2_BUFFER_SIZE` and `NVML_DEVICE_UUID_V2_BUFFER_SIZE` (96 measured on the H100).
const STRING_BUFFER: usize = 96;
/// `NVML_TEMPERATURE_GPU`.
const TEMPERATURE_GPU: c_uint = 0;
/// `NVML_VALUE_NOT_AVAILABLE` as `unsigned long long`.
const VALUE_NOT_AVAILABLE: u64 = u64::MAX;
/// `nvmlTemperature_v1`: `NVML_STRUCT_VERSION(Temperature, 1)` = sizeof (12) | 1 << 24, the value
/// measured to work on driver 580.
const TEMPERATURE_V1: c_uint = 0x0100_000C;
/// `nvmlMemory_v2`: sizeof (40) | 2 << 24.
const MEMORY_V2: c_uint = 0x0200_0028;
/// `NVML_GPM_METRICS_GET_VERSION` and `NVML_GPM_SUPPORT_VERSION` are the plain integer 1, not
/// `NVML_STRUCT_VERSION(…)`: 0x01000008 returned `ARGUMENT_VERSION_MISMATCH` on the H100.
const GPM_VERSION: c_uint = 1;
/// Entries of `nvmlGpmMetricsGet_t::metrics`. The struct is passed by pointer and its size is
/// the `NVML_GPM_METRIC_MAX` of whichever header the *driver* was built with (98, 210, 333, then
/// 477 in pynvml 13.615) under the same version 1, so the buffer is as large as the largest known
/// one: a driver that touches its whole array stays inside ours. We still ask ≤ 98 ids per call.
const GPM_METRIC_ENTRIES: usize = 477;

/// `nvmlPciInfo_t` (68 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct PciInfoC {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// `nvmlUtilization_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct UtilizationC {
    gpu: c_uint,
    memory: c_uint,
}

/// `nvmlTemperature_v1_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TemperatureC {
    version: c_uint,
    sensor_type: c_uint,
    temperature: i32,
}

/// `nvmlMemory_v2_t` (40 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct MemoryV2C {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlMemory_t` (v1), for drivers older than `nvmlDeviceGetMemoryInfo_v2`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct MemoryV1C {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlProcessUtilizationSample_t` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcUtilC {
    pid: c_uint,
    time_stamp: c_ulonglong,
    sm_util: c_uint,
    mem_util: c_uint,
    enc_util: c_uint,
    dec_util: c_uint,
}

/// `nvmlProcessInfo_t` as the `_v3` calls fill it (24 bytes). The CUDA 12.0 header briefly gave
/// this struct an extra `usedGpuCcProtectedMemory` (32 bytes); later headers and pynvml went back
/// to 24 (`c_nvmlProcessInfo_v3_t = c_nvmlProcessInfo_v2_t`). Buffers are sized for the 32-byte
/// reading anyway (see `running_processes`) so neither reading can make the driver write past them.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcInfoC {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// `nvmlGpmSupport_t` (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct GpmSupportC {
    version: c_uint,
    is_supported_device: c_uint,
}

/// `nvmlGpmMetric_t` (40 bytes). The three `metricInfo` strings are `char *` the driver fills;
/// they are held as `usize` (same size and alignment as a pointer on every Linux target) because
/// this binding never reads them, and so the buffer stays `Send`.
#[repr(C)]
#[derive(Clone, Copy)]
struct GpmMetricC {
    metric_id: c_uint,
    nvml_return: Ret,
    value: f64,
    short_name: usize,
    long_name: usize,
    unit: usize,
}

const GPM_METRIC_EMPTY: GpmMetricC = GpmMetricC {
    metric_id: 0,
    nvml_return: 0,
    value: 0.0,
    short_name: 0,
    long_name: 0,
    unit: 0,
};

/// `nvmlGpmMetricsGet_t` (24 + 40 × entries bytes). The samples are `nvmlGpmSample_t` pointers,
/// held as `usize` for the same reason as above.
#[repr(C)]
struct GpmMetricsGetC {
    version: c_uint,
    num_metrics: c_uint,
    sample1: usize,
    sample2: usize,
    metrics: [GpmMetricC; GPM_METRIC_ENTRIES],
}

// Layouts pinned to the sizes `nvml.h` gives (64-bit Linux; `nvml-gpm.md` measured 40-byte GPM
// metrics and a 24 + 40 × MAX request there).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(std::mem::size_of::<PciInfoC>() == 68);
    assert!(std::mem::size_of::<MemoryV2C>() == 40);
    assert!(std::mem::size_of::<TemperatureC>() == 12);
    assert!(std::mem::size_of::<ProcUtilC>() == 32);
    assert!(std::mem::size_of::<ProcInfoC>() == 24);
    assert!(std::mem::size_of::<GpmSupportC>() == 8);
    assert!(std::mem::size_of::<GpmMetricC>() == 40);
    assert!(std::mem::size_of::<GpmMetricsGetC>() == 24 + 40 * GPM_METRIC_ENTRIES);
};

type FnVoid = unsafe extern "C" fn() -> Ret;
type FnCount = unsafe extern "C" fn(*mut c_uint) -> Ret;
type FnByIndex = unsafe extern "C" fn(c_uint, *mut RawDevice) -> Ret;
type FnPci = unsafe extern "C" fn(RawDevice, *mut PciInfoC) -> Ret;
type FnString = unsafe extern "C" fn(RawDevice, *mut c_char, c_uint) -> Ret;
type FnUtil = unsafe extern "C" fn(RawDevice, *mut UtilizationC) -> Ret;
type FnClock = unsafe extern "C" fn(RawDevice, c_uint, *mut c_uint) -> Ret;
type FnU32 = unsafe extern "C" fn(RawDevice, *mut c_uint) -> Ret;
type FnU64 = unsafe extern "C" fn(RawDevice, *mut c_ulonglong) -> Ret;
type FnTempV = unsafe extern "C" fn(RawDevice, *mut TemperatureC) -> Ret;
type FnTemp = unsafe extern "C" fn(RawDevice, c_uint, *mut c_uint) -> Ret;
type FnMemV2 = unsafe extern "C" fn(RawDevice, *mut MemoryV2C) -> Ret;
type FnMemV1 = unsafe extern "C" fn(RawDevice, *mut MemoryV1C) -> Ret;
type FnProcUtil = unsafe extern "C" fn(RawDevice, *mut ProcUtilC, *mut c_uint, c_ulonglong) -> Ret;
type FnProcs = unsafe extern "C" fn(RawDevice, *mut c_uint, *mut ProcInfoC) -> Ret;
type FnGpmSupport = unsafe extern "C" fn(RawDevice, *mut GpmSupportC) -> Ret;
type FnGpmAlloc = unsafe extern "C" fn(*mut RawSample) -> Ret;
type FnGpmFree = unsafe extern "C" fn(RawSample) -> Ret;
type FnGpmGet = unsafe extern "C" fn(RawDevice, RawSample) -> Ret;
type FnGpmMetrics = unsafe extern "C" fn(*mut GpmMetricsGetC) -> Ret;

/// The entry points. The first four are required (without them nothing works); the rest are
/// `None` on drivers older than the call and answer `FUNCTION_NOT_FOUND`.
struct Fns {
    init: FnVoid,
    shutdown: FnVoid,
    count: FnCount,
    by_index: FnByIndex,
    pci_info: Option<FnPci>,
    name: Option<FnString>,
    uuid: Option<FnString>,
    utilization: Option<FnUtil>,
    clock: Option<FnClock>,
    power: Option<FnU32>,
    energy: Option<FnU64>,
    temperature_v: Option<FnTempV>,
    temperature: Option<FnTemp>,
    memory_v2: Option<FnMemV2>,
    memory_v1: Option<FnMemV1>,
    event_reasons: Option<FnU64>,
    process_util: Option<FnProcUtil>,
    graphics_procs: Option<FnProcs>,
    compute_procs: Option<FnProcs>,
    gpm_support: Option<FnGpmSupport>,
    gpm_alloc: Option<FnGpmAlloc>,
    gpm_free: Option<FnGpmFree>,
    gpm_get: Option<FnGpmGet>,
    gpm_metrics: Option<FnGpmMetrics>,
}

/// The `dlopen` handle.
struct LibHandle(*mut c_void);

// SAFETY: the handle is only passed to `dlsym` (thread-safe) and to `dlclose` once, in `Drop`;
// nothing is reached through it directly.
unsafe impl Send for LibHandle {}
// SAFETY: as above; shared use is `dlsym` only, which glibc documents as MT-Safe.
unsafe impl Sync for LibHandle {}

/// What the binding has handed out and not taken back.
#[derive(Default)]
struct Handles {
    /// Successful `nvmlInit_v2` calls not yet matched by `nvmlShutdown`.
    inits: u32,
    devices: Vec<u64>,
    samples: Vec<u64>,
}

/// `libnvidia-ml.so.1`, loaded.
pub struct DlNvml {
    lib: LibHandle,
    fns: Fns,
    handles: Mutex<Handles>,
    gpm_request: Mutex<Box<GpmMetricsGetC>>,
}

/// The library's soname: the unversioned `libnvidia-ml.so` only exists where the CUDA
/// development files are installed.
pub const LIBRARY: &str = "libnvidia-ml.so.1";

fn check(r: Ret) -> NvmlResult<()> {
    match NvmlError::from_code(r) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// The text before the first NUL of a buffer the driver filled (all of it if it has none).
fn c_string(buf: &[u8]) -> String {
    match CStr::from_bytes_until_nul(buf) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(buf).into_owned(),
    }
}

/// The current `dlerror()` text, or an empty string.
fn dl_error() -> String {
    // SAFETY: `dlerror` takes no arguments; the string it returns stays valid until the next
    // `dlerror` call on this thread, and is copied out before anything else runs here.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            String::new()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl DlNvml {
    /// Opens `libnvidia-ml.so.1`. `Err`: a sentence for the header's `unavailable`.
    pub fn load() -> Result<DlNvml, String> {
        Self::load_from(c"libnvidia-ml.so.1")
    }

    /// Opens `name` as if it were NVML (tests point it at libraries that are not).
    pub fn load_from(name: &CStr) -> Result<DlNvml, String> {
        let shown = name.to_string_lossy();
        // SAFETY: `name` is a NUL-terminated string that outlives the call. RTLD_LOCAL keeps
        // NVML's symbols out of the app's global namespace; RTLD_NOW surfaces a broken install
        // here rather than at the first call on the collector thread.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            let why = dl_error();
            return Err(if why.contains("No such file") || why.is_empty() {
                format!("{shown} not found: no NVIDIA driver")
            } else {
                format!("{shown} could not be loaded: {why}")
            });
        }
        let lib = LibHandle(h);
        let sym = |s: &CStr| -> *mut c_void {
            // SAFETY: `lib.0` is a live handle from `dlopen` (closed only in `Drop`, after this),
            // and `s` is NUL-terminated.
            unsafe { libc::dlsym(lib.0, s.as_ptr()) }
        };
        macro_rules! opt {
            ($name:literal, $ty:ty) => {{
                let p = sym($name);
                if p.is_null() {
                    None
                } else {
                    // SAFETY: `p` is the address of the exported NVML function `$name`, whose C
                    // prototype in `nvml.h` is the one `$ty` spells (same argument and return
                    // types, C ABI). A data pointer and a function pointer have the same size
                    // on every target `dlsym` exists on.
                    Some(unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
                }
            }};
        }
        macro_rules! req {
            ($name:literal, $ty:ty) => {
                match opt!($name, $ty) {
                    Some(f) => f,
                    None => {
                        let n = $name.to_string_lossy();
                        // SAFETY: `lib.0` came from `dlopen` and is closed exactly once, here,
                        // on the only path that does not move it into a `DlNvml`.
                        unsafe { libc::dlclose(lib.0) };
                        return Err(format!("{shown} has no {n}: not a usable NVML library"));
                    }
                }
            };
        }
        let fns = Fns {
            init: req!(c"nvmlInit_v2", FnVoid),
            shutdown: req!(c"nvmlShutdown", FnVoid),
            count: req!(c"nvmlDeviceGetCount_v2", FnCount),
            by_index: req!(c"nvmlDeviceGetHandleByIndex_v2", FnByIndex),
            // `_v3` fixed the bus-id strings only; domain/bus/device (what is matched) are the
            // same in `_v2`.
            pci_info: opt!(c"nvmlDeviceGetPciInfo_v3", FnPci).or(opt!(c"nvmlDeviceGetPciInfo_v2", FnPci)),
            name: opt!(c"nvmlDeviceGetName", FnString),
            uuid: opt!(c"nvmlDeviceGetUUID", FnString),
            utilization: opt!(c"nvmlDeviceGetUtilizationRates", FnUtil),
            clock: opt!(c"nvmlDeviceGetClockInfo", FnClock),
            power: opt!(c"nvmlDeviceGetPowerUsage", FnU32),
            energy: opt!(c"nvmlDeviceGetTotalEnergyConsumption", FnU64),
            temperature_v: opt!(c"nvmlDeviceGetTemperatureV", FnTempV),
            temperature: opt!(c"nvmlDeviceGetTemperature", FnTemp),
            memory_v2: opt!(c"nvmlDeviceGetMemoryInfo_v2", FnMemV2),
            memory_v1: opt!(c"nvmlDeviceGetMemoryInfo", FnMemV1),
            // Renamed from `…ThrottleReasons` in R535; same prototype and bits.
            event_reasons: opt!(c"nvmlDeviceGetCurrentClocksEventReasons", FnU64)
                .or(opt!(c"nvmlDeviceGetCurrentClocksThrottleReasons", FnU64)),
            process_util: opt!(c"nvmlDeviceGetProcessUtilization", FnProcUtil),
            // `_v2` fills the same 24-byte entries as `_v3` (see `ProcInfoC`).
            graphics_procs: opt!(c"nvmlDeviceGetGraphicsRunningProcesses_v3", FnProcs)
                .or(opt!(c"nvmlDeviceGetGraphicsRunningProcesses_v2", FnProcs)),
            compute_procs: opt!(c"nvmlDeviceGetComputeRunningProcesses_v3", FnProcs)
                .or(opt!(c"nvmlDeviceGetComputeRunningProcesses_v2", FnProcs)),
            gpm_support: opt!(c"nvmlGpmQueryDeviceSupport", FnGpmSupport),
            gpm_alloc: opt!(c"nvmlGpmSampleAlloc", FnGpmAlloc),
            gpm_free: opt!(c"nvmlGpmSampleFree", FnGpmFree),
            gpm_get: opt!(c"nvmlGpmSampleGet", FnGpmGet),
            gpm_metrics: opt!(c"nvmlGpmMetricsGet", FnGpmMetrics),
        };
        Ok(DlNvml {
            lib,
            fns,
            handles: Mutex::new(Handles::default()),
            gpm_request: Mutex::new(Box::new(GpmMetricsGetC {
                version: GPM_VERSION,
                num_metrics: 0,
                sample1: 0,
                sample2: 0,
                metrics: [GPM_METRIC_EMPTY; GPM_METRIC_ENTRIES],
            })),
        })
    }

    /// The driver's pointer for a device handle this binding issued.
    fn raw_device(&self, dev: Device) -> NvmlResult<RawDevice> {
        let h = self.handles.lock();
        if h.inits == 0 {
            return Err(NvmlError::Uninitialized);
        }
        if h.devices.contains(&dev.0) {
            Ok(dev.0 as usize as RawDevice)
        } else {
            Err(NvmlError::InvalidArgument)
        }
    }

    /// The driver's pointer for a live sample this binding allocated.
    fn raw_sample(&self, s: GpmSample) -> NvmlResult<RawSample> {
        if self.handles.lock().samples.contains(&s.0) {
            Ok(s.0 as usize as RawSample)
        } else {
            Err(NvmlError::InvalidArgument)
        }
    }
}

impl Drop for DlNvml {
    fn drop(&mut self) {
        // SAFETY: `lib.0` came from `dlopen` and is closed once. Every function pointer in
        // `self.fns` dies with `self`, so none can be called after the library is unmapped.
        unsafe { libc::dlclose(self.lib.0) };
    }
}

impl NvmlApi for DlNvml {
    fn init(&self) -> NvmlResult<()> {
        // SAFETY: `nvmlInit_v2` takes no arguments.
        check(unsafe { (self.fns.init)() })?;
        self.handles.lock().inits += 1;
        Ok(())
    }

    fn shutdown(&self) -> NvmlResult<()> {
        let mut h = self.handles.lock();
        if h.inits == 0 {
            return Err(NvmlError::Uninitialized);
        }
        // SAFETY: `nvmlShutdown` takes no arguments; it is paired with a successful init.
        check(unsafe { (self.fns.shutdown)() })?;
        h.inits -= 1;
        if h.inits == 0 {
            // NVML documents device handles as invalid once the last init is shut down.
            h.devices.clear();
        }
        Ok(())
    }

    fn device_count(&self) -> NvmlResult<u32> {
        let mut n: c_uint = 0;
        // SAFETY: `n` is a valid, writable `unsigned int` for the duration of the call.
        check(unsafe { (self.fns.count)(&mut n) })?;
        Ok(n)
    }

    fn device_by_index(&self, index: u32) -> NvmlResult<Device> {
        let mut raw: RawDevice = ptr::null_mut();
        // SAFETY: `raw` is a valid, writable `nvmlDevice_t` slot for the duration of the call.
        check(unsafe { (self.fns.by_index)(index, &mut raw) })?;
        if raw.is_null() {
            return Err(NvmlError::Unknown);
        }
        let id = raw as usize as u64;
        let mut h = self.handles.lock();
        if h.inits == 0 {
            return Err(NvmlError::Uninitialized);
        }
        if !h.devices.contains(&id) {
            h.devices.push(id);
        }
        Ok(Device(id))
    }

    fn pci_info(&self, dev: Device) -> NvmlResult<PciInfo> {
        let f = self.fns.pci_info.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut p = PciInfoC {
            bus_id_legacy: [0; 16],
            domain: 0,
            bus: 0,
            device: 0,
            pci_device_id: 0,
            pci_sub_system_id: 0,
            bus_id: [0; 32],
        };
        // SAFETY: `d` is a device handle the driver issued (checked by `raw_device`); `p` is a
        // writable `nvmlPciInfo_t` of the layout `nvml.h` gives.
        check(unsafe { f(d, &mut p) })?;
        Ok(PciInfo {
            domain: p.domain,
            bus: p.bus,
            device: p.device,
            ids: p.pci_device_id,
        })
    }

    fn name(&self, dev: Device) -> NvmlResult<String> {
        let f = self.fns.name.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut buf = [0u8; STRING_BUFFER];
        // SAFETY: the driver writes at most `STRING_BUFFER` bytes (the length passed) into `buf`.
        check(unsafe { f(d, buf.as_mut_ptr().cast(), STRING_BUFFER as c_uint) })?;
        Ok(c_string(&buf))
    }

    fn uuid(&self, dev: Device) -> NvmlResult<String> {
        let f = self.fns.uuid.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut buf = [0u8; STRING_BUFFER];
        // SAFETY: the driver writes at most `STRING_BUFFER` bytes (the length passed) into `buf`.
        check(unsafe { f(d, buf.as_mut_ptr().cast(), STRING_BUFFER as c_uint) })?;
        Ok(c_string(&buf))
    }

    fn utilization(&self, dev: Device) -> NvmlResult<Utilization> {
        let f = self.fns.utilization.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut u = UtilizationC::default();
        // SAFETY: issued device handle; `u` is a writable `nvmlUtilization_t`.
        check(unsafe { f(d, &mut u) })?;
        Ok(Utilization {
            gpu: u.gpu,
            memory: u.memory,
        })
    }

    fn clock_mhz(&self, dev: Device, clock: Clock) -> NvmlResult<u32> {
        let f = self.fns.clock.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut v: c_uint = 0;
        // SAFETY: issued device handle; a valid `nvmlClockType_t`; `v` is writable.
        check(unsafe { f(d, clock.code(), &mut v) })?;
        Ok(v)
    }

    fn power_mw(&self, dev: Device) -> NvmlResult<u32> {
        let f = self.fns.power.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut v: c_uint = 0;
        // SAFETY: issued device handle; `v` is writable.
        check(unsafe { f(d, &mut v) })?;
        Ok(v)
    }

    fn total_energy_mj(&self, dev: Device) -> NvmlResult<u64> {
        let f = self.fns.energy.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut v: c_ulonglong = 0;
        // SAFETY: issued device handle; `v` is writable.
        check(unsafe { f(d, &mut v) })?;
        Ok(v)
    }

    fn temperature_c(&self, dev: Device) -> NvmlResult<i32> {
        let d = self.raw_device(dev)?;
        if let Some(f) = self.fns.temperature_v {
            let mut t = TemperatureC {
                version: TEMPERATURE_V1,
                sensor_type: TEMPERATURE_GPU,
                temperature: 0,
            };
            // SAFETY: issued device handle; `t` is a writable `nvmlTemperature_v1_t` whose
            // version field says so.
            match check(unsafe { f(d, &mut t) }) {
                Ok(()) => return Ok(t.temperature),
                // A driver that knows the call but another struct version: the old call has
                // the same answer.
                Err(NvmlError::ArgumentVersionMismatch) if self.fns.temperature.is_some() => {}
                Err(e) => return Err(e),
            }
        }
        let f = self.fns.temperature.ok_or(NvmlError::FunctionNotFound)?;
        let mut v: c_uint = 0;
        // SAFETY: issued device handle; `NVML_TEMPERATURE_GPU`; `v` is writable.
        check(unsafe { f(d, TEMPERATURE_GPU, &mut v) })?;
        Ok(i32::try_from(v).unwrap_or(i32::MAX))
    }

    fn memory(&self, dev: Device) -> NvmlResult<MemoryInfo> {
        let d = self.raw_device(dev)?;
        if let Some(f) = self.fns.memory_v2 {
            let mut m = MemoryV2C {
                version: MEMORY_V2,
                ..Default::default()
            };
            // SAFETY: issued device handle; `m` is a writable `nvmlMemory_v2_t` whose version
            // field says so.
            match check(unsafe { f(d, &mut m) }) {
                Ok(()) => {
                    return Ok(MemoryInfo {
                        used: m.used,
                        total: m.total,
                    })
                }
                Err(NvmlError::ArgumentVersionMismatch) if self.fns.memory_v1.is_some() => {}
                Err(e) => return Err(e),
            }
        }
        let f = self.fns.memory_v1.ok_or(NvmlError::FunctionNotFound)?;
        let mut m = MemoryV1C::default();
        // SAFETY: issued device handle; `m` is a writable `nvmlMemory_t`.
        check(unsafe { f(d, &mut m) })?;
        Ok(MemoryInfo {
            used: m.used,
            total: m.total,
        })
    }

    fn clocks_event_reasons(&self, dev: Device) -> NvmlResult<u64> {
        let f = self.fns.event_reasons.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut v: c_ulonglong = 0;
        // SAFETY: issued device handle; `v` is writable.
        check(unsafe { f(d, &mut v) })?;
        Ok(v)
    }

    fn process_utilization(&self, dev: Device, last_seen_us: u64) -> NvmlResult<Vec<ProcessUtilSample>> {
        let f = self.fns.process_util.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut count: c_uint = 0;
        // SAFETY: issued device handle; a null buffer with a count of 0 asks only for the count,
        // which the driver writes to `count`.
        let r = unsafe { f(d, ptr::null_mut(), &mut count, last_seen_us) };
        if r != SUCCESS && r != INSUFFICIENT_SIZE {
            check(r)?;
        }
        // The list can grow between the two calls: retry a few times with the new count.
        for _ in 0..3 {
            if count == 0 {
                return Ok(Vec::new());
            }
            let cap = count.saturating_add(4);
            let mut buf = vec![ProcUtilC::default(); cap as usize];
            count = cap;
            // SAFETY: issued device handle; `buf` holds `cap` writable entries, the count passed.
            let r = unsafe { f(d, buf.as_mut_ptr(), &mut count, last_seen_us) };
            if r == INSUFFICIENT_SIZE {
                continue;
            }
            check(r)?;
            buf.truncate(count.min(cap) as usize);
            return Ok(buf
                .iter()
                .map(|s| ProcessUtilSample {
                    pid: s.pid,
                    timestamp_us: s.time_stamp,
                    sm_pct: s.sm_util,
                    mem_pct: s.mem_util,
                })
                .collect());
        }
        Err(NvmlError::InsufficientSize)
    }

    fn running_processes(&self, dev: Device, kind: ProcessKind) -> NvmlResult<Vec<ProcessMemory>> {
        let f = match kind {
            ProcessKind::Graphics => self.fns.graphics_procs,
            ProcessKind::Compute => self.fns.compute_procs,
        }
        .ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut count: c_uint = 0;
        // SAFETY: issued device handle; a null buffer with a count of 0 asks only for the count.
        let r = unsafe { f(d, &mut count, ptr::null_mut()) };
        if r != SUCCESS && r != INSUFFICIENT_SIZE {
            check(r)?;
        }
        for _ in 0..3 {
            if count == 0 {
                return Ok(Vec::new());
            }
            let cap = count.saturating_add(4);
            // Room for `cap` entries of 32 bytes (the CUDA 12.0 reading of the struct) in 24-byte
            // entries, so the driver stays inside the buffer whichever size it writes.
            let entries = (cap as usize * 32).div_ceil(std::mem::size_of::<ProcInfoC>());
            let mut buf = vec![ProcInfoC::default(); entries];
            count = cap;
            // SAFETY: issued device handle; `buf` holds at least `cap` writable entries of either
            // layout, and `cap` is the count passed.
            let r = unsafe { f(d, &mut count, buf.as_mut_ptr()) };
            if r == INSUFFICIENT_SIZE {
                continue;
            }
            check(r)?;
            buf.truncate(count.min(cap) as usize);
            return Ok(buf
                .iter()
                .map(|p| ProcessMemory {
                    pid: p.pid,
                    used_bytes: (p.used_gpu_memory != VALUE_NOT_AVAILABLE).then_some(p.used_gpu_memory),
                })
                .collect());
        }
        Err(NvmlError::InsufficientSize)
    }

    fn gpm_supported(&self, dev: Device) -> NvmlResult<bool> {
        let f = self.fns.gpm_support.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let mut s = GpmSupportC {
            version: GPM_VERSION,
            is_supported_device: 0,
        };
        // SAFETY: issued device handle; `s` is a writable `nvmlGpmSupport_t` of version 1.
        check(unsafe { f(d, &mut s) })?;
        Ok(s.is_supported_device != 0)
    }

    fn gpm_sample_alloc(&self) -> NvmlResult<GpmSample> {
        let f = self.fns.gpm_alloc.ok_or(NvmlError::FunctionNotFound)?;
        let mut raw: RawSample = ptr::null_mut();
        // SAFETY: `raw` is a writable `nvmlGpmSample_t` slot.
        check(unsafe { f(&mut raw) })?;
        if raw.is_null() {
            return Err(NvmlError::Memory);
        }
        let id = raw as usize as u64;
        self.handles.lock().samples.push(id);
        Ok(GpmSample(id))
    }

    fn gpm_sample_free(&self, sample: GpmSample) -> NvmlResult<()> {
        let f = self.fns.gpm_free.ok_or(NvmlError::FunctionNotFound)?;
        let mut h = self.handles.lock();
        let Some(i) = h.samples.iter().position(|&s| s == sample.0) else {
            return Err(NvmlError::InvalidArgument);
        };
        h.samples.swap_remove(i);
        // SAFETY: a sample `nvmlGpmSampleAlloc` returned and not freed yet (it was still in the
        // live list, which it has now left, so it cannot be freed twice).
        check(unsafe { f(sample.0 as usize as RawSample) })
    }

    fn gpm_sample_get(&self, dev: Device, sample: GpmSample) -> NvmlResult<()> {
        let f = self.fns.gpm_get.ok_or(NvmlError::FunctionNotFound)?;
        let d = self.raw_device(dev)?;
        let s = self.raw_sample(sample)?;
        // SAFETY: issued device handle and a live sample buffer, both checked above.
        check(unsafe { f(d, s) })
    }

    fn gpm_metrics_get(&self, older: GpmSample, newer: GpmSample, ids: &[u32], out: &mut [GpmValue]) -> NvmlResult<()> {
        let f = self.fns.gpm_metrics.ok_or(NvmlError::FunctionNotFound)?;
        if ids.len() > GPM_IDS_PER_CALL || out.len() != ids.len() || older == newer {
            // The same sample twice is INVALID_ARGUMENT from the driver too (measured).
            return Err(NvmlError::InvalidArgument);
        }
        let s1 = self.raw_sample(older)? as usize;
        let s2 = self.raw_sample(newer)? as usize;
        let mut req = self.gpm_request.lock();
        req.version = GPM_VERSION;
        req.num_metrics = ids.len() as c_uint;
        req.sample1 = s1;
        req.sample2 = s2;
        for m in req.metrics.iter_mut() {
            *m = GPM_METRIC_EMPTY;
        }
        for (m, &id) in req.metrics.iter_mut().zip(ids) {
            m.metric_id = id;
        }
        // SAFETY: `req` is a writable `nvmlGpmMetricsGet_t` of version 1 whose array (477
        // entries) is at least as long as any known `NVML_GPM_METRIC_MAX`; `numMetrics` ≤ 98; both
        // samples are live buffers this binding allocated.
        check(unsafe { f(&mut **req) })?;
        let filled = &req.metrics[..ids.len()];
        for (i, (o, &id)) in out.iter_mut().zip(ids).enumerate() {
            // The driver answers in request order; look the id up should one ever not.
            let m = if filled[i].metric_id == id {
                Some(&filled[i])
            } else {
                filled.iter().find(|m| m.metric_id == id)
            };
            *o = match m {
                None => Err(NvmlError::Unknown),
                Some(m) => match NvmlError::from_code(m.nvml_return) {
                    None => Ok(m.value),
                    Some(e) => Err(e),
                },
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_the_driver_gets_a_clear_reason() {
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return; // an NVIDIA machine: the library may well be there
        }
        match DlNvml::load() {
            Ok(_) => panic!("libnvidia-ml.so.1 loaded on a machine without the NVIDIA driver"),
            Err(e) => assert_eq!(e, "libnvidia-ml.so.1 not found: no NVIDIA driver"),
        }
    }

    #[test]
    fn a_library_that_is_not_nvml_is_refused_by_name() {
        let e = DlNvml::load_from(c"libc.so.6").err().expect("libc is not NVML");
        assert!(e.contains("has no nvmlInit_v2"), "{e}");
    }

    #[test]
    fn error_codes_round_trip_with_their_names() {
        assert_eq!(NvmlError::from_code(0), None);
        for c in (1..=30).chain([999, 12345]) {
            let e = NvmlError::from_code(c).unwrap();
            assert_eq!(e.code(), c);
        }
        assert_eq!(NvmlError::from_code(25).unwrap().name(), "ARGUMENT_VERSION_MISMATCH");
        assert_eq!(NvmlError::GpuIsLost.to_string(), "NVML_ERROR_GPU_IS_LOST (15)");
    }
}
