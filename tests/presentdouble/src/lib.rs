//! A test double, never installed: a Vulkan layer (`VK_LAYER_FRAMESCOPE_present_double`) that
//! sits below framescope on lavapipe (whose Mesa 22.3 has neither extension) and gives it
//! `VK_KHR_present_id` and `VK_KHR_present_wait` with known answers: a display that refreshes
//! every `FRAMESCOPE_PRESENT_DOUBLE_REFRESH_MS` ms (default 20) on CLOCK_MONOTONIC, refreshes
//! falling on whole multiples of the period. A present is shown at the first refresh after it
//! and, on a FIFO swapchain, after the one before it (one image a refresh); a FIFO present
//! returns only once at most one image is queued ahead of the screen, as a driver whose
//! queue is full blocks. `vkWaitForPresentKHR` returns when the id's image is shown.
//!
//! `FRAMESCOPE_PRESENT_DOUBLE_WAIT_OUT_OF_DATE_FROM=N`: waits for ids from N on answer
//! `VK_ERROR_OUT_OF_DATE_KHR`, as a window system that lost the surface would.
//!
//! Both extensions are listed and their features reported; names, feature structs and
//! `VkPresentIdKHR` are unlinked from everything passed down, so lavapipe sees its own API.
//!
//! `VK_EXT_present_timing` too, on the same clock, with what it depends on that lavapipe
//! lacks: `VK_KHR_present_id2` and `VK_KHR_calibrated_timestamps` (answered by lavapipe's
//! `VK_EXT_calibrated_timestamps`, the same command). Surfaces report `presentTimingSupported`
//! and `presentId2Supported`; swapchains list one time domain, `CLOCK_MONOTONIC` with id
//! [`TIME_DOMAIN_ID`], and a refresh duration of the period; a present that asks for stages
//! gets them all at the refresh it is shown at (first pixel out and visible alike: a display
//! without latency), readable once that refresh has passed. A present that asks for timing
//! with its swapchain's timing queue full fails with `VK_ERROR_PRESENT_TIMING_QUEUE_FULL_EXT`,
//! as the spec says. `FRAMESCOPE_PRESENT_DOUBLE_ONLY_PRESENT_WAIT=1`: none of this, only
//! present_id and present_wait. `FRAMESCOPE_PRESENT_DOUBLE_TIME_DOMAIN=stage_local`: the one
//! time domain is `VK_TIME_DOMAIN_PRESENT_STAGE_LOCAL_EXT` instead, CLOCK_MONOTONIC +
//! [`STAGE_LOCAL_OFFSET_NS`], which `vkGetCalibratedTimestampsKHR` answers (with a
//! `VkSwapchainCalibratedTimestampInfoEXT` chained, as the spec requires for that domain).

#![allow(clippy::missing_safety_doc)]

#[path = "../../../layer/vulkan/src/dispatch/loader_abi.rs"]
mod loader_abi;
#[path = "../../../layer/vulkan/src/dispatch/present_timing_abi.rs"]
mod timing_abi;

use ash::vk;
use ash::vk::Handle;
use loader_abi::*;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, CStr};
use std::sync::Mutex;
use timing_abi::*;

const PRESENT_ID: &CStr = ash::khr::present_id::NAME;
const PRESENT_WAIT: &CStr = ash::khr::present_wait::NAME;
/// Shown presents remembered per swapchain for waits: far more than are ever in flight.
const KEEP: usize = 64;
/// The id of the one time domain (CLOCK_MONOTONIC) swapchains list: not 0, so a present that
/// passes 0 is told apart.
pub const TIME_DOMAIN_ID: u64 = 7;
const CALIBRATED_KHR: &CStr = c"VK_KHR_calibrated_timestamps";
/// How far the stage-local domain is ahead of CLOCK_MONOTONIC.
pub const STAGE_LOCAL_OFFSET_NS: u64 = 1_000_000_000_000;

/// The swapchains' one time domain.
fn time_domain() -> vk::TimeDomainKHR {
    match std::env::var("FRAMESCOPE_PRESENT_DOUBLE_TIME_DOMAIN").as_deref() {
        Ok("stage_local") => TIME_DOMAIN_PRESENT_STAGE_LOCAL,
        _ => vk::TimeDomainKHR::CLOCK_MONOTONIC,
    }
}

/// A CLOCK_MONOTONIC time in the swapchains' domain.
fn in_domain(t: u64) -> u64 {
    if time_domain() == TIME_DOMAIN_PRESENT_STAGE_LOCAL {
        t + STAGE_LOCAL_OFFSET_NS
    } else {
        t
    }
}
const CALIBRATED_EXT: &CStr = c"VK_EXT_calibrated_timestamps";

/// Whether present timing is offered (the default) or only present_wait.
fn timing_offered() -> bool {
    std::env::var("FRAMESCOPE_PRESENT_DOUBLE_ONLY_PRESENT_WAIT").map_or(true, |v| v != "1")
}

/// The loader's dispatch pointer of a dispatchable handle.
///
/// # Safety
/// `raw` is a live dispatchable handle.
unsafe fn key(raw: u64) -> usize {
    // SAFETY: dispatchable handles point at an object whose first word is the loader's table.
    unsafe { *(raw as usize as *const usize) }
}

struct Inst {
    handle: vk::Instance,
    gipa: vk::PFN_vkGetInstanceProcAddr,
    fns: ash::Instance,
    /// The next layer's vkGetPhysicalDeviceSurfaceCapabilities2KHR, resolved while the
    /// instance is created: asked later, loaders before 1.3.2xx answer with the instance's
    /// dispatch entry (our own hook: endless recursion without the validation layer between).
    caps2: vk::PFN_vkVoidFunction,
}

struct Dev {
    gdpa: vk::PFN_vkGetDeviceProcAddr,
    fns: ash::Device,
    /// The device's swapchain commands below (`None` without `VK_KHR_swapchain`).
    present: Option<vk::PFN_vkQueuePresentKHR>,
    create_swapchain: Option<vk::PFN_vkCreateSwapchainKHR>,
    destroy_swapchain: Option<vk::PFN_vkDestroySwapchainKHR>,
    /// The device was created with `VK_KHR_present_wait`: its command is handed out.
    wait_enabled: bool,
    /// The device was created with `VK_EXT_present_timing`: its commands are handed out.
    timing_enabled: bool,
    /// Lavapipe's vkGetCalibratedTimestampsEXT, handed out as the KHR command where the app
    /// enabled `VK_KHR_calibrated_timestamps`.
    calibrate: Option<vk::PFN_vkGetCalibratedTimestampsKHR>,
}

/// One present's timing request, until it is read.
struct Timing {
    id: u64,
    stages: u32,
    shown: u64,
}

#[derive(Default)]
struct Swapchain {
    fifo: bool,
    /// When the newest present is (or was) shown.
    last_shown: u64,
    /// (present id, shown at) of recent presents with an id, oldest first.
    shown: VecDeque<(u64, u64)>,
    /// Created with `VK_SWAPCHAIN_CREATE_PRESENT_TIMING_BIT_EXT`.
    timing: bool,
    /// The timing queue's size (`vkSetSwapchainPresentTimingQueueSizeEXT`; 0 until set).
    queue_size: usize,
    /// Timing requests not read yet, in present order.
    queue: VecDeque<Timing>,
}

type Registry<T> = Mutex<Vec<(usize, T)>>;
static INSTANCES: Registry<Inst> = Mutex::new(Vec::new());
static DEVICES: Registry<Dev> = Mutex::new(Vec::new());
static SWAPCHAINS: Mutex<Option<HashMap<u64, Swapchain>>> = Mutex::new(None);

fn with<T, R>(m: &Registry<T>, k: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    g.iter_mut().find(|(x, _)| *x == k).map(|(_, t)| f(t))
}

fn take<T>(m: &Registry<T>, k: usize) -> Option<T> {
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    let p = g.iter().position(|(x, _)| *x == k)?;
    Some(g.remove(p).1)
}

fn swapchains<R>(f: impl FnOnce(&mut HashMap<u64, Swapchain>) -> R) -> R {
    let mut g = SWAPCHAINS.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// The refresh period in ns.
pub fn refresh_ns() -> u64 {
    std::env::var("FRAMESCOPE_PRESENT_DOUBLE_REFRESH_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .unwrap_or(20)
        * 1_000_000
}

/// The first refresh strictly after `t`.
pub fn refresh_after(t: u64, period: u64) -> u64 {
    (t / period + 1) * period
}

/// When a present at `now` is shown, given when the swapchain's previous one is: FIFO shows
/// one image a refresh, in order; other modes show it at the next refresh.
pub fn shown_at(now: u64, last_shown: u64, fifo: bool, period: u64) -> u64 {
    if fifo {
        refresh_after(now.max(last_shown), period)
    } else {
        refresh_after(now, period)
    }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writing the current time into a timespec of ours.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `t` (absolute, so no drift from the call's own time).
fn sleep_until(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: an absolute sleep on CLOCK_MONOTONIC; EINTR restarts it.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
        == libc::EINTR
    {}
}

#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(v: *mut VkNegotiateLayerInterface) -> vk::Result {
    // SAFETY: the loader hands a valid struct.
    let v = unsafe { &mut *v };
    if v.loader_layer_interface_version < 2 {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    v.loader_layer_interface_version = 2;
    v.pfn_get_instance_proc_addr = Some(get_instance_proc_addr);
    v.pfn_get_device_proc_addr = Some(get_device_proc_addr);
    v.pfn_get_physical_device_proc_addr = None;
    vk::Result::SUCCESS
}

macro_rules! hooks {
    ($name:expr; $($vk:literal => $f:expr),* $(,)?) => {
        match $name.to_bytes() {
            // SAFETY: each hook has the signature of the command it is named for; the loader
            // casts the pointer back to that signature before calling it.
            $($vk => Some(unsafe { std::mem::transmute::<*const (), unsafe extern "system" fn()>($f as *const ()) }),)*
            _ => None,
        }
    };
}

fn device_hook(name: &CStr) -> vk::PFN_vkVoidFunction {
    hooks!(name;
        b"vkGetDeviceProcAddr" => get_device_proc_addr,
        b"vkDestroyDevice" => destroy_device,
        b"vkQueuePresentKHR" => queue_present,
        b"vkCreateSwapchainKHR" => create_swapchain,
        b"vkDestroySwapchainKHR" => destroy_swapchain,
        b"vkWaitForPresentKHR" => wait_for_present,
        b"vkSetSwapchainPresentTimingQueueSizeEXT" => set_queue_size,
        b"vkGetSwapchainTimingPropertiesEXT" => timing_properties,
        b"vkGetSwapchainTimeDomainPropertiesEXT" => time_domains,
        b"vkGetPastPresentationTimingEXT" => past_timing,
        b"vkGetCalibratedTimestampsKHR" => calibrated_timestamps,
    )
}

unsafe extern "system" fn get_instance_proc_addr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    // SAFETY: the caller passes a NUL-terminated name.
    let n = unsafe { CStr::from_ptr(name) };
    let own = hooks!(n;
        b"vkGetInstanceProcAddr" => get_instance_proc_addr,
        b"vkCreateInstance" => create_instance,
        b"vkDestroyInstance" => destroy_instance,
        b"vkCreateDevice" => create_device,
        b"vkEnumerateDeviceExtensionProperties" => enumerate_device_extension_properties,
        b"vkGetPhysicalDeviceFeatures2" => get_physical_device_features2,
        b"vkGetPhysicalDeviceFeatures2KHR" => get_physical_device_features2,
        b"vkGetPhysicalDeviceSurfaceCapabilities2KHR" => surface_capabilities2,
    );
    if own.is_some() {
        return own;
    }
    if let Some(f) = device_hook(n) {
        return Some(f);
    }
    if instance == vk::Instance::null() {
        return None;
    }
    // SAFETY: a live instance of ours.
    let gipa = with(&INSTANCES, unsafe { key(instance.as_raw()) }, |i| i.gipa)?;
    // SAFETY: the next layer's entry point with the same arguments.
    unsafe { gipa(instance, name) }
}

unsafe extern "system" fn get_device_proc_addr(device: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: the caller passes a NUL-terminated name.
    let n = unsafe { CStr::from_ptr(name) };
    if n.to_bytes() == b"vkGetDeviceProcAddr" {
        return device_hook(n);
    }
    // SAFETY: a live device of ours.
    let (gdpa, wait_enabled, timing_enabled, calibrated) = with(&DEVICES, unsafe { key(device.as_raw()) }, |d| {
        (d.gdpa, d.wait_enabled, d.timing_enabled, d.calibrate.is_some())
    })?;
    // SAFETY: the next layer's entry point with the same arguments.
    let next = unsafe { gdpa(device, name) };
    // Our hooks only where the device has the command: disabled extensions stay NULL.
    match device_hook(n) {
        Some(f) if n.to_bytes() == b"vkWaitForPresentKHR" => wait_enabled.then_some(f),
        Some(f) if COMMANDS.contains(&n.to_bytes()) => timing_enabled.then_some(f),
        Some(f) if n.to_bytes() == b"vkGetCalibratedTimestampsKHR" => calibrated.then_some(f),
        Some(f) if next.is_some() => Some(f),
        _ => next,
    }
}

unsafe extern "system" fn create_instance(
    info: *const vk::InstanceCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Instance,
) -> vk::Result {
    // SAFETY: the loader's chain in a valid create info.
    unsafe {
        let link = find_instance_link((*info).p_next, VK_LAYER_LINK_INFO);
        if link.is_null() || (*link).u.is_null() {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        let layer = (*link).u as *mut VkLayerInstanceLink;
        let gipa = (*layer).pfn_next_get_instance_proc_addr;
        (*link).u = (*layer).p_next.cast();
        let Some(create) = gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let create: vk::PFN_vkCreateInstance = std::mem::transmute(create);
        let r = create(info, alloc, out);
        if r != vk::Result::SUCCESS {
            return r;
        }
        let handle = *out;
        let fns = ash::Instance::load_with(|n| std::mem::transmute(gipa(handle, n.as_ptr())), handle);
        let caps2 = gipa(handle, c"vkGetPhysicalDeviceSurfaceCapabilities2KHR".as_ptr());
        INSTANCES.lock().unwrap_or_else(|e| e.into_inner()).push((
            key(handle.as_raw()),
            Inst {
                handle,
                gipa,
                fns,
                caps2,
            },
        ));
        r
    }
}

unsafe extern "system" fn destroy_instance(instance: vk::Instance, alloc: *const vk::AllocationCallbacks) {
    // SAFETY: a live instance of ours; forwarding the app's call.
    unsafe {
        if let Some(i) = take(&INSTANCES, key(instance.as_raw())) {
            (i.fns.fp_v1_0().destroy_instance)(instance, alloc);
        }
    }
}

fn ext(name: &CStr) -> vk::ExtensionProperties {
    let e = vk::ExtensionProperties::default().spec_version(1);
    e.extension_name(name).unwrap_or(e)
}

unsafe extern "system" fn enumerate_device_extension_properties(
    pd: vk::PhysicalDevice,
    layer: *const c_char,
    count: *mut u32,
    props: *mut vk::ExtensionProperties,
) -> vk::Result {
    // SAFETY: a physical device of one of our instances; arguments as the app passed them.
    unsafe {
        let Some(f) = with(&INSTANCES, key(pd.as_raw()), |i| {
            i.fns.fp_v1_0().enumerate_device_extension_properties
        }) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        if !layer.is_null() {
            return f(pd, layer, count, props);
        }
        let mut n = 0u32;
        let r = f(pd, layer, &mut n, std::ptr::null_mut());
        if r != vk::Result::SUCCESS {
            return r;
        }
        let mut all = vec![vk::ExtensionProperties::default(); n as usize];
        let r = f(pd, layer, &mut n, all.as_mut_ptr());
        if r != vk::Result::SUCCESS {
            return r;
        }
        all.truncate(n as usize);
        let has_ext = all.iter().any(|e| e.extension_name_as_c_str() == Ok(CALIBRATED_EXT));
        let timing: &[&CStr] = if timing_offered() && has_ext {
            &[PRESENT_ID_2, PRESENT_TIMING, CALIBRATED_KHR]
        } else {
            &[]
        };
        for &name in [PRESENT_ID, PRESENT_WAIT].iter().chain(timing) {
            if !all.iter().any(|e| e.extension_name_as_c_str() == Ok(name)) {
                all.push(ext(name));
            }
        }
        if props.is_null() {
            *count = all.len() as u32;
            return vk::Result::SUCCESS;
        }
        let give = (*count as usize).min(all.len());
        std::ptr::copy_nonoverlapping(all.as_ptr(), props, give);
        *count = give as u32;
        if give < all.len() {
            vk::Result::INCOMPLETE
        } else {
            vk::Result::SUCCESS
        }
    }
}

type Base = *mut vk::BaseOutStructure<'static>;

/// Unlinks every struct of the `types` from the chain after `head`; returns what to relink.
///
/// # Safety
/// `head` is a valid, writable struct whose chain is valid and writable until [`relink`].
unsafe fn unlink(head: Base, types: &[vk::StructureType]) -> Vec<(Base, Base)> {
    let mut out = Vec::new();
    let mut prev = head;
    // SAFETY: the caller's contract; every element starts with sType and pNext.
    unsafe {
        while !(*prev).p_next.is_null() {
            let s = (*prev).p_next;
            if types.contains(&(*s).s_type) {
                (*prev).p_next = (*s).p_next;
                out.push((prev, s));
            } else {
                prev = s;
            }
        }
    }
    out
}

/// Puts back what [`unlink`] took, newest first.
///
/// # Safety
/// The chain is as `unlink` left it.
unsafe fn relink(taken: Vec<(Base, Base)>) {
    for (prev, s) in taken.into_iter().rev() {
        // SAFETY: the caller's contract.
        unsafe { (*prev).p_next = s };
    }
}

unsafe extern "system" fn get_physical_device_features2(pd: vk::PhysicalDevice, out: *mut vk::PhysicalDeviceFeatures2) {
    // SAFETY: as the app passed them; our instance's function; the chain is restored.
    unsafe {
        let types = [
            vk::StructureType::PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR,
            vk::StructureType::PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
            ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES,
            ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES,
        ];
        let taken = unlink(out.cast(), &types);
        if let Some(f) = with(&INSTANCES, key(pd.as_raw()), |i| {
            i.fns.fp_v1_1().get_physical_device_features2
        }) {
            f(pd, out);
        }
        let on = vk::Bool32::from(timing_offered());
        for &(_, s) in &taken {
            match (*s).s_type {
                t if t == types[0] => (*(s as *mut vk::PhysicalDevicePresentIdFeaturesKHR)).present_id = vk::TRUE,
                t if t == types[1] => (*(s as *mut vk::PhysicalDevicePresentWaitFeaturesKHR)).present_wait = vk::TRUE,
                t if t == types[2] => (*(s as *mut PhysicalDevicePresentId2Features)).present_id2 = on,
                _ => {
                    let f = &mut *(s as *mut PhysicalDevicePresentTimingFeatures);
                    f.present_timing = on;
                    f.present_at_absolute_time = vk::FALSE;
                    f.present_at_relative_time = vk::FALSE;
                }
            }
        }
        relink(taken);
    }
}

unsafe extern "system" fn create_device(
    pd: vk::PhysicalDevice,
    info: *const vk::DeviceCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Device,
) -> vk::Result {
    // SAFETY: the loader's chain in a valid create info; the app's arrays as it passed them.
    unsafe {
        let link = find_device_link((*info).p_next, VK_LAYER_LINK_INFO);
        if link.is_null() || (*link).u.is_null() {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        let layer = (*link).u as *mut VkLayerDeviceLink;
        let gipa = (*layer).pfn_next_get_instance_proc_addr;
        let gdpa = (*layer).pfn_next_get_device_proc_addr;
        (*link).u = (*layer).p_next.cast();
        let Some(instance) = with(&INSTANCES, key(pd.as_raw()), |i| i.handle) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let Some(create) = gipa(instance, c"vkCreateDevice".as_ptr()) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let create: vk::PFN_vkCreateDevice = std::mem::transmute(create);
        // The driver below knows neither the extensions nor their feature structs.
        let mut info2 = *info;
        let exts: &[*const c_char] = if (*info).enabled_extension_count == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(
                (*info).pp_enabled_extension_names,
                (*info).enabled_extension_count as usize,
            )
        };
        let ours = [PRESENT_ID, PRESENT_WAIT, PRESENT_ID_2, PRESENT_TIMING, CALIBRATED_KHR];
        let mut kept: Vec<*const c_char> = exts
            .iter()
            .copied()
            .filter(|&e| !ours.contains(&CStr::from_ptr(e)))
            .collect();
        let named = |n: &CStr| exts.iter().any(|&e| CStr::from_ptr(e) == n);
        // VK_KHR_calibrated_timestamps is lavapipe's EXT one under the KHR name.
        if named(CALIBRATED_KHR) && !named(CALIBRATED_EXT) {
            kept.push(CALIBRATED_EXT.as_ptr());
        }
        info2.enabled_extension_count = kept.len() as u32;
        info2.pp_enabled_extension_names = kept.as_ptr();
        let taken = unlink(
            std::ptr::addr_of_mut!(info2).cast(),
            &[
                vk::StructureType::PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR,
                vk::StructureType::PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
                ST_PHYSICAL_DEVICE_PRESENT_ID_2_FEATURES,
                ST_PHYSICAL_DEVICE_PRESENT_TIMING_FEATURES,
            ],
        );
        let r = create(pd, &info2, alloc, out);
        // The app's chain as it was (a first link in our copy needs no restoring).
        relink(taken);
        if r != vk::Result::SUCCESS {
            return r;
        }
        let handle = *out;
        let load = |n: &CStr| gdpa(handle, n.as_ptr());
        let wait_enabled = named(PRESENT_WAIT);
        let timing_enabled = named(PRESENT_TIMING);
        let calibrate = if named(CALIBRATED_KHR) {
            load(c"vkGetCalibratedTimestampsEXT").map(|f| std::mem::transmute(f))
        } else {
            None
        };
        let fns = ash::Device::load_with(|n| std::mem::transmute(gdpa(handle, n.as_ptr())), handle);
        DEVICES.lock().unwrap_or_else(|e| e.into_inner()).push((
            key(handle.as_raw()),
            Dev {
                gdpa,
                fns,
                present: load(c"vkQueuePresentKHR").map(|f| std::mem::transmute(f)),
                create_swapchain: load(c"vkCreateSwapchainKHR").map(|f| std::mem::transmute(f)),
                destroy_swapchain: load(c"vkDestroySwapchainKHR").map(|f| std::mem::transmute(f)),
                wait_enabled,
                timing_enabled,
                calibrate,
            },
        ));
        r
    }
}

unsafe extern "system" fn destroy_device(device: vk::Device, alloc: *const vk::AllocationCallbacks) {
    // SAFETY: a live device of ours; forwarding the app's call.
    unsafe {
        if let Some(d) = take(&DEVICES, key(device.as_raw())) {
            (d.fns.fp_v1_0().destroy_device)(device, alloc);
        }
    }
}

unsafe extern "system" fn create_swapchain(
    device: vk::Device,
    info: *const vk::SwapchainCreateInfoKHR,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::SwapchainKHR,
) -> vk::Result {
    // SAFETY: a live device of ours; forwarding the app's call.
    unsafe {
        let Some(f) = with(&DEVICES, key(device.as_raw()), |d| d.create_swapchain).flatten() else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        // Lavapipe knows neither flag.
        let ours = SWAPCHAIN_CREATE_PRESENT_TIMING | SWAPCHAIN_CREATE_PRESENT_ID_2;
        let mut copy = *info;
        copy.flags &= !ours;
        let r = f(device, &copy, alloc, out);
        if r == vk::Result::SUCCESS {
            let fifo = (*info).present_mode == vk::PresentModeKHR::FIFO;
            let timing = (*info).flags.contains(SWAPCHAIN_CREATE_PRESENT_TIMING);
            swapchains(|m| {
                m.insert(
                    (*out).as_raw(),
                    Swapchain {
                        fifo,
                        timing,
                        ..Swapchain::default()
                    },
                )
            });
        }
        r
    }
}

unsafe extern "system" fn destroy_swapchain(
    device: vk::Device,
    swapchain: vk::SwapchainKHR,
    alloc: *const vk::AllocationCallbacks,
) {
    swapchains(|m| m.remove(&swapchain.as_raw()));
    // SAFETY: a live device of ours; forwarding the app's call.
    unsafe {
        if let Some(f) = with(&DEVICES, key(device.as_raw()), |d| d.destroy_swapchain).flatten() {
            f(device, swapchain, alloc);
        }
    }
}

unsafe extern "system" fn queue_present(queue: vk::Queue, info: *const vk::PresentInfoKHR) -> vk::Result {
    // SAFETY: a queue of one of our devices; the present info as the app passed it, whose chain
    // is restored before returning.
    unsafe {
        let Some(f) = with(&DEVICES, key(queue.as_raw()), |d| d.present).flatten() else {
            return vk::Result::ERROR_DEVICE_LOST;
        };
        let i = &*info;
        let mut ids: &[u64] = &[];
        let mut timings: &[PresentTimingInfo] = &[];
        let mut p = i.p_next as *const vk::BaseInStructure;
        while !p.is_null() {
            // VkPresentIdKHR and VkPresentId2KHR have one layout.
            if (*p).s_type == vk::StructureType::PRESENT_ID_KHR || (*p).s_type == ST_PRESENT_ID_2 {
                let pid = &*(p as *const vk::PresentIdKHR);
                if !pid.p_present_ids.is_null() {
                    ids = std::slice::from_raw_parts(pid.p_present_ids, pid.swapchain_count as usize);
                }
            }
            if (*p).s_type == ST_PRESENT_TIMINGS_INFO {
                let t = &*(p as *const PresentTimingsInfo);
                if !t.p_timing_infos.is_null() {
                    timings = std::slice::from_raw_parts(t.p_timing_infos, t.swapchain_count as usize);
                }
            }
            p = (*p).p_next;
        }
        let scs = std::slice::from_raw_parts(i.p_swapchains, i.swapchain_count as usize);
        let period = refresh_ns();
        let now = now_ns();
        // The latest a FIFO present of this call may return: once the image before it is shown.
        let mut hold_until = 0u64;
        // A timing request with its swapchain's queue full fails the whole present, before
        // anything is queued (VK_ERROR_PRESENT_TIMING_QUEUE_FULL_EXT).
        let full = swapchains(|m| {
            scs.iter().enumerate().any(|(n, sc)| {
                let asks = timings.get(n).is_some_and(|t| t.present_stage_queries != 0);
                asks && m
                    .get(&sc.as_raw())
                    .is_none_or(|s| !s.timing || s.queue.len() >= s.queue_size)
            })
        });
        if full {
            return ERROR_PRESENT_TIMING_QUEUE_FULL;
        }
        swapchains(|m| {
            for (n, sc) in scs.iter().enumerate() {
                let Some(s) = m.get_mut(&sc.as_raw()) else { continue };
                let shown = shown_at(now, s.last_shown, s.fifo, period);
                if s.fifo {
                    hold_until = hold_until.max(shown.saturating_sub(period));
                }
                s.last_shown = shown;
                if let Some(&id) = ids.get(n).filter(|&&id| id != 0) {
                    if s.shown.len() == KEEP {
                        s.shown.pop_front();
                    }
                    s.shown.push_back((id, shown));
                }
                if let Some(t) = timings.get(n).filter(|t| t.present_stage_queries != 0) {
                    if t.time_domain_id != TIME_DOMAIN_ID {
                        eprintln!(
                            "present_double: a timing request in time domain {}, not {TIME_DOMAIN_ID}",
                            t.time_domain_id
                        );
                    }
                    s.queue.push_back(Timing {
                        id: ids.get(n).copied().unwrap_or(0),
                        stages: t.present_stage_queries,
                        shown,
                    });
                }
            }
        });
        let mut copy = *info;
        let taken = unlink(
            std::ptr::addr_of_mut!(copy).cast(),
            &[
                vk::StructureType::PRESENT_ID_KHR,
                ST_PRESENT_ID_2,
                ST_PRESENT_TIMINGS_INFO,
            ],
        );
        let r = f(queue, &copy);
        relink(taken);
        if hold_until > now_ns() {
            sleep_until(hold_until);
        }
        r
    }
}

/// What a wait for `id` on a swapchain finds now: when it is (or will be) shown; `None`: not
/// presented yet.
fn shown_time(sc: vk::SwapchainKHR, id: u64) -> Result<Option<u64>, vk::Result> {
    swapchains(|m| {
        let s = m.get(&sc.as_raw()).ok_or(vk::Result::ERROR_OUT_OF_DATE_KHR)?;
        Ok(s.shown.iter().find(|(i, _)| *i >= id).map(|&(_, t)| t))
    })
}

unsafe extern "system" fn wait_for_present(
    _device: vk::Device,
    swapchain: vk::SwapchainKHR,
    id: u64,
    timeout: u64,
) -> vk::Result {
    let from = std::env::var("FRAMESCOPE_PRESENT_DOUBLE_WAIT_OUT_OF_DATE_FROM").ok();
    if from.and_then(|v| v.parse::<u64>().ok()).is_some_and(|n| id >= n) {
        return vk::Result::ERROR_OUT_OF_DATE_KHR;
    }
    let deadline = now_ns().saturating_add(timeout);
    loop {
        let now = now_ns();
        match shown_time(swapchain, id) {
            Err(e) => return e,
            Ok(Some(t)) if t <= now => return vk::Result::SUCCESS,
            Ok(Some(t)) if t <= deadline => {
                sleep_until(t);
                return vk::Result::SUCCESS;
            }
            Ok(_) if now >= deadline => return vk::Result::TIMEOUT,
            // Shown after the deadline: wait it out.
            Ok(Some(_)) => {
                sleep_until(deadline);
                return vk::Result::TIMEOUT;
            }
            // Not presented yet: look again in a millisecond.
            Ok(None) => sleep_until(deadline.min(now + 1_000_000)),
        }
    }
}

unsafe extern "system" fn surface_capabilities2(
    pd: vk::PhysicalDevice,
    info: *const vk::PhysicalDeviceSurfaceInfo2KHR,
    caps: *mut vk::SurfaceCapabilities2KHR,
) -> vk::Result {
    // SAFETY: as the app passed them; our instance's function; the chain is restored.
    unsafe {
        let types = [
            ST_PRESENT_TIMING_SURFACE_CAPABILITIES,
            ST_SURFACE_CAPABILITIES_PRESENT_ID_2,
        ];
        let taken = unlink(caps.cast(), &types);
        let Some(f) = with(&INSTANCES, key(pd.as_raw()), |i| i.caps2).flatten() else {
            relink(taken);
            return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
        };
        let f: vk::PFN_vkGetPhysicalDeviceSurfaceCapabilities2KHR = std::mem::transmute(f);
        let r = f(pd, info, caps);
        let on = vk::Bool32::from(timing_offered());
        for &(_, s) in &taken {
            if (*s).s_type == types[0] {
                let c = &mut *(s as *mut PresentTimingSurfaceCapabilities);
                c.present_timing_supported = on;
                c.present_at_absolute_time_supported = vk::FALSE;
                c.present_at_relative_time_supported = vk::FALSE;
                c.present_stage_queries = if timing_offered() {
                    STAGE_QUEUE_OPERATIONS_END | STAGE_IMAGE_FIRST_PIXEL_OUT | STAGE_IMAGE_FIRST_PIXEL_VISIBLE
                } else {
                    0
                };
            } else {
                (*(s as *mut SurfaceCapabilitiesPresentId2)).present_id2_supported = on;
            }
        }
        relink(taken);
        r
    }
}

unsafe extern "system" fn set_queue_size(_device: vk::Device, swapchain: vk::SwapchainKHR, size: u32) -> vk::Result {
    swapchains(|m| match m.get_mut(&swapchain.as_raw()) {
        // Fewer than are queued: VK_NOT_READY, the size unchanged.
        Some(s) if (size as usize) < s.queue.len() => vk::Result::NOT_READY,
        Some(s) => {
            s.queue_size = size as usize;
            vk::Result::SUCCESS
        }
        None => vk::Result::ERROR_OUT_OF_DATE_KHR,
    })
}

unsafe extern "system" fn timing_properties(
    _device: vk::Device,
    _swapchain: vk::SwapchainKHR,
    props: *mut SwapchainTimingProperties,
    counter: *mut u64,
) -> vk::Result {
    // SAFETY: the caller's structs.
    unsafe {
        (*props).refresh_duration = refresh_ns();
        (*props).refresh_interval = refresh_ns();
        if !counter.is_null() {
            *counter = 1;
        }
    }
    vk::Result::SUCCESS
}

unsafe extern "system" fn time_domains(
    _device: vk::Device,
    _swapchain: vk::SwapchainKHR,
    props: *mut SwapchainTimeDomainProperties,
    counter: *mut u64,
) -> vk::Result {
    // SAFETY: the caller's struct and arrays of the count it gives.
    unsafe {
        if !counter.is_null() {
            *counter = 1;
        }
        let p = &mut *props;
        if p.p_time_domains.is_null() && p.p_time_domain_ids.is_null() {
            p.time_domain_count = 1;
            return vk::Result::SUCCESS;
        }
        if p.time_domain_count == 0 {
            return vk::Result::INCOMPLETE;
        }
        p.time_domain_count = 1;
        if !p.p_time_domains.is_null() {
            *p.p_time_domains = time_domain();
        }
        if !p.p_time_domain_ids.is_null() {
            *p.p_time_domain_ids = TIME_DOMAIN_ID;
        }
        vk::Result::SUCCESS
    }
}

unsafe extern "system" fn past_timing(
    _device: vk::Device,
    info: *const PastPresentationTimingInfo,
    props: *mut PastPresentationTimingProperties,
) -> vk::Result {
    let now = now_ns();
    // SAFETY: the caller's structs and arrays of the counts it gives.
    unsafe {
        let sc = (*info).swapchain;
        let p = &mut *props;
        p.timing_properties_counter = 1;
        p.time_domains_counter = 1;
        swapchains(|m| {
            let Some(s) = m.get_mut(&sc.as_raw()) else {
                return vk::Result::ERROR_OUT_OF_DATE_KHR;
            };
            // Complete results only (no ALLOW_PARTIAL_RESULTS): presents whose refresh passed.
            let ready = s.queue.iter().take_while(|t| t.shown <= now).count();
            if p.p_presentation_timings.is_null() {
                p.presentation_timing_count = ready as u32;
                return vk::Result::SUCCESS;
            }
            let give = ready.min(p.presentation_timing_count as usize);
            for k in 0..give {
                let t = s.queue.pop_front().expect("counted above");
                let out = &mut *p.p_presentation_timings.add(k);
                out.present_id = t.id;
                out.target_time = 0;
                out.time_domain = time_domain();
                out.time_domain_id = TIME_DOMAIN_ID;
                out.report_complete = vk::TRUE;
                let room = out.present_stage_count as usize;
                let mut n = 0;
                for bit in [
                    STAGE_QUEUE_OPERATIONS_END,
                    STAGE_REQUEST_DEQUEUED,
                    STAGE_IMAGE_FIRST_PIXEL_OUT,
                    STAGE_IMAGE_FIRST_PIXEL_VISIBLE,
                ] {
                    if t.stages & bit != 0 && n < room && !out.p_present_stages.is_null() {
                        *out.p_present_stages.add(n) = PresentStageTime {
                            stage: bit,
                            time: in_domain(t.shown),
                        };
                        n += 1;
                    }
                }
                out.present_stage_count = n as u32;
            }
            p.presentation_timing_count = give as u32;
            if give < ready {
                vk::Result::INCOMPLETE
            } else {
                vk::Result::SUCCESS
            }
        })
    }
}

unsafe extern "system" fn calibrated_timestamps(
    device: vk::Device,
    count: u32,
    infos: *const vk::CalibratedTimestampInfoKHR,
    out: *mut u64,
    deviation: *mut u64,
) -> vk::Result {
    // SAFETY: the caller's arrays of `count`; a live device of ours; lavapipe's EXT command has
    // the same signature.
    unsafe {
        let infos_s = std::slice::from_raw_parts(infos, count as usize);
        let local = |d: vk::TimeDomainKHR| d == TIME_DOMAIN_PRESENT_STAGE_LOCAL || d == TIME_DOMAIN_SWAPCHAIN_LOCAL;
        if infos_s.iter().any(|i| local(i.time_domain)) {
            // The swapchain's domains: answered here, all at one instant (deviation 0).
            let now = now_ns();
            for (k, i) in infos_s.iter().enumerate() {
                *out.add(k) = match i.time_domain {
                    d if local(d) => {
                        let mut p = i.p_next as *const vk::BaseInStructure;
                        while !p.is_null() && (*p).s_type != ST_SWAPCHAIN_CALIBRATED_TIMESTAMP_INFO {
                            p = (*p).p_next;
                        }
                        if p.is_null() {
                            eprintln!("present_double: a swapchain-local calibration without VkSwapchainCalibratedTimestampInfoEXT");
                            return vk::Result::ERROR_UNKNOWN;
                        }
                        now + STAGE_LOCAL_OFFSET_NS
                    }
                    vk::TimeDomainKHR::CLOCK_MONOTONIC => now,
                    _ => return vk::Result::ERROR_UNKNOWN,
                };
            }
            if !deviation.is_null() {
                *deviation = 0;
            }
            return vk::Result::SUCCESS;
        }
        match with(&DEVICES, key(device.as_raw()), |d| d.calibrate).flatten() {
            Some(f) => f(device, count, infos, out, deviation),
            None => vk::Result::ERROR_EXTENSION_NOT_PRESENT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_shows_one_image_a_refresh_and_others_at_the_next_refresh() {
        let p = 20;
        assert_eq!(refresh_after(0, p), 20);
        assert_eq!(refresh_after(39, p), 40);
        assert_eq!(refresh_after(40, p), 60);
        // Three FIFO presents at once: one a refresh.
        let a = shown_at(5, 0, true, p);
        let b = shown_at(6, a, true, p);
        let c = shown_at(7, b, true, p);
        assert_eq!((a, b, c), (20, 40, 60));
        // Immediate: all at the next refresh.
        assert_eq!(shown_at(6, 20, false, p), 20);
    }
}
