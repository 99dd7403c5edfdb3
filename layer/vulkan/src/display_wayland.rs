//! Display times of swapchains on `VK_KHR_wayland_surface` surfaces, from the compositor's
//! `wp_presentation` feedback (`framescope_collectors::display::wayland_feedback`).
//!
//! `vkCreateWaylandSurfaceKHR` gives the app's `wl_display` and `wl_surface`: framescope
//! attaches its own event queue and thread to that display there. `vkCreateSwapchainKHR`
//! ties a swapchain to its surface and the device's frame session (its `DisplayFeed`).
//! Each `vkQueuePresentKHR` asks for feedback on the surface right before calling down, since
//! the driver's WSI commits the surface inside the call. `vkDestroySurfaceKHR` (which must come
//! before the app disconnects the display) tears framescope's objects down first.

use crate::device_state::DeviceState;
use ash::vk::{self, Handle};
use framescope_collectors::display::wayland_feedback::{self as wf, Target};
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::RwLock;
use rustc_hash::FxHashMap as HashMap;
use std::ffi::c_void;
use std::sync::Arc;

static CREATE: Site = Site::new("vkCreateWaylandSurfaceKHR");
static DESTROY: Site = Site::new("vkDestroySurfaceKHR");

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

type CreateWaylandSurface = unsafe extern "system" fn(
    vk::Instance,
    *const vk::WaylandSurfaceCreateInfoKHR<'_>,
    *const vk::AllocationCallbacks<'_>,
    *mut vk::SurfaceKHR,
) -> vk::Result;
type DestroySurface = unsafe extern "system" fn(vk::Instance, vk::SurfaceKHR, *const vk::AllocationCallbacks<'_>);

/// Our hooks among the instance commands (handed out only where the next layer has them).
pub fn instance_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    // SAFETY: every Vulkan PFN has PFN_vkVoidFunction's representation; the caller casts it
    // back to the type the name implies.
    unsafe {
        match name {
            b"vkCreateWaylandSurfaceKHR" => {
                Some(std::mem::transmute::<CreateWaylandSurface, unsafe extern "system" fn()>(create_wayland_surface))
            }
            b"vkDestroySurfaceKHR" => Some(std::mem::transmute::<DestroySurface, unsafe extern "system" fn()>(
                destroy_surface,
            )),
            _ => None,
        }
    }
}

/// The next layer's surface commands per instance (by dispatch key), resolved inside
/// `vkCreateInstance`: asked later, the loader's terminator answers with the instance's
/// dispatch table, which by then starts at the top of the chain (us), and the call recursed
/// until the stack overflowed (vkcube-wayland on lavapipe).
static NEXT: RwLock<Option<HashMap<usize, [vk::PFN_vkVoidFunction; 2]>>> = RwLock::new(None);

/// Inside `vkCreateInstance`, once the next layer created `instance`.
///
/// # Safety
/// `instance` is the new instance and `next_gipa` the next layer's `vkGetInstanceProcAddr`.
pub unsafe fn instance_created(key: usize, instance: vk::Instance, next_gipa: vk::PFN_vkGetInstanceProcAddr) {
    // SAFETY: name queries on the new instance.
    let fns = unsafe {
        [
            next_gipa(instance, c"vkCreateWaylandSurfaceKHR".as_ptr()),
            next_gipa(instance, c"vkDestroySurfaceKHR".as_ptr()),
        ]
    };
    NEXT.write().get_or_insert_with(HashMap::default).insert(key, fns);
}

/// The next layer's `vkCreateWaylandSurfaceKHR` (0) or `vkDestroySurfaceKHR` (1).
///
/// # Safety
/// `instance` is live.
unsafe fn next(instance: vk::Instance, which: usize) -> vk::PFN_vkVoidFunction {
    // SAFETY: the caller's: a live instance.
    let key = unsafe { crate::registry::dispatch_key(instance.as_raw()) };
    NEXT.read().as_ref()?.get(&key)?[which]
}

unsafe extern "system" fn create_wayland_surface(
    instance: vk::Instance,
    ci: *const vk::WaylandSurfaceCreateInfoKHR<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SurfaceKHR,
) -> vk::Result {
    // SAFETY: the app's live instance.
    let Some(f) = (unsafe { next(instance, 0) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // SAFETY: the next layer's vkCreateWaylandSurfaceKHR, of that type.
    let f = unsafe { std::mem::transmute::<unsafe extern "system" fn(), CreateWaylandSurface>(f) };
    // SAFETY: forwarding the app's arguments.
    let r = unsafe { f(instance, ci, alloc, out) };
    if r == vk::Result::SUCCESS && !ci.is_null() {
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
                        instance: unsafe { crate::registry::dispatch_key(instance.as_raw()) },
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

unsafe extern "system" fn destroy_surface(
    instance: vk::Instance,
    surface: vk::SurfaceKHR,
    alloc: *const vk::AllocationCallbacks<'_>,
) {
    // Before the surface goes: the app may disconnect its display right after.
    guarded(&DESTROY, || {
        let gone = SURFACES.write().as_mut().and_then(|m| m.remove(&surface.as_raw()));
        if let Some(s) = gone {
            wf::detach(s.display as *mut c_void);
        }
    });
    // SAFETY: the app's live instance.
    if let Some(f) = unsafe { next(instance, 1) } {
        // SAFETY: the next layer's vkDestroySurfaceKHR, of that type; the app's arguments.
        unsafe { std::mem::transmute::<unsafe extern "system" fn(), DestroySurface>(f)(instance, surface, alloc) };
    }
}

/// At `vkDestroyInstance`: detaches the surfaces the app left (it must have destroyed them).
pub fn instance_destroyed(instance_key: usize) {
    if let Some(m) = NEXT.write().as_mut() {
        m.remove(&instance_key);
    }
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

/// A swapchain was made on `surface`: its presents get feedback when the surface is Wayland's.
pub fn swapchain_created(d: &DeviceState, swapchain: vk::SwapchainKHR, surface: vk::SurfaceKHR) {
    let target = {
        let surfaces = SURFACES.read();
        let Some(s) = surfaces.as_ref().and_then(|m| m.get(&surface.as_raw())) else {
            return;
        };
        let feed = d.frames.lock().session.display().clone();
        Swapchain {
            target: s.conn.target(&feed),
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
