//! A test double, never installed: a Vulkan layer (`VK_LAYER_FRAMESCOPE_perf_double`) that sits
//! below framescope on lavapipe and gives it `VK_KHR_performance_query` with four
//! deterministic counters computed from the work recorded between a query's begin and end
//! ([`counters`]): draws and vertices in one pass, vertices per draw and draws × 1000 in
//! another. Results are ready when the command buffer is submitted once per pass the pool
//! needs. `FRAMESCOPE_PERF_DOUBLE_LOCK=refuse` makes `vkAcquireProfilingLockKHR` answer
//! `VK_TIMEOUT`, as ANV does without `perf_stream_paranoid=0`.
//!
//! Performance query pools are real lavapipe timestamp pools underneath (so the handles are
//! real); begin and end on them never reach the driver. Everything else passes through.

#![allow(clippy::missing_safety_doc)]

pub mod counters;
#[path = "../../../layer/vulkan/src/dispatch/loader_abi.rs"]
mod loader_abi;

use ash::vk;
use ash::vk::Handle;
use counters::{Tally, COUNTERS};
use loader_abi::*;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Mutex;

const EXT: &CStr = ash::khr::performance_query::NAME;

/// The loader's dispatch pointer of a dispatchable handle: devices, queues and command
/// buffers of one device share it, as physical devices share their instance's.
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
}

struct Pool {
    counters: Vec<u32>,
    passes: Vec<u32>,
    /// Per query: the work it saw and which passes were submitted since its last reset.
    results: Vec<Option<(Tally, Vec<bool>)>>,
}

#[derive(Default)]
struct Recording {
    tally: Tally,
    open: Vec<(u64, u32, Tally)>,
    closed: Vec<(u64, u32, Tally)>,
    resets: Vec<(u64, u32, u32)>,
}

struct Dev {
    gdpa: vk::PFN_vkGetDeviceProcAddr,
    fns: ash::Device,
    pools: HashMap<u64, Pool>,
    recordings: HashMap<u64, Recording>,
}

static INSTANCES: Registry<Inst> = Mutex::new(Vec::new());
static DEVICES: Registry<Dev> = Mutex::new(Vec::new());

type Registry<T> = Mutex<Vec<(usize, T)>>;

fn with<T, R>(m: &Registry<T>, k: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    g.iter_mut().find(|(x, _)| *x == k).map(|(_, t)| f(t))
}

fn with_inst<R>(k: usize, f: impl FnOnce(&Inst) -> R) -> Option<R> {
    with(&INSTANCES, k, |i| f(i))
}

fn with_dev<R>(k: usize, f: impl FnOnce(&mut Dev) -> R) -> Option<R> {
    with(&DEVICES, k, f)
}

/// Removes the entry of `k`.
fn take<T>(m: &Registry<T>, k: usize) -> Option<T> {
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    let p = g.iter().position(|(x, _)| *x == k)?;
    Some(g.remove(p).1)
}

fn lock_refused() -> bool {
    std::env::var("FRAMESCOPE_PERF_DOUBLE_LOCK").is_ok_and(|v| v == "refuse")
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

/// The hook for a command name, as the loader's untyped function pointer.
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
        b"vkAcquireProfilingLockKHR" => acquire_profiling_lock,
        b"vkReleaseProfilingLockKHR" => release_profiling_lock,
        b"vkCreateQueryPool" => create_query_pool,
        b"vkDestroyQueryPool" => destroy_query_pool,
        b"vkResetQueryPool" => reset_query_pool,
        b"vkResetQueryPoolEXT" => reset_query_pool,
        b"vkCmdResetQueryPool" => cmd_reset_query_pool,
        b"vkCmdBeginQuery" => cmd_begin_query,
        b"vkCmdEndQuery" => cmd_end_query,
        b"vkGetQueryPoolResults" => get_query_pool_results,
        b"vkBeginCommandBuffer" => begin_command_buffer,
        b"vkCmdDraw" => cmd_draw,
        b"vkCmdDrawIndexed" => cmd_draw_indexed,
        b"vkCmdDrawIndirect" => cmd_draw_indirect,
        b"vkCmdDrawIndexedIndirect" => cmd_draw_indexed_indirect,
        b"vkQueueSubmit" => queue_submit,
        b"vkQueueSubmit2" => queue_submit2,
        b"vkQueueSubmit2KHR" => queue_submit2,
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
        b"vkGetPhysicalDeviceProperties2" => get_physical_device_properties2,
        b"vkGetPhysicalDeviceProperties2KHR" => get_physical_device_properties2,
        b"vkEnumeratePhysicalDeviceQueueFamilyPerformanceQueryCountersKHR" => enumerate_counters,
        b"vkGetPhysicalDeviceQueueFamilyPerformanceQueryPassesKHR" => get_passes,
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
    let k = unsafe { key(instance.as_raw()) };
    let gipa = with_inst(k, |i| i.gipa)?;
    // SAFETY: the next layer's entry point with the same arguments.
    unsafe { gipa(instance, name) }
}

unsafe extern "system" fn get_device_proc_addr(device: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: the caller passes a NUL-terminated name.
    let n = unsafe { CStr::from_ptr(name) };
    if let Some(f) = device_hook(n) {
        return Some(f);
    }
    // SAFETY: a live device of ours.
    let k = unsafe { key(device.as_raw()) };
    let gdpa = with_dev(k, |d| d.gdpa)?;
    // SAFETY: the next layer's entry point with the same arguments.
    unsafe { gdpa(device, name) }
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
        INSTANCES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((key(handle.as_raw()), Inst { handle, gipa, fns }));
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

unsafe extern "system" fn enumerate_device_extension_properties(
    pd: vk::PhysicalDevice,
    layer: *const c_char,
    count: *mut u32,
    props: *mut vk::ExtensionProperties,
) -> vk::Result {
    // SAFETY: a physical device of one of our instances; arguments as the app passed them.
    unsafe {
        let Some(f) = with_inst(key(pd.as_raw()), |i| {
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
        if !all.iter().any(|e| e.extension_name_as_c_str() == Ok(EXT)) {
            let e = vk::ExtensionProperties::default().spec_version(1);
            all.push(e.extension_name(EXT).unwrap_or(e));
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

/// Walks a pNext chain.
///
/// # Safety
/// `p` is a valid chain.
unsafe fn each(mut p: *mut c_void, mut f: impl FnMut(*mut vk::BaseOutStructure<'static>)) {
    while !p.is_null() {
        let s = p as *mut vk::BaseOutStructure<'static>;
        f(s);
        // SAFETY: every element starts with sType and pNext.
        p = unsafe { (*s).p_next.cast() };
    }
}

unsafe extern "system" fn get_physical_device_features2(pd: vk::PhysicalDevice, out: *mut vk::PhysicalDeviceFeatures2) {
    // SAFETY: as the app passed them; our instance's function.
    unsafe {
        if let Some(f) = with_inst(key(pd.as_raw()), |i| i.fns.fp_v1_1().get_physical_device_features2) {
            f(pd, out);
        }
        each((*out).p_next, |s| {
            if (*s).s_type == vk::StructureType::PHYSICAL_DEVICE_PERFORMANCE_QUERY_FEATURES_KHR {
                let f = s as *mut vk::PhysicalDevicePerformanceQueryFeaturesKHR;
                (*f).performance_counter_query_pools = vk::TRUE;
                (*f).performance_counter_multiple_query_pools = vk::FALSE;
            }
        });
    }
}

unsafe extern "system" fn get_physical_device_properties2(
    pd: vk::PhysicalDevice,
    out: *mut vk::PhysicalDeviceProperties2,
) {
    // SAFETY: as the app passed them; our instance's function.
    unsafe {
        if let Some(f) = with_inst(key(pd.as_raw()), |i| i.fns.fp_v1_1().get_physical_device_properties2) {
            f(pd, out);
        }
        each((*out).p_next, |s| {
            if (*s).s_type == vk::StructureType::PHYSICAL_DEVICE_PERFORMANCE_QUERY_PROPERTIES_KHR {
                (*(s as *mut vk::PhysicalDevicePerformanceQueryPropertiesKHR)).allow_command_buffer_query_copies =
                    vk::FALSE;
            }
        });
    }
}

/// The queue family that has counters: lavapipe's first, its graphics one.
const FAMILY: u32 = 0;

unsafe extern "system" fn enumerate_counters(
    _pd: vk::PhysicalDevice,
    family: u32,
    count: *mut u32,
    out: *mut vk::PerformanceCounterKHR,
    descs: *mut vk::PerformanceCounterDescriptionKHR,
) -> vk::Result {
    let n = if family == FAMILY { COUNTERS.len() } else { 0 };
    // SAFETY: the two-call idiom's arrays hold `*count` elements when not null.
    unsafe {
        if out.is_null() && descs.is_null() {
            *count = n as u32;
            return vk::Result::SUCCESS;
        }
        let give = (*count as usize).min(n);
        for (i, c) in COUNTERS.iter().enumerate().take(give) {
            if !out.is_null() {
                let o = &mut *out.add(i);
                o.unit = c.unit;
                o.scope = vk::PerformanceCounterScopeKHR::COMMAND;
                o.storage = c.storage;
                o.uuid = [0; 16];
                o.uuid[0] = 0xfd;
                o.uuid[15] = i as u8;
            }
            if !descs.is_null() {
                let d = &mut *descs.add(i);
                d.flags = vk::PerformanceCounterDescriptionFlagsKHR::empty();
                for (dst, src) in [
                    (&mut d.name[..], c.name),
                    (&mut d.category[..], c.category),
                    (&mut d.description[..], c.description),
                ] {
                    dst.fill(0);
                    for (x, b) in dst.iter_mut().zip(src.bytes().take(vk::MAX_DESCRIPTION_SIZE - 1)) {
                        *x = b as c_char;
                    }
                }
            }
        }
        *count = give as u32;
        if give < n {
            vk::Result::INCOMPLETE
        } else {
            vk::Result::SUCCESS
        }
    }
}

unsafe extern "system" fn get_passes(
    _pd: vk::PhysicalDevice,
    info: *const vk::QueryPoolPerformanceCreateInfoKHR,
    passes: *mut u32,
) {
    // SAFETY: a valid create info whose index array holds `counter_index_count` entries.
    unsafe {
        let i = &*info;
        let idx = std::slice::from_raw_parts(i.p_counter_indices, i.counter_index_count as usize);
        *passes = counters::passes(idx).map_or(1, |p| p.len().max(1) as u32);
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
        let Some(instance) = with_inst(key(pd.as_raw()), |i| i.handle) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let Some(create) = gipa(instance, c"vkCreateDevice".as_ptr()) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let create: vk::PFN_vkCreateDevice = std::mem::transmute(create);
        // The driver below knows neither the extension nor its feature struct.
        let mut info2 = *info;
        let exts = std::slice::from_raw_parts(
            (*info).pp_enabled_extension_names,
            (*info).enabled_extension_count as usize,
        );
        let kept: Vec<*const c_char> = exts.iter().copied().filter(|&e| CStr::from_ptr(e) != EXT).collect();
        info2.enabled_extension_count = kept.len() as u32;
        info2.pp_enabled_extension_names = kept.as_ptr();
        type Base = *mut vk::BaseOutStructure<'static>;
        let mut unlinked: Option<(Base, Base)> = None;
        let mut prev: Base = (&mut info2 as *mut vk::DeviceCreateInfo).cast();
        each(info2.p_next as *mut c_void, |s| {
            if unlinked.is_none() && (*s).s_type == vk::StructureType::PHYSICAL_DEVICE_PERFORMANCE_QUERY_FEATURES_KHR {
                unlinked = Some((prev, s));
            }
            prev = s;
        });
        if let Some((before, s)) = unlinked {
            (*before).p_next = (*s).p_next;
        }
        let r = create(pd, &info2, alloc, out);
        if let Some((before, s)) = unlinked {
            // The app's chain as it was (the first link is our copy).
            if before != (&mut info2 as *mut vk::DeviceCreateInfo).cast() {
                (*before).p_next = s;
            }
        }
        if r != vk::Result::SUCCESS {
            return r;
        }
        let handle = *out;
        let fns = ash::Device::load_with(|n| std::mem::transmute(gdpa(handle, n.as_ptr())), handle);
        DEVICES.lock().unwrap_or_else(|e| e.into_inner()).push((
            key(handle.as_raw()),
            Dev {
                gdpa,
                fns,
                pools: HashMap::new(),
                recordings: HashMap::new(),
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

unsafe extern "system" fn acquire_profiling_lock(
    _d: vk::Device,
    _i: *const vk::AcquireProfilingLockInfoKHR,
) -> vk::Result {
    if lock_refused() {
        vk::Result::TIMEOUT
    } else {
        vk::Result::SUCCESS
    }
}

unsafe extern "system" fn release_profiling_lock(_d: vk::Device) {}

unsafe extern "system" fn create_query_pool(
    device: vk::Device,
    info: *const vk::QueryPoolCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::QueryPool,
) -> vk::Result {
    // SAFETY: a live device of ours; the create info as the app passed it.
    unsafe {
        let k = key(device.as_raw());
        let Some(f) = with_dev(k, |d| d.fns.fp_v1_0().create_query_pool) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        if (*info).query_type != vk::QueryType::PERFORMANCE_QUERY_KHR {
            return f(device, info, alloc, out);
        }
        let mut perf = None;
        each((*info).p_next as *mut c_void, |s| {
            if (*s).s_type == vk::StructureType::QUERY_POOL_PERFORMANCE_CREATE_INFO_KHR {
                perf = Some(&*(s as *const vk::QueryPoolPerformanceCreateInfoKHR));
            }
        });
        let Some(perf) = perf else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let idx = std::slice::from_raw_parts(perf.p_counter_indices, perf.counter_index_count as usize).to_vec();
        let Some(passes) = counters::passes(&idx) else {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let real = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count((*info).query_count);
        let r = f(device, &real, alloc, out);
        if r == vk::Result::SUCCESS {
            let pool = Pool {
                counters: idx,
                passes,
                results: vec![None; (*info).query_count as usize],
            };
            with_dev(k, |d| d.pools.insert((*out).as_raw(), pool));
        }
        r
    }
}

unsafe extern "system" fn destroy_query_pool(
    device: vk::Device,
    pool: vk::QueryPool,
    alloc: *const vk::AllocationCallbacks,
) {
    // SAFETY: a live device of ours; forwarding the app's call.
    unsafe {
        if let Some(f) = with_dev(key(device.as_raw()), |d| {
            d.pools.remove(&pool.as_raw());
            d.fns.fp_v1_0().destroy_query_pool
        }) {
            f(device, pool, alloc);
        }
    }
}

fn reset(d: &mut Dev, pool: u64, first: u32, count: u32) {
    if let Some(p) = d.pools.get_mut(&pool) {
        for r in p.results.iter_mut().skip(first as usize).take(count as usize) {
            *r = None;
        }
    }
}

unsafe extern "system" fn reset_query_pool(device: vk::Device, pool: vk::QueryPool, first: u32, count: u32) {
    // SAFETY: a live device of ours; forwarding the app's call.
    unsafe {
        if let Some(f) = with_dev(key(device.as_raw()), |d| {
            reset(d, pool.as_raw(), first, count);
            d.fns.fp_v1_2().reset_query_pool
        }) {
            f(device, pool, first, count);
        }
    }
}

/// Runs `f` on the recording state of `cb` and returns its device's functions.
///
/// # Safety
/// `cb` is a live command buffer of one of our devices.
unsafe fn recording<R>(cb: vk::CommandBuffer, f: impl FnOnce(&mut Dev, &mut Recording) -> R) -> Option<R> {
    // SAFETY: guaranteed by the caller.
    let k = unsafe { key(cb.as_raw()) };
    with_dev(k, |d| {
        let mut rec = d.recordings.remove(&cb.as_raw()).unwrap_or_default();
        let r = f(d, &mut rec);
        d.recordings.insert(cb.as_raw(), rec);
        r
    })
}

unsafe extern "system" fn begin_command_buffer(
    cb: vk::CommandBuffer,
    info: *const vk::CommandBufferBeginInfo,
) -> vk::Result {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        match recording(cb, |d, rec| {
            *rec = Recording::default();
            d.fns.fp_v1_0().begin_command_buffer
        }) {
            Some(f) => f(cb, info),
            None => vk::Result::ERROR_INITIALIZATION_FAILED,
        }
    }
}

unsafe extern "system" fn cmd_reset_query_pool(cb: vk::CommandBuffer, pool: vk::QueryPool, first: u32, count: u32) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(f) = recording(cb, |d, rec| {
            if d.pools.contains_key(&pool.as_raw()) {
                rec.resets.push((pool.as_raw(), first, count));
            }
            d.fns.fp_v1_0().cmd_reset_query_pool
        }) {
            f(cb, pool, first, count);
        }
    }
}

unsafe extern "system" fn cmd_begin_query(
    cb: vk::CommandBuffer,
    pool: vk::QueryPool,
    query: u32,
    flags: vk::QueryControlFlags,
) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(Some(f)) = recording(cb, |d, rec| {
            if d.pools.contains_key(&pool.as_raw()) {
                rec.open.push((pool.as_raw(), query, rec.tally));
                None
            } else {
                Some(d.fns.fp_v1_0().cmd_begin_query)
            }
        }) {
            f(cb, pool, query, flags);
        }
    }
}

unsafe extern "system" fn cmd_end_query(cb: vk::CommandBuffer, pool: vk::QueryPool, query: u32) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(Some(f)) = recording(cb, |d, rec| {
            if d.pools.contains_key(&pool.as_raw()) {
                if let Some(i) = rec.open.iter().position(|(p, q, _)| *p == pool.as_raw() && *q == query) {
                    let (p, q, start) = rec.open.remove(i);
                    rec.closed.push((p, q, rec.tally.since(start)));
                }
                None
            } else {
                Some(d.fns.fp_v1_0().cmd_end_query)
            }
        }) {
            f(cb, pool, query);
        }
    }
}

/// Counts one draw command of `vertices` vertices.
///
/// # Safety
/// `cb` is a live command buffer of one of our devices.
unsafe fn tally(cb: vk::CommandBuffer, vertices: u64) -> Option<ash::Device> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        recording(cb, |d, rec| {
            rec.tally.draws += 1;
            rec.tally.vertices += vertices;
            d.fns.clone()
        })
    }
}

unsafe extern "system" fn cmd_draw(
    cb: vk::CommandBuffer,
    vertices: u32,
    instances: u32,
    first: u32,
    first_instance: u32,
) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(d) = tally(cb, u64::from(vertices) * u64::from(instances)) {
            (d.fp_v1_0().cmd_draw)(cb, vertices, instances, first, first_instance);
        }
    }
}

unsafe extern "system" fn cmd_draw_indexed(
    cb: vk::CommandBuffer,
    indices: u32,
    instances: u32,
    first: u32,
    offset: i32,
    fi: u32,
) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(d) = tally(cb, u64::from(indices) * u64::from(instances)) {
            (d.fp_v1_0().cmd_draw_indexed)(cb, indices, instances, first, offset, fi);
        }
    }
}

unsafe extern "system" fn cmd_draw_indirect(
    cb: vk::CommandBuffer,
    buf: vk::Buffer,
    off: vk::DeviceSize,
    n: u32,
    stride: u32,
) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(d) = tally(cb, 0) {
            (d.fp_v1_0().cmd_draw_indirect)(cb, buf, off, n, stride);
        }
    }
}

unsafe extern "system" fn cmd_draw_indexed_indirect(
    cb: vk::CommandBuffer,
    buf: vk::Buffer,
    off: vk::DeviceSize,
    n: u32,
    stride: u32,
) {
    // SAFETY: a command buffer of ours; forwarding the app's call.
    unsafe {
        if let Some(d) = tally(cb, 0) {
            (d.fp_v1_0().cmd_draw_indexed_indirect)(cb, buf, off, n, stride);
        }
    }
}

/// A submission of `cbs` for pass `pass`: resets recorded in them, then their queries' work.
fn submitted(d: &mut Dev, cbs: &[u64], pass: u32) {
    for cb in cbs {
        let Some(rec) = d.recordings.get(cb) else { continue };
        let (resets, closed) = (rec.resets.clone(), rec.closed.clone());
        for (pool, first, count) in resets {
            reset(d, pool, first, count);
        }
        for (pool, query, t) in closed {
            let Some(p) = d.pools.get_mut(&pool) else { continue };
            let Some(slot) = p.results.get_mut(query as usize) else {
                continue;
            };
            // The pass index counts the pool's own passes (0..numPasses of its counter set),
            // whichever hardware passes they are.
            let at = pass as usize;
            if at >= p.passes.len() {
                continue;
            }
            let entry = slot.get_or_insert_with(|| (t, vec![false; p.passes.len()]));
            entry.0 = t;
            entry.1[at] = true;
        }
    }
}

/// The counter pass index a submission's pNext chain gives (0 without one).
///
/// # Safety
/// `p` is a valid chain.
unsafe fn pass_of(p: *const c_void) -> u32 {
    let mut pass = 0;
    // SAFETY: guaranteed by the caller.
    unsafe {
        each(p as *mut c_void, |s| {
            if (*s).s_type == vk::StructureType::PERFORMANCE_QUERY_SUBMIT_INFO_KHR {
                pass = (*(s as *const vk::PerformanceQuerySubmitInfoKHR)).counter_pass_index;
            }
        });
    }
    pass
}

/// `n` elements at `p`, or none.
///
/// # Safety
/// `p` holds `n` elements when `n > 0`.
unsafe fn slice<'a, T>(p: *const T, n: u32) -> &'a [T] {
    if n == 0 || p.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(p, n as usize) }
    }
}

/// Notes the submissions (their command buffers and pass) and returns the next layer's
/// submit command that `pick` chooses.
///
/// # Safety
/// `queue` is a live queue of one of our devices.
unsafe fn note_submits<F>(
    queue: vk::Queue,
    subs: Vec<(Vec<u64>, u32)>,
    pick: impl FnOnce(&ash::Device) -> F,
) -> Option<F> {
    // SAFETY: guaranteed by the caller.
    let k = unsafe { key(queue.as_raw()) };
    with_dev(k, |d| {
        for (cbs, pass) in &subs {
            submitted(d, cbs, *pass);
        }
        pick(&d.fns)
    })
}

unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    n: u32,
    submits: *const vk::SubmitInfo,
    fence: vk::Fence,
) -> vk::Result {
    // SAFETY: a queue of ours; the app's submit array as it passed it.
    unsafe {
        let subs = slice(submits, n)
            .iter()
            .map(|s| {
                let cbs = slice(s.p_command_buffers, s.command_buffer_count)
                    .iter()
                    .map(|c| c.as_raw());
                (cbs.collect(), pass_of(s.p_next))
            })
            .collect();
        match note_submits(queue, subs, |d| d.fp_v1_0().queue_submit) {
            Some(f) => f(queue, n, submits, fence),
            None => vk::Result::ERROR_INITIALIZATION_FAILED,
        }
    }
}

unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    n: u32,
    submits: *const vk::SubmitInfo2,
    fence: vk::Fence,
) -> vk::Result {
    // SAFETY: a queue of ours; the app's submit array as it passed it.
    unsafe {
        let subs = slice(submits, n)
            .iter()
            .map(|s| {
                let cbs = slice(s.p_command_buffer_infos, s.command_buffer_info_count)
                    .iter()
                    .map(|c| c.command_buffer.as_raw());
                (cbs.collect(), pass_of(s.p_next))
            })
            .collect();
        match note_submits(queue, subs, |d| d.fp_v1_3().queue_submit2) {
            Some(f) => f(queue, n, submits, fence),
            None => vk::Result::ERROR_INITIALIZATION_FAILED,
        }
    }
}

unsafe extern "system" fn get_query_pool_results(
    device: vk::Device,
    pool: vk::QueryPool,
    first: u32,
    count: u32,
    size: usize,
    data: *mut c_void,
    stride: vk::DeviceSize,
    flags: vk::QueryResultFlags,
) -> vk::Result {
    // SAFETY: a live device of ours; `data` holds `size` bytes.
    unsafe {
        let k = key(device.as_raw());
        let answer = with_dev(k, |d| {
            let Some(p) = d.pools.get(&pool.as_raw()) else {
                return Err(d.fns.fp_v1_0().get_query_pool_results);
            };
            let row = p.counters.len() * std::mem::size_of::<vk::PerformanceCounterResultKHR>();
            let mut ready = true;
            for q in 0..count as usize {
                let at = q * stride as usize;
                if at + row > size {
                    return Ok(vk::Result::ERROR_OUT_OF_HOST_MEMORY);
                }
                match p.results.get(first as usize + q) {
                    Some(Some((t, done))) if done.iter().all(|x| *x) => {
                        let out = (data as *mut u8).add(at) as *mut vk::PerformanceCounterResultKHR;
                        for (i, &c) in p.counters.iter().enumerate() {
                            out.add(i).write_unaligned(counters::value(c, *t));
                        }
                    }
                    _ => ready = false,
                }
            }
            Ok(if ready {
                vk::Result::SUCCESS
            } else {
                vk::Result::NOT_READY
            })
        });
        match answer {
            Some(Ok(r)) => r,
            Some(Err(f)) => f(device, pool, first, count, size, data, stride, flags),
            None => vk::Result::ERROR_INITIALIZATION_FAILED,
        }
    }
}
