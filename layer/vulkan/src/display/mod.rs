//! Display-time sources of the Vulkan layer: where they run, each frame's time on the screen
//! goes to the device's frame session (`framescope_core::display`). `VK_EXT_present_timing`
//! ([`present_timing`]) where the swapchain supports it, else `VK_KHR_present_wait`
//! ([`present_wait`]): one source a swapchain, so one report a frame. Other sources of a
//! swapchain's frames (the X11 Present extension) defer to them where [`present_timing_covers`]
//! or [`present_wait_covers`] says one runs.

mod app_ids;
pub mod present_timing;
pub mod present_wait;
mod threads;

pub use app_ids::AppPresentIds;

use ash::vk;

/// Whether frames presented to `swapchain` get their display time from present_wait: where
/// it does, it wins over every other source of that swapchain.
// The X11 Present source (being written alongside) is its caller; nothing else needs it yet.
#[allow(dead_code)]
pub fn present_wait_covers(pw: Option<&present_wait::PresentWait>, swapchain: vk::SwapchainKHR) -> bool {
    pw.is_some_and(|p| p.covers(swapchain))
}

/// Whether frames presented to `swapchain` get their display time from present timing: where
/// it does, it wins over every other source of that swapchain (present_wait does not run on
/// it; the X11 Present source asks this as well as [`present_wait_covers`]).
#[allow(dead_code)]
pub fn present_timing_covers(pt: Option<&present_timing::PresentTiming>, swapchain: vk::SwapchainKHR) -> bool {
    pt.is_some_and(|p| p.covers(swapchain))
}
