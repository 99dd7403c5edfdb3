//! Display times of EGL window surfaces on Wayland, from the compositor's `wp_presentation`
//! feedback (`framescope_collectors::display::wayland_feedback`).
//!
//! The app's `wl_display` comes from `eglGetPlatformDisplay(EGL_PLATFORM_WAYLAND_KHR, …)` or
//! `eglGetDisplay` (a native display whose first word is `&wl_display_interface`, Mesa's own
//! test); the `wl_surface` from the `wl_egl_window` handed to `eglCreateWindowSurface` /
//! `eglCreatePlatformWindowSurface` (its layout is public, `wayland-egl-backend.h`, version 3:
//! `intptr_t version`, six ints, `driver_private`, two callbacks, then `surface`). Each swap of
//! such a surface asks for feedback right before the real swap, which commits. The connection
//! goes at `eglDestroySurface`, `eglTerminate`, or the app's `wl_display_disconnect` (exported
//! by the shim), whichever comes first, always while the display is alive. The toggle keys'
//! reader (`framescope_collectors::input::wayland_keys`) attaches and detaches at the same
//! points, with or without display times.

use crate::dl::{gl_hooks, real};
use framescope_collectors::display::wayland_feedback::{self as wf, Target};
use framescope_collectors::input::wayland_keys as wk;
use framescope_core::guard::{guarded, Site};
use framescope_core::sync::RwLock;
use libc::c_void;
use std::sync::{Arc, OnceLock};

/// `EGL_PLATFORM_WAYLAND_KHR` (= `_EXT`).
const PLATFORM_WAYLAND: u32 = 0x31D8;
/// `WL_EGL_WINDOW_VERSION` since wayland 1.15 (the version that has `surface`).
const WL_EGL_WINDOW_VERSION: isize = 3;

/// `struct wl_egl_window` (wayland-egl-backend.h, version 3).
#[repr(C)]
struct WlEglWindow {
    version: isize,
    width: i32,
    height: i32,
    dx: i32,
    dy: i32,
    attached_width: i32,
    attached_height: i32,
    driver_private: *mut c_void,
    resize_callback: *mut c_void,
    destroy_window_callback: *mut c_void,
    surface: *mut c_void,
}

gl_hooks! {
    export eglGetDisplay: Egl fn(native: *mut c_void) -> *mut c_void => get_display;
    export eglGetPlatformDisplay: Egl fn(platform: u32, native: *mut c_void, attribs: *const isize) -> *mut c_void
        => get_platform_display;
    export eglGetPlatformDisplayEXT: Egl fn(platform: u32, native: *mut c_void, attribs: *const i32) -> *mut c_void
        => get_platform_display_ext;
    export eglCreateWindowSurface: Egl fn(dpy: *mut c_void, config: *mut c_void, native: usize, attribs: *const i32)
        -> *mut c_void => create_window_surface;
    export eglCreatePlatformWindowSurface: Egl fn(
        dpy: *mut c_void,
        config: *mut c_void,
        native: *mut c_void,
        attribs: *const isize,
    ) -> *mut c_void => create_platform_window_surface;
    export eglCreatePlatformWindowSurfaceEXT: Egl fn(
        dpy: *mut c_void,
        config: *mut c_void,
        native: *mut c_void,
        attribs: *const i32,
    ) -> *mut c_void => create_platform_window_surface_ext;
    export eglDestroySurface: Egl fn(dpy: *mut c_void, surface: *mut c_void) -> u32 => destroy_surface;
    // Found among the process's libraries only (the shim never loads libwayland); never looked
    // up through the GL lookups, only imported.
    export_only wl_display_disconnect: Wayland fn(display: *mut c_void) => wl_display_disconnect;
}

static DISPLAY: Site = Site::new("EGL Wayland display");
static SURFACE: Site = Site::new("EGL Wayland surface");

/// EGLDisplay → the app's `wl_display`.
static DISPLAYS: RwLock<Vec<(usize, usize)>> = RwLock::new(Vec::new());

struct Surface {
    egl_display: usize,
    wl_display: usize,
    wl_surface: usize,
    conn: Arc<wf::Conn>,
    /// The frame session's target, made at the first swap (the session comes with the first
    /// measured context).
    target: OnceLock<Arc<Target>>,
}

/// EGLSurface → its Wayland surface.
static SURFACES: RwLock<Vec<(usize, Arc<Surface>)>> = RwLock::new(Vec::new());

fn remember_display(egl: *mut c_void, wl: *mut c_void) {
    if egl.is_null() || wl.is_null() {
        return;
    }
    let mut d = DISPLAYS.write();
    if !d.iter().any(|e| e.0 == egl as usize) {
        d.push((egl as usize, wl as usize));
    }
}

unsafe extern "C" fn get_display(native: *mut c_void) -> *mut c_void {
    let Some(f) = real(&next::eglGetDisplay) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the real eglGetDisplay with the app's argument.
    let egl = unsafe { f(native) };
    // SAFETY: EGL reads the native display's first word the same way (Mesa's platform
    // detection), so a valid argument has one.
    guarded(&DISPLAY, || {
        if unsafe { wf::is_wl_display(native) } {
            remember_display(egl, native);
        }
    });
    egl
}

unsafe extern "C" fn get_platform_display(platform: u32, native: *mut c_void, attribs: *const isize) -> *mut c_void {
    let Some(f) = real(&next::eglGetPlatformDisplay) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the real eglGetPlatformDisplay with the app's arguments.
    let egl = unsafe { f(platform, native, attribs) };
    if platform == PLATFORM_WAYLAND {
        guarded(&DISPLAY, || remember_display(egl, native));
    }
    egl
}

unsafe extern "C" fn get_platform_display_ext(platform: u32, native: *mut c_void, attribs: *const i32) -> *mut c_void {
    let Some(f) = real(&next::eglGetPlatformDisplayEXT) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the real eglGetPlatformDisplayEXT with the app's arguments.
    let egl = unsafe { f(platform, native, attribs) };
    if platform == PLATFORM_WAYLAND {
        guarded(&DISPLAY, || remember_display(egl, native));
    }
    egl
}

/// A new window surface `surface` of `dpy` made from `native` (a `wl_egl_window*` when `dpy`
/// is a Wayland display).
///
/// # Safety
/// `native` is the native window the app passed for a surface that was just created.
unsafe fn surface_created(dpy: *mut c_void, surface: *mut c_void, native: *mut c_void) {
    if surface.is_null() || native.is_null() {
        return;
    }
    let Some(wl_display) = DISPLAYS.read().iter().find(|e| e.0 == dpy as usize).map(|e| e.1) else {
        return;
    };
    // SAFETY: the app's display, alive until eglDestroySurface, eglTerminate or
    // wl_display_disconnect (each detaches first).
    unsafe { wk::attach(wl_display as *mut c_void, surface as usize, dpy as usize) };
    // `display_times=0`: no presentation thread or queue of ours on the app's display (the key
    // reader attached above follows the toggle keys, `hotkeys::combos`, not this setting).
    if !framescope_core::settings::get().display_times {
        return;
    }
    // SAFETY: on a Wayland EGL display the native window is a live wl_egl_window (EGL
    // rejects anything else); its version comes first, `surface` only from version 3.
    let w = unsafe { &*(native as *const WlEglWindow) };
    if w.version < WL_EGL_WINDOW_VERSION || w.version > 1024 || w.surface.is_null() {
        framescope_core::log::info(format_args!(
            "Wayland presentation: a wl_egl_window of version {} has no surface to watch",
            w.version
        ));
        return;
    }
    // SAFETY: the app's display, alive until eglTerminate or wl_display_disconnect (both
    // detach first).
    let conn = match unsafe { wf::attach(wl_display as *mut c_void) } {
        Ok(c) => c,
        Err(why) => {
            framescope_core::log::info(format_args!("Wayland presentation: not on this display: {why}"));
            return;
        }
    };
    let s = Arc::new(Surface {
        egl_display: dpy as usize,
        wl_display,
        wl_surface: w.surface as usize,
        conn,
        target: OnceLock::new(),
    });
    let old = {
        let mut all = SURFACES.write();
        let old = all
            .iter()
            .position(|e| e.0 == surface as usize)
            .map(|i| all.swap_remove(i).1);
        all.push((surface as usize, s));
        old
    };
    if let Some(o) = old {
        wf::detach(o.wl_display as *mut c_void);
    }
}

unsafe extern "C" fn create_window_surface(
    dpy: *mut c_void,
    config: *mut c_void,
    native: usize,
    attribs: *const i32,
) -> *mut c_void {
    let Some(f) = real(&next::eglCreateWindowSurface) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the real eglCreateWindowSurface with the app's arguments.
    let s = unsafe { f(dpy, config, native, attribs) };
    // SAFETY: the native window of the surface just made.
    guarded(&SURFACE, || unsafe { surface_created(dpy, s, native as *mut c_void) });
    s
}

unsafe extern "C" fn create_platform_window_surface(
    dpy: *mut c_void,
    config: *mut c_void,
    native: *mut c_void,
    attribs: *const isize,
) -> *mut c_void {
    let Some(f) = real(&next::eglCreatePlatformWindowSurface) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the real eglCreatePlatformWindowSurface with the app's arguments.
    let s = unsafe { f(dpy, config, native, attribs) };
    // SAFETY: the native window of the surface just made.
    guarded(&SURFACE, || unsafe { surface_created(dpy, s, native) });
    s
}

unsafe extern "C" fn create_platform_window_surface_ext(
    dpy: *mut c_void,
    config: *mut c_void,
    native: *mut c_void,
    attribs: *const i32,
) -> *mut c_void {
    let Some(f) = real(&next::eglCreatePlatformWindowSurfaceEXT) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the real eglCreatePlatformWindowSurfaceEXT with the app's arguments.
    let s = unsafe { f(dpy, config, native, attribs) };
    // SAFETY: the native window of the surface just made.
    guarded(&SURFACE, || unsafe { surface_created(dpy, s, native) });
    s
}

unsafe extern "C" fn destroy_surface(dpy: *mut c_void, surface: *mut c_void) -> u32 {
    guarded(&SURFACE, || {
        wk::detach(surface as usize);
        let gone = {
            let mut all = SURFACES.write();
            all.iter()
                .position(|e| e.0 == surface as usize)
                .map(|i| all.swap_remove(i).1)
        };
        if let Some(s) = gone {
            wf::detach(s.wl_display as *mut c_void);
        }
    });
    let Some(f) = real(&next::eglDestroySurface) else {
        return 0;
    };
    // SAFETY: the real eglDestroySurface with the app's arguments.
    unsafe { f(dpy, surface) }
}

/// Before `eglTerminate(dpy)`: its surfaces go with it.
pub fn before_terminate(dpy: *mut c_void) {
    wk::detach_owner(dpy as usize);
    let gone: Vec<Arc<Surface>> = {
        let mut all = SURFACES.write();
        let mut gone = Vec::new();
        all.retain(|e| {
            let keep = e.1.egl_display != dpy as usize;
            if !keep {
                gone.push(e.1.clone());
            }
            keep
        });
        gone
    };
    for s in gone {
        wf::detach(s.wl_display as *mut c_void);
    }
}

/// The app's `wl_display_disconnect` (exported by the shim): framescope's objects on that
/// display go first, then the real call.
///
/// # Safety
/// `display` is the app's argument.
unsafe extern "C" fn wl_display_disconnect(display: *mut c_void) {
    guarded(&DISPLAY, || {
        wf::close_display(display);
        wk::close_display(display);
        SURFACES.write().retain(|e| e.1.wl_display != display as usize);
        DISPLAYS.write().retain(|e| e.1 != display as usize);
    });
    if let Some(f) = real(&next::wl_display_disconnect) {
        // SAFETY: the real wl_display_disconnect with the app's argument.
        unsafe { f(display) }
    }
}

/// Right before the real swap of EGL surface `surface` that ends `frame`: one feedback request
/// when it is a Wayland window surface. No allocation after the surface's first swap.
pub fn before_swap(surface: usize, frame: u64) {
    let s = {
        let all = SURFACES.read();
        match all.iter().find(|e| e.0 == surface) {
            Some(e) => e.1.clone(),
            None => return,
        }
    };
    let target = match s.target.get() {
        Some(t) => t,
        None => {
            let Some(feed) = crate::frames::display_feed() else {
                return;
            };
            s.target.get_or_init(|| s.conn.target(&feed))
        }
    };
    // SAFETY: the wl_surface of a live EGL window surface being swapped, on the target's display.
    unsafe { target.before_commit(s.wl_surface as *mut c_void, frame) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wayland-egl-backend.h: `intptr_t version`, six ints, then four pointers; `surface` is the
    /// last (byte 56 on LP64, 40 on ILP32).
    #[test]
    fn wl_egl_window_has_the_headers_layout() {
        let surface = std::mem::offset_of!(WlEglWindow, surface);
        let expected = if cfg!(target_pointer_width = "64") { 56 } else { 40 };
        assert_eq!(surface, expected);
        let pointer = std::mem::size_of::<usize>();
        assert_eq!(
            std::mem::offset_of!(WlEglWindow, driver_private),
            expected - 3 * pointer
        );
    }
}
