//! `libframescope_gl.so`: framescope's OpenGL/GLES shim, loaded with `LD_PRELOAD` (which
//! `framescope run` sets).
//!
//! It measures frames of GLX and EGL contexts with the same frame model and dump schema as the
//! Vulkan layer (`api: opengl` / `opengles`): CPU frame time at each swap, GPU time from
//! `GL_TIMESTAMP` pairs read back frames later without stalling, and draw counts for draw
//! entry points the app looked up through us. See `frames` for the protocol.
//!
//! How it gets in: the exported swap / make-current / destroy / `*GetProcAddress*` symbols
//! interpose on apps that import them; the exported `dlsym`/`dlvsym` catch apps that
//! `dlopen` libGL/libEGL themselves (glmark2, SDL, glad-style loaders), and the
//! `GetProcAddress` hooks catch loaders that go through those. Every exported function is a
//! thin wrapper; the addresses handed to the app are those of the internal functions in
//! `hooks` (an exported symbol's address taken inside the library would resolve to the first
//! definition in the process, possibly libGL's own).
//!
//! With `samples` on, it also samples the app's debug groups and (with `samples=draw`) draws
//! between `GL_TIMESTAMP`s, and counts pipeline statistics per frame (`samples`, `stats`).
//!
//! Nothing happens at load time: no constructor, no config read, no thread. All work starts
//! at the first GL call we see. Contexts whose `GL_RENDERER` is Zink are left alone (the
//! Vulkan layer measures them). No `vk*` symbol is exported. `LD_PRELOAD` is left as it is in
//! the app's environment, so child processes the app starts are measured too when they use GL.
#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

/// Counts framescope's allocations on the app's threads (`FRAMESCOPE_REPORT_ALLOCS`).
#[global_allocator]
static ALLOC: framescope_core::alloc_count::CountingAlloc = framescope_core::alloc_count::CountingAlloc;

// The modules in layers, bottom to top (rustfmt sorts each layer); a module imports only its
// own layer or those below (`cargo xtask deps` checks there is no cycle).
// Low-level services: typed function pointers, the dynamic linker, the window systems.
mod dl;
mod loader;
mod perf_fns;
mod winsys;
// One table of GL entry points per context, and what the context is.
mod gl;
// Features: statistics, samples, draw counting, waits and creations, the frame protocol, the
// HUD.
mod creation;
mod display_wayland;
mod display_x11;
mod draws;
mod frames;
mod hud;
mod monitors;
mod sample_hooks;
mod samples;
mod stats;
mod waits;
// The hooked entry points, wiring the features together (and the dlsym/dlvsym trampolines).
mod hooks;

use libc::{c_char, c_int, c_ulong, c_void};

#[no_mangle]
pub unsafe extern "C" fn glXSwapBuffers(dpy: *mut c_void, drawable: c_ulong) {
    // SAFETY: forwarded unchanged to the hook, which forwards to the real function.
    unsafe { hooks::glx_swap_buffers(dpy, drawable) }
}

#[no_mangle]
pub unsafe extern "C" fn glXSwapBuffersMscOML(
    dpy: *mut c_void,
    drawable: c_ulong,
    target_msc: i64,
    divisor: i64,
    remainder: i64,
) -> i64 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::glx_swap_buffers_msc_oml(dpy, drawable, target_msc, divisor, remainder) }
}

#[no_mangle]
pub unsafe extern "C" fn eglSwapBuffers(dpy: *mut c_void, surface: *mut c_void) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_swap_buffers(dpy, surface) }
}

#[no_mangle]
pub unsafe extern "C" fn eglSwapBuffersWithDamageEXT(
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_swap_buffers_with_damage_ext(dpy, surface, rects, n) }
}

#[no_mangle]
pub unsafe extern "C" fn eglSwapBuffersWithDamageKHR(
    dpy: *mut c_void,
    surface: *mut c_void,
    rects: *const i32,
    n: i32,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_swap_buffers_with_damage_khr(dpy, surface, rects, n) }
}

#[no_mangle]
pub unsafe extern "C" fn glXGetProcAddress(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::glx_get_proc_address(name) }
}

#[no_mangle]
pub unsafe extern "C" fn glXGetProcAddressARB(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::glx_get_proc_address_arb(name) }
}

#[no_mangle]
pub unsafe extern "C" fn eglGetProcAddress(name: *const c_char) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_get_proc_address(name) }
}

#[no_mangle]
pub unsafe extern "C" fn glXMakeCurrent(dpy: *mut c_void, drawable: c_ulong, ctx: *mut c_void) -> c_int {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::glx_make_current(dpy, drawable, ctx) }
}

#[no_mangle]
pub unsafe extern "C" fn glXMakeContextCurrent(
    dpy: *mut c_void,
    draw: c_ulong,
    read: c_ulong,
    ctx: *mut c_void,
) -> c_int {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::glx_make_context_current(dpy, draw, read, ctx) }
}

#[no_mangle]
pub unsafe extern "C" fn eglMakeCurrent(
    dpy: *mut c_void,
    draw: *mut c_void,
    read: *mut c_void,
    ctx: *mut c_void,
) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_make_current(dpy, draw, read, ctx) }
}

#[no_mangle]
pub unsafe extern "C" fn glXDestroyContext(dpy: *mut c_void, ctx: *mut c_void) {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::glx_destroy_context(dpy, ctx) }
}

#[no_mangle]
pub unsafe extern "C" fn XCloseDisplay(dpy: *mut c_void) -> c_int {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::x_close_display(dpy) }
}

#[no_mangle]
pub unsafe extern "C" fn eglTerminate(dpy: *mut c_void) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_terminate(dpy) }
}

#[no_mangle]
pub unsafe extern "C" fn eglDestroyContext(dpy: *mut c_void, ctx: *mut c_void) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { hooks::egl_destroy_context(dpy, ctx) }
}

// The app's own queries, exported as well as handed out by lookups: an app that imports
// `glBeginQuery` straight from libGL must find our per-frame statistics queries ended before
// its own query of the same target begins (see `sample_hooks`).

#[no_mangle]
pub unsafe extern "C" fn glBeginQuery(target: u32, id: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { sample_hooks::begin_query(target, id) }
}

#[no_mangle]
pub unsafe extern "C" fn glEndQuery(target: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { sample_hooks::end_query(target) }
}

#[no_mangle]
pub unsafe extern "C" fn glBeginQueryIndexed(target: u32, index: u32, id: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { sample_hooks::begin_query_indexed(target, index, id) }
}

#[no_mangle]
pub unsafe extern "C" fn glEndQueryIndexed(target: u32, index: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { sample_hooks::end_query_indexed(target, index) }
}

#[no_mangle]
pub unsafe extern "C" fn glGetQueryiv(target: u32, pname: u32, params: *mut i32) {
    // SAFETY: forwarded unchanged.
    unsafe { sample_hooks::get_queryiv(target, pname, params) }
}

#[no_mangle]
pub unsafe extern "C" fn glGetQueryIndexediv(target: u32, index: u32, pname: u32, params: *mut i32) {
    // SAFETY: forwarded unchanged.
    unsafe { sample_hooks::get_query_indexediv(target, index, pname, params) }
}

// The app's shader compiles, program links and program changes, exported because most apps
// import them straight from libGL (see `creation`).

#[no_mangle]
pub unsafe extern "C" fn glCompileShader(shader: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { creation::compile_shader(shader) }
}

#[no_mangle]
pub unsafe extern "C" fn glLinkProgram(program: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { creation::link_program(program) }
}

#[no_mangle]
pub unsafe extern "C" fn glProgramBinary(program: u32, format: u32, binary: *const c_void, length: i32) {
    // SAFETY: forwarded unchanged.
    unsafe { creation::program_binary(program, format, binary, length) }
}

#[no_mangle]
pub unsafe extern "C" fn glUseProgram(program: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { creation::use_program(program) }
}

// The app's GL waits, exported because most apps import them straight from libGL (see
// `waits`).

#[no_mangle]
pub unsafe extern "C" fn glFinish() {
    // SAFETY: forwarded unchanged.
    unsafe { waits::finish() }
}

#[no_mangle]
pub unsafe extern "C" fn glClientWaitSync(sync: *mut c_void, flags: u32, timeout: u64) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { waits::client_wait_sync(sync, flags, timeout) }
}

// Legacy GL draws, exported because the apps that use them call them straight from libGL
// (see `draws`).

#[no_mangle]
pub unsafe extern "C" fn glBegin(mode: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { draws::begin(mode) }
}

#[no_mangle]
pub unsafe extern "C" fn glEnd() {
    // SAFETY: forwarded unchanged.
    unsafe { draws::end() }
}

#[no_mangle]
pub unsafe extern "C" fn glCallList(list: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { draws::call_list(list) }
}

#[no_mangle]
pub unsafe extern "C" fn glCallLists(n: i32, kind: u32, lists: *const c_void) {
    // SAFETY: forwarded unchanged.
    unsafe { draws::call_lists(n, kind, lists) }
}

#[no_mangle]
pub unsafe extern "C" fn glNewList(list: u32, mode: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { draws::new_list(list, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn glEndList() {
    // SAFETY: forwarded unchanged.
    unsafe { draws::end_list() }
}

// Wayland display times (`display_wayland`): the EGL display and window-surface calls that
// reveal the app's wl_display and wl_surface, and the disconnect that must find framescope's
// objects gone.

#[no_mangle]
pub unsafe extern "C" fn eglGetDisplay(native: *mut c_void) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::get_display(native) }
}

#[no_mangle]
pub unsafe extern "C" fn eglGetPlatformDisplay(
    platform: u32,
    native: *mut c_void,
    attribs: *const isize,
) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::get_platform_display(platform, native, attribs) }
}

#[no_mangle]
pub unsafe extern "C" fn eglGetPlatformDisplayEXT(
    platform: u32,
    native: *mut c_void,
    attribs: *const i32,
) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::get_platform_display_ext(platform, native, attribs) }
}

#[no_mangle]
pub unsafe extern "C" fn eglCreateWindowSurface(
    dpy: *mut c_void,
    config: *mut c_void,
    native: usize,
    attribs: *const i32,
) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::create_window_surface(dpy, config, native, attribs) }
}

#[no_mangle]
pub unsafe extern "C" fn eglCreatePlatformWindowSurface(
    dpy: *mut c_void,
    config: *mut c_void,
    native: *mut c_void,
    attribs: *const isize,
) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::create_platform_window_surface(dpy, config, native, attribs) }
}

#[no_mangle]
pub unsafe extern "C" fn eglCreatePlatformWindowSurfaceEXT(
    dpy: *mut c_void,
    config: *mut c_void,
    native: *mut c_void,
    attribs: *const i32,
) -> *mut c_void {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::create_platform_window_surface_ext(dpy, config, native, attribs) }
}

#[no_mangle]
pub unsafe extern "C" fn eglDestroySurface(dpy: *mut c_void, surface: *mut c_void) -> u32 {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::destroy_surface(dpy, surface) }
}

#[no_mangle]
pub unsafe extern "C" fn wl_display_disconnect(display: *mut c_void) {
    // SAFETY: forwarded unchanged.
    unsafe { display_wayland::wl_display_disconnect(display) }
}
