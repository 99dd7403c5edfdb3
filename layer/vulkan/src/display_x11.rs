//! The X11 Present display-time source for Vulkan swapchains on Xlib and XCB surfaces:
//! the surface hooks remember which X window a surface is for, swapchain creation which
//! surface a swapchain presents to, and each present tells the device's source
//! (`framescope_collectors::display::x11_present`) which frame went to which window.
//!
//! Which source a swapchain gets is decided by [`source_for`] alone, so better sources
//! (`VK_KHR_present_wait`) take precedence in one place.

use crate::dispatch::surface_fns::NextSurfaceFns;
use ash::vk::{self, Handle};
use framescope_collectors::display::x11_present::X11Present;
use framescope_core::display::{DisplayFeed, DisplaySource};
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::Mutex;
use std::sync::Arc;

static CREATE_XLIB: Site = Site::new("vkCreateXlibSurfaceKHR");
static CREATE_XCB: Site = Site::new("vkCreateXcbSurfaceKHR");

/// X surfaces: (surface, X window). Written at surface and swapchain creation only.
static SURFACES: Mutex<Vec<(u64, u32)>> = Mutex::new(Vec::new());

struct Watched {
    swapchain: u64,
    window: u32,
    source: Arc<X11Present>,
}

/// Swapchains watched through X11 Present. The present path only `try_lock`s it: creation
/// and destruction hold it briefly, and a present that finds it taken is not noted (its
/// frame goes out `no_report`) rather than wait.
static SWAPCHAINS: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

/// The display-time source of a swapchain: `present_wait` when the device has it enabled
/// (a per-present time from the driver), else X11 Present when it presents to an X window,
/// else none.
pub fn source_for(present_wait: bool, window: Option<u32>) -> Option<DisplaySource> {
    match (present_wait, window) {
        (true, _) => Some(DisplaySource::PresentWait),
        (false, Some(_)) => Some(DisplaySource::X11Present),
        (false, None) => None,
    }
}

/// At swapchain creation: watch it when [`source_for`] picks X11 Present.
pub fn swapchain_created(
    feed: &Arc<DisplayFeed>,
    swapchain: vk::SwapchainKHR,
    surface: vk::SurfaceKHR,
    present_wait: bool,
) {
    let window = SURFACES
        .lock()
        .iter()
        .find(|(s, _)| *s == surface.as_raw())
        .map(|&(_, w)| w);
    // `display_times=0`: the device's feed already says `disabled`.
    if !framescope_core::settings::get().display_times
        || source_for(present_wait, window) != Some(DisplaySource::X11Present)
    {
        return;
    }
    let Some(window) = window else { return };
    let mut list = SWAPCHAINS.lock();
    // One source per frame session (per device), shared by its swapchains.
    let source = list
        .iter()
        .find(|w| Arc::ptr_eq(w.source.feed(), feed))
        .map(|w| Arc::clone(&w.source))
        .unwrap_or_else(|| X11Present::new(Arc::clone(feed)));
    list.push(Watched {
        swapchain: swapchain.as_raw(),
        window,
        source,
    });
}

pub fn swapchain_destroyed(swapchain: vk::SwapchainKHR) {
    SWAPCHAINS.lock().retain(|w| w.swapchain != swapchain.as_raw());
}

/// From the present: frame `frame` of `swapchain` was presented at `t_ns`. A try-lock, a
/// short search and the source's few atomic operations; never waits.
pub fn presented(swapchain: vk::SwapchainKHR, frame: u64, t_ns: u64) {
    let Some(list) = SWAPCHAINS.try_lock() else { return };
    if let Some(w) = list.iter().find(|w| w.swapchain == swapchain.as_raw()) {
        w.source.presented(w.window, frame, t_ns);
    }
}

fn remember(surface: vk::SurfaceKHR, window: u32) {
    let mut s = SURFACES.lock();
    s.retain(|(h, _)| *h != surface.as_raw());
    s.push((surface.as_raw(), window));
}

/// Our hook for instance command `name`, when the next layer's is known.
pub fn instance_hook(next: &NextSurfaceFns, name: &[u8]) -> vk::PFN_vkVoidFunction {
    // SAFETY (each transmute): every Vulkan PFN has the representation of PFN_vkVoidFunction;
    // the caller casts it back to the type the name implies.
    unsafe {
        match name {
            b"vkCreateXlibSurfaceKHR" if next.create_xlib.is_some() => Some(std::mem::transmute::<
                vk::PFN_vkCreateXlibSurfaceKHR,
                unsafe extern "system" fn(),
            >(create_xlib_surface)),
            b"vkCreateXcbSurfaceKHR" if next.create_xcb.is_some() => Some(std::mem::transmute::<
                vk::PFN_vkCreateXcbSurfaceKHR,
                unsafe extern "system" fn(),
            >(create_xcb_surface)),
            _ => None,
        }
    }
}

/// The next layer's surface commands for `instance`.
///
/// # Safety
/// `instance` is a live instance handle.
unsafe fn next(instance: vk::Instance) -> NextSurfaceFns {
    // SAFETY: the caller's: a live instance.
    unsafe { crate::dispatch::instance::lookup(instance.as_raw()) }
        .map_or_else(NextSurfaceFns::default, |i| i.surface_fns)
}

pub unsafe extern "system" fn create_xlib_surface(
    instance: vk::Instance,
    ci: *const vk::XlibSurfaceCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SurfaceKHR,
) -> vk::Result {
    // SAFETY: the app's live instance.
    let Some(f) = (unsafe { next(instance) }).create_xlib else {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { f(instance, ci, alloc, out) };
    if r == vk::Result::SUCCESS {
        guarded(&CREATE_XLIB, || {
            // SAFETY: success: `ci` is the app's valid create info and `*out` the new surface.
            let (window, surface) = unsafe { ((*ci).window, *out) };
            remember(surface, u32::try_from(window).unwrap_or(0));
        });
    }
    r
}

pub unsafe extern "system" fn create_xcb_surface(
    instance: vk::Instance,
    ci: *const vk::XcbSurfaceCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SurfaceKHR,
) -> vk::Result {
    // SAFETY: the app's live instance.
    let Some(f) = (unsafe { next(instance) }).create_xcb else {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { f(instance, ci, alloc, out) };
    if r == vk::Result::SUCCESS {
        guarded(&CREATE_XCB, || {
            // SAFETY: success: `ci` is the app's valid create info and `*out` the new surface.
            let (window, surface) = unsafe { ((*ci).window, *out) };
            remember(surface, window);
        });
    }
    r
}

/// At `vkDestroySurfaceKHR` (`hooks::surface`), before the next layer's.
pub fn surface_destroyed(surface: vk::SurfaceKHR) {
    SURFACES.lock().retain(|(h, _)| *h != surface.as_raw());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_wait_wins_then_x11_present_for_x_windows() {
        assert_eq!(source_for(true, Some(5)), Some(DisplaySource::PresentWait));
        assert_eq!(source_for(false, Some(5)), Some(DisplaySource::X11Present));
        assert_eq!(source_for(false, None), None);
    }
}
