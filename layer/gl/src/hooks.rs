//! The hooked GLX/EGL/Xlib entry points (internal, never exported: their addresses are what
//! `dlsym`, `dlvsym` and `*GetProcAddress*` hand out; their `gl_hooks!` table below gives their
//! real slots and exported wrappers), the lookup of every name any module hooks ([`hooked`]),
//! and the interposed `dlsym`/`dlvsym`.
//!
//! The top of the module tree: each hook forwards to its real function and calls into the
//! feature modules around it (`frames` for the frame protocol, `hud` for the overlay); the
//! feature modules with hooks of their own (`draws`, `legacy_draws`, `sample_hooks`, `waits`,
//! `creation`, `display_wayland`) each keep their own `gl_hooks!` table, chained here, so that
//! nothing below imports this module.

use crate::dl::{self, gl_hooks, real, Real, Slot};
use crate::winsys::{GetProcFn, Target, WinSys};
use crate::{draws, frames, hud, legacy_draws, sample_hooks};
use framescope_core::guard::{guarded, Site};
use libc::{c_char, c_int, c_ulong, c_void};
use std::ffi::CStr;

type EglSwapDamageFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const i32, i32) -> u32;

gl_hooks! {
    export glXSwapBuffers: Glx fn(dpy: *mut c_void, drawable: c_ulong) => glx_swap_buffers;
    export glXSwapBuffersMscOML: Glx fn(dpy: *mut c_void, drawable: c_ulong, target_msc: i64, divisor: i64, remainder: i64)
        -> i64 => glx_swap_buffers_msc_oml;
    export eglSwapBuffers: Egl fn(dpy: *mut c_void, surface: *mut c_void) -> u32 => egl_swap_buffers;
    export eglSwapBuffersWithDamageEXT: Egl fn(dpy: *mut c_void, surface: *mut c_void, rects: *const i32, n: i32) -> u32
        => egl_swap_buffers_with_damage_ext;
    export eglSwapBuffersWithDamageKHR: Egl fn(dpy: *mut c_void, surface: *mut c_void, rects: *const i32, n: i32) -> u32
        => egl_swap_buffers_with_damage_khr;
    // The real GetProcAddress functions are the window systems' too (`winsys::gl_proc`).
    export glXGetProcAddress = crate::winsys::GLX_GET_PROC_ADDRESS: Glx fn(name: *const c_char) -> *mut c_void
        => glx_get_proc_address;
    export glXGetProcAddressARB = crate::winsys::GLX_GET_PROC_ADDRESS_ARB: Glx fn(name: *const c_char) -> *mut c_void
        => glx_get_proc_address_arb;
    export eglGetProcAddress = crate::winsys::EGL_GET_PROC_ADDRESS: Egl fn(name: *const c_char) -> *mut c_void
        => egl_get_proc_address;
    export glXMakeCurrent: Glx fn(dpy: *mut c_void, drawable: c_ulong, ctx: *mut c_void) -> c_int => glx_make_current;
    export glXMakeContextCurrent: Glx fn(dpy: *mut c_void, draw: c_ulong, read: c_ulong, ctx: *mut c_void) -> c_int
        => glx_make_context_current;
    export eglMakeCurrent: Egl fn(dpy: *mut c_void, draw: *mut c_void, read: *mut c_void, ctx: *mut c_void) -> u32
        => egl_make_current;
    export glXDestroyContext: Glx fn(dpy: *mut c_void, ctx: *mut c_void) => glx_destroy_context;
    export eglDestroyContext: Egl fn(dpy: *mut c_void, ctx: *mut c_void) -> u32 => egl_destroy_context;
    export eglTerminate: Egl fn(dpy: *mut c_void) -> u32 => egl_terminate;
    // SDL and other toolkits load Xlib with dlopen and look it up.
    export XCloseDisplay: X11 fn(dpy: *mut c_void) -> c_int => x_close_display;
}

static SWAP: Site = Site::new("swap buffers");
static PROC: Site = Site::new("get proc address");
static MAKE_CURRENT: Site = Site::new("make current");
static DESTROY: Site = Site::new("destroy context");
static CLOSE: Site = Site::new("close display");
static DLSYM: Site = Site::new("dlsym");
static HUD: Site = Site::new("GL HUD");

/// For a name we replace: the slot of its real function and our replacement's address.
fn hooked(name: &[u8]) -> Option<(&'static Slot, usize)> {
    intercept(name)
        .or_else(|| draws::intercept(name))
        .or_else(|| legacy_draws::intercept(name))
        .or_else(|| sample_hooks::intercept(name))
        .or_else(|| crate::waits::intercept(name))
        .or_else(|| crate::creation::intercept(name))
        .or_else(|| crate::display_wayland::intercept(name))
}

/// Called by the `dlsym`/`dlvsym` trampolines: our replacement for a hooked name (learning the
/// real address from the app's own lookup), else 0 so the real function answers.
///
/// # Safety
/// `handle` is the app's argument to `dlsym`/`dlvsym` (a pseudo-handle or an open handle).
unsafe fn filter_dlsym(handle: *mut c_void, name: &CStr, version: Option<&CStr>) -> usize {
    let b = name.to_bytes();
    // Fast path for the many lookups that are none of ours.
    if !(b.starts_with(b"gl") || b.starts_with(b"egl") || b == b"XCloseDisplay") {
        return 0;
    }
    guarded(&DLSYM, || {
        let Some((slot, ours)) = hooked(b) else {
            return 0;
        };
        let real = match version {
            // SAFETY: the app's handle (the caller's contract).
            None => unsafe { dl::sym(handle, name) },
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
        if slot.addr() == 0 {
            return 0;
        }
        ours
    })
    .unwrap_or(0)
}

// ---- swap -----------------------------------------------------------------------------------

/// Runs `real` (the swap of `target`) between the frame bookkeeping and the HUD before it, and
/// the frame bookkeeping and the HUD's screenshot fetch after it.
fn around_swap<R>(ws: WinSys, target: Target, real: impl FnOnce() -> R) -> R {
    // The frame limiter (`fps_limit`), outside every lock of ours, before the frame's end is
    // read: the frame ends when the limiter lets its swap go.
    guarded(&SWAP, || {
        framescope_core::pacing::pace(framescope_overlay::keys::fps_presses())
    });
    // A GLX drawable is an XID (a window for the X11 Present source); an EGL surface is not.
    let window = match ws {
        WinSys::Glx => u32::try_from(target.drawable()).unwrap_or(0),
        _ => 0,
    };
    let closed = guarded(&SWAP, || frames::before_swap(ws, window)).flatten();
    if let Some(c) = &closed {
        // Outside the frame lock: the HUD takes it itself when it refreshes.
        let hud_time = framescope_core::hud_time::start();
        guarded(&HUD, || {
            hud::before_swap(&hud::SwapInfo {
                ws,
                context: c.token.key,
                frame: c.frame,
                target,
                gl: &c.gl,
                hud: &c.hud,
            })
        });
        hud_time.stop();
    }
    if let (WinSys::Egl, Some(c)) = (ws, &closed) {
        // Right before the real swap, which commits the surface.
        guarded(&SWAP, || {
            crate::display_wayland::before_swap(target.drawable(), c.frame)
        });
    }
    let r = real();
    let returned = framescope_core::clock::monotonic_now_ns();
    if let Some(c) = closed {
        let t = c.token;
        if let Some(h) = guarded(&SWAP, || frames::after_swap(&t, c.frame, returned)).flatten() {
            // Outside the frame lock, like the HUD before the swap.
            guarded(&HUD, || hud::after_swap(&h));
        }
    }
    r
}

unsafe extern "C" fn glx_swap_buffers(dpy: *mut c_void, drawable: c_ulong) {
    let Some(f) = real(&next::glXSwapBuffers) else { return };
    // SAFETY: the app's display and drawable, for the swap they are passed to.
    let target = unsafe { Target::new(dpy as usize, drawable as usize) };
    // SAFETY: f is the real glXSwapBuffers; the arguments are the app's own.
    around_swap(WinSys::Glx, target, || unsafe { f(dpy, drawable) })
}

unsafe extern "C" fn glx_swap_buffers_msc_oml(
    dpy: *mut c_void,
    drawable: c_ulong,
    target_msc: i64,
    divisor: i64,
    remainder: i64,
) -> i64 {
    let Some(f) = real(&next::glXSwapBuffersMscOML) else {
        return -1;
    };
    // SAFETY: the app's display and drawable, for the swap they are passed to.
    let target = unsafe { Target::new(dpy as usize, drawable as usize) };
    // SAFETY: f is the real glXSwapBuffersMscOML; the arguments are the app's own.
    around_swap(WinSys::Glx, target, || unsafe {
        f(dpy, drawable, target_msc, divisor, remainder)
    })
}

unsafe extern "C" fn egl_swap_buffers(dpy: *mut c_void, surface: *mut c_void) -> u32 {
    let Some(f) = real(&next::eglSwapBuffers) else { return 0 };
    // SAFETY: the app's display and surface, for the swap they are passed to.
    let target = unsafe { Target::new(dpy as usize, surface as usize) };
    // SAFETY: f is the real eglSwapBuffers; the arguments are the app's own.
    around_swap(WinSys::Egl, target, || unsafe { f(dpy, surface) })
}

/// `eglSwapBuffersWithDamage*` through `r`.
///
/// # Safety
/// The arguments are the app's, valid for the real function.
unsafe fn egl_swap_damage(
    r: &Real<EglSwapDamageFn>,
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    let Some(f) = real(r) else { return 0 };
    // SAFETY: the app's display and surface, for the swap they are passed to.
    let target = unsafe { Target::new(dpy as usize, surface as usize) };
    // SAFETY: f is the real eglSwapBuffersWithDamage*; the arguments are the app's own.
    around_swap(WinSys::Egl, target, || unsafe { f(dpy, surface, rects, n) })
}

unsafe extern "C" fn egl_swap_buffers_with_damage_ext(
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { egl_swap_damage(&next::eglSwapBuffersWithDamageEXT, dpy, surface, rects, n) }
}

unsafe extern "C" fn egl_swap_buffers_with_damage_khr(
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { egl_swap_damage(&next::eglSwapBuffersWithDamageKHR, dpy, surface, rects, n) }
}

// ---- GetProcAddress -------------------------------------------------------------------------

/// The real `*GetProcAddress` of `r`, with our replacement handed out for a name we hook.
///
/// # Safety
/// `name` is the app's argument: null or a NUL-terminated string.
unsafe fn get_proc(r: &Real<GetProcFn>, name: *const c_char) -> *mut c_void {
    let Some(f) = real(r) else {
        return std::ptr::null_mut();
    };
    // SAFETY: f is the real GetProcAddress; name is the app's.
    let found = unsafe { f(name) };
    if found.is_null() || name.is_null() {
        return found;
    }
    // SAFETY: the app passes a NUL-terminated name (checked non-null above).
    let n = unsafe { CStr::from_ptr(name) };
    guarded(&PROC, || match hooked(n.to_bytes()) {
        Some((slot, ours)) => {
            slot.offer(found as usize);
            if slot.addr() == 0 {
                found
            } else {
                ours as *mut c_void
            }
        }
        None => found,
    })
    .unwrap_or(found)
}

unsafe extern "C" fn glx_get_proc_address(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { get_proc(&next::glXGetProcAddress, name) }
}

unsafe extern "C" fn glx_get_proc_address_arb(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { get_proc(&next::glXGetProcAddressARB, name) }
}

unsafe extern "C" fn egl_get_proc_address(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { get_proc(&next::eglGetProcAddress, name) }
}

// ---- make current / destroy -----------------------------------------------------------------

/// Runs `real` (a make-current of `ctx`) between the frame bookkeeping before and after it.
fn around_make_current<R: PartialEq + Default>(ws: WinSys, ctx: *mut c_void, real: impl FnOnce() -> R) -> R {
    guarded(&MAKE_CURRENT, || frames::before_make_current(ws, ctx as usize));
    let r = real();
    if r != R::default() {
        guarded(&MAKE_CURRENT, || frames::on_make_current(ws, ctx as usize));
    }
    r
}

unsafe extern "C" fn glx_make_current(dpy: *mut c_void, drawable: c_ulong, ctx: *mut c_void) -> c_int {
    let Some(f) = real(&next::glXMakeCurrent) else { return 0 };
    // SAFETY: f is the real glXMakeCurrent; the arguments are the app's own.
    around_make_current(WinSys::Glx, ctx, || unsafe { f(dpy, drawable, ctx) })
}

unsafe extern "C" fn glx_make_context_current(
    dpy: *mut c_void,
    draw: c_ulong,
    read: c_ulong,
    ctx: *mut c_void,
) -> c_int {
    let Some(f) = real(&next::glXMakeContextCurrent) else {
        return 0;
    };
    // SAFETY: f is the real glXMakeContextCurrent; the arguments are the app's own.
    around_make_current(WinSys::Glx, ctx, || unsafe { f(dpy, draw, read, ctx) })
}

unsafe extern "C" fn egl_make_current(dpy: *mut c_void, draw: *mut c_void, read: *mut c_void, ctx: *mut c_void) -> u32 {
    let Some(f) = real(&next::eglMakeCurrent) else { return 0 };
    // SAFETY: f is the real eglMakeCurrent; the arguments are the app's own.
    around_make_current(WinSys::Egl, ctx, || unsafe { f(dpy, draw, read, ctx) })
}

/// Before the real destroy of context `ctx`: its frame state and its HUD go first.
fn before_destroy(ws: WinSys, ctx: *mut c_void) {
    guarded(&DESTROY, || {
        if let Some(h) = frames::on_destroy(ws, ctx as usize) {
            hud::context_destroyed(ws, ctx as usize, h);
        }
    });
}

unsafe extern "C" fn glx_destroy_context(dpy: *mut c_void, ctx: *mut c_void) {
    before_destroy(WinSys::Glx, ctx);
    let Some(f) = real(&next::glXDestroyContext) else {
        return;
    };
    // SAFETY: f is the real glXDestroyContext; the arguments are the app's own.
    unsafe { f(dpy, ctx) }
}

/// Closing the display destroys the contexts still on it, the current one included; glmark2
/// exits that way, its last context current. Our frame statistics queries must not be active
/// then: llvmpipe (Mesa 22.3) frees an active query at context destruction without waiting for
/// the scene that still holds it, whose rasterizer later writes into the freed memory (heap
/// corruption at exit, once in about 100 runs under load). The queries end here, while the
/// context is still current.
unsafe extern "C" fn x_close_display(dpy: *mut c_void) -> c_int {
    guarded(&CLOSE, || frames::before_display_close(WinSys::Glx));
    let Some(f) = real(&next::XCloseDisplay) else { return 0 };
    // SAFETY: f is the real XCloseDisplay; the argument is the app's own.
    unsafe { f(dpy) }
}

/// As [`x_close_display`]: `eglTerminate` destroys the display's contexts.
unsafe extern "C" fn egl_terminate(dpy: *mut c_void) -> u32 {
    guarded(&CLOSE, || frames::before_display_close(WinSys::Egl));
    guarded(&CLOSE, || crate::display_wayland::before_terminate(dpy));
    let Some(f) = real(&next::eglTerminate) else { return 0 };
    // SAFETY: f is the real eglTerminate; the argument is the app's own.
    unsafe { f(dpy) }
}

unsafe extern "C" fn egl_destroy_context(dpy: *mut c_void, ctx: *mut c_void) -> u32 {
    before_destroy(WinSys::Egl, ctx);
    let Some(f) = real(&next::eglDestroyContext) else {
        return 0;
    };
    // SAFETY: f is the real eglDestroyContext; the arguments are the app's own.
    unsafe { f(dpy, ctx) }
}

// ---- the interposed dlsym / dlvsym ---------------------------------------------------------

/// Decides for `dlsym`: a replacement to return, or 0 to let the real `dlsym` answer.
///
/// # Safety
/// Called by the trampoline with the app's `dlsym` arguments.
unsafe extern "C" fn dlsym_filter(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    dl::init();
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the app passes a NUL-terminated symbol name to dlsym.
    let n = unsafe { CStr::from_ptr(name) };
    // SAFETY: the app's handle, as it passed it to dlsym.
    unsafe { filter_dlsym(handle, n, None) as *mut c_void }
}

/// Decides for `dlvsym`, as [`dlsym_filter`].
///
/// # Safety
/// Called by the trampoline with the app's `dlvsym` arguments.
unsafe extern "C" fn dlvsym_filter(handle: *mut c_void, name: *const c_char, version: *const c_char) -> *mut c_void {
    dl::init();
    if name.is_null() || version.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the app passes NUL-terminated strings to dlvsym.
    let (n, v) = unsafe { (CStr::from_ptr(name), CStr::from_ptr(version)) };
    // SAFETY: the app's handle, as it passed it to dlvsym.
    unsafe { filter_dlsym(handle, n, Some(v)) as *mut c_void }
}

/// `dlsym` as seen by the process: our replacement for hooked GL/EGL names, otherwise a tail
/// jump into glibc's `dlsym` with the caller's registers and return address intact.
///
/// # Safety
/// As glibc's `dlsym`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(export_name = "dlsym")]
pub unsafe extern "C" fn dlsym_trampoline(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "sub rsp, 8", // 16-byte alignment for the call
        "call {filter}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jnz 2f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "ret",
        filter = sym dlsym_filter,
        real = sym dl::REAL_DLSYM,
    )
}

/// `dlvsym` as seen by the process; see [`dlsym_trampoline`].
///
/// # Safety
/// As glibc's `dlvsym`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(export_name = "dlvsym")]
pub unsafe extern "C" fn dlvsym_trampoline(
    handle: *mut c_void,
    name: *const c_char,
    version: *const c_char,
) -> *mut c_void {
    core::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "push rdx", // three pushes keep the 16-byte alignment for the call
        "call {filter}",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "test rax, rax",
        "jnz 2f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "ret",
        filter = sym dlvsym_filter,
        real = sym dl::REAL_DLVSYM,
    )
}

/// `dlsym` as seen by a 32-bit process: as [`dlsym_trampoline`] on x86-64, for the i386
/// System V ABI (cdecl: the arguments on the stack above the return address, which glibc's
/// `dlsym` reads to resolve `RTLD_NEXT`; position-independent, so the real `dlsym` is loaded
/// relative to a label).
///
/// # Safety
/// As glibc's `dlsym`.
#[cfg(target_arch = "x86")]
#[unsafe(naked)]
#[unsafe(export_name = "dlsym")]
pub unsafe extern "C" fn dlsym_trampoline(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        // On entry (%esp) is the return address and %esp is 12 mod 16; 4 + 8 bytes more make
        // it 16-byte aligned at the call, as the i386 ABI's gcc and LLVM assume.
        "subl $4, %esp",
        "pushl 12(%esp)", // name
        "pushl 12(%esp)", // handle
        "call {filter}",
        "addl $12, %esp",
        "testl %eax, %eax",
        "jnz 2f",
        // Position-independent: the real dlsym is loaded relative to label 3.
        "call 3f",
        "3:",
        "popl %ecx",
        "movl ({real}-3b)(%ecx), %eax",
        "testl %eax, %eax",
        "jz 2f",
        "jmp *%eax",
        "2:",
        "ret",
        filter = sym dlsym_filter,
        real = sym dl::REAL_DLSYM,
        options(att_syntax),
    )
}

/// `dlvsym` as seen by a 32-bit process; see the x86 [`dlsym_trampoline`].
///
/// # Safety
/// As glibc's `dlvsym`.
#[cfg(target_arch = "x86")]
#[unsafe(naked)]
#[unsafe(export_name = "dlvsym")]
pub unsafe extern "C" fn dlvsym_trampoline(
    handle: *mut c_void,
    name: *const c_char,
    version: *const c_char,
) -> *mut c_void {
    core::arch::naked_asm!(
        // Three 4-byte pushes from 12 mod 16 align the call.
        "pushl 12(%esp)", // version
        "pushl 12(%esp)", // name
        "pushl 12(%esp)", // handle
        "call {filter}",
        "addl $12, %esp",
        "testl %eax, %eax",
        "jnz 2f",
        "call 3f",
        "3:",
        "popl %ecx",
        "movl ({real}-3b)(%ecx), %eax",
        "testl %eax, %eax",
        "jz 2f",
        "jmp *%eax",
        "2:",
        "ret",
        filter = sym dlvsym_filter,
        real = sym dl::REAL_DLVSYM,
        options(att_syntax),
    )
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
compile_error!("framescope-gl's dlsym trampolines are written for x86-64 and i386");
