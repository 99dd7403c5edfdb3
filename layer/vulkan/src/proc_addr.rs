//! vkGetInstanceProcAddr / vkGetDeviceProcAddr: which names we hook, and the rule that a hook is
//! only handed out when the next layer has the command (so extensions the app did not enable
//! stay NULL).

use crate::hooks::samples as sh;
use crate::hooks::{cmdbuf, commands, create, creation, frame_boundary, present, queue, surface, waits};
use crate::{device_state, display_wayland, display_x11};
use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};
use std::ffi::{c_char, CStr};

macro_rules! pfn {
    ($f:expr, $ty:ty) => {{
        let f: $ty = $f;
        // SAFETY: every Vulkan PFN has the same representation as PFN_vkVoidFunction; the caller
        // casts it back to the type the name implies.
        Some(unsafe { std::mem::transmute::<$ty, unsafe extern "system" fn()>(f) })
    }};
}

/// Commands that exist before or independent of any device.
fn instance_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkGetInstanceProcAddr" => pfn!(gipa_entry, vk::PFN_vkGetInstanceProcAddr),
        b"vkCreateInstance" => pfn!(create::create_instance, vk::PFN_vkCreateInstance),
        b"vkDestroyInstance" => pfn!(create::destroy_instance, vk::PFN_vkDestroyInstance),
        b"vkCreateDevice" => pfn!(create::create_device, vk::PFN_vkCreateDevice),
        b"vkEnumerateDeviceExtensionProperties" => {
            pfn!(
                frame_boundary::enumerate_device_extension_properties,
                vk::PFN_vkEnumerateDeviceExtensionProperties
            )
        }
        _ => None,
    }
}

/// Instance commands we hook only where the next layer has them.
fn instance_hook_if_next_has(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkGetPhysicalDeviceFeatures2" => {
            pfn!(
                frame_boundary::get_physical_device_features2,
                vk::PFN_vkGetPhysicalDeviceFeatures2
            )
        }
        b"vkGetPhysicalDeviceFeatures2KHR" => {
            pfn!(
                frame_boundary::get_physical_device_features2_khr,
                vk::PFN_vkGetPhysicalDeviceFeatures2
            )
        }
        _ => None,
    }
}

/// Device-level commands we intercept.
fn device_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkGetDeviceProcAddr" => pfn!(gdpa_entry, vk::PFN_vkGetDeviceProcAddr),
        b"vkDestroyDevice" => pfn!(create::destroy_device, vk::PFN_vkDestroyDevice),
        b"vkGetDeviceQueue" => pfn!(queue::get_device_queue, vk::PFN_vkGetDeviceQueue),
        b"vkGetDeviceQueue2" => pfn!(queue::get_device_queue2, vk::PFN_vkGetDeviceQueue2),
        b"vkQueueSubmit" => pfn!(queue::queue_submit, vk::PFN_vkQueueSubmit),
        b"vkQueueSubmit2" => pfn!(queue::queue_submit2, vk::PFN_vkQueueSubmit2),
        b"vkQueueSubmit2KHR" => pfn!(queue::queue_submit2_khr, vk::PFN_vkQueueSubmit2),
        b"vkQueuePresentKHR" => pfn!(present::queue_present, vk::PFN_vkQueuePresentKHR),
        b"vkCreateSwapchainKHR" => pfn!(present::create_swapchain, vk::PFN_vkCreateSwapchainKHR),
        b"vkDestroySwapchainKHR" => pfn!(present::destroy_swapchain, vk::PFN_vkDestroySwapchainKHR),
        b"vkDestroySemaphore" => pfn!(present::destroy_semaphore, vk::PFN_vkDestroySemaphore),
        b"vkAcquireNextImageKHR" => pfn!(waits::acquire_next_image_khr, vk::PFN_vkAcquireNextImageKHR),
        b"vkAcquireNextImage2KHR" => pfn!(waits::acquire_next_image2_khr, vk::PFN_vkAcquireNextImage2KHR),
        b"vkWaitForFences" => pfn!(waits::wait_for_fences, vk::PFN_vkWaitForFences),
        b"vkWaitSemaphores" => pfn!(waits::wait_semaphores, vk::PFN_vkWaitSemaphores),
        b"vkWaitSemaphoresKHR" => pfn!(waits::wait_semaphores_khr, vk::PFN_vkWaitSemaphores),
        b"vkQueueWaitIdle" => pfn!(waits::queue_wait_idle, vk::PFN_vkQueueWaitIdle),
        b"vkDeviceWaitIdle" => pfn!(waits::device_wait_idle, vk::PFN_vkDeviceWaitIdle),
        b"vkCreateGraphicsPipelines" => pfn!(creation::create_graphics_pipelines, vk::PFN_vkCreateGraphicsPipelines),
        b"vkCreateComputePipelines" => pfn!(creation::create_compute_pipelines, vk::PFN_vkCreateComputePipelines),
        b"vkCreateRayTracingPipelinesKHR" => {
            pfn!(
                creation::create_ray_tracing_pipelines_khr,
                vk::PFN_vkCreateRayTracingPipelinesKHR
            )
        }
        b"vkCreateShaderModule" => pfn!(creation::create_shader_module, vk::PFN_vkCreateShaderModule),
        b"vkCreateShadersEXT" => pfn!(creation::create_shaders_ext, vk::PFN_vkCreateShadersEXT),
        b"vkAllocateMemory" => pfn!(creation::allocate_memory, vk::PFN_vkAllocateMemory),
        b"vkAllocateCommandBuffers" => pfn!(cmdbuf::allocate_command_buffers, vk::PFN_vkAllocateCommandBuffers),
        b"vkFreeCommandBuffers" => pfn!(cmdbuf::free_command_buffers, vk::PFN_vkFreeCommandBuffers),
        b"vkBeginCommandBuffer" => pfn!(cmdbuf::begin_command_buffer, vk::PFN_vkBeginCommandBuffer),
        b"vkEndCommandBuffer" => pfn!(cmdbuf::end_command_buffer, vk::PFN_vkEndCommandBuffer),
        b"vkDestroyCommandPool" => pfn!(cmdbuf::destroy_command_pool, vk::PFN_vkDestroyCommandPool),
        b"vkCreateCommandPool" => pfn!(cmdbuf::create_command_pool, vk::PFN_vkCreateCommandPool),
        b"vkCmdExecuteCommands" => pfn!(commands::cmd_execute_commands, vk::PFN_vkCmdExecuteCommands),
        b"vkCmdEndRenderPass" => pfn!(sh::cmd_end_render_pass, vk::PFN_vkCmdEndRenderPass),
        b"vkCmdEndRenderPass2" => pfn!(sh::cmd_end_render_pass2, vk::PFN_vkCmdEndRenderPass2),
        b"vkCmdEndRenderPass2KHR" => pfn!(sh::cmd_end_render_pass2_khr, vk::PFN_vkCmdEndRenderPass2),
        b"vkCmdEndRendering" => pfn!(sh::cmd_end_rendering, vk::PFN_vkCmdEndRendering),
        b"vkCmdEndRenderingKHR" => pfn!(sh::cmd_end_rendering_khr, vk::PFN_vkCmdEndRendering),
        b"vkCmdNextSubpass" => pfn!(sh::cmd_next_subpass, vk::PFN_vkCmdNextSubpass),
        b"vkCmdNextSubpass2" => pfn!(sh::cmd_next_subpass2, vk::PFN_vkCmdNextSubpass2),
        b"vkCmdNextSubpass2KHR" => pfn!(sh::cmd_next_subpass2_khr, vk::PFN_vkCmdNextSubpass2),
        b"vkCmdBeginDebugUtilsLabelEXT" => pfn!(sh::cmd_begin_debug_utils_label, vk::PFN_vkCmdBeginDebugUtilsLabelEXT),
        b"vkCmdEndDebugUtilsLabelEXT" => pfn!(sh::cmd_end_debug_utils_label, vk::PFN_vkCmdEndDebugUtilsLabelEXT),
        b"vkCmdBeginQuery" => pfn!(sh::cmd_begin_query, vk::PFN_vkCmdBeginQuery),
        b"vkCmdEndQuery" => pfn!(sh::cmd_end_query, vk::PFN_vkCmdEndQuery),
        b"vkCreateQueryPool" => pfn!(sh::create_query_pool, vk::PFN_vkCreateQueryPool),
        b"vkDestroyQueryPool" => pfn!(sh::destroy_query_pool, vk::PFN_vkDestroyQueryPool),
        b"vkCreateRenderPass" => pfn!(sh::create_render_pass, vk::PFN_vkCreateRenderPass),
        b"vkCreateRenderPass2" => pfn!(sh::create_render_pass2, vk::PFN_vkCreateRenderPass2),
        b"vkCreateRenderPass2KHR" => pfn!(sh::create_render_pass2_khr, vk::PFN_vkCreateRenderPass2),
        b"vkDestroyRenderPass" => pfn!(sh::destroy_render_pass, vk::PFN_vkDestroyRenderPass),
        _ => commands::hook_for(name),
    }
}

// The loader and other layers get these internal entry points, never the exported symbols: an
// exported symbol is preemptible, so its address taken inside this library resolves through the
// GOT to the first definition in the process (libvulkan's own vkGetInstanceProcAddr), which sends
// the chain back into the loader and deadlocks it.
pub unsafe extern "system" fn gipa_entry(inst: vk::Instance, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: the caller's: null or a live instance, and null or a NUL-terminated command
    // name, for the call.
    unsafe { get_instance_proc_addr(inst, command_name(name)?) }
}

pub unsafe extern "system" fn gdpa_entry(dev: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: the caller's: null or a live device, and null or a NUL-terminated command name,
    // for the call.
    unsafe { get_device_proc_addr(dev, command_name(name)?) }
}

/// The command name a `vkGet*ProcAddr` caller passed; `None` for null.
///
/// # Safety
/// `name` is null or points to a NUL-terminated string valid for `'a`.
pub unsafe fn command_name<'a>(name: *const c_char) -> Option<&'a CStr> {
    // SAFETY: the caller's contract.
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) })
}

static GIPA: Site = Site::new("vkGetInstanceProcAddr");
static GDPA: Site = Site::new("vkGetDeviceProcAddr");

/// # Safety
/// `inst` is null or a live instance handle.
pub unsafe fn get_instance_proc_addr(inst: vk::Instance, n: &CStr) -> vk::PFN_vkVoidFunction {
    guarded(&GIPA, || {
        if let Some(f) = instance_hook(n.to_bytes()) {
            return Some(f);
        }
        let state = if inst == vk::Instance::null() {
            None
        } else {
            // SAFETY: the caller's: a live instance.
            unsafe { crate::dispatch::instance::lookup(inst.as_raw()) }
        };
        let state = state?;
        let surface_hook = match n.to_bytes() {
            b"vkDestroySurfaceKHR" if state.surface_fns.destroy.is_some() => {
                pfn!(surface::destroy_surface, vk::PFN_vkDestroySurfaceKHR)
            }
            name => display_x11::instance_hook(&state.surface_fns, name)
                .or_else(|| display_wayland::instance_hook(&state.surface_fns, name)),
        };
        if surface_hook.is_some() {
            return surface_hook;
        }
        // SAFETY: querying a command name of a live instance.
        let next = unsafe { (state.next_gipa)(inst, n.as_ptr()) };
        match instance_hook_if_next_has(n.to_bytes()).or_else(|| device_hook(n.to_bytes())) {
            Some(f) if next.is_some() => Some(f),
            _ => next,
        }
    })
    .flatten()
}

/// # Safety
/// `dev` is null or a live device handle.
pub unsafe fn get_device_proc_addr(dev: vk::Device, n: &CStr) -> vk::PFN_vkVoidFunction {
    guarded(&GDPA, || {
        if n.to_bytes() == b"vkGetDeviceProcAddr" {
            return device_hook(n.to_bytes());
        }
        // SAFETY: the caller's: null or a live device.
        let d = unsafe { device_state::lookup(dev.as_raw()) }?;
        if hidden_from_app(&d, n.to_bytes()) {
            return None;
        }
        if commands::passed_through(&d, n.to_bytes()) {
            // SAFETY: querying a command name of a live device.
            return unsafe { (d.next_gdpa)(dev, n.as_ptr()) };
        }
        match device_hook(n.to_bytes()) {
            Some(f) => d.next_has(n).then_some(f),
            // SAFETY: querying a command name of a live device.
            None => unsafe { (d.next_gdpa)(dev, n.as_ptr()) },
        }
    })
    .flatten()
}

/// Commands of extensions the layer enabled for itself: the app did not enable them, so it
/// must get NULL for them as if we were not there.
fn hidden_from_app(d: &device_state::DeviceState, name: &[u8]) -> bool {
    let calibrated = ash::ext::calibrated_timestamps::NAME;
    let added = |ext: &CStr| d.augment.added_extensions.contains(&ext);
    (name == b"vkGetCalibratedTimestampsEXT" && added(calibrated))
        || (matches!(name, b"vkAcquireProfilingLockKHR" | b"vkReleaseProfilingLockKHR")
            && added(crate::driver_counters::EXTENSION))
        || (name == b"vkWaitForPresentKHR" && added(crate::display::present_wait::PRESENT_WAIT))
        || (crate::dispatch::present_timing_abi::COMMANDS.contains(&name)
            && added(crate::dispatch::present_timing_abi::PRESENT_TIMING))
        || (name == b"vkGetCalibratedTimestampsKHR" && added(crate::display::present_timing::CALIBRATED_KHR))
}
