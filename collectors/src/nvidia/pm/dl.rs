//! The real [`CuptiApi`]: `libcupti.so.12` with `libnvperf_host.so` and `libnvperf_target.so`,
//! and the CUDA driver's `libcuda.so.1`, all opened with `dlopen` at run time — never linked,
//! so nothing of framescope fails to load where there is no CUDA.
//!
//! Struct layouts are declared here from the public CUPTI 12.6+ headers (`cupti_pmsampling.h`,
//! `cupti_profiler_host.h`, `cupti_profiler_target.h`, `cupti_target.h`, `cupti_result.h`).
//! Every parameter struct starts with `structSize`, which CUPTI reads to know which fields the
//! caller has (`CUPTI_PROFILER_STRUCT_SIZE`: offset of the last field plus its size): a newer
//! CUPTI accepts these older layouts, so fields added later (12.8's `hwBufferAppendMode`) are
//! simply left out.
//!
//! Handles cross the seam as integers; this binding passes CUPTI only handles it got from CUPTI
//! and has not released, so a safe caller can never make CUPTI dereference a made-up pointer.

use super::api::*;
use framescope_core::sync::Mutex;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::ptr;

type Ret = c_uint;
type Obj = *mut c_void;

/// The sonames (the wheel and the toolkit ship these names).
pub const CUPTI_LIBRARY: &str = "libcupti.so.12";
pub const NVPERF_HOST_LIBRARY: &str = "libnvperf_host.so";
pub const NVPERF_TARGET_LIBRARY: &str = "libnvperf_target.so";
pub const CUDA_LIBRARY: &str = "libcuda.so.1";
/// The environment variable naming a directory holding the three CUPTI libraries.
pub const DIR_VARIABLE: &str = "FRAMESCOPE_CUPTI_DIR";

/// `CUPTI_PROFILER_TYPE_PM_SAMPLING` (`CUpti_ProfilerType`).
const PROFILER_TYPE_PM_SAMPLING: c_uint = 1;
/// `CUPTI_PROFILER_PM_SAMPLING` (`CUpti_Profiler_API`: range, PC sampling, SASS metrics, PM
/// sampling).
const PROFILER_API_PM_SAMPLING: c_uint = 3;
/// `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL`: the interval is in nanoseconds.
const TRIGGER_GPU_TIME_INTERVAL: c_uint = 1;
/// `CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL`.
const DECODE_STOP_COUNTER_DATA_FULL: c_uint = 1;

/// `CUPTI_PROFILER_STRUCT_SIZE(type, last)`.
macro_rules! struct_size {
    ($t:ty, $last:ident, $last_ty:ty) => {
        offset_of!($t, $last) + size_of::<$last_ty>()
    };
}

/// `CUpti_Profiler_Initialize_Params` and `…DeInitialize_Params` (same layout).
#[repr(C)]
struct PlainParams {
    struct_size: usize,
    p_priv: *mut c_void,
}

/// `CUpti_Profiler_DeviceSupported_Params` (`cupti_profiler_target.h`, 12.6+: `api` after
/// `wsl`). The support fields are `CUpti_Profiler_Support_Level`, `cuDevice` a `CUdevice`.
#[repr(C)]
struct DeviceSupportedParams {
    struct_size: usize,
    p_priv: *mut c_void,
    cu_device: c_int,
    is_supported: c_uint,
    architecture: c_uint,
    sli: c_uint,
    vgpu: c_uint,
    confidential_compute: c_uint,
    cmp: c_uint,
    wsl: c_uint,
    api: c_uint,
    /// Room for fields a newer CUPTI adds (`sku`): `structSize` stops at `api`, so CUPTI does
    /// not write them, but the struct is never smaller than what it might expect.
    reserved: [c_uint; 7],
}

/// `CUpti_Device_GetChipName_Params` (`cupti_target.h`).
#[repr(C)]
struct ChipNameParams {
    struct_size: usize,
    p_priv: *mut c_void,
    device_index: usize,
    chip_name: *const c_char,
}

/// `CUpti_PmSampling_GetCounterAvailability_Params`.
#[repr(C)]
struct AvailabilityParams {
    struct_size: usize,
    p_priv: *mut c_void,
    device_index: usize,
    image_size: usize,
    image: *mut u8,
}

/// `CUpti_Profiler_Host_Initialize_Params`.
#[repr(C)]
struct HostInitParams {
    struct_size: usize,
    p_priv: *mut c_void,
    profiler_type: c_uint,
    chip_name: *const c_char,
    availability: *const u8,
    host: Obj,
}

/// `CUpti_Profiler_Host_Deinitialize_Params`.
#[repr(C)]
struct HostDeinitParams {
    struct_size: usize,
    p_priv: *mut c_void,
    host: Obj,
}

/// `CUpti_Profiler_Host_GetMetricProperties_Params`.
#[repr(C)]
struct MetricPropertiesParams {
    struct_size: usize,
    p_priv: *mut c_void,
    host: Obj,
    metric: *const c_char,
    description: *const c_char,
    hw_unit: *const c_char,
    dim_unit: *const c_char,
    metric_type: c_uint,
}

/// `CUpti_Profiler_Host_ConfigAddMetrics_Params`.
#[repr(C)]
struct AddMetricsParams {
    struct_size: usize,
    p_priv: *mut c_void,
    host: Obj,
    metrics: *mut *const c_char,
    num_metrics: usize,
}

/// `CUpti_Profiler_Host_GetConfigImageSize_Params`.
#[repr(C)]
struct ConfigImageSizeParams {
    struct_size: usize,
    p_priv: *mut c_void,
    host: Obj,
    size: usize,
}

/// `CUpti_Profiler_Host_GetConfigImage_Params`.
#[repr(C)]
struct ConfigImageParams {
    struct_size: usize,
    p_priv: *mut c_void,
    host: Obj,
    size: usize,
    image: *mut u8,
}

/// `CUpti_Profiler_Host_GetNumOfPasses_Params`.
#[repr(C)]
struct NumPassesParams {
    struct_size: usize,
    p_priv: *mut c_void,
    size: usize,
    image: *mut u8,
    passes: usize,
}

/// `CUpti_Profiler_Host_EvaluateToGpuValues_Params`.
#[repr(C)]
struct EvaluateParams {
    struct_size: usize,
    p_priv: *mut c_void,
    host: Obj,
    image: *const u8,
    image_size: usize,
    range_index: usize,
    metrics: *mut *const c_char,
    num_metrics: usize,
    values: *mut f64,
}

/// `CUpti_PmSampling_Enable_Params`.
#[repr(C)]
struct EnableParams {
    struct_size: usize,
    p_priv: *mut c_void,
    device_index: usize,
    sampler: Obj,
}

/// `CUpti_PmSampling_Disable_Params`, `…Start_Params` and `…Stop_Params` (same layout).
#[repr(C)]
struct SamplerParams {
    struct_size: usize,
    p_priv: *mut c_void,
    sampler: Obj,
}

/// `CUpti_PmSampling_SetConfig_Params` as of 12.6 (ends at `triggerMode`).
#[repr(C)]
struct SetConfigParams {
    struct_size: usize,
    p_priv: *mut c_void,
    sampler: Obj,
    config_size: usize,
    config: *const u8,
    hardware_buffer_size: usize,
    interval: u64,
    trigger_mode: c_uint,
}

/// `CUpti_PmSampling_GetCounterDataSize_Params`.
#[repr(C)]
struct CounterDataSizeParams {
    struct_size: usize,
    p_priv: *mut c_void,
    sampler: Obj,
    metrics: *mut *const c_char,
    num_metrics: usize,
    max_samples: u32,
    size: usize,
}

/// `CUpti_PmSampling_CounterDataImage_Initialize_Params`.
#[repr(C)]
struct CounterDataInitParams {
    struct_size: usize,
    p_priv: *mut c_void,
    sampler: Obj,
    size: usize,
    image: *mut u8,
}

/// `CUpti_PmSampling_DecodeData_Params`.
#[repr(C)]
struct DecodeParams {
    struct_size: usize,
    p_priv: *mut c_void,
    sampler: Obj,
    image: *mut u8,
    image_size: usize,
    stop_reason: c_uint,
    overflow: u8,
}

/// `CUpti_PmSampling_GetCounterDataInfo_Params`.
#[repr(C)]
struct CounterDataInfoParams {
    struct_size: usize,
    p_priv: *mut c_void,
    image: *const u8,
    image_size: usize,
    total: usize,
    populated: usize,
    completed: usize,
}

/// `CUpti_PmSampling_CounterData_GetSampleInfo_Params`.
#[repr(C)]
struct SampleInfoParams {
    struct_size: usize,
    p_priv: *mut c_void,
    sampler: Obj,
    image: *const u8,
    image_size: usize,
    index: usize,
    start: u64,
    end: u64,
}

// The offsets the headers give on 64-bit Linux (size_t and pointers 8 bytes, enums 4).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(struct_size!(DeviceSupportedParams, api, c_uint) == 52);
    assert!(struct_size!(SetConfigParams, trigger_mode, c_uint) == 60);
    assert!(struct_size!(DecodeParams, overflow, u8) == 45);
    assert!(struct_size!(CounterDataSizeParams, size, usize) == 56);
    assert!(struct_size!(SampleInfoParams, end, u64) == 64);
    assert!(struct_size!(EvaluateParams, values, *mut f64) == 72);
    assert!(struct_size!(MetricPropertiesParams, metric_type, c_uint) == 60);
    assert!(struct_size!(HostInitParams, host, Obj) == 48);
};

type FnParams<P> = unsafe extern "C" fn(*mut P) -> Ret;
type FnCuInit = unsafe extern "C" fn(c_uint) -> Ret;
type FnCuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> Ret;
type FnCuCtxRetain = unsafe extern "C" fn(*mut Obj, c_int) -> Ret;
type FnCuCtxSet = unsafe extern "C" fn(Obj) -> Ret;

struct Fns {
    cu_init: FnCuInit,
    cu_device_get: FnCuDeviceGet,
    cu_ctx_retain: FnCuCtxRetain,
    cu_ctx_set: FnCuCtxSet,
    device_supported: FnParams<DeviceSupportedParams>,
    initialize: FnParams<PlainParams>,
    deinitialize: FnParams<PlainParams>,
    chip_name: FnParams<ChipNameParams>,
    availability: FnParams<AvailabilityParams>,
    host_init: FnParams<HostInitParams>,
    host_deinit: FnParams<HostDeinitParams>,
    properties: FnParams<MetricPropertiesParams>,
    add_metrics: FnParams<AddMetricsParams>,
    config_size: FnParams<ConfigImageSizeParams>,
    config_image: FnParams<ConfigImageParams>,
    num_passes: FnParams<NumPassesParams>,
    evaluate: FnParams<EvaluateParams>,
    enable: FnParams<EnableParams>,
    disable: FnParams<SamplerParams>,
    set_config: FnParams<SetConfigParams>,
    start: FnParams<SamplerParams>,
    stop: FnParams<SamplerParams>,
    data_size: FnParams<CounterDataSizeParams>,
    data_init: FnParams<CounterDataInitParams>,
    decode: FnParams<DecodeParams>,
    data_info: FnParams<CounterDataInfoParams>,
    sample_info: FnParams<SampleInfoParams>,
}

/// One `dlopen` handle, closed on drop.
struct Lib(*mut c_void);

// SAFETY: the handle is only passed to `dlsym` (MT-Safe in glibc) and to `dlclose` once, in
// `Drop`; nothing is reached through it directly.
unsafe impl Send for Lib {}

impl Drop for Lib {
    fn drop(&mut self) {
        // SAFETY: a handle `dlopen` returned, closed exactly once here.
        unsafe { libc::dlclose(self.0) };
    }
}

#[derive(Default)]
struct Handles {
    hosts: Vec<u64>,
    samplers: Vec<u64>,
}

/// CUPTI and the CUDA driver, loaded. Where it was found is in [`DlCupti::origin`].
pub struct DlCupti {
    fns: Fns,
    handles: Mutex<Handles>,
    origin: String,
    // Dropped after `fns` (declaration order), so no function outlives its library. libcupti
    // before the nvperf libraries it uses.
    _libs: Vec<Lib>,
}

/// The current `dlerror()` text, or an empty string.
fn dl_error() -> String {
    // SAFETY: `dlerror` takes no arguments; the string it returns stays valid until the next
    // `dlerror` call on this thread and is copied out at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            String::new()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

fn open(path: &str) -> Result<Lib, String> {
    let c = CString::new(path).map_err(|_| format!("{path}: a path with a NUL byte"))?;
    // SAFETY: `c` is NUL-terminated and outlives the call. RTLD_LOCAL keeps CUPTI's symbols out
    // of the global namespace; RTLD_NOW surfaces a broken install here.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        Err(format!("{path}: {}", dl_error()))
    } else {
        Ok(Lib(h))
    }
}

/// Places named in the reason when CUPTI is not found (the rest are counted).
const SHOWN_PLACES: usize = 4;

/// Where to look for the CUPTI libraries, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// A directory holding `libcupti.so.12` (and the nvperf libraries).
    Dir(PathBuf),
    /// The dynamic loader's own search (`LD_LIBRARY_PATH`, `ld.so.cache`).
    LibraryPath,
}

impl Place {
    fn shown(&self) -> String {
        match self {
            Place::Dir(d) => d.display().to_string(),
            Place::LibraryPath => "the library path".to_string(),
        }
    }
}

/// The places searched, in the order `cupti-pm-sampling.md` gives: `$FRAMESCOPE_CUPTI_DIR`,
/// the CUDA toolkit's `extras/CUPTI/lib64` (`$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`),
/// the library path, then the PyPI wheel's `nvidia/cuda_cupti/lib` under the site-packages
/// directories of `$VIRTUAL_ENV`, `~/.local`, `/usr/local` and `/usr`. `env` reads a
/// variable (tests pass their own).
pub fn search_places(env: &dyn Fn(&str) -> Option<String>) -> Vec<Place> {
    let mut out = Vec::new();
    if let Some(d) = env(DIR_VARIABLE).filter(|d| !d.is_empty()) {
        out.push(Place::Dir(PathBuf::from(d)));
    }
    let mut toolkits: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| env(v).filter(|d| !d.is_empty()).map(PathBuf::from))
        .collect();
    toolkits.push(PathBuf::from("/usr/local/cuda"));
    for t in toolkits {
        let p = Place::Dir(t.join("extras/CUPTI/lib64"));
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out.push(Place::LibraryPath);
    let mut prefixes: Vec<PathBuf> = Vec::new();
    if let Some(v) = env("VIRTUAL_ENV").filter(|d| !d.is_empty()) {
        prefixes.push(PathBuf::from(v));
    }
    if let Some(h) = env("HOME").filter(|d| !d.is_empty()) {
        prefixes.push(Path::new(&h).join(".local"));
    }
    prefixes.push(PathBuf::from("/usr/local"));
    prefixes.push(PathBuf::from("/usr"));
    for p in prefixes {
        for site in site_packages(&p) {
            out.push(Place::Dir(site.join("nvidia/cuda_cupti/lib")));
        }
    }
    out
}

/// `PREFIX/lib/python3*/{site,dist}-packages` and Debian's `PREFIX/lib/python3/dist-packages`.
fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let lib = prefix.join("lib");
    let mut pythons: Vec<PathBuf> = match std::fs::read_dir(&lib) {
        Ok(rd) => rd
            .flatten()
            .take(256)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("python3")))
            .map(|e| e.path())
            .collect(),
        Err(_) => Vec::new(),
    };
    // Newest interpreter first.
    pythons.sort();
    pythons.reverse();
    let mut out = Vec::new();
    for py in pythons {
        for sub in ["site-packages", "dist-packages"] {
            let d = py.join(sub);
            if d.is_dir() {
                out.push(d);
            }
        }
    }
    out
}

impl DlCupti {
    /// Loads CUPTI from the first of [`search_places`] that has it. `Err`: a sentence for the
    /// header's `unavailable` naming every place searched.
    pub fn load() -> Result<DlCupti, String> {
        let env = |k: &str| std::env::var(k).ok();
        Self::load_from(&search_places(&env))
    }

    /// Loads CUPTI from the first of `places` that has it.
    pub fn load_from(places: &[Place]) -> Result<DlCupti, String> {
        let mut problems = Vec::new();
        for place in places {
            let dir_of = |name: &str| match place {
                Place::Dir(d) => d.join(name).to_string_lossy().into_owned(),
                Place::LibraryPath => name.to_string(),
            };
            if let Place::Dir(d) = place {
                if !d.join(CUPTI_LIBRARY).exists() {
                    continue;
                }
            }
            // The nvperf libraries first, from the same place: CUPTI opens them by soname, and
            // the loader answers a soname already loaded with that library (dlopen(3)), so the
            // wheel's copies are used even where they are not on the library path.
            let mut libs = Vec::new();
            for n in [NVPERF_TARGET_LIBRARY, NVPERF_HOST_LIBRARY] {
                if let Ok(l) = open(&dir_of(n)) {
                    libs.push(l);
                }
            }
            match open(&dir_of(CUPTI_LIBRARY)) {
                Ok(cupti) => {
                    let cuda = open(CUDA_LIBRARY).map_err(|e| format!("{e}: no NVIDIA driver with CUDA"))?;
                    return Self::bind(cupti, cuda, libs, place.shown());
                }
                Err(e) => {
                    if matches!(place, Place::Dir(_)) || !e.contains("No such file") {
                        problems.push(e);
                    }
                }
            }
        }
        // The fix first and the places after, a few of them: the reason travels through the
        // PM ring's status line, whose bound must never cut the fix.
        let mut searched: Vec<String> = places.iter().take(SHOWN_PLACES).map(Place::shown).collect();
        if places.len() > SHOWN_PLACES {
            searched.push(format!("{} more", places.len() - SHOWN_PLACES));
        }
        let mut msg = format!(
            "{CUPTI_LIBRARY} not found; set {DIR_VARIABLE} to the directory holding {CUPTI_LIBRARY}, \
             {NVPERF_HOST_LIBRARY} and {NVPERF_TARGET_LIBRARY} (CUDA toolkit extras/CUPTI/lib64, or \
             the nvidia-cuda-cupti-cu12 wheel's nvidia/cuda_cupti/lib); searched: {}",
            searched.join(", ")
        );
        if !problems.is_empty() {
            msg.push_str(&format!("; could not load: {}", problems.join("; ")));
        }
        Err(msg)
    }

    /// Where CUPTI was loaded from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    fn bind(cupti: Lib, cuda: Lib, mut libs: Vec<Lib>, origin: String) -> Result<DlCupti, String> {
        macro_rules! sym {
            ($lib:expr, $name:literal, $ty:ty) => {{
                // SAFETY: `$lib.0` is a live `dlopen` handle; the name is NUL-terminated.
                let p = unsafe { libc::dlsym($lib.0, $name.as_ptr()) };
                if p.is_null() {
                    return Err(format!(
                        "{} has no {}: PM sampling needs CUPTI 12.6 or newer",
                        origin,
                        $name.to_string_lossy()
                    ));
                }
                // SAFETY: `p` is the address of the exported C function `$name`, whose
                // prototype in the CUDA/CUPTI headers is the one `$ty` spells (a pointer to
                // its parameter struct, or the listed scalars; `CUptiResult`/`CUresult`
                // return, C ABI). Data and function pointers have the same size here.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }};
        }
        let fns = Fns {
            cu_init: sym!(cuda, c"cuInit", FnCuInit),
            cu_device_get: sym!(cuda, c"cuDeviceGet", FnCuDeviceGet),
            cu_ctx_retain: sym!(cuda, c"cuDevicePrimaryCtxRetain", FnCuCtxRetain),
            cu_ctx_set: sym!(cuda, c"cuCtxSetCurrent", FnCuCtxSet),
            device_supported: sym!(cupti, c"cuptiProfilerDeviceSupported", FnParams<DeviceSupportedParams>),
            initialize: sym!(cupti, c"cuptiProfilerInitialize", FnParams<PlainParams>),
            deinitialize: sym!(cupti, c"cuptiProfilerDeInitialize", FnParams<PlainParams>),
            chip_name: sym!(cupti, c"cuptiDeviceGetChipName", FnParams<ChipNameParams>),
            availability: sym!(
                cupti,
                c"cuptiPmSamplingGetCounterAvailability",
                FnParams<AvailabilityParams>
            ),
            host_init: sym!(cupti, c"cuptiProfilerHostInitialize", FnParams<HostInitParams>),
            host_deinit: sym!(cupti, c"cuptiProfilerHostDeinitialize", FnParams<HostDeinitParams>),
            properties: sym!(
                cupti,
                c"cuptiProfilerHostGetMetricProperties",
                FnParams<MetricPropertiesParams>
            ),
            add_metrics: sym!(cupti, c"cuptiProfilerHostConfigAddMetrics", FnParams<AddMetricsParams>),
            config_size: sym!(
                cupti,
                c"cuptiProfilerHostGetConfigImageSize",
                FnParams<ConfigImageSizeParams>
            ),
            config_image: sym!(cupti, c"cuptiProfilerHostGetConfigImage", FnParams<ConfigImageParams>),
            num_passes: sym!(cupti, c"cuptiProfilerHostGetNumOfPasses", FnParams<NumPassesParams>),
            evaluate: sym!(cupti, c"cuptiProfilerHostEvaluateToGpuValues", FnParams<EvaluateParams>),
            enable: sym!(cupti, c"cuptiPmSamplingEnable", FnParams<EnableParams>),
            disable: sym!(cupti, c"cuptiPmSamplingDisable", FnParams<SamplerParams>),
            set_config: sym!(cupti, c"cuptiPmSamplingSetConfig", FnParams<SetConfigParams>),
            start: sym!(cupti, c"cuptiPmSamplingStart", FnParams<SamplerParams>),
            stop: sym!(cupti, c"cuptiPmSamplingStop", FnParams<SamplerParams>),
            data_size: sym!(
                cupti,
                c"cuptiPmSamplingGetCounterDataSize",
                FnParams<CounterDataSizeParams>
            ),
            data_init: sym!(
                cupti,
                c"cuptiPmSamplingCounterDataImageInitialize",
                FnParams<CounterDataInitParams>
            ),
            decode: sym!(cupti, c"cuptiPmSamplingDecodeData", FnParams<DecodeParams>),
            data_info: sym!(
                cupti,
                c"cuptiPmSamplingGetCounterDataInfo",
                FnParams<CounterDataInfoParams>
            ),
            sample_info: sym!(
                cupti,
                c"cuptiPmSamplingCounterDataGetSampleInfo",
                FnParams<SampleInfoParams>
            ),
        };
        // Close order: CUPTI, then the nvperf libraries, then CUDA.
        libs.insert(0, cupti);
        libs.push(cuda);
        Ok(DlCupti {
            fns,
            handles: Mutex::new(Handles::default()),
            origin,
            _libs: libs,
        })
    }

    fn host(&self, h: HostObject) -> CuptiResult<Obj> {
        if self.handles.lock().hosts.contains(&h.0) {
            Ok(h.0 as usize as Obj)
        } else {
            Err(CuptiError::InvalidArgument("not a live host object"))
        }
    }

    fn sampler(&self, s: Sampler) -> CuptiResult<Obj> {
        if self.handles.lock().samplers.contains(&s.0) {
            Ok(s.0 as usize as Obj)
        } else {
            Err(CuptiError::InvalidArgument("not a live PM sampling object"))
        }
    }
}

fn check(r: Ret) -> CuptiResult<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(CuptiError::Cupti(r))
    }
}

fn check_cuda(r: Ret) -> CuptiResult<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(CuptiError::Cuda(r))
    }
}

/// A copy of a string CUPTI owns; empty for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid during the call.
unsafe fn owned(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: as the caller promised.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn name_ptrs(metrics: &[&CStr]) -> CuptiResult<Vec<*const c_char>> {
    if metrics.is_empty() {
        return Err(CuptiError::InvalidArgument("no metrics"));
    }
    Ok(metrics.iter().map(|m| m.as_ptr()).collect())
}

fn device_ordinal(device: usize) -> CuptiResult<c_int> {
    c_int::try_from(device).map_err(|_| CuptiError::InvalidArgument("device index out of range"))
}

impl CuptiApi for DlCupti {
    fn cuda_context(&self, device: usize) -> CuptiResult<()> {
        let ordinal = device_ordinal(device)?;
        // SAFETY: plain integer argument (flags must be 0).
        check_cuda(unsafe { (self.fns.cu_init)(0) })?;
        let mut dev: c_int = 0;
        // SAFETY: `dev` is a writable `CUdevice` for the call.
        check_cuda(unsafe { (self.fns.cu_device_get)(&mut dev, ordinal) })?;
        let mut ctx: Obj = ptr::null_mut();
        // SAFETY: `ctx` is a writable `CUcontext` slot; `dev` came from `cuDeviceGet`.
        check_cuda(unsafe { (self.fns.cu_ctx_retain)(&mut ctx, dev) })?;
        // SAFETY: `ctx` is the primary context just retained (kept for the process's life:
        // the sampler process exists to hold it).
        check_cuda(unsafe { (self.fns.cu_ctx_set)(ctx) })
    }

    fn device_supported(&self, device: usize) -> CuptiResult<DeviceSupport> {
        let ordinal = device_ordinal(device)?;
        let mut dev: c_int = 0;
        // SAFETY: `dev` is a writable `CUdevice` for the call.
        check_cuda(unsafe { (self.fns.cu_device_get)(&mut dev, ordinal) })?;
        let mut p = DeviceSupportedParams {
            struct_size: struct_size!(DeviceSupportedParams, api, c_uint),
            p_priv: ptr::null_mut(),
            cu_device: dev,
            is_supported: 0,
            architecture: 0,
            sli: 0,
            vgpu: 0,
            confidential_compute: 0,
            cmp: 0,
            wsl: 0,
            api: PROFILER_API_PM_SAMPLING,
            reserved: [0; 7],
        };
        // SAFETY: `p` is a writable parameter struct of the declared layout and size.
        check(unsafe { (self.fns.device_supported)(&mut p) })?;
        Ok(DeviceSupport {
            overall: SupportLevel::from_code(p.is_supported),
            architecture: SupportLevel::from_code(p.architecture),
            sli: SupportLevel::from_code(p.sli),
            vgpu: SupportLevel::from_code(p.vgpu),
            confidential_compute: SupportLevel::from_code(p.confidential_compute),
            cmp: SupportLevel::from_code(p.cmp),
            wsl: SupportLevel::from_code(p.wsl),
        })
    }

    fn profiler_initialize(&self) -> CuptiResult<()> {
        let mut p = PlainParams {
            struct_size: struct_size!(PlainParams, p_priv, *mut c_void),
            p_priv: ptr::null_mut(),
        };
        // SAFETY: a writable parameter struct of the declared layout.
        check(unsafe { (self.fns.initialize)(&mut p) })
    }

    fn profiler_deinitialize(&self) -> CuptiResult<()> {
        let mut p = PlainParams {
            struct_size: struct_size!(PlainParams, p_priv, *mut c_void),
            p_priv: ptr::null_mut(),
        };
        // SAFETY: a writable parameter struct of the declared layout.
        check(unsafe { (self.fns.deinitialize)(&mut p) })
    }

    fn chip_name(&self, device: usize) -> CuptiResult<String> {
        let mut p = ChipNameParams {
            struct_size: struct_size!(ChipNameParams, chip_name, *const c_char),
            p_priv: ptr::null_mut(),
            device_index: device,
            chip_name: ptr::null(),
        };
        // SAFETY: a writable parameter struct of the declared layout.
        check(unsafe { (self.fns.chip_name)(&mut p) })?;
        // SAFETY: on success CUPTI set `chip_name` to NULL or a string it keeps.
        Ok(unsafe { owned(p.chip_name) })
    }

    fn counter_availability(&self, device: usize) -> CuptiResult<Vec<u8>> {
        let mut p = AvailabilityParams {
            struct_size: struct_size!(AvailabilityParams, image, *mut u8),
            p_priv: ptr::null_mut(),
            device_index: device,
            image_size: 0,
            image: ptr::null_mut(),
        };
        // SAFETY: a NULL image asks for the size only, which CUPTI writes into `p`.
        check(unsafe { (self.fns.availability)(&mut p) })?;
        let mut image = vec![0u8; p.image_size];
        p.image = image.as_mut_ptr();
        // SAFETY: `image` holds `p.image_size` writable bytes, the size passed.
        check(unsafe { (self.fns.availability)(&mut p) })?;
        Ok(image)
    }

    fn host_initialize(&self, chip: &str, availability: &[u8]) -> CuptiResult<HostObject> {
        let chip = CString::new(chip).map_err(|_| CuptiError::InvalidArgument("chip name with a NUL"))?;
        let mut p = HostInitParams {
            struct_size: struct_size!(HostInitParams, host, Obj),
            p_priv: ptr::null_mut(),
            profiler_type: PROFILER_TYPE_PM_SAMPLING,
            chip_name: chip.as_ptr(),
            availability: if availability.is_empty() {
                ptr::null()
            } else {
                availability.as_ptr()
            },
            host: ptr::null_mut(),
        };
        // SAFETY: the chip name and availability image outlive the call (CUPTI copies what
        // it keeps into the host object it allocates); `p` is writable.
        check(unsafe { (self.fns.host_init)(&mut p) })?;
        if p.host.is_null() {
            return Err(CuptiError::Cupti(code::UNKNOWN));
        }
        let id = p.host as usize as u64;
        self.handles.lock().hosts.push(id);
        Ok(HostObject(id))
    }

    fn host_deinitialize(&self, host: HostObject) -> CuptiResult<()> {
        let mut h = self.handles.lock();
        let Some(i) = h.hosts.iter().position(|&x| x == host.0) else {
            return Err(CuptiError::InvalidArgument("not a live host object"));
        };
        h.hosts.swap_remove(i);
        let mut p = HostDeinitParams {
            struct_size: struct_size!(HostDeinitParams, host, Obj),
            p_priv: ptr::null_mut(),
            host: host.0 as usize as Obj,
        };
        // SAFETY: a host object CUPTI allocated and not yet freed (it just left the live list,
        // so it cannot be freed twice).
        check(unsafe { (self.fns.host_deinit)(&mut p) })
    }

    fn metric_properties(&self, host: HostObject, metric: &CStr) -> CuptiResult<MetricProperties> {
        let mut p = MetricPropertiesParams {
            struct_size: struct_size!(MetricPropertiesParams, metric_type, c_uint),
            p_priv: ptr::null_mut(),
            host: self.host(host)?,
            metric: metric.as_ptr(),
            description: ptr::null(),
            hw_unit: ptr::null(),
            dim_unit: ptr::null(),
            metric_type: 0,
        };
        // SAFETY: a live host object, a NUL-terminated name that outlives the call, `p` writable.
        check(unsafe { (self.fns.properties)(&mut p) })?;
        Ok(MetricProperties {
            // SAFETY: on success CUPTI set these to NULL or strings the host object keeps.
            description: unsafe { owned(p.description) },
            // SAFETY: as above.
            hw_unit: unsafe { owned(p.hw_unit) },
            // SAFETY: as above.
            dim_unit: unsafe { owned(p.dim_unit) },
            metric_type: MetricType::from_code(p.metric_type).ok_or(CuptiError::Cupti(code::UNKNOWN))?,
        })
    }

    fn config_add_metrics(&self, host: HostObject, metrics: &[&CStr]) -> CuptiResult<()> {
        let mut names = name_ptrs(metrics)?;
        let mut p = AddMetricsParams {
            struct_size: struct_size!(AddMetricsParams, num_metrics, usize),
            p_priv: ptr::null_mut(),
            host: self.host(host)?,
            metrics: names.as_mut_ptr(),
            num_metrics: names.len(),
        };
        // SAFETY: a live host object; `names` holds `num_metrics` NUL-terminated strings that
        // outlive the call.
        check(unsafe { (self.fns.add_metrics)(&mut p) })
    }

    fn config_image(&self, host: HostObject) -> CuptiResult<Vec<u8>> {
        let obj = self.host(host)?;
        let mut s = ConfigImageSizeParams {
            struct_size: struct_size!(ConfigImageSizeParams, size, usize),
            p_priv: ptr::null_mut(),
            host: obj,
            size: 0,
        };
        // SAFETY: a live host object; `s` writable.
        check(unsafe { (self.fns.config_size)(&mut s) })?;
        let mut image = vec![0u8; s.size];
        let mut p = ConfigImageParams {
            struct_size: struct_size!(ConfigImageParams, image, *mut u8),
            p_priv: ptr::null_mut(),
            host: obj,
            size: image.len(),
            image: image.as_mut_ptr(),
        };
        // SAFETY: `image` holds `size` writable bytes, the size passed.
        check(unsafe { (self.fns.config_image)(&mut p) })?;
        Ok(image)
    }

    fn num_passes(&self, config_image: &[u8]) -> CuptiResult<usize> {
        let mut p = NumPassesParams {
            struct_size: struct_size!(NumPassesParams, passes, usize),
            p_priv: ptr::null_mut(),
            size: config_image.len(),
            // The header declares the image non-const but documents it as [in].
            image: config_image.as_ptr().cast_mut(),
            passes: 0,
        };
        // SAFETY: the image's bytes and length; CUPTI only reads it ([in]).
        check(unsafe { (self.fns.num_passes)(&mut p) })?;
        Ok(p.passes)
    }

    fn pm_enable(&self, device: usize) -> CuptiResult<Sampler> {
        let mut p = EnableParams {
            struct_size: struct_size!(EnableParams, sampler, Obj),
            p_priv: ptr::null_mut(),
            device_index: device,
            sampler: ptr::null_mut(),
        };
        // SAFETY: a writable parameter struct of the declared layout.
        check(unsafe { (self.fns.enable)(&mut p) })?;
        if p.sampler.is_null() {
            return Err(CuptiError::Cupti(code::UNKNOWN));
        }
        let id = p.sampler as usize as u64;
        self.handles.lock().samplers.push(id);
        Ok(Sampler(id))
    }

    fn pm_set_config(&self, s: Sampler, config_image: &[u8], cfg: SamplingConfig) -> CuptiResult<()> {
        let mut p = SetConfigParams {
            struct_size: struct_size!(SetConfigParams, trigger_mode, c_uint),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
            config_size: config_image.len(),
            config: config_image.as_ptr(),
            hardware_buffer_size: cfg.hardware_buffer_bytes,
            interval: cfg.interval_ns,
            trigger_mode: TRIGGER_GPU_TIME_INTERVAL,
        };
        // SAFETY: a live sampler; the config image's bytes and length outlive the call.
        check(unsafe { (self.fns.set_config)(&mut p) })
    }

    fn pm_counter_data_size(&self, s: Sampler, metrics: &[&CStr], max_samples: u32) -> CuptiResult<usize> {
        let mut names = name_ptrs(metrics)?;
        let mut p = CounterDataSizeParams {
            struct_size: struct_size!(CounterDataSizeParams, size, usize),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
            metrics: names.as_mut_ptr(),
            num_metrics: names.len(),
            max_samples,
            size: 0,
        };
        // SAFETY: a live sampler; `names` holds `num_metrics` NUL-terminated strings.
        check(unsafe { (self.fns.data_size)(&mut p) })?;
        Ok(p.size)
    }

    fn pm_counter_data_initialize(&self, s: Sampler, image: &mut [u8]) -> CuptiResult<()> {
        let mut p = CounterDataInitParams {
            struct_size: struct_size!(CounterDataInitParams, image, *mut u8),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
            size: image.len(),
            image: image.as_mut_ptr(),
        };
        // SAFETY: a live sampler; `image` holds `size` writable bytes.
        check(unsafe { (self.fns.data_init)(&mut p) })
    }

    fn pm_start(&self, s: Sampler) -> CuptiResult<()> {
        let mut p = SamplerParams {
            struct_size: struct_size!(SamplerParams, sampler, Obj),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
        };
        // SAFETY: a live sampler; `p` writable.
        check(unsafe { (self.fns.start)(&mut p) })
    }

    fn pm_stop(&self, s: Sampler) -> CuptiResult<()> {
        let mut p = SamplerParams {
            struct_size: struct_size!(SamplerParams, sampler, Obj),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
        };
        // SAFETY: a live sampler; `p` writable.
        check(unsafe { (self.fns.stop)(&mut p) })
    }

    fn pm_decode(&self, s: Sampler, image: &mut [u8]) -> CuptiResult<Decoded> {
        let mut p = DecodeParams {
            struct_size: struct_size!(DecodeParams, overflow, u8),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
            image: image.as_mut_ptr(),
            image_size: image.len(),
            stop_reason: 0,
            overflow: 0,
        };
        // SAFETY: a live sampler; `image` holds `image_size` writable bytes.
        let r = unsafe { (self.fns.decode)(&mut p) };
        // A record overflow is reported as OUT_OF_MEMORY (`cupti_pmsampling.h`); keep it as
        // an overflow rather than an error so the caller says what happened.
        if r == code::OUT_OF_MEMORY {
            return Ok(Decoded {
                counter_data_full: false,
                overflow: true,
            });
        }
        check(r)?;
        Ok(Decoded {
            counter_data_full: p.stop_reason == DECODE_STOP_COUNTER_DATA_FULL,
            overflow: p.overflow != 0,
        })
    }

    fn pm_counter_data_info(&self, image: &[u8]) -> CuptiResult<CounterDataInfo> {
        let mut p = CounterDataInfoParams {
            struct_size: struct_size!(CounterDataInfoParams, completed, usize),
            p_priv: ptr::null_mut(),
            image: image.as_ptr(),
            image_size: image.len(),
            total: 0,
            populated: 0,
            completed: 0,
        };
        // SAFETY: the image's bytes and length, read only; `p` writable.
        check(unsafe { (self.fns.data_info)(&mut p) })?;
        Ok(CounterDataInfo {
            total: p.total,
            populated: p.populated,
            completed: p.completed,
        })
    }

    fn pm_sample_info(&self, s: Sampler, image: &[u8], index: usize) -> CuptiResult<(u64, u64)> {
        let mut p = SampleInfoParams {
            struct_size: struct_size!(SampleInfoParams, end, u64),
            p_priv: ptr::null_mut(),
            sampler: self.sampler(s)?,
            image: image.as_ptr(),
            image_size: image.len(),
            index,
            start: 0,
            end: 0,
        };
        // SAFETY: a live sampler; the image read only; `p` writable.
        check(unsafe { (self.fns.sample_info)(&mut p) })?;
        Ok((p.start, p.end))
    }

    fn evaluate(
        &self,
        host: HostObject,
        image: &[u8],
        index: usize,
        metrics: &[&CStr],
        out: &mut [f64],
    ) -> CuptiResult<()> {
        if out.len() != metrics.len() {
            return Err(CuptiError::InvalidArgument("one output per metric"));
        }
        let mut names = name_ptrs(metrics)?;
        let mut p = EvaluateParams {
            struct_size: struct_size!(EvaluateParams, values, *mut f64),
            p_priv: ptr::null_mut(),
            host: self.host(host)?,
            image: image.as_ptr(),
            image_size: image.len(),
            range_index: index,
            metrics: names.as_mut_ptr(),
            num_metrics: names.len(),
            values: out.as_mut_ptr(),
        };
        // SAFETY: a live host object; the image read only; `names` and `out` both hold
        // `num_metrics` entries.
        check(unsafe { (self.fns.evaluate)(&mut p) })
    }

    fn pm_disable(&self, s: Sampler) -> CuptiResult<()> {
        let mut h = self.handles.lock();
        let Some(i) = h.samplers.iter().position(|&x| x == s.0) else {
            return Err(CuptiError::InvalidArgument("not a live PM sampling object"));
        };
        h.samplers.swap_remove(i);
        let mut p = SamplerParams {
            struct_size: struct_size!(SamplerParams, sampler, Obj),
            p_priv: ptr::null_mut(),
            sampler: s.0 as usize as Obj,
        };
        // SAFETY: a sampler CUPTI allocated and not yet disabled (it just left the live list).
        check(unsafe { (self.fns.disable)(&mut p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_searched_in_the_documented_order() {
        let env = |k: &str| match k {
            "FRAMESCOPE_CUPTI_DIR" => Some("/opt/cupti".to_string()),
            "CUDA_HOME" => Some("/opt/cuda-12.8".to_string()),
            _ => None,
        };
        let p = search_places(&env);
        assert_eq!(p[0], Place::Dir("/opt/cupti".into()));
        assert_eq!(p[1], Place::Dir("/opt/cuda-12.8/extras/CUPTI/lib64".into()));
        assert_eq!(p[2], Place::Dir("/usr/local/cuda/extras/CUPTI/lib64".into()));
        assert_eq!(p[3], Place::LibraryPath);
        assert!(p[4..].iter().all(|x| match x {
            Place::Dir(d) => d.ends_with("nvidia/cuda_cupti/lib"),
            Place::LibraryPath => false,
        }));
    }

    #[test]
    fn a_wheel_in_a_virtualenv_is_found() {
        let root = std::env::temp_dir().join(format!("fs-cupti-venv-{}", std::process::id()));
        let site = root.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let r = root.to_string_lossy().into_owned();
        let env = move |k: &str| (k == "VIRTUAL_ENV").then(|| r.clone());
        let p = search_places(&env);
        assert!(p.contains(&Place::Dir(site.join("nvidia/cuda_cupti/lib"))), "{p:?}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn without_the_library_the_reason_names_the_places_and_the_variable() {
        let places = [Place::Dir("/nonexistent/cupti".into())];
        let e = DlCupti::load_from(&places).err().expect("nothing to load");
        assert!(
            e.starts_with(
                "libcupti.so.12 not found; set FRAMESCOPE_CUPTI_DIR to the directory holding libcupti.so.12, \
                 libnvperf_host.so and libnvperf_target.so (CUDA toolkit extras/CUPTI/lib64, or the \
                 nvidia-cuda-cupti-cu12 wheel's nvidia/cuda_cupti/lib); searched: /nonexistent/cupti"
            ),
            "{e}"
        );
        let many: Vec<Place> = (0..9).map(|i| Place::Dir(format!("/nonexistent/{i}").into())).collect();
        let e = DlCupti::load_from(&many).err().expect("nothing to load");
        assert!(
            e.ends_with("searched: /nonexistent/0, /nonexistent/1, /nonexistent/2, /nonexistent/3, 5 more"),
            "{e}"
        );
    }

    #[test]
    fn a_directory_whose_library_is_not_cupti_is_refused_by_name() {
        // A directory with a file of CUPTI's name that is no shared library.
        let dir = std::env::temp_dir().join(format!("fs-cupti-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(CUPTI_LIBRARY), b"not an ELF file").unwrap();
        let e = DlCupti::load_from(&[Place::Dir(dir.clone())])
            .err()
            .expect("not loadable");
        assert!(e.contains("could not load"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
