//! Command-buffer lifetime hooks.

use crate::device;
use crate::guard::{guarded, Site};
use ash::vk::{self, Handle};
use std::sync::atomic::Ordering;

static BEGIN: Site = Site::new("vkBeginCommandBuffer");

pub unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo<'_>,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    let Some(d) = device::lookup(device.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().allocate_command_buffers)(device, info, out) }
}

pub unsafe extern "system" fn free_command_buffers(
    device: vk::Device,
    pool: vk::CommandPool,
    count: u32,
    buffers: *const vk::CommandBuffer,
) {
    if let Some(d) = device::lookup(device.as_raw()) {
        // SAFETY: forwarding the app's arguments.
        unsafe { (d.fns.fp_v1_0().free_command_buffers)(device, pool, count, buffers) };
    }
}

pub unsafe extern "system" fn begin_command_buffer(
    cb: vk::CommandBuffer,
    info: *const vk::CommandBufferBeginInfo<'_>,
) -> vk::Result {
    let Some(d) = device::lookup(cb.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&BEGIN, || d.stats.command_buffers_begun.fetch_add(1, Ordering::Relaxed));
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().begin_command_buffer)(cb, info) }
}

pub unsafe extern "system" fn end_command_buffer(cb: vk::CommandBuffer) -> vk::Result {
    let Some(d) = device::lookup(cb.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().end_command_buffer)(cb) }
}
