//! Presentation hooks: swapchain lifetime and vkQueuePresentKHR, where a frame ends.

use crate::device;
use crate::guard::{guarded, Site};
use ash::vk::{self, Handle};
use std::sync::atomic::Ordering;

static PRESENT: Site = Site::new("vkQueuePresentKHR");
static CREATE_SWAPCHAIN: Site = Site::new("vkCreateSwapchainKHR");

pub unsafe extern "system" fn queue_present(queue: vk::Queue, info: *const vk::PresentInfoKHR<'_>) -> vk::Result {
    let Some(d) = device::lookup(queue.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    guarded(&PRESENT, || {
        d.stats.presents.fetch_add(1, Ordering::Relaxed);
        crate::fault::maybe_panic(crate::fault::Point::Present);
    });
    // SAFETY: forwarding the app's arguments.
    unsafe { (d.swapchain_fns.queue_present_khr)(queue, info) }
}

pub unsafe extern "system" fn create_swapchain(
    device: vk::Device,
    ci: *const vk::SwapchainCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SwapchainKHR,
) -> vk::Result {
    let Some(d) = device::lookup(device.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { (d.swapchain_fns.create_swapchain_khr)(device, ci, alloc, out) };
    if r == vk::Result::SUCCESS {
        guarded(&CREATE_SWAPCHAIN, || {
            d.stats.swapchains_created.fetch_add(1, Ordering::Relaxed)
        });
    }
    r
}

pub unsafe extern "system" fn destroy_swapchain(
    device: vk::Device,
    swapchain: vk::SwapchainKHR,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    if let Some(d) = device::lookup(device.as_raw()) {
        // SAFETY: forwarding the app's arguments.
        unsafe { (d.swapchain_fns.destroy_swapchain_khr)(device, swapchain, alloc) };
    }
}
