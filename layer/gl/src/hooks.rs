//! The hooked GLX/EGL entry points (internal, never exported: their addresses are what
//! `dlsym`, `dlvsym` and `*GetProcAddress*` hand out), the slots holding the real functions,
//! and the table of names we replace.
//!
//! The exported symbols in `lib.rs` are thin wrappers around the functions here. Handing out
//! the address of an exported symbol from inside the library would be wrong: it is
//! preemptible, so it resolves through the GOT to the first definition in the process.

use crate::dl;
use crate::frames::{self, WinSys};
use crate::guard::{guarded, report_once, Site};
use crate::hud::{self, Target};
use libc::{c_char, c_int, c_ulong, c_void};
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where a real function may live when it is not next in the global scope.
#[derive(Clone, Copy)]
pub enum Family {
    Glx,
    Egl,
    Gl,
    X11,
}

impl Family {
    fn libs(self) -> &'static [&'static CStr] {
        match self {
            Family::Glx => &[c"libGL.so.1", c"libGLX.so.0", c"libGL.so"],
            Family::Egl => &[c"libEGL.so.1", c"libEGL.so"],
            Family::Gl => &[c"libGL.so.1", c"libOpenGL.so.0", c"libGLESv2.so.2", c"libGLESv2.so"],
            Family::X11 => &[c"libX11.so.6", c"libX11.so"],
        }
    }
}

/// The real definition of one hooked function, resolved lazily (or learnt from the app's own
/// `dlsym`/`GetProcAddress` lookups) and never pointing into this library.
pub struct Real {
    pub name: &'static CStr,
    family: Family,
    ptr: AtomicUsize,
}

impl Real {
    pub const fn new(name: &'static CStr, family: Family) -> Self {
        Real {
            name,
            family,
            ptr: AtomicUsize::new(0),
        }
    }

    /// The real function's address, or 0 when it cannot be found.
    pub fn get(&self) -> usize {
        let p = self.ptr.load(Ordering::Acquire);
        if p != 0 {
            return p;
        }
        let found = dl::next(self.name, self.family.libs());
        if found != 0 {
            let _ = self.ptr.compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire);
        }
        self.ptr.load(Ordering::Acquire)
    }

    /// Records a real address the app looked up itself (first one wins; ours are refused).
    pub fn offer(&self, p: usize) {
        if p != 0 && self.ptr.load(Ordering::Acquire) == 0 && !dl::is_ours(p) {
            let _ = self.ptr.compare_exchange(0, p, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

type GlxSwapFn = unsafe extern "C" fn(*mut c_void, c_ulong);
type GlxSwapOmlFn = unsafe extern "C" fn(*mut c_void, c_ulong, i64, i64, i64) -> i64;
type EglSwapFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> u32;
type EglSwapDamageFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const i32, i32) -> u32;
type GetProcFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type GlxMakeCurrentFn = unsafe extern "C" fn(*mut c_void, c_ulong, *mut c_void) -> c_int;
type GlxMakeContextCurrentFn = unsafe extern "C" fn(*mut c_void, c_ulong, c_ulong, *mut c_void) -> c_int;
type EglMakeCurrentFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, *mut c_void) -> u32;
type GlxDestroyFn = unsafe extern "C" fn(*mut c_void, *mut c_void);
type EglDestroyFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> u32;
type GetCurrentFn = unsafe extern "C" fn() -> *mut c_void;
type XCloseDisplayFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type EglTerminateFn = unsafe extern "C" fn(*mut c_void) -> u32;
type GlxGetCurrentDrawableFn = unsafe extern "C" fn() -> c_ulong;
type EglGetCurrentSurfaceFn = unsafe extern "C" fn(i32) -> *mut c_void;
type GlxQueryDrawableFn = unsafe extern "C" fn(*mut c_void, c_ulong, c_int, *mut u32);
type EglQuerySurfaceFn = unsafe extern "C" fn(*mut c_void, *mut c_void, i32, *mut i32) -> u32;

pub static GLX_SWAP_BUFFERS: Real = Real::new(c"glXSwapBuffers", Family::Glx);
pub static GLX_SWAP_BUFFERS_MSC_OML: Real = Real::new(c"glXSwapBuffersMscOML", Family::Glx);
pub static EGL_SWAP_BUFFERS: Real = Real::new(c"eglSwapBuffers", Family::Egl);
pub static EGL_SWAP_DAMAGE_EXT: Real = Real::new(c"eglSwapBuffersWithDamageEXT", Family::Egl);
pub static EGL_SWAP_DAMAGE_KHR: Real = Real::new(c"eglSwapBuffersWithDamageKHR", Family::Egl);
pub static GLX_GET_PROC_ADDRESS: Real = Real::new(c"glXGetProcAddress", Family::Glx);
pub static GLX_GET_PROC_ADDRESS_ARB: Real = Real::new(c"glXGetProcAddressARB", Family::Glx);
pub static EGL_GET_PROC_ADDRESS: Real = Real::new(c"eglGetProcAddress", Family::Egl);
pub static GLX_MAKE_CURRENT: Real = Real::new(c"glXMakeCurrent", Family::Glx);
pub static GLX_MAKE_CONTEXT_CURRENT: Real = Real::new(c"glXMakeContextCurrent", Family::Glx);
pub static EGL_MAKE_CURRENT: Real = Real::new(c"eglMakeCurrent", Family::Egl);
pub static GLX_DESTROY_CONTEXT: Real = Real::new(c"glXDestroyContext", Family::Glx);
pub static EGL_DESTROY_CONTEXT: Real = Real::new(c"eglDestroyContext", Family::Egl);
pub static X_CLOSE_DISPLAY: Real = Real::new(c"XCloseDisplay", Family::X11);
pub static EGL_TERMINATE: Real = Real::new(c"eglTerminate", Family::Egl);
static GLX_GET_CURRENT_CONTEXT: Real = Real::new(c"glXGetCurrentContext", Family::Glx);
static EGL_GET_CURRENT_CONTEXT: Real = Real::new(c"eglGetCurrentContext", Family::Egl);
static GLX_GET_CURRENT_DRAWABLE: Real = Real::new(c"glXGetCurrentDrawable", Family::Glx);
static EGL_GET_CURRENT_SURFACE: Real = Real::new(c"eglGetCurrentSurface", Family::Egl);
static GLX_QUERY_DRAWABLE: Real = Real::new(c"glXQueryDrawable", Family::Glx);
static EGL_QUERY_SURFACE: Real = Real::new(c"eglQuerySurface", Family::Egl);

static SWAP: Site = Site::new("swap buffers");
static PROC: Site = Site::new("get proc address");
static MAKE_CURRENT: Site = Site::new("make current");
static DESTROY: Site = Site::new("destroy context");
static CLOSE: Site = Site::new("close display");
static DLSYM: Site = Site::new("dlsym");
static MISSING: Site = Site::new("real function lookup");

fn missing(r: &Real) {
    report_once(
        &MISSING,
        format_args!("cannot find the real {}; the call is dropped", r.name.to_string_lossy()),
    );
}

/// For a name we replace: the slot of its real function and our replacement's address.
pub fn intercept(name: &[u8]) -> Option<(&'static Real, usize)> {
    Some(match name {
        b"glXSwapBuffers" => (&GLX_SWAP_BUFFERS, glx_swap_buffers as *const () as usize),
        b"glXSwapBuffersMscOML" => (
            &GLX_SWAP_BUFFERS_MSC_OML,
            glx_swap_buffers_msc_oml as *const () as usize,
        ),
        b"eglSwapBuffers" => (&EGL_SWAP_BUFFERS, egl_swap_buffers as *const () as usize),
        b"eglSwapBuffersWithDamageEXT" => (
            &EGL_SWAP_DAMAGE_EXT,
            egl_swap_buffers_with_damage_ext as *const () as usize,
        ),
        b"eglSwapBuffersWithDamageKHR" => (
            &EGL_SWAP_DAMAGE_KHR,
            egl_swap_buffers_with_damage_khr as *const () as usize,
        ),
        b"glXGetProcAddress" => (&GLX_GET_PROC_ADDRESS, glx_get_proc_address as *const () as usize),
        b"glXGetProcAddressARB" => (
            &GLX_GET_PROC_ADDRESS_ARB,
            glx_get_proc_address_arb as *const () as usize,
        ),
        b"eglGetProcAddress" => (&EGL_GET_PROC_ADDRESS, egl_get_proc_address as *const () as usize),
        b"glXMakeCurrent" => (&GLX_MAKE_CURRENT, glx_make_current as *const () as usize),
        b"glXMakeContextCurrent" => (
            &GLX_MAKE_CONTEXT_CURRENT,
            glx_make_context_current as *const () as usize,
        ),
        b"eglMakeCurrent" => (&EGL_MAKE_CURRENT, egl_make_current as *const () as usize),
        b"glXDestroyContext" => (&GLX_DESTROY_CONTEXT, glx_destroy_context as *const () as usize),
        b"eglDestroyContext" => (&EGL_DESTROY_CONTEXT, egl_destroy_context as *const () as usize),
        b"eglTerminate" => (&EGL_TERMINATE, egl_terminate as *const () as usize),
        // SDL and other toolkits load Xlib with dlopen and look it up.
        b"XCloseDisplay" => (&X_CLOSE_DISPLAY, x_close_display as *const () as usize),
        _ => {
            return crate::draws::intercept(name)
                .or_else(|| crate::draws::intercept_legacy(name))
                .or_else(|| crate::sample_hooks::intercept(name))
        }
    })
}

/// Called by the `dlsym`/`dlvsym` trampolines: our replacement for a hooked name (learning the
/// real address from the app's own lookup), else 0 so the real function answers.
pub fn filter_dlsym(handle: *mut c_void, name: &CStr, version: Option<&CStr>) -> usize {
    let b = name.to_bytes();
    // Fast path for the many lookups that are none of ours.
    if !(b.starts_with(b"gl") || b.starts_with(b"egl") || b == b"XCloseDisplay") {
        return 0;
    }
    guarded(&DLSYM, || {
        let Some((slot, ours)) = intercept(b) else {
            return 0;
        };
        let real = match version {
            None => dl::sym(handle, name),
            Some(v) => match dl::real_dlvsym() {
                // SAFETY: real dlvsym with the app's handle and strings.
                Some(f) => unsafe { f(handle, name.as_ptr(), v.as_ptr()) as usize },
                None => 0,
            },
        };
        if real == 0 {
            // Not there: the real function answers (NULL and the app's dlerror).
            return 0;
        }
        slot.offer(real);
        if slot.get() == 0 {
            return 0;
        }
        ours
    })
    .unwrap_or(0)
}

/// The current context of the calling thread for `ws`, as a key (0: none).
pub fn current_context(ws: WinSys) -> usize {
    let slot = match ws {
        WinSys::Glx => &GLX_GET_CURRENT_CONTEXT,
        WinSys::Egl => &EGL_GET_CURRENT_CONTEXT,
    };
    let p = slot.get();
    if p == 0 {
        return 0;
    }
    // SAFETY: the real glXGetCurrentContext/eglGetCurrentContext take no arguments.
    unsafe { std::mem::transmute::<usize, GetCurrentFn>(p)() as usize }
}

/// The calling thread's current draw drawable (`GLXDrawable`) or surface (`EGLSurface`) as a
/// number (0: none).
pub fn current_drawable(ws: WinSys) -> usize {
    const EGL_DRAW: i32 = 0x3059;
    match ws {
        WinSys::Glx => {
            let p = GLX_GET_CURRENT_DRAWABLE.get();
            if p == 0 {
                return 0;
            }
            // SAFETY: the real glXGetCurrentDrawable takes no arguments.
            unsafe { std::mem::transmute::<usize, GlxGetCurrentDrawableFn>(p)() as usize }
        }
        WinSys::Egl => {
            let p = EGL_GET_CURRENT_SURFACE.get();
            if p == 0 {
                return 0;
            }
            // SAFETY: the real eglGetCurrentSurface with a valid readdraw enum.
            unsafe { std::mem::transmute::<usize, EglGetCurrentSurfaceFn>(p)(EGL_DRAW) as usize }
        }
    }
}

/// Width and height of the drawable a swap presents (`glXQueryDrawable` / `eglQuerySurface`;
/// may be a round trip to the X server, so the HUD asks rarely).
pub fn drawable_size(ws: WinSys, dpy: usize, drawable: usize) -> Option<[u32; 2]> {
    match ws {
        WinSys::Glx => {
            const GLX_WIDTH: c_int = 0x801D;
            const GLX_HEIGHT: c_int = 0x801E;
            let p = GLX_QUERY_DRAWABLE.get();
            if p == 0 {
                return None;
            }
            let (mut w, mut h) = (0u32, 0u32);
            // SAFETY: the real glXQueryDrawable with the display and drawable the app is
            // swapping; each call writes one unsigned int.
            unsafe {
                let f = std::mem::transmute::<usize, GlxQueryDrawableFn>(p);
                f(dpy as *mut c_void, drawable as c_ulong, GLX_WIDTH, &mut w);
                f(dpy as *mut c_void, drawable as c_ulong, GLX_HEIGHT, &mut h);
            }
            Some([w, h])
        }
        WinSys::Egl => {
            const EGL_WIDTH: i32 = 0x3057;
            const EGL_HEIGHT: i32 = 0x3056;
            let p = EGL_QUERY_SURFACE.get();
            if p == 0 {
                return None;
            }
            let (mut w, mut h) = (0i32, 0i32);
            // SAFETY: the real eglQuerySurface with the display and surface the app is
            // swapping; each call writes one EGLint.
            let ok = unsafe {
                let f = std::mem::transmute::<usize, EglQuerySurfaceFn>(p);
                f(dpy as *mut c_void, drawable as *mut c_void, EGL_WIDTH, &mut w) != 0
                    && f(dpy as *mut c_void, drawable as *mut c_void, EGL_HEIGHT, &mut h) != 0
            };
            ok.then_some([w.max(0) as u32, h.max(0) as u32])
        }
    }
}

/// A GL function of the current context, through the real `*GetProcAddress` of `ws`.
pub fn gl_proc(ws: WinSys, name: &CStr) -> usize {
    let slot = match ws {
        WinSys::Glx => &GLX_GET_PROC_ADDRESS_ARB,
        WinSys::Egl => &EGL_GET_PROC_ADDRESS,
    };
    let mut p = slot.get();
    if p == 0 && matches!(ws, WinSys::Glx) {
        p = GLX_GET_PROC_ADDRESS.get();
    }
    if p == 0 {
        return 0;
    }
    // SAFETY: the real GetProcAddress takes a NUL-terminated name.
    let f = unsafe { std::mem::transmute::<usize, GetProcFn>(p)(name.as_ptr()) } as usize;
    if dl::is_ours(f) {
        // Cannot happen for the GL names we load; never call ourselves by accident.
        return 0;
    }
    f
}

// ---- swap -----------------------------------------------------------------------------------

/// Runs `real` (the swap of `target`) between the frame bookkeeping before and after it.
fn around_swap<R>(ws: WinSys, target: Target, real: impl FnOnce() -> R) -> R {
    let token = guarded(&SWAP, || frames::before_swap(ws, target)).flatten();
    let r = real();
    if let Some(t) = token {
        guarded(&SWAP, || frames::after_swap(t));
    }
    r
}

pub unsafe extern "C" fn glx_swap_buffers(dpy: *mut c_void, drawable: c_ulong) {
    let p = GLX_SWAP_BUFFERS.get();
    if p == 0 {
        return missing(&GLX_SWAP_BUFFERS);
    }
    // SAFETY: p is the real glXSwapBuffers; the arguments are the app's own.
    let target = Target {
        dpy: dpy as usize,
        drawable: drawable as usize,
    };
    around_swap(WinSys::Glx, target, || unsafe {
        std::mem::transmute::<usize, GlxSwapFn>(p)(dpy, drawable)
    })
}

pub unsafe extern "C" fn glx_swap_buffers_msc_oml(
    dpy: *mut c_void,
    drawable: c_ulong,
    target_msc: i64,
    divisor: i64,
    remainder: i64,
) -> i64 {
    let p = GLX_SWAP_BUFFERS_MSC_OML.get();
    if p == 0 {
        missing(&GLX_SWAP_BUFFERS_MSC_OML);
        return -1;
    }
    // SAFETY: p is the real glXSwapBuffersMscOML; the arguments are the app's own.
    let target = Target {
        dpy: dpy as usize,
        drawable: drawable as usize,
    };
    around_swap(WinSys::Glx, target, || unsafe {
        std::mem::transmute::<usize, GlxSwapOmlFn>(p)(dpy, drawable, target_msc, divisor, remainder)
    })
}

pub unsafe extern "C" fn egl_swap_buffers(dpy: *mut c_void, surface: *mut c_void) -> u32 {
    let p = EGL_SWAP_BUFFERS.get();
    if p == 0 {
        missing(&EGL_SWAP_BUFFERS);
        return 0;
    }
    // SAFETY: p is the real eglSwapBuffers; the arguments are the app's own.
    let target = Target {
        dpy: dpy as usize,
        drawable: surface as usize,
    };
    around_swap(WinSys::Egl, target, || unsafe {
        std::mem::transmute::<usize, EglSwapFn>(p)(dpy, surface)
    })
}

unsafe fn egl_swap_damage(real: &Real, dpy: *mut c_void, surface: *mut c_void, rects: *const i32, n: i32) -> u32 {
    let p = real.get();
    if p == 0 {
        missing(real);
        return 0;
    }
    // SAFETY: p is the real eglSwapBuffersWithDamage*; the arguments are the app's own.
    let target = Target {
        dpy: dpy as usize,
        drawable: surface as usize,
    };
    around_swap(WinSys::Egl, target, || unsafe {
        std::mem::transmute::<usize, EglSwapDamageFn>(p)(dpy, surface, rects, n)
    })
}

pub unsafe extern "C" fn egl_swap_buffers_with_damage_ext(
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { egl_swap_damage(&EGL_SWAP_DAMAGE_EXT, dpy, surface, rects, n) }
}

pub unsafe extern "C" fn egl_swap_buffers_with_damage_khr(
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { egl_swap_damage(&EGL_SWAP_DAMAGE_KHR, dpy, surface, rects, n) }
}

// ---- GetProcAddress -------------------------------------------------------------------------

unsafe fn get_proc(real: &Real, name: *const c_char) -> *mut c_void {
    let p = real.get();
    if p == 0 {
        missing(real);
        return std::ptr::null_mut();
    }
    // SAFETY: p is the real GetProcAddress; name is the app's.
    let found = unsafe { std::mem::transmute::<usize, GetProcFn>(p)(name) };
    if found.is_null() || name.is_null() {
        return found;
    }
    // SAFETY: the app passes a NUL-terminated name.
    let n = unsafe { CStr::from_ptr(name) };
    guarded(&PROC, || match intercept(n.to_bytes()) {
        Some((slot, ours)) => {
            slot.offer(found as usize);
            if slot.get() == 0 {
                found
            } else {
                ours as *mut c_void
            }
        }
        None => found,
    })
    .unwrap_or(found)
}

pub unsafe extern "C" fn glx_get_proc_address(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { get_proc(&GLX_GET_PROC_ADDRESS, name) }
}

pub unsafe extern "C" fn glx_get_proc_address_arb(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { get_proc(&GLX_GET_PROC_ADDRESS_ARB, name) }
}

pub unsafe extern "C" fn egl_get_proc_address(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { get_proc(&EGL_GET_PROC_ADDRESS, name) }
}

// ---- make current / destroy -----------------------------------------------------------------

pub unsafe extern "C" fn glx_make_current(dpy: *mut c_void, drawable: c_ulong, ctx: *mut c_void) -> c_int {
    let p = GLX_MAKE_CURRENT.get();
    if p == 0 {
        missing(&GLX_MAKE_CURRENT);
        return 0;
    }
    guarded(&MAKE_CURRENT, || frames::before_make_current(WinSys::Glx, ctx as usize));
    // SAFETY: p is the real glXMakeCurrent; the arguments are the app's own.
    let r = unsafe { std::mem::transmute::<usize, GlxMakeCurrentFn>(p)(dpy, drawable, ctx) };
    if r != 0 {
        guarded(&MAKE_CURRENT, || frames::on_make_current(WinSys::Glx, ctx as usize));
    }
    r
}

pub unsafe extern "C" fn glx_make_context_current(
    dpy: *mut c_void,
    draw: c_ulong,
    read: c_ulong,
    ctx: *mut c_void,
) -> c_int {
    let p = GLX_MAKE_CONTEXT_CURRENT.get();
    if p == 0 {
        missing(&GLX_MAKE_CONTEXT_CURRENT);
        return 0;
    }
    guarded(&MAKE_CURRENT, || frames::before_make_current(WinSys::Glx, ctx as usize));
    // SAFETY: p is the real glXMakeContextCurrent; the arguments are the app's own.
    let r = unsafe { std::mem::transmute::<usize, GlxMakeContextCurrentFn>(p)(dpy, draw, read, ctx) };
    if r != 0 {
        guarded(&MAKE_CURRENT, || frames::on_make_current(WinSys::Glx, ctx as usize));
    }
    r
}

pub unsafe extern "C" fn egl_make_current(
    dpy: *mut c_void,
    draw: *mut c_void,
    read: *mut c_void,
    ctx: *mut c_void,
) -> u32 {
    let p = EGL_MAKE_CURRENT.get();
    if p == 0 {
        missing(&EGL_MAKE_CURRENT);
        return 0;
    }
    guarded(&MAKE_CURRENT, || frames::before_make_current(WinSys::Egl, ctx as usize));
    // SAFETY: p is the real eglMakeCurrent; the arguments are the app's own.
    let r = unsafe { std::mem::transmute::<usize, EglMakeCurrentFn>(p)(dpy, draw, read, ctx) };
    if r != 0 {
        guarded(&MAKE_CURRENT, || frames::on_make_current(WinSys::Egl, ctx as usize));
    }
    r
}

pub unsafe extern "C" fn glx_destroy_context(dpy: *mut c_void, ctx: *mut c_void) {
    guarded(&DESTROY, || {
        frames::on_destroy(WinSys::Glx, ctx as usize);
        hud::context_destroyed(WinSys::Glx, ctx as usize);
    });
    let p = GLX_DESTROY_CONTEXT.get();
    if p == 0 {
        return missing(&GLX_DESTROY_CONTEXT);
    }
    // SAFETY: p is the real glXDestroyContext; the arguments are the app's own.
    unsafe { std::mem::transmute::<usize, GlxDestroyFn>(p)(dpy, ctx) }
}

/// Closing the display destroys the contexts still on it, the current one included; glmark2
/// exits that way, its last context current. Our frame statistics queries must not be active
/// then: llvmpipe (Mesa 22.3) frees an active query at context destruction without waiting for
/// the scene that still holds it, whose rasterizer later writes into the freed memory (heap
/// corruption at exit, once in about 100 runs under load). The queries end here, while the
/// context is still current.
pub unsafe extern "C" fn x_close_display(dpy: *mut c_void) -> c_int {
    guarded(&CLOSE, || frames::before_display_close(WinSys::Glx));
    let p = X_CLOSE_DISPLAY.get();
    if p == 0 {
        missing(&X_CLOSE_DISPLAY);
        return 0;
    }
    // SAFETY: p is the real XCloseDisplay; the argument is the app's own.
    unsafe { std::mem::transmute::<usize, XCloseDisplayFn>(p)(dpy) }
}

/// As [`x_close_display`]: `eglTerminate` destroys the display's contexts.
pub unsafe extern "C" fn egl_terminate(dpy: *mut c_void) -> u32 {
    guarded(&CLOSE, || frames::before_display_close(WinSys::Egl));
    let p = EGL_TERMINATE.get();
    if p == 0 {
        missing(&EGL_TERMINATE);
        return 0;
    }
    // SAFETY: p is the real eglTerminate; the argument is the app's own.
    unsafe { std::mem::transmute::<usize, EglTerminateFn>(p)(dpy) }
}

pub unsafe extern "C" fn egl_destroy_context(dpy: *mut c_void, ctx: *mut c_void) -> u32 {
    guarded(&DESTROY, || {
        frames::on_destroy(WinSys::Egl, ctx as usize);
        hud::context_destroyed(WinSys::Egl, ctx as usize);
    });
    let p = EGL_DESTROY_CONTEXT.get();
    if p == 0 {
        missing(&EGL_DESTROY_CONTEXT);
        return 0;
    }
    // SAFETY: p is the real eglDestroyContext; the arguments are the app's own.
    unsafe { std::mem::transmute::<usize, EglDestroyFn>(p)(dpy, ctx) }
}
