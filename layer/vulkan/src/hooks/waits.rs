//! The app's waiting calls, timed into the calling thread's waits (`framescope_core::waits`):
//! image acquires, fence and semaphore waits, idle waits.

use ash::vk;
use framescope_core::waits::{add, WaitKind};

timed_hooks! { WAIT;
    acquire_next_image_khr(
        device: vk::Device,
        swapchain: vk::SwapchainKHR,
        timeout: u64,
        semaphore: vk::Semaphore,
        fence: vk::Fence,
        index: *mut u32,
    ) => add, WaitKind::Acquire, |d| d.swapchain_fns.acquire_next_image_khr;
    acquire_next_image2_khr(
        device: vk::Device,
        info: *const vk::AcquireNextImageInfoKHR<'_>,
        index: *mut u32,
    ) => add, WaitKind::Acquire, |d| d.swapchain_fns.acquire_next_image2_khr;
    wait_for_fences(
        device: vk::Device,
        count: u32,
        fences: *const vk::Fence,
        wait_all: vk::Bool32,
        timeout: u64,
    ) => add, WaitKind::Fence, |d| d.fns.fp_v1_0().wait_for_fences;
    wait_semaphores(device: vk::Device, info: *const vk::SemaphoreWaitInfo<'_>, timeout: u64)
        => add, WaitKind::Fence, |d| d.fns.fp_v1_2().wait_semaphores;
    wait_semaphores_khr(device: vk::Device, info: *const vk::SemaphoreWaitInfo<'_>, timeout: u64)
        => add, WaitKind::Fence, |d| d.timeline_fns.wait_semaphores_khr;
    queue_wait_idle(queue: vk::Queue) => add, WaitKind::Idle, |d| d.fns.fp_v1_0().queue_wait_idle;
    device_wait_idle(device: vk::Device) => add, WaitKind::Idle, |d| d.fns.fp_v1_0().device_wait_idle;
}
