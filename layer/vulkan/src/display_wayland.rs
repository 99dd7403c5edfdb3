//! Display times of swapchains on `VK_KHR_wayland_surface` surfaces, from the compositor's
//! `wp_presentation` feedback (`framescope_collectors::display::wayland_feedback`).
//!
//! `vkCreateWaylandSurfaceKHR` gives the app's `wl_display` and `wl_surface`: framescope
//! attaches its own event queue and thread to that display there. `vkCreateSwapchainKHR`
//! ties a swapchain to its surface and the device's frame session (its `DisplayFeed`).
//! Each `vkQueuePresentKHR` asks for feedback on the surface right before calling down, since
//! the driver's WSI commits the surface inside the call. `vkDestroySurfaceKHR` (which must come
//! before the app disconnects the display) tears framescope's objects down first. The toggle
//! keys' reader (`framescope_collectors::input::wayland_keys`) attaches and detaches at the
//! same points, with or without display times.

use crate::dispatch::surface_fns::NextSurfaceFns;
use ash::vk::{self, Handle};
use framescope_collectors::display::wayland_feedback::{self as wf, Target};
use framescope_collectors::input::wayland_keys as wk;
use framescope_core::display::DisplayFeed;
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::RwLock;
use rustc_hash::FxHashMap as HashMap;
use std::ffi::c_void;
use std::sync::Arc;

static CREATE: Site = Site::new("vkCreateWaylandSurfaceKHR");

struct Surface {
    display: usize,
    wl_surface: usize,
    conn: Arc<wf::Conn>,
    /// The instance's dispatch key, to detach what an app left at `vkDestroyInstance`.
    instance: usize,
}

struct Swapchain {
    target: Arc<Target>,
    wl_surface: usize,
}

static SURFACES: RwLock<Option<HashMap<u64, Surface>>> = RwLock::new(None);
static SWAPCHAINS: RwLock<Option<HashMap<u64, Swapchain>>> = RwLock::new(None);

/// Our hook among the instance commands (handed out only where the next layer has it).
pub fn instance_hook(next: &NextSurfaceFns, name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        // SAFETY: every Vulkan PFN has PFN_vkVoidFunction's representation; the caller casts
        // it back to the type the name implies.
        b"vkCreateWaylandSurfaceKHR" if next.create_wayland.is_some() => Some(unsafe {
            std::mem::transmute::<vk::PFN_vkCreateWaylandSurfaceKHR, unsafe extern "system" fn()>(
                create_wayland_surface,
            )
        }),
        _ => None,
    }
}

unsafe extern "system" fn create_wayland_surface(
    instance: vk::Instance,
    ci: *const vk::WaylandSurfaceCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SurfaceKHR,
) -> vk::Result {
    // SAFETY: the app's live instance.
    let next = unsafe { crate::dispatch::instance::lookup(instance.as_raw()) };
    let Some(f) = next.and_then(|i| i.surface_fns.create_wayland) else {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { f(instance, ci, alloc, out) };
    if r == vk::Result::SUCCESS && !ci.is_null() {
        // SAFETY: success: the app's valid create info and the new surface; the display lives
        // as long as the surface (detached at its destruction or the instance's).
        guarded(&CREATE, || unsafe {
            wk::attach(
                (*ci).display,
                (*out).as_raw() as usize,
                crate::dispatch::registry::dispatch_key(instance.as_raw()),
            )
        });
    }
    // `display_times=0`: no presentation thread or queue of ours on the app's display (the key
    // reader attached above follows the toggle keys, `hotkeys::combos`, not this setting).
    if r == vk::Result::SUCCESS && !ci.is_null() && framescope_core::settings::get().display_times {
        guarded(&CREATE, || {
            // SAFETY: success: the app's valid create info and the new surface.
            let (ci, surface) = unsafe { (&*ci, *out) };
            // SAFETY: the app's display, valid for the surface's life (we detach at its
            // destruction).
            match unsafe { wf::attach(ci.display) } {
                Ok(conn) => {
                    let s = Surface {
                        display: ci.display as usize,
                        wl_surface: ci.surface as usize,
                        conn,
                        // SAFETY: a live instance handle.
                        instance: unsafe { crate::dispatch::registry::dispatch_key(instance.as_raw()) },
                    };
                    SURFACES
                        .write()
                        .get_or_insert_with(HashMap::default)
                        .insert(surface.as_raw(), s);
                }
                Err(why) => framescope_core::log::info(format_args!(
                    "Wayland presentation: not on this surface's display: {why}"
                )),
            }
        });
    }
    r
}

/// At `vkDestroySurfaceKHR` (`hooks::surface`), before the next layer's: the app may
/// disconnect its display right after.
pub fn surface_destroyed(surface: vk::SurfaceKHR) {
    wk::detach(surface.as_raw() as usize);
    let gone = SURFACES.write().as_mut().and_then(|m| m.remove(&surface.as_raw()));
    if let Some(s) = gone {
        wf::detach(s.display as *mut c_void);
    }
}

/// At `vkDestroyInstance`: detaches the surfaces the app left (it must have destroyed them).
pub fn instance_destroyed(instance_key: usize) {
    wk::detach_owner(instance_key);
    let left: Vec<Surface> = match SURFACES.write().as_mut() {
        Some(m) => {
            let keys: Vec<u64> = m
                .iter()
                .filter(|(_, s)| s.instance == instance_key)
                .map(|(k, _)| *k)
                .collect();
            keys.iter().filter_map(|k| m.remove(k)).collect()
        }
        None => Vec::new(),
    };
    for s in left {
        wf::detach(s.display as *mut c_void);
    }
}

/// A swapchain was made on `surface`: its presents get feedback when the surface is Wayland's
/// and no better source of the device (`covered`: present timing or present_wait) runs on it.
pub fn swapchain_created(feed: &Arc<DisplayFeed>, swapchain: vk::SwapchainKHR, surface: vk::SurfaceKHR, covered: bool) {
    if covered {
        return;
    }
    let target = {
        let surfaces = SURFACES.read();
        let Some(s) = surfaces.as_ref().and_then(|m| m.get(&surface.as_raw())) else {
            return;
        };
        Swapchain {
            target: s.conn.target(feed),
            wl_surface: s.wl_surface,
        }
    };
    SWAPCHAINS
        .write()
        .get_or_insert_with(HashMap::default)
        .insert(swapchain.as_raw(), target);
}

pub fn swapchain_destroyed(swapchain: vk::SwapchainKHR) {
    if let Some(m) = SWAPCHAINS.write().as_mut() {
        m.remove(&swapchain.as_raw());
    }
}

/// Right before the present of `frame` calls down: one feedback request for the surface of
/// the present's first swapchain (the frame's swapchain). No allocation of ours.
pub fn before_present(swapchain: Option<vk::SwapchainKHR>, frame: u64) {
    let Some(swapchain) = swapchain else { return };
    let swapchains = SWAPCHAINS.read();
    if let Some(s) = swapchains.as_ref().and_then(|m| m.get(&swapchain.as_raw())) {
        // SAFETY: the surface of a live swapchain (the app presents it), on the target's display.
        unsafe { s.target.before_commit(s.wl_surface as *mut c_void, frame) };
    }
}
