//! Queue hooks: queue retrieval and submission.

use crate::device::{self, Device};
use crate::guard::{guarded, Site};
use ash::vk::{self, Handle};
use std::sync::atomic::Ordering;
use std::sync::Arc;

static SUBMIT: Site = Site::new("vkQueueSubmit");
static SUBMIT2: Site = Site::new("vkQueueSubmit2");

fn device_of(queue: vk::Queue) -> Option<Arc<Device>> {
    device::lookup(queue.as_raw())
}

pub unsafe extern "system" fn get_device_queue(device: vk::Device, family: u32, index: u32, out: *mut vk::Queue) {
    if let Some(d) = device::lookup(device.as_raw()) {
        // SAFETY: forwarding the app's arguments.
        unsafe { (d.fns.fp_v1_0().get_device_queue)(device, family, index, out) };
    }
}

pub unsafe extern "system" fn get_device_queue2(
    device: vk::Device,
    info: *const vk::DeviceQueueInfo2<'_>,
    out: *mut vk::Queue,
) {
    if let Some(d) = device::lookup(device.as_raw()) {
        // SAFETY: forwarding the app's arguments.
        unsafe { (d.fns.fp_v1_1().get_device_queue2)(device, info, out) };
    }
}

pub unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo<'_>,
    fence: vk::Fence,
) -> vk::Result {
    let Some(d) = device_of(queue) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&SUBMIT, || d.stats.submits.fetch_add(1, Ordering::Relaxed));
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_0().queue_submit)(queue, count, submits, fence) }
}

pub unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    let Some(d) = device_of(queue) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&SUBMIT2, || d.stats.submits.fetch_add(1, Ordering::Relaxed));
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.fns.fp_v1_3().queue_submit2)(queue, count, submits, fence) }
}

pub unsafe extern "system" fn queue_submit2_khr(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    let Some(d) = device_of(queue) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&SUBMIT2, || d.stats.submits.fetch_add(1, Ordering::Relaxed));
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.sync2_fns.queue_submit2_khr)(queue, count, submits, fence) }
}
