//! The window systems (GLX and EGL), as the layers above need them: which one a context
//! belongs to, the surface a swap presents, the calling thread's current context and drawable,
//! a drawable's size, and GL entry points of the current context through the real
//! `glXGetProcAddressARB`/`eglGetProcAddress`.
//!
//! Below everything but `dl` and `loader`: the frame, sample and HUD modules call down into
//! it, and `hooks` hands the app our replacements for the `*GetProcAddress` functions whose
//! real slots live here.

use crate::dl::{self, Family, Real};
use libc::{c_char, c_int, c_ulong, c_void};
use std::ffi::CStr;

/// Window-system API a context belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WinSys {
    Glx,
    Egl,
}

impl WinSys {
    pub fn name(self) -> &'static str {
        match self {
            WinSys::Glx => "glx",
            WinSys::Egl => "egl",
        }
    }
}

/// The window-system surface a swap presents: `Display*` and `GLXDrawable`, or `EGLDisplay`
/// and `EGLSurface`, as the app passed them to its swap.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    dpy: usize,
    drawable: usize,
}

impl Target {
    /// # Safety
    /// `dpy` and `drawable` are the display and drawable (surface) of a swap in progress, valid
    /// for the window system's queries while the `Target` is used (within that swap).
    pub unsafe fn new(dpy: usize, drawable: usize) -> Target {
        Target { dpy, drawable }
    }

    /// The drawable (or surface) as a number, for comparisons.
    pub fn drawable(&self) -> usize {
        self.drawable
    }
}

pub type GetProcFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type GetCurrentFn = unsafe extern "C" fn() -> *mut c_void;
type GlxGetCurrentDrawableFn = unsafe extern "C" fn() -> c_ulong;
type EglGetCurrentSurfaceFn = unsafe extern "C" fn(i32) -> *mut c_void;
type GlxQueryDrawableFn = unsafe extern "C" fn(*mut c_void, c_ulong, c_int, *mut u32);
type EglQuerySurfaceFn = unsafe extern "C" fn(*mut c_void, *mut c_void, i32, *mut i32) -> u32;

/// The real `*GetProcAddress` functions (also hooked: `hooks` offers what the app looks up).
pub static GLX_GET_PROC_ADDRESS: Real<GetProcFn> = Real::new(c"glXGetProcAddress", Family::Glx);
pub static GLX_GET_PROC_ADDRESS_ARB: Real<GetProcFn> = Real::new(c"glXGetProcAddressARB", Family::Glx);
pub static EGL_GET_PROC_ADDRESS: Real<GetProcFn> = Real::new(c"eglGetProcAddress", Family::Egl);
static GLX_GET_CURRENT_CONTEXT: Real<GetCurrentFn> = Real::new(c"glXGetCurrentContext", Family::Glx);
static EGL_GET_CURRENT_CONTEXT: Real<GetCurrentFn> = Real::new(c"eglGetCurrentContext", Family::Egl);
static GLX_GET_CURRENT_DRAWABLE: Real<GlxGetCurrentDrawableFn> = Real::new(c"glXGetCurrentDrawable", Family::Glx);
static EGL_GET_CURRENT_SURFACE: Real<EglGetCurrentSurfaceFn> = Real::new(c"eglGetCurrentSurface", Family::Egl);
static GLX_QUERY_DRAWABLE: Real<GlxQueryDrawableFn> = Real::new(c"glXQueryDrawable", Family::Glx);
static EGL_QUERY_SURFACE: Real<EglQuerySurfaceFn> = Real::new(c"eglQuerySurface", Family::Egl);

/// The current context of the calling thread for `ws`, as a key (0: none).
pub fn current_context(ws: WinSys) -> usize {
    let slot = match ws {
        WinSys::Glx => &GLX_GET_CURRENT_CONTEXT,
        WinSys::Egl => &EGL_GET_CURRENT_CONTEXT,
    };
    let Some(f) = slot.get() else { return 0 };
    // SAFETY: the real glXGetCurrentContext/eglGetCurrentContext take no arguments.
    unsafe { f() as usize }
}

/// The calling thread's current draw drawable (`GLXDrawable`) or surface (`EGLSurface`) as a
/// number (0: none).
pub fn current_drawable(ws: WinSys) -> usize {
    const EGL_DRAW: i32 = 0x3059;
    match ws {
        WinSys::Glx => match GLX_GET_CURRENT_DRAWABLE.get() {
            // SAFETY: the real glXGetCurrentDrawable takes no arguments.
            Some(f) => unsafe { f() as usize },
            None => 0,
        },
        WinSys::Egl => match EGL_GET_CURRENT_SURFACE.get() {
            // SAFETY: the real eglGetCurrentSurface with a valid readdraw enum.
            Some(f) => unsafe { f(EGL_DRAW) as usize },
            None => 0,
        },
    }
}

/// Width and height of the drawable a swap presents (`glXQueryDrawable` / `eglQuerySurface`;
/// may be a round trip to the X server, so the HUD asks rarely).
pub fn drawable_size(ws: WinSys, target: &Target) -> Option<[u32; 2]> {
    let (dpy, drawable) = (target.dpy, target.drawable);
    match ws {
        WinSys::Glx => {
            const GLX_WIDTH: c_int = 0x801D;
            const GLX_HEIGHT: c_int = 0x801E;
            let f = GLX_QUERY_DRAWABLE.get()?;
            let (mut w, mut h) = (0u32, 0u32);
            // SAFETY: the real glXQueryDrawable with the display and drawable of the swap in
            // progress (`Target`'s contract); each call writes one unsigned int.
            unsafe {
                f(dpy as *mut c_void, drawable as c_ulong, GLX_WIDTH, &mut w);
                f(dpy as *mut c_void, drawable as c_ulong, GLX_HEIGHT, &mut h);
            }
            Some([w, h])
        }
        WinSys::Egl => {
            const EGL_WIDTH: i32 = 0x3057;
            const EGL_HEIGHT: i32 = 0x3056;
            let f = EGL_QUERY_SURFACE.get()?;
            let (mut w, mut h) = (0i32, 0i32);
            // SAFETY: the real eglQuerySurface with the display and surface of the swap in
            // progress (`Target`'s contract); each call writes one EGLint.
            let ok = unsafe {
                f(dpy as *mut c_void, drawable as *mut c_void, EGL_WIDTH, &mut w) != 0
                    && f(dpy as *mut c_void, drawable as *mut c_void, EGL_HEIGHT, &mut h) != 0
            };
            ok.then_some([w.max(0) as u32, h.max(0) as u32])
        }
    }
}

/// The address of GL function `name` of the current context, through the real
/// `*GetProcAddress` of `ws` (0: none). Typed tables load through this (see `gl`).
pub fn gl_proc(ws: WinSys, name: &CStr) -> usize {
    let f = match ws {
        WinSys::Glx => GLX_GET_PROC_ADDRESS_ARB.get().or_else(|| GLX_GET_PROC_ADDRESS.get()),
        WinSys::Egl => EGL_GET_PROC_ADDRESS.get(),
    };
    let Some(f) = f else { return 0 };
    // SAFETY: the real GetProcAddress takes a NUL-terminated name.
    let p = unsafe { f(name.as_ptr()) } as usize;
    if dl::is_ours(p) {
        // Cannot happen for the GL names we load; never call ourselves by accident.
        return 0;
    }
    p
}
