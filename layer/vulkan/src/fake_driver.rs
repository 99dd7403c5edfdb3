//! A fake driver under the layer, for the layer's unit tests: dispatchable handles that carry
//! a dispatch word as the loader's do, the commands the layer calls with the state they need,
//! and a log of what reached the driver. A test builds a device on it with [`FakeDevice::new`]
//! and calls the hooks as the loader would; [`FakeDevice::calls`] tells what went down.
//!
//! Query results are available (value = query index), so submissions retire at the next frame
//! end, except in pools a test marks with [`report_not_ready`].

use crate::device_state::{self, DeviceState};
use crate::dispatch::device::{Device, DeviceAugment};
use crate::dispatch::instance::Instance;
use crate::dispatch::registry::dispatch_key;
use ash::vk::{self, Handle};
use framescope_core::sync::Mutex;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What reached the driver.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    /// A submission of either flavour: the command buffers of each batch.
    Submit {
        queue: u64,
        batches: Vec<Vec<u64>>,
    },
    Present {
        queue: u64,
    },
}

static CALLS: Mutex<Vec<Call>> = Mutex::new(Vec::new());
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0x1000);
/// Result the next submit or present of a queue returns instead of SUCCESS: (queue, result).
static FAIL_NEXT: Mutex<Vec<(u64, vk::Result)>> = Mutex::new(Vec::new());

/// Query pools whose queries read as not ready, written the way lavapipe 22.3 writes them.
static NOT_READY_POOLS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// From now on every query of `pool` reads as not ready, written as lavapipe 22.3's
/// `lvp_GetQueryPoolResults` writes a query that is not ready with `64_BIT |
/// WITH_AVAILABILITY`: the first value is skipped and the availability (0) lands in the
/// second word, the query's other words (its remaining values and its real availability word,
/// for pipeline statistics) are left as the caller's buffer had them; the call answers
/// `VK_NOT_READY`.
pub fn report_not_ready(pool: vk::QueryPool) {
    NOT_READY_POOLS.lock().push(pool.as_raw());
}

/// A dispatchable object: its first word is the dispatch key, as the loader's are.
#[repr(C)]
struct Dispatchable {
    key: usize,
}

fn dispatchable(key: usize) -> u64 {
    // Leaked on purpose: handles must stay readable for the process (tests are short).
    Box::into_raw(Box::new(Dispatchable { key })) as u64
}

fn handle() -> u64 {
    NEXT_HANDLE.fetch_add(1, Ordering::Relaxed)
}

/// A device on the fake driver, registered with the layer as `vkCreateDevice` would.
pub struct FakeDevice {
    pub device: vk::Device,
    pub queue: vk::Queue,
    pub state: Arc<DeviceState>,
}

impl FakeDevice {
    pub fn new() -> FakeDevice {
        let instance_key = Box::into_raw(Box::new(0u8)) as usize;
        let instance = vk::Instance::from_raw(dispatchable(instance_key));
        // SAFETY: the fake gipa returns functions of the signatures their names imply.
        let fns = unsafe {
            ash::Instance::load_with(
                |name| resolve(name).map_or(std::ptr::null(), |f| f as *const c_void),
                instance,
            )
        };
        let inst = Arc::new(Instance {
            handle: instance,
            next_gipa: fake_gipa,
            fns,
            // 1.0: the layer then asks nothing of `vkGetPhysicalDeviceProperties2`.
            api_version: vk::API_VERSION_1_0,
            next_features2: None,
            next_surface_caps2: None,
            frame_boundary_native: Mutex::new(Vec::new()),
            surface_fns: Default::default(),
        });
        let device_key = Box::into_raw(Box::new(0u8)) as usize;
        let device = vk::Device::from_raw(dispatchable(device_key));
        let physical = vk::PhysicalDevice::from_raw(dispatchable(instance_key));
        let augment = DeviceAugment {
            pipeline_stats: true,
            ..DeviceAugment::default()
        };
        let dev = Device::new(
            inst,
            physical,
            device,
            fake_gdpa,
            Some(set_loader_data),
            Vec::new(),
            augment,
        );
        let state = Arc::new(DeviceState::new(dev));
        // SAFETY: `device` points at a Dispatchable.
        device_state::DEVICES.insert(unsafe { dispatch_key(device.as_raw()) }, Arc::clone(&state));
        let queue = vk::Queue::from_raw(dispatchable(device_key));
        state.register_queue(queue, 0);
        FakeDevice { device, queue, state }
    }

    /// A command buffer of this device's dispatch, allocated through the layer's hook.
    pub fn command_buffers(
        &self,
        pool: vk::CommandPool,
        level: vk::CommandBufferLevel,
        n: u32,
    ) -> Vec<vk::CommandBuffer> {
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(level)
            .command_buffer_count(n);
        let mut out = vec![vk::CommandBuffer::null(); n as usize];
        // SAFETY: a valid allocate info and room for `n` handles.
        let r = unsafe { crate::hooks::cmdbuf::allocate_command_buffers(self.device, &info, out.as_mut_ptr()) };
        assert_eq!(r, vk::Result::SUCCESS);
        out
    }

    /// What reached the driver on this device's queue, in order.
    pub fn calls(&self) -> Vec<Call> {
        let q = self.queue.as_raw();
        CALLS
            .lock()
            .iter()
            .filter(|c| match c {
                Call::Submit { queue, .. } | Call::Present { queue } => *queue == q,
            })
            .cloned()
            .collect()
    }

    /// The next submit or present on this device's queue returns `r`.
    pub fn fail_next(&self, r: vk::Result) {
        FAIL_NEXT.lock().push((self.queue.as_raw(), r));
    }
}

impl Drop for FakeDevice {
    fn drop(&mut self) {
        // SAFETY: the device was made by `new`; destroy goes through the layer's hook.
        unsafe { crate::hooks::create::destroy_device(self.device, std::ptr::null()) };
    }
}

fn result_for(queue: vk::Queue) -> vk::Result {
    let mut fails = FAIL_NEXT.lock();
    match fails.iter().position(|(q, _)| *q == queue.as_raw()) {
        Some(i) => fails.remove(i).1,
        None => vk::Result::SUCCESS,
    }
}

unsafe extern "system" fn fake_gipa(_: vk::Instance, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: the layer passes NUL-terminated names.
    let name = unsafe { CStr::from_ptr(name) };
    // SAFETY: a function pointer's representation does not depend on its signature.
    resolve(name).map(|f| unsafe { std::mem::transmute::<*const (), unsafe extern "system" fn()>(f) })
}

unsafe extern "system" fn fake_gdpa(_: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: as in fake_gipa.
    unsafe { fake_gipa(vk::Instance::null(), name) }
}

/// The fake's command of this name, as an untyped pointer.
fn resolve(name: &CStr) -> Option<*const ()> {
    macro_rules! table {
        ($($name:literal => $f:expr),* $(,)?) => {
            match name.to_bytes() {
                $( $name => Some($f as *const ()), )*
                _ => None,
            }
        };
    }
    table! {
        b"vkGetPhysicalDeviceProperties" => get_physical_device_properties,
        b"vkGetPhysicalDeviceQueueFamilyProperties" => get_queue_family_properties,
        b"vkCreateQueryPool" => create_handle,
        b"vkCreateCommandPool" => create_handle,
        b"vkDestroyQueryPool" => destroy_handle,
        b"vkDestroyCommandPool" => destroy_handle,
        b"vkAllocateCommandBuffers" => allocate_command_buffers,
        b"vkFreeCommandBuffers" => free_command_buffers,
        b"vkBeginCommandBuffer" => begin_command_buffer,
        b"vkEndCommandBuffer" => end_command_buffer,
        b"vkResetCommandBuffer" => reset_command_buffer,
        b"vkCmdResetQueryPool" => cmd_reset_query_pool,
        b"vkCmdWriteTimestamp" => cmd_write_timestamp,
        b"vkCmdBeginQuery" => cmd_begin_query,
        b"vkCmdEndQuery" => cmd_end_query,
        b"vkCmdBeginRenderPass" => cmd_begin_render_pass,
        b"vkCmdEndRenderPass" => cmd_end_render_pass,
        b"vkCmdDraw" => cmd_draw,
        b"vkGetQueryPoolResults" => get_query_pool_results,
        b"vkQueueSubmit" => queue_submit,
        b"vkQueueSubmit2" => queue_submit2,
        b"vkQueuePresentKHR" => queue_present,
        b"vkDestroyDevice" => destroy_device,
    }
}

/// The loader's `pfnSetDeviceLoaderData`: our dispatchable objects already carry their device's
/// dispatch word (the fake driver made them), so there is nothing to write.
unsafe extern "system" fn set_loader_data(_: vk::Device, object: *mut c_void) -> vk::Result {
    if object.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    vk::Result::SUCCESS
}

unsafe extern "system" fn get_physical_device_properties(
    _: vk::PhysicalDevice,
    out: *mut vk::PhysicalDeviceProperties,
) {
    let mut p = vk::PhysicalDeviceProperties {
        api_version: vk::API_VERSION_1_3,
        vendor_id: 0xfa6e,
        ..Default::default()
    };
    p.limits.timestamp_period = 1.0;
    for (d, s) in p.device_name.iter_mut().zip(b"fake GPU") {
        *d = *s as c_char;
    }
    // SAFETY: the caller passes room for the properties.
    unsafe { *out = p };
}

unsafe extern "system" fn get_queue_family_properties(
    _: vk::PhysicalDevice,
    count: *mut u32,
    out: *mut vk::QueueFamilyProperties,
) {
    // SAFETY: Vulkan's two-call idiom: `count` is valid, `out` null or room for *count.
    unsafe {
        if out.is_null() {
            *count = 1;
            return;
        }
        if *count >= 1 {
            *out = vk::QueueFamilyProperties {
                queue_flags: vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE,
                queue_count: 1,
                timestamp_valid_bits: 64,
                ..Default::default()
            };
            *count = 1;
        }
    }
}

unsafe extern "system" fn create_handle(
    _: vk::Device,
    _: *const c_void,
    _: *const c_void,
    out: *mut u64,
) -> vk::Result {
    // SAFETY: the caller passes room for the handle.
    unsafe { *out = handle() };
    vk::Result::SUCCESS
}

unsafe extern "system" fn destroy_handle(_: vk::Device, _: u64, _: *const c_void) {}

unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo<'_>,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    // SAFETY: a device made by FakeDevice; a valid info with room for its count in `out`.
    unsafe {
        let key = dispatch_key(device.as_raw());
        for i in 0..(*info).command_buffer_count as usize {
            *out.add(i) = vk::CommandBuffer::from_raw(dispatchable(key));
        }
    }
    vk::Result::SUCCESS
}

unsafe extern "system" fn free_command_buffers(_: vk::Device, _: vk::CommandPool, _: u32, _: *const vk::CommandBuffer) {
}
unsafe extern "system" fn begin_command_buffer(_: vk::CommandBuffer, _: *const c_void) -> vk::Result {
    vk::Result::SUCCESS
}
unsafe extern "system" fn end_command_buffer(_: vk::CommandBuffer) -> vk::Result {
    vk::Result::SUCCESS
}
unsafe extern "system" fn reset_command_buffer(_: vk::CommandBuffer, _: u32) -> vk::Result {
    vk::Result::SUCCESS
}
unsafe extern "system" fn cmd_reset_query_pool(_: vk::CommandBuffer, _: u64, _: u32, _: u32) {}
unsafe extern "system" fn cmd_write_timestamp(_: vk::CommandBuffer, _: u32, _: u64, _: u32) {}
unsafe extern "system" fn cmd_begin_query(_: vk::CommandBuffer, _: u64, _: u32, _: u32) {}
unsafe extern "system" fn cmd_end_query(_: vk::CommandBuffer, _: u64, _: u32) {}
unsafe extern "system" fn cmd_begin_render_pass(_: vk::CommandBuffer, _: *const c_void, _: i32) {}
unsafe extern "system" fn cmd_end_render_pass(_: vk::CommandBuffer) {}
unsafe extern "system" fn cmd_draw(_: vk::CommandBuffer, _: u32, _: u32, _: u32, _: u32) {}

/// Every query available, its value its index: (value, availability) pairs or bare values;
/// in the pools of [`report_not_ready`], none.
unsafe extern "system" fn get_query_pool_results(
    _: vk::Device,
    pool: u64,
    first: u32,
    count: u32,
    size: usize,
    data: *mut c_void,
    stride: u64,
    flags: vk::QueryResultFlags,
) -> vk::Result {
    let words = (stride / 8) as usize;
    let with_availability = flags.contains(vk::QueryResultFlags::WITH_AVAILABILITY);
    let out = data.cast::<u64>();
    let not_ready = NOT_READY_POOLS.lock().contains(&pool);
    for q in 0..count as usize {
        if (q + 1) * words * 8 > size {
            break;
        }
        if not_ready {
            if with_availability && words > 1 {
                // SAFETY: as below.
                unsafe { *out.add(q * words + 1) = 0 };
            }
            continue;
        }
        for w in 0..words {
            let v = if with_availability && w + 1 == words {
                1
            } else {
                u64::from(first) + q as u64
            };
            // SAFETY: `size` bytes at `data`, checked above.
            unsafe { *out.add(q * words + w) = v };
        }
    }
    if not_ready {
        vk::Result::NOT_READY
    } else {
        vk::Result::SUCCESS
    }
}

/// `n` items at `p`, empty for a null pointer or none (Vulkan allows null with a count of 0).
///
/// # Safety
/// A non-null `p` must point at `n` valid items.
unsafe fn items<'a, T>(p: *const T, n: u32) -> &'a [T] {
    if p.is_null() || n == 0 {
        return &[];
    }
    // SAFETY: the caller's.
    unsafe { std::slice::from_raw_parts(p, n as usize) }
}

unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo<'_>,
    _: vk::Fence,
) -> vk::Result {
    // SAFETY: `count` valid submit infos with their arrays (what the layer passes down).
    let batches = unsafe { items(submits, count) }
        .iter()
        .map(|s| {
            // SAFETY: as above.
            unsafe { items(s.p_command_buffers, s.command_buffer_count) }
                .iter()
                .map(|c| c.as_raw())
                .collect()
        })
        .collect();
    CALLS.lock().push(Call::Submit {
        queue: queue.as_raw(),
        batches,
    });
    result_for(queue)
}

unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    _: vk::Fence,
) -> vk::Result {
    // SAFETY: `count` valid submit infos with their arrays (what the layer passes down).
    let batches = unsafe { items(submits, count) }
        .iter()
        .map(|s| {
            // SAFETY: as above.
            unsafe { items(s.p_command_buffer_infos, s.command_buffer_info_count) }
                .iter()
                .map(|c| c.command_buffer.as_raw())
                .collect()
        })
        .collect();
    CALLS.lock().push(Call::Submit {
        queue: queue.as_raw(),
        batches,
    });
    result_for(queue)
}

unsafe extern "system" fn queue_present(queue: vk::Queue, _: *const vk::PresentInfoKHR<'_>) -> vk::Result {
    CALLS.lock().push(Call::Present { queue: queue.as_raw() });
    result_for(queue)
}

unsafe extern "system" fn destroy_device(_: vk::Device, _: *const c_void) {}
