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

#![allow(clippy::missing_safety_doc)]

#[path = "../../../layer/vulkan/src/loader_abi.rs"]
mod loader_abi;

use ash::vk;
use ash::vk::Handle;
use loader_abi::*;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, CStr};
use std::sync::Mutex;

const PRESENT_ID: &CStr = ash::khr::present_id::NAME;
const PRESENT_WAIT: &CStr = ash::khr::present_wait::NAME;
/// Shown presents remembered per swapchain for waits: far more than are ever in flight.
const KEEP: usize = 64;

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
}

#[derive(Default)]
struct Swapchain {
    fifo: bool,
    /// When the newest present is (or was) shown.
    last_shown: u64,
    /// (present id, shown at) of recent presents with an id, oldest first.
    shown: VecDeque<(u64, u64)>,
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
    let (gdpa, wait_enabled) = with(&DEVICES, unsafe { key(device.as_raw()) }, |d| (d.gdpa, d.wait_enabled))?;
    // SAFETY: the next layer's entry point with the same arguments.
    let next = unsafe { gdpa(device, name) };
    // Our hooks only where the device has the command: disabled extensions stay NULL.
    match device_hook(n) {
        Some(f) if n.to_bytes() == b"vkWaitForPresentKHR" => wait_enabled.then_some(f),
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
        for name in [PRESENT_ID, PRESENT_WAIT] {
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
        ];
        let taken = unlink(out.cast(), &types);
        if let Some(f) = with(&INSTANCES, key(pd.as_raw()), |i| {
            i.fns.fp_v1_1().get_physical_device_features2
        }) {
            f(pd, out);
        }
        for &(_, s) in &taken {
            if (*s).s_type == types[0] {
                (*(s as *mut vk::PhysicalDevicePresentIdFeaturesKHR)).present_id = vk::TRUE;
            } else {
                (*(s as *mut vk::PhysicalDevicePresentWaitFeaturesKHR)).present_wait = vk::TRUE;
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
        let kept: Vec<*const c_char> = exts
            .iter()
            .copied()
            .filter(|&e| CStr::from_ptr(e) != PRESENT_ID && CStr::from_ptr(e) != PRESENT_WAIT)
            .collect();
        info2.enabled_extension_count = kept.len() as u32;
        info2.pp_enabled_extension_names = kept.as_ptr();
        let taken = unlink(
            std::ptr::addr_of_mut!(info2).cast(),
            &[
                vk::StructureType::PHYSICAL_DEVICE_PRESENT_ID_FEATURES_KHR,
                vk::StructureType::PHYSICAL_DEVICE_PRESENT_WAIT_FEATURES_KHR,
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
        let wait_enabled = exts.iter().any(|&e| CStr::from_ptr(e) == PRESENT_WAIT);
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
        let r = f(device, info, alloc, out);
        if r == vk::Result::SUCCESS {
            let fifo = (*info).present_mode == vk::PresentModeKHR::FIFO;
            swapchains(|m| {
                m.insert(
                    (*out).as_raw(),
                    Swapchain {
                        fifo,
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
        let mut p = i.p_next as *const vk::BaseInStructure;
        while !p.is_null() {
            if (*p).s_type == vk::StructureType::PRESENT_ID_KHR {
                let pid = &*(p as *const vk::PresentIdKHR);
                if !pid.p_present_ids.is_null() {
                    ids = std::slice::from_raw_parts(pid.p_present_ids, pid.swapchain_count as usize);
                }
            }
            p = (*p).p_next;
        }
        let scs = std::slice::from_raw_parts(i.p_swapchains, i.swapchain_count as usize);
        let period = refresh_ns();
        let now = now_ns();
        // The latest a FIFO present of this call may return: once the image before it is shown.
        let mut hold_until = 0u64;
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
            }
        });
        let mut copy = *info;
        let taken = unlink(
            std::ptr::addr_of_mut!(copy).cast(),
            &[vk::StructureType::PRESENT_ID_KHR],
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
