//! A test-only Vulkan layer, never installed: `VK_LAYER_FRAMESCOPE_fault` sits below framescope
//! (which is implicit, so nearest the app; a test enables this one with `VK_INSTANCE_LAYERS`
//! and `VK_LAYER_PATH` and a manifest of its own) and makes the driver's answers go wrong the
//! way real drivers' and compositors' do, so the tests can check that framescope passes
//! every fault on to the app unchanged and neither crashes, hangs nor reports an internal error.
//!
//! `FRAMESCOPE_FAULT` says what to inject ([`config::Config::parse`]), comma-separated:
//!
//! * `lost_at_submit=N`: the Nth `vkQueueSubmit`/`vkQueueSubmit2` call (1-based, counted over
//!   the device, framescope's own submits included) and everything after it: submits (not
//!   forwarded), `vkQueuePresentKHR`, `vkWaitForFences`, `vkGetQueryPoolResults`,
//!   `vkQueueWaitIdle`, `vkDeviceWaitIdle`, `vkGetFenceStatus`, `vkAcquireNextImageKHR`
//!   (and `vkAcquireNextImage2KHR`) return `VK_ERROR_DEVICE_LOST` without calling the driver.
//!   Destroy and free calls still pass through, so the app can tear down; so that they are
//!   safe, the submit that loses the device first waits (`vkQueueWaitIdle` of the driver, on
//!   the submitting queue) for what was forwarded before.
//! * `out_of_date_every=N` / `suboptimal_every=N`: every Nth `vkQueuePresentKHR` is forwarded,
//!   then returns `VK_ERROR_OUT_OF_DATE_KHR` / `VK_SUBOPTIMAL_KHR` (and sets every entry of
//!   `pResults`, when given, likewise).
//! * `surface_lost_at=N`: the Nth present and every later one are forwarded, then return
//!   `VK_ERROR_SURFACE_LOST_KHR`.
//! * `oom_after_present=LIST` (`query_pool`, `image`, `buffer`, `memory`, `command_pool`,
//!   `command_buffers`, `semaphore`, `fence`, joined by `+`): once the device has presented
//!   once, those creates and allocations (`vkCreateQueryPool`, `vkCreateImage`,
//!   `vkCreateBuffer`, `vkAllocateMemory`, `vkCreateCommandPool`, `vkAllocateCommandBuffers`,
//!   `vkCreateSemaphore`, `vkCreateFence`) return `VK_ERROR_OUT_OF_DEVICE_MEMORY` (memory,
//!   images, buffers, query pools) or `VK_ERROR_OUT_OF_HOST_MEMORY` (the rest) without calling
//!   the driver. In `framescope-testapp` (tests/app) without `--recreate-semaphores` the calls
//!   after its first present are framescope's own (the HUD's images, buffers and memory, its
//!   timing pools), except `vkAllocateCommandBuffers`: the app allocates the command buffer of
//!   its second frame in flight when it records that frame, after the first present.
//! * `oom_always=LIST` (the names above, and `device`, `swapchain`): those creates and
//!   allocations fail from the start (`vkCreateDevice`, `vkCreateSwapchainKHR`: host memory),
//!   framescope's own and the app's alike. Refused `vkCreateDevice` calls are counted in a
//!   line printed at `vkDestroyInstance`, there being no device to destroy.
//! * `oom_query_pool`: every `vkCreateQueryPool` fails with `VK_ERROR_OUT_OF_DEVICE_MEMORY`
//!   (the test app creates none; framescope's GPU timing does).
//!
//! * `slow_fence_ms=N` / `slow_acquire_ms=N` / `slow_pipeline_ms=N`: every `vkWaitForFences` /
//!   every `vkAcquireNextImageKHR` and `vkAcquireNextImage2KHR` / every
//!   `vkCreateGraphicsPipelines` sleeps N ms, then is forwarded, as a slow driver or compositor
//!   would keep the app waiting or compiling (not counted as faults): the known waits and
//!   creations of the frame-timeline tests. framescope's own fence waits are slowed too.
//!
//! When several present faults fall on one present, the lost device wins, then the lost
//! surface, then out of date, then suboptimal; a present the driver itself fails keeps the
//! driver's error. A value that does not parse prints one line and injects nothing.
//!
//! Nothing is printed per call. At `vkDestroyDevice` the layer prints one line to stderr,
//! `framescope-fault: injected K faults (VK_ERROR_DEVICE_LOST=K, ...)`, so a test can see the
//! faults happened.

#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod config;
#[path = "../../../layer/vulkan/src/dispatch/loader_abi.rs"]
mod loader_abi;

use ash::vk;
use ash::vk::Handle;
use config::{Config, Create};
use loader_abi::*;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};

/// The layer's name, as its manifest must give it.
pub const LAYER_NAME: &str = "VK_LAYER_FRAMESCOPE_fault";
/// The environment variable the configuration comes from.
pub const VAR: &str = "FRAMESCOPE_FAULT";

/// The configuration of this process, read once; one line on stderr when it does not parse.
fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let Some(v) = std::env::var_os(VAR) else {
            return Config::default();
        };
        let v = v.to_string_lossy();
        Config::parse(&v).unwrap_or_else(|e| {
            eprintln!("framescope-fault: {VAR}={v:?}: {e}; injecting nothing");
            Config::default()
        })
    })
}

/// Runs `f`, or answers `fallback` if it panics: no unwinding crosses into the loader.
fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

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
    destroy: Option<vk::PFN_vkDestroyInstance>,
}

/// The next layer's (or the driver's) commands this layer hooks; `None` where it has none.
#[derive(Clone, Copy)]
struct Next {
    gdpa: vk::PFN_vkGetDeviceProcAddr,
    destroy_device: Option<vk::PFN_vkDestroyDevice>,
    queue_submit: Option<vk::PFN_vkQueueSubmit>,
    queue_submit2: Option<vk::PFN_vkQueueSubmit2>,
    queue_submit2_khr: Option<vk::PFN_vkQueueSubmit2>,
    queue_present: Option<vk::PFN_vkQueuePresentKHR>,
    wait_for_fences: Option<vk::PFN_vkWaitForFences>,
    get_query_pool_results: Option<vk::PFN_vkGetQueryPoolResults>,
    queue_wait_idle: Option<vk::PFN_vkQueueWaitIdle>,
    device_wait_idle: Option<vk::PFN_vkDeviceWaitIdle>,
    get_fence_status: Option<vk::PFN_vkGetFenceStatus>,
    acquire_next_image: Option<vk::PFN_vkAcquireNextImageKHR>,
    acquire_next_image2: Option<vk::PFN_vkAcquireNextImage2KHR>,
    create_query_pool: Option<vk::PFN_vkCreateQueryPool>,
    create_image: Option<vk::PFN_vkCreateImage>,
    create_buffer: Option<vk::PFN_vkCreateBuffer>,
    allocate_memory: Option<vk::PFN_vkAllocateMemory>,
    create_command_pool: Option<vk::PFN_vkCreateCommandPool>,
    allocate_command_buffers: Option<vk::PFN_vkAllocateCommandBuffers>,
    create_semaphore: Option<vk::PFN_vkCreateSemaphore>,
    create_fence: Option<vk::PFN_vkCreateFence>,
    create_swapchain: Option<vk::PFN_vkCreateSwapchainKHR>,
    create_graphics_pipelines: Option<vk::PFN_vkCreateGraphicsPipelines>,
}

impl Next {
    /// Everything from `gdpa` of `device`.
    ///
    /// # Safety
    /// `gdpa` is the next layer's `vkGetDeviceProcAddr` and `device` a live device of it.
    unsafe fn load(gdpa: vk::PFN_vkGetDeviceProcAddr, device: vk::Device) -> Next {
        macro_rules! next {
            ($name:literal) => {
                // SAFETY: the command named has the signature of the field it is stored in
                // (the loader's contract for vkGetDeviceProcAddr).
                unsafe {
                    gdpa(device, $name.as_ptr()).map(|f| std::mem::transmute::<unsafe extern "system" fn(), _>(f))
                }
            };
        }
        Next {
            gdpa,
            destroy_device: next!(c"vkDestroyDevice"),
            queue_submit: next!(c"vkQueueSubmit"),
            queue_submit2: next!(c"vkQueueSubmit2"),
            queue_submit2_khr: next!(c"vkQueueSubmit2KHR"),
            queue_present: next!(c"vkQueuePresentKHR"),
            wait_for_fences: next!(c"vkWaitForFences"),
            get_query_pool_results: next!(c"vkGetQueryPoolResults"),
            queue_wait_idle: next!(c"vkQueueWaitIdle"),
            device_wait_idle: next!(c"vkDeviceWaitIdle"),
            get_fence_status: next!(c"vkGetFenceStatus"),
            acquire_next_image: next!(c"vkAcquireNextImageKHR"),
            acquire_next_image2: next!(c"vkAcquireNextImage2KHR"),
            create_query_pool: next!(c"vkCreateQueryPool"),
            create_image: next!(c"vkCreateImage"),
            create_buffer: next!(c"vkCreateBuffer"),
            allocate_memory: next!(c"vkAllocateMemory"),
            create_command_pool: next!(c"vkCreateCommandPool"),
            allocate_command_buffers: next!(c"vkAllocateCommandBuffers"),
            create_semaphore: next!(c"vkCreateSemaphore"),
            create_fence: next!(c"vkCreateFence"),
            create_swapchain: next!(c"vkCreateSwapchainKHR"),
            create_graphics_pipelines: next!(c"vkCreateGraphicsPipelines"),
        }
    }
}

/// What one device has seen and injected.
#[derive(Default)]
struct State {
    /// Submit calls so far (`vkQueueSubmit` and `vkQueueSubmit2`).
    submits: u64,
    /// Present calls so far.
    presents: u64,
    /// A present has returned.
    presented: bool,
    /// The device is lost.
    lost: bool,
    /// Injected results and how often each was.
    injected: Vec<(vk::Result, u64)>,
}

impl State {
    /// Counts an injection of `r` and returns it.
    fn inject(&mut self, r: vk::Result) -> vk::Result {
        match self.injected.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => self.injected.push((r, 1)),
        }
        r
    }

    /// `VK_ERROR_DEVICE_LOST` (counted) once the device is lost.
    fn lost(&mut self) -> Result<(), vk::Result> {
        if self.lost {
            Err(self.inject(vk::Result::ERROR_DEVICE_LOST))
        } else {
            Ok(())
        }
    }

    /// A submit call: `Err` when it fails (with `true` for the one that loses the device).
    fn submit(&mut self, c: &Config) -> Result<(), (vk::Result, bool)> {
        self.submits += 1;
        let newly = !self.lost && c.lost_at_submit.is_some_and(|n| self.submits >= n);
        self.lost |= newly;
        self.lost().map_err(|r| (r, newly))
    }

    /// A present call, before it is forwarded: `Err` when it is not forwarded.
    fn present_before(&mut self) -> Result<u64, vk::Result> {
        self.lost()?;
        self.presents += 1;
        Ok(self.presents)
    }

    /// After present number `n` returned `r` from the driver: what the caller gets.
    fn present_after(&mut self, c: &Config, n: u64, r: vk::Result) -> vk::Result {
        self.presented = true;
        if r != vk::Result::SUCCESS && r != vk::Result::SUBOPTIMAL_KHR {
            return r;
        }
        let fault = if c.surface_lost_at.is_some_and(|at| n >= at) {
            vk::Result::ERROR_SURFACE_LOST_KHR
        } else if c.out_of_date_every.is_some_and(|e| n % e == 0) {
            vk::Result::ERROR_OUT_OF_DATE_KHR
        } else if c.suboptimal_every.is_some_and(|e| n % e == 0) {
            vk::Result::SUBOPTIMAL_KHR
        } else {
            return r;
        };
        self.inject(fault)
    }

    /// A create or allocate call of kind `k`: `Err` when it fails.
    fn create(&mut self, c: &Config, k: Create) -> Result<(), vk::Result> {
        if (k == Create::QueryPool && c.oom_query_pool) || c.oom_always(k) || (self.presented && c.oom_after_present(k))
        {
            Err(self.inject(k.error()))
        } else {
            Ok(())
        }
    }

    /// The line printed at `vkDestroyDevice`.
    fn line(&self) -> String {
        let total: u64 = self.injected.iter().map(|(_, n)| n).sum();
        let each: Vec<String> = self.injected.iter().map(|(r, n)| format!("VK_{r:?}={n}")).collect();
        format!(
            "framescope-fault: injected {total} faults ({})",
            if each.is_empty() {
                "none".to_string()
            } else {
                each.join(", ")
            }
        )
    }
}

struct Dev {
    next: Next,
    state: State,
}

type Registry<T> = Mutex<Vec<(usize, T)>>;

static INSTANCES: Registry<Inst> = Mutex::new(Vec::new());
/// `vkCreateDevice` calls refused (`oom_always=device`), counted in the line printed at
/// `vkDestroyInstance`, there being no device to destroy.
static REFUSED_DEVICES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static DEVICES: Registry<Dev> = Mutex::new(Vec::new());

fn with<T, R>(m: &Registry<T>, k: usize, f: impl FnOnce(&mut T) -> R) -> Option<R> {
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    g.iter_mut().find(|(x, _)| *x == k).map(|(_, t)| f(t))
}

/// Removes the entry of `k`.
fn take<T>(m: &Registry<T>, k: usize) -> Option<T> {
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    let p = g.iter().position(|(x, _)| *x == k)?;
    Some(g.remove(p).1)
}

/// Decides a call on the device of dispatchable `handle`: `decide` gets its state and next
/// commands and answers `Err(result)` to return without calling the driver, or the next
/// command to call. An unknown device or a missing command is `VK_ERROR_INITIALIZATION_FAILED`.
///
/// # Safety
/// `handle` is a live dispatchable handle of one of our devices (device, queue or command buffer).
unsafe fn decide<F>(
    handle: u64,
    decide: impl FnOnce(&mut State, &Next) -> Result<Option<F>, vk::Result>,
) -> Result<F, vk::Result> {
    // SAFETY: guaranteed by the caller.
    let k = unsafe { key(handle) };
    match with(&DEVICES, k, |d| decide(&mut d.state, &d.next)) {
        Some(Ok(Some(f))) => Ok(f),
        Some(Err(r)) => Err(r),
        Some(Ok(None)) | None => Err(vk::Result::ERROR_INITIALIZATION_FAILED),
    }
}

#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(v: *mut VkNegotiateLayerInterface) -> vk::Result {
    if v.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
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
        b"vkDestroyDevice" => destroy_device,
        b"vkQueueSubmit" => queue_submit,
        b"vkQueueSubmit2" => queue_submit2,
        b"vkQueueSubmit2KHR" => queue_submit2_khr,
        b"vkQueuePresentKHR" => queue_present,
        b"vkWaitForFences" => wait_for_fences,
        b"vkGetQueryPoolResults" => get_query_pool_results,
        b"vkQueueWaitIdle" => queue_wait_idle,
        b"vkDeviceWaitIdle" => device_wait_idle,
        b"vkGetFenceStatus" => get_fence_status,
        b"vkAcquireNextImageKHR" => acquire_next_image,
        b"vkAcquireNextImage2KHR" => acquire_next_image2,
        b"vkCreateQueryPool" => create_query_pool,
        b"vkCreateImage" => create_image,
        b"vkCreateBuffer" => create_buffer,
        b"vkAllocateMemory" => allocate_memory,
        b"vkCreateCommandPool" => create_command_pool,
        b"vkAllocateCommandBuffers" => allocate_command_buffers,
        b"vkCreateSemaphore" => create_semaphore,
        b"vkCreateFence" => create_fence,
        b"vkCreateSwapchainKHR" => create_swapchain,
        b"vkCreateGraphicsPipelines" => create_graphics_pipelines,
    )
}

unsafe extern "system" fn get_instance_proc_addr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    guard(None, || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the caller passes a NUL-terminated name.
        let n = unsafe { CStr::from_ptr(name) };
        let own = hooks!(n;
            b"vkGetInstanceProcAddr" => get_instance_proc_addr,
            b"vkGetDeviceProcAddr" => get_device_proc_addr,
            b"vkCreateInstance" => create_instance,
            b"vkDestroyInstance" => destroy_instance,
            b"vkCreateDevice" => create_device,
        );
        if own.is_some() || instance == vk::Instance::null() {
            return own;
        }
        // SAFETY: a live instance of ours.
        let k = unsafe { key(instance.as_raw()) };
        let gipa = with(&INSTANCES, k, |i| i.gipa)?;
        // SAFETY: the next layer's entry point with the same arguments.
        let next = unsafe { gipa(instance, name) };
        // Ours only where the chain below has the command at all.
        next.and_then(|_| device_hook(n)).or(next)
    })
}

unsafe extern "system" fn get_device_proc_addr(device: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
    guard(None, || {
        if name.is_null() || device == vk::Device::null() {
            return None;
        }
        // SAFETY: the caller passes a NUL-terminated name.
        let n = unsafe { CStr::from_ptr(name) };
        if n == c"vkGetDeviceProcAddr" {
            return hooks!(n; b"vkGetDeviceProcAddr" => get_device_proc_addr);
        }
        // SAFETY: a live device of ours.
        let k = unsafe { key(device.as_raw()) };
        let gdpa = with(&DEVICES, k, |d| d.next.gdpa)?;
        // SAFETY: the next layer's entry point with the same arguments.
        let next = unsafe { gdpa(device, name) };
        next.and_then(|_| device_hook(n)).or(next)
    })
}

unsafe extern "system" fn create_instance(
    info: *const vk::InstanceCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Instance,
) -> vk::Result {
    guard(vk::Result::ERROR_INITIALIZATION_FAILED, || {
        // SAFETY: the loader's chain in a valid create info; `out` is writable.
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
            let destroy = gipa(handle, c"vkDestroyInstance".as_ptr())
                .map(|f| std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkDestroyInstance>(f));
            // Parse now: a bad value is reported once, at startup.
            config();
            INSTANCES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((key(handle.as_raw()), Inst { handle, gipa, destroy }));
            r
        }
    })
}

unsafe extern "system" fn destroy_instance(instance: vk::Instance, alloc: *const vk::AllocationCallbacks) {
    guard((), || {
        if instance == vk::Instance::null() {
            return;
        }
        let refused = REFUSED_DEVICES.swap(0, std::sync::atomic::Ordering::Relaxed);
        if refused > 0 {
            let mut s = State::default();
            for _ in 0..refused {
                let _ = s.inject(Create::Device.error());
            }
            eprintln!("{}", s.line());
        }
        // SAFETY: a live instance of ours; forwarding the app's call.
        unsafe {
            if let Some(Inst {
                destroy: Some(destroy), ..
            }) = take(&INSTANCES, key(instance.as_raw()))
            {
                destroy(instance, alloc);
            }
        }
    })
}

unsafe extern "system" fn create_device(
    pd: vk::PhysicalDevice,
    info: *const vk::DeviceCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Device,
) -> vk::Result {
    guard(vk::Result::ERROR_INITIALIZATION_FAILED, || {
        // SAFETY: the loader's chain in a valid create info; a physical device of one of our
        // instances; `out` is writable.
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
            if config().oom_always(Create::Device) {
                REFUSED_DEVICES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Create::Device.error();
            }
            let r = create(pd, info, alloc, out);
            if r != vk::Result::SUCCESS {
                return r;
            }
            let handle = *out;
            let dev = Dev {
                next: Next::load(gdpa, handle),
                state: State::default(),
            };
            DEVICES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((key(handle.as_raw()), dev));
            r
        }
    })
}

unsafe extern "system" fn destroy_device(device: vk::Device, alloc: *const vk::AllocationCallbacks) {
    guard((), || {
        if device == vk::Device::null() {
            return;
        }
        // SAFETY: a live device of ours.
        let Some(d) = take(&DEVICES, unsafe { key(device.as_raw()) }) else {
            return;
        };
        if !config().is_empty() {
            eprintln!("{}", d.state.line());
        }
        if let Some(f) = d.next.destroy_device {
            // SAFETY: forwarding the app's call.
            unsafe { f(device, alloc) };
        }
    })
}

/// A submit on `queue`: forwarded by `forward`, or failed when the device is lost. The submit
/// that loses the device first drains what was forwarded before on that queue, so that the
/// app's teardown destroys nothing the driver still uses.
///
/// # Safety
/// `queue` is a live queue of one of our devices, externally synchronised by the caller.
unsafe fn submit<F: Copy>(
    queue: vk::Queue,
    pick: impl FnOnce(&Next) -> Option<F>,
    forward: impl FnOnce(F) -> vk::Result,
) -> vk::Result {
    let mut drain = None;
    // SAFETY: guaranteed by the caller.
    let f = unsafe {
        decide(queue.as_raw(), |s, next| match s.submit(config()) {
            Ok(()) => Ok(pick(next)),
            Err((r, newly)) => {
                if newly {
                    drain = next.queue_wait_idle;
                }
                Err(r)
            }
        })
    };
    if let Some(wait) = drain {
        // SAFETY: the caller holds the queue; our own wait, its result is of no interest.
        let _ = unsafe { wait(queue) };
    }
    match f {
        Ok(f) => forward(f),
        Err(r) => r,
    }
}

unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    n: u32,
    submits: *const vk::SubmitInfo,
    fence: vk::Fence,
) -> vk::Result {
    guard(vk::Result::ERROR_DEVICE_LOST, || {
        // SAFETY: a queue of ours; forwarding the app's arguments.
        unsafe { submit(queue, |x| x.queue_submit, |f| f(queue, n, submits, fence)) }
    })
}

unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    n: u32,
    submits: *const vk::SubmitInfo2,
    fence: vk::Fence,
) -> vk::Result {
    guard(vk::Result::ERROR_DEVICE_LOST, || {
        // SAFETY: a queue of ours; forwarding the app's arguments.
        unsafe { submit(queue, |x| x.queue_submit2, |f| f(queue, n, submits, fence)) }
    })
}

unsafe extern "system" fn queue_submit2_khr(
    queue: vk::Queue,
    n: u32,
    submits: *const vk::SubmitInfo2,
    fence: vk::Fence,
) -> vk::Result {
    guard(vk::Result::ERROR_DEVICE_LOST, || {
        // SAFETY: a queue of ours; forwarding the app's arguments.
        unsafe { submit(queue, |x| x.queue_submit2_khr, |f| f(queue, n, submits, fence)) }
    })
}

/// Sets every entry of the present's `pResults` to `r`.
///
/// # Safety
/// `info` is a valid present info.
unsafe fn set_results(info: *const vk::PresentInfoKHR, r: vk::Result) {
    // SAFETY: guaranteed by the caller: `pResults`, when given, holds one entry per swapchain.
    unsafe {
        let i = &*info;
        if !i.p_results.is_null() {
            for k in 0..i.swapchain_count as usize {
                *i.p_results.add(k) = r;
            }
        }
    }
}

unsafe extern "system" fn queue_present(queue: vk::Queue, info: *const vk::PresentInfoKHR) -> vk::Result {
    guard(vk::Result::ERROR_DEVICE_LOST, || {
        let mut number = 0;
        // SAFETY: a queue of ours.
        let f = unsafe {
            decide(queue.as_raw(), |s, next| {
                number = s.present_before()?;
                Ok(next.queue_present)
            })
        };
        let f = match f {
            Ok(f) => f,
            Err(r) => {
                if r == vk::Result::ERROR_DEVICE_LOST {
                    // SAFETY: the app's present info.
                    unsafe { set_results(info, r) };
                }
                return r;
            }
        };
        // SAFETY: forwarding the app's call.
        let r = unsafe { f(queue, info) };
        // SAFETY: a queue of ours.
        let k = unsafe { key(queue.as_raw()) };
        let out = with(&DEVICES, k, |d| d.state.present_after(config(), number, r)).unwrap_or(r);
        if out != r {
            // SAFETY: the app's present info.
            unsafe { set_results(info, out) };
        }
        out
    })
}

/// The body of a hook that fails with `VK_ERROR_DEVICE_LOST` once the device is lost and
/// otherwise calls the next layer's command in `$field` with `$args`.
macro_rules! lost_or_forward {
    ($handle:expr, $field:ident, $($arg:expr),*) => {
        guard(vk::Result::ERROR_DEVICE_LOST, || {
            // SAFETY: a dispatchable handle of one of our devices; forwarding the app's call.
            unsafe {
                match decide($handle.as_raw(), |s, next| s.lost().map(|()| next.$field)) {
                    Ok(f) => f($($arg),*),
                    Err(r) => r,
                }
            }
        })
    };
}

/// Sleeps `ms` milliseconds, when given (`slow_fence_ms`, `slow_acquire_ms`).
fn slow(ms: Option<u64>) {
    if let Some(ms) = ms {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

unsafe extern "system" fn wait_for_fences(
    device: vk::Device,
    n: u32,
    fences: *const vk::Fence,
    all: vk::Bool32,
    timeout: u64,
) -> vk::Result {
    slow(config().slow_fence_ms);
    lost_or_forward!(device, wait_for_fences, device, n, fences, all, timeout)
}

#[allow(clippy::too_many_arguments)]
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
    lost_or_forward!(
        device,
        get_query_pool_results,
        device,
        pool,
        first,
        count,
        size,
        data,
        stride,
        flags
    )
}

unsafe extern "system" fn queue_wait_idle(queue: vk::Queue) -> vk::Result {
    lost_or_forward!(queue, queue_wait_idle, queue)
}

unsafe extern "system" fn device_wait_idle(device: vk::Device) -> vk::Result {
    lost_or_forward!(device, device_wait_idle, device)
}

unsafe extern "system" fn get_fence_status(device: vk::Device, fence: vk::Fence) -> vk::Result {
    lost_or_forward!(device, get_fence_status, device, fence)
}

unsafe extern "system" fn acquire_next_image(
    device: vk::Device,
    swapchain: vk::SwapchainKHR,
    timeout: u64,
    semaphore: vk::Semaphore,
    fence: vk::Fence,
    index: *mut u32,
) -> vk::Result {
    slow(config().slow_acquire_ms);
    lost_or_forward!(
        device,
        acquire_next_image,
        device,
        swapchain,
        timeout,
        semaphore,
        fence,
        index
    )
}

unsafe extern "system" fn acquire_next_image2(
    device: vk::Device,
    info: *const vk::AcquireNextImageInfoKHR,
    index: *mut u32,
) -> vk::Result {
    slow(config().slow_acquire_ms);
    lost_or_forward!(device, acquire_next_image2, device, info, index)
}

/// The body of a create or allocate hook of kind `$kind`: fails when the configuration says
/// so, else calls the next layer's command in `$field` with `$args`.
macro_rules! create_or_fail {
    ($device:expr, $kind:expr, $field:ident, $($arg:expr),*) => {
        guard(vk::Result::ERROR_OUT_OF_HOST_MEMORY, || {
            // SAFETY: a live device of ours; forwarding the app's call.
            unsafe {
                match decide($device.as_raw(), |s, next| s.create(config(), $kind).map(|()| next.$field)) {
                    Ok(f) => f($($arg),*),
                    Err(r) => r,
                }
            }
        })
    };
}

unsafe extern "system" fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
) -> vk::Result {
    slow(config().slow_pipeline_ms);
    guard(vk::Result::ERROR_OUT_OF_HOST_MEMORY, || {
        // SAFETY: a live device of ours; forwarding the app's call.
        unsafe {
            match decide(device.as_raw(), |_, next| Ok(next.create_graphics_pipelines)) {
                Ok(f) => f(device, cache, count, infos, alloc, out),
                Err(r) => r,
            }
        }
    })
}

unsafe extern "system" fn create_query_pool(
    device: vk::Device,
    info: *const vk::QueryPoolCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::QueryPool,
) -> vk::Result {
    create_or_fail!(device, Create::QueryPool, create_query_pool, device, info, alloc, out)
}

unsafe extern "system" fn create_image(
    device: vk::Device,
    info: *const vk::ImageCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Image,
) -> vk::Result {
    create_or_fail!(device, Create::Image, create_image, device, info, alloc, out)
}

unsafe extern "system" fn create_buffer(
    device: vk::Device,
    info: *const vk::BufferCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Buffer,
) -> vk::Result {
    create_or_fail!(device, Create::Buffer, create_buffer, device, info, alloc, out)
}

unsafe extern "system" fn allocate_memory(
    device: vk::Device,
    info: *const vk::MemoryAllocateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::DeviceMemory,
) -> vk::Result {
    create_or_fail!(device, Create::Memory, allocate_memory, device, info, alloc, out)
}

unsafe extern "system" fn create_command_pool(
    device: vk::Device,
    info: *const vk::CommandPoolCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::CommandPool,
) -> vk::Result {
    create_or_fail!(
        device,
        Create::CommandPool,
        create_command_pool,
        device,
        info,
        alloc,
        out
    )
}

unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    create_or_fail!(
        device,
        Create::CommandBuffers,
        allocate_command_buffers,
        device,
        info,
        out
    )
}

unsafe extern "system" fn create_semaphore(
    device: vk::Device,
    info: *const vk::SemaphoreCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Semaphore,
) -> vk::Result {
    create_or_fail!(device, Create::Semaphore, create_semaphore, device, info, alloc, out)
}

unsafe extern "system" fn create_fence(
    device: vk::Device,
    info: *const vk::FenceCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Fence,
) -> vk::Result {
    create_or_fail!(device, Create::Fence, create_fence, device, info, alloc, out)
}

unsafe extern "system" fn create_swapchain(
    device: vk::Device,
    info: *const vk::SwapchainCreateInfoKHR,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::SwapchainKHR,
) -> vk::Result {
    create_or_fail!(device, Create::Swapchain, create_swapchain, device, info, alloc, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(s: &str) -> Config {
        Config::parse(s).unwrap()
    }

    #[test]
    fn the_device_is_lost_from_the_nth_submit_on() {
        let c = cfg("lost_at_submit=3");
        let mut s = State::default();
        assert_eq!(s.submit(&c), Ok(()));
        assert_eq!(s.submit(&c), Ok(()));
        assert_eq!(s.submit(&c), Err((vk::Result::ERROR_DEVICE_LOST, true)));
        assert_eq!(s.submit(&c), Err((vk::Result::ERROR_DEVICE_LOST, false)));
        assert_eq!(s.present_before(), Err(vk::Result::ERROR_DEVICE_LOST));
        assert_eq!(s.lost(), Err(vk::Result::ERROR_DEVICE_LOST));
        assert_eq!(s.line(), "framescope-fault: injected 4 faults (VK_ERROR_DEVICE_LOST=4)");
    }

    #[test]
    fn present_faults_in_order_of_severity() {
        let c = cfg("out_of_date_every=2,suboptimal_every=3,surface_lost_at=7");
        let mut s = State::default();
        let got: Vec<vk::Result> = (0..8)
            .map(|_| {
                let n = s.present_before().unwrap();
                s.present_after(&c, n, vk::Result::SUCCESS)
            })
            .collect();
        use vk::Result as R;
        assert_eq!(
            got,
            [
                R::SUCCESS,
                R::ERROR_OUT_OF_DATE_KHR,
                R::SUBOPTIMAL_KHR,
                R::ERROR_OUT_OF_DATE_KHR,
                R::SUCCESS,
                R::ERROR_OUT_OF_DATE_KHR,
                R::ERROR_SURFACE_LOST_KHR,
                R::ERROR_SURFACE_LOST_KHR,
            ]
        );
        // The driver's own error stays.
        let n = s.present_before().unwrap();
        assert_eq!(
            s.present_after(&c, n, R::ERROR_OUT_OF_DATE_KHR),
            R::ERROR_OUT_OF_DATE_KHR
        );
        assert_eq!(
            s.line(),
            "framescope-fault: injected 6 faults (VK_ERROR_OUT_OF_DATE_KHR=3, VK_SUBOPTIMAL_KHR=1, VK_ERROR_SURFACE_LOST_KHR=2)"
        );
    }

    #[test]
    fn creates_fail_after_the_first_present() {
        let c = cfg("oom_after_present=image+fence");
        let mut s = State::default();
        assert_eq!(s.create(&c, Create::Image), Ok(()));
        let n = s.present_before().unwrap();
        let _ = s.present_after(&c, n, vk::Result::SUCCESS);
        assert_eq!(s.create(&c, Create::Image), Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY));
        assert_eq!(s.create(&c, Create::Fence), Err(vk::Result::ERROR_OUT_OF_HOST_MEMORY));
        assert_eq!(s.create(&c, Create::Buffer), Ok(()));
        let q = cfg("oom_query_pool");
        let mut s = State::default();
        assert_eq!(
            s.create(&q, Create::QueryPool),
            Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)
        );
        assert_eq!(s.create(&q, Create::Image), Ok(()));
    }

    #[test]
    fn nothing_injected_says_none() {
        assert_eq!(State::default().line(), "framescope-fault: injected 0 faults (none)");
    }
}
