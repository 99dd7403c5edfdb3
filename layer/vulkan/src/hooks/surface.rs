//! `vkDestroySurfaceKHR`: the one hook every surface-watching feature hears the end of a
//! surface through (X11 Present's window map, the Wayland source's queue on the app's display),
//! before the next layer destroys it. The creation hooks live with their features
//! (`display_x11`, `display_wayland`): each platform's create command is its own.

use ash::vk::{self, Handle};
use framescope_core::guard::{guarded, Site};

static DESTROY_SURFACE: Site = Site::new("vkDestroySurfaceKHR");

pub unsafe extern "system" fn destroy_surface(
    instance: vk::Instance,
    surface: vk::SurfaceKHR,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    guarded(&DESTROY_SURFACE, || crate::display_x11::surface_destroyed(surface));
    // The app may disconnect its Wayland display right after this call: detach first.
    guarded(&DESTROY_SURFACE, || crate::display_wayland::surface_destroyed(surface));
    // SAFETY: the app's live instance.
    let next = unsafe { crate::dispatch::instance::lookup(instance.as_raw()) }.and_then(|i| i.surface_fns.destroy);
    if let Some(f) = next {
        // SAFETY: forwarding the app's arguments.
        unsafe { f(instance, surface, alloc) };
    }
}
