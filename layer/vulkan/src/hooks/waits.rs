//! The app's waiting calls, timed into the calling thread's waits (`framescope_core::waits`):
//! image acquires, fence and semaphore waits, idle waits. Each forwards first and only then
//! adds its time: nothing of ours runs before the app's wait begins, and a failure of ours
//! cannot change its result.

use crate::device_state;
use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};
use framescope_core::waits::{self, WaitKind};

static WAIT: Site = Site::new("wait hook");

fn timed_call(kind: WaitKind, call: impl FnOnce() -> vk::Result) -> vk::Result {
    let t0 = framescope_core::clock::monotonic_now_ns();
    let r = call();
    let t1 = framescope_core::clock::monotonic_now_ns();
    guarded(&WAIT, || waits::add(kind, t1.saturating_sub(t0)));
    r
}

pub unsafe extern "system" fn acquire_next_image_khr(
    device: vk::Device,
    swapchain: vk::SwapchainKHR,
    timeout: u64,
    semaphore: vk::Semaphore,
    fence: vk::Fence,
    index: *mut u32,
) -> vk::Result {
    // SAFETY: `device` is a handle the app (or the loader) passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Acquire, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.swapchain_fns.acquire_next_image_khr)(device, swapchain, timeout, semaphore, fence, index) }
    })
}

pub unsafe extern "system" fn acquire_next_image2_khr(
    device: vk::Device,
    info: *const vk::AcquireNextImageInfoKHR<'_>,
    index: *mut u32,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Acquire, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.swapchain_fns.acquire_next_image2_khr)(device, info, index) }
    })
}

pub unsafe extern "system" fn wait_for_fences(
    device: vk::Device,
    count: u32,
    fences: *const vk::Fence,
    wait_all: vk::Bool32,
    timeout: u64,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Fence, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.fns.fp_v1_0().wait_for_fences)(device, count, fences, wait_all, timeout) }
    })
}

pub unsafe extern "system" fn wait_semaphores(
    device: vk::Device,
    info: *const vk::SemaphoreWaitInfo<'_>,
    timeout: u64,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Fence, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.fns.fp_v1_2().wait_semaphores)(device, info, timeout) }
    })
}

pub unsafe extern "system" fn wait_semaphores_khr(
    device: vk::Device,
    info: *const vk::SemaphoreWaitInfo<'_>,
    timeout: u64,
) -> vk::Result {
    // SAFETY: as above.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Fence, || {
        // SAFETY: forwarding the app's arguments unchanged.
        unsafe { (d.timeline_fns.wait_semaphores_khr)(device, info, timeout) }
    })
}

pub unsafe extern "system" fn queue_wait_idle(queue: vk::Queue) -> vk::Result {
    // SAFETY: `queue` is a handle the app passed to this command.
    let Some(d) = (unsafe { device_state::lookup(queue.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Idle, || {
        // SAFETY: forwarding the app's argument unchanged.
        unsafe { (d.fns.fp_v1_0().queue_wait_idle)(queue) }
    })
}

pub unsafe extern "system" fn device_wait_idle(device: vk::Device) -> vk::Result {
    // SAFETY: `device` is a handle the app passed to this command.
    let Some(d) = (unsafe { device_state::lookup(device.as_raw()) }) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    timed_call(WaitKind::Idle, || {
        // SAFETY: forwarding the app's argument unchanged.
        unsafe { (d.fns.fp_v1_0().device_wait_idle)(device) }
    })
}
