//! `VK_LAYER_FRAMESCOPE_overlay`: the framescope Vulkan layer.
//!
//! Exports only the loader entry points; everything else is reached through them. Each hook
//! forwards to the next layer and runs its own bookkeeping inside `guard::guarded`, so an
//! internal failure is logged once and the app's call still goes through.
#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

// Shared with the other layer: panic containment, logging, the process's config.
use framescope_core::guard;
// Bottom: the loader's interface, dispatch tables and handle maps.
mod batches;
mod dispatch;
#[deny(unsafe_code)]
mod driver_counters;
mod layers_above;
// Features, each with its per-device state, below the wiring. A feature reaches the driver
// through `dispatch::vk_calls`' safe calls; `unsafe` stays at the FFI edges (hooks, dispatch).
#[deny(unsafe_code)]
mod counts;
#[deny(unsafe_code)]
mod display;
mod display_wayland;
mod display_x11;
#[deny(unsafe_code)]
mod frames;
#[deny(unsafe_code)]
mod gpu_hint;
#[deny(unsafe_code)]
mod hud;
#[deny(unsafe_code)]
mod samples;
#[deny(unsafe_code)]
mod timing;
// Wiring: the per-device state, the hooks, and the entry-point table on top.
mod device_state;
mod hooks;
mod proc_addr;
mod recording_cache;
// Tests: a fake driver under the layer.
#[cfg(test)]
mod fake_driver;

use ash::vk;
use dispatch::loader_abi::*;

/// Counts framescope's allocations on the app's threads (`FRAMESCOPE_REPORT_ALLOCS`).
#[global_allocator]
static ALLOC: framescope_core::alloc_count::CountingAlloc = framescope_core::alloc_count::CountingAlloc;
use std::ffi::c_char;

static NEGOTIATE: guard::Site = guard::Site::new("vkNegotiateLoaderLayerInterfaceVersion");

/// Loader interface v2 negotiation.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(p: *mut VkNegotiateLayerInterface) -> vk::Result {
    guard::guarded(&NEGOTIATE, || {
        if p.is_null() {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        // SAFETY: the loader passes a valid negotiation struct it owns for this call.
        let n = unsafe { &mut *p };
        if n.s_type != LAYER_NEGOTIATE_INTERFACE_STRUCT || n.loader_layer_interface_version < LAYER_INTERFACE_VERSION {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        n.loader_layer_interface_version = LAYER_INTERFACE_VERSION;
        n.pfn_get_instance_proc_addr = Some(proc_addr::gipa_entry);
        n.pfn_get_device_proc_addr = Some(proc_addr::gdpa_entry);
        n.pfn_get_physical_device_proc_addr = None;
        vk::Result::SUCCESS
    })
    .unwrap_or(vk::Result::ERROR_INITIALIZATION_FAILED)
}

#[no_mangle]
pub unsafe extern "system" fn vkGetInstanceProcAddr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    // SAFETY: Vulkan's contract: null or a live instance, null or a NUL-terminated name.
    unsafe { proc_addr::get_instance_proc_addr(instance, proc_addr::command_name(name)?) }
}

#[no_mangle]
pub unsafe extern "system" fn vkGetDeviceProcAddr(device: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
    // SAFETY: Vulkan's contract: null or a live device, null or a NUL-terminated name.
    unsafe { proc_addr::get_device_proc_addr(device, proc_addr::command_name(name)?) }
}
