//! Hooks of the GL entry points that matter for samples and statistics: debug groups
//! (`glPushDebugGroup`/`glPopDebugGroup`, `KHR` names on GLES) and the app's own queries
//! (`glBeginQuery`/`glEndQuery`, their `ARB` and `Indexed` forms, and `glGetQuery*iv`, whose
//! `GL_CURRENT_QUERY` must not reveal our statistics queries).
//!
//! Like the draw wrappers, these are handed out when the app looks the names up through
//! `*GetProcAddress*`, `dlsym` or `dlvsym`. The query hooks are also exported (`export` below):
//! an app that imports `glBeginQuery` straight from libGL must still find our statistics
//! queries ended before its own of the same target begins, or its call would fail. Debug
//! groups imported directly simply give no label samples. GLES has no statistics queries, so
//! its `EXT` query names are not hooked.
//!
//! Each hook forwards to the real function; our part runs inside `guarded`.

use crate::dl::{gl_hooks, real, Real};
use crate::samples;
use crate::stats::GL_CURRENT_QUERY;
use framescope_core::guard::{guarded, Site};
use libc::c_char;
use std::ffi::CStr;

static GROUP_SITE: Site = Site::new("debug group sample");
static QUERY_SITE: Site = Site::new("query hook");

type PushFn = unsafe extern "C" fn(u32, u32, i32, *const c_char);
type PopFn = unsafe extern "C" fn();
type BeginFn = unsafe extern "C" fn(u32, u32);
type EndFn = unsafe extern "C" fn(u32);
type GetQueryivFn = unsafe extern "C" fn(u32, u32, *mut i32);

gl_hooks! {
    lookup glPushDebugGroup: Gl fn(source: u32, id: u32, length: i32, message: *const c_char) => push_debug_group;
    lookup glPushDebugGroupKHR: Gl fn(source: u32, id: u32, length: i32, message: *const c_char)
        => push_debug_group_khr;
    lookup glPopDebugGroup: Gl fn() => pop_debug_group;
    lookup glPopDebugGroupKHR: Gl fn() => pop_debug_group_khr;
    export glBeginQuery: Gl fn(target: u32, id: u32) => begin_query;
    lookup glBeginQueryARB: Gl fn(target: u32, id: u32) => begin_query_arb;
    export glBeginQueryIndexed: Gl fn(target: u32, index: u32, id: u32) => begin_query_indexed;
    export glEndQuery: Gl fn(target: u32) => end_query;
    lookup glEndQueryARB: Gl fn(target: u32) => end_query_arb;
    export glEndQueryIndexed: Gl fn(target: u32, index: u32) => end_query_indexed;
    export glGetQueryiv: Gl fn(target: u32, pname: u32, params: *mut i32) => get_queryiv;
    lookup glGetQueryivARB: Gl fn(target: u32, pname: u32, params: *mut i32) => get_queryiv_arb;
    export glGetQueryIndexediv: Gl fn(target: u32, index: u32, pname: u32, params: *mut i32) => get_query_indexediv;
}

// ---- debug groups ---------------------------------------------------------------------------

/// Before the app's push: the GL stack depth then, if groups are sampled.
fn before_push() -> Option<usize> {
    guarded(&GROUP_SITE, samples::pushing_group).flatten()
}

/// After the app's push of a group named `message` (the stack was `before` deep).
fn after_push(before: usize, message: &[u8]) {
    guarded(&GROUP_SITE, || samples::pushed_group(before, message));
}

/// Before the app's pop.
fn before_pop() {
    guarded(&GROUP_SITE, samples::popping_group);
}

/// `glPushDebugGroup*` through `r`.
///
/// # Safety
/// The arguments are the app's, valid as GL requires (`message` null, or `length` readable
/// bytes, or NUL-terminated when `length < 0`).
unsafe fn push(r: &Real<PushFn>, source: u32, id: u32, length: i32, message: *const c_char) {
    let Some(f) = real(r) else { return };
    let before = before_push();
    // SAFETY: the real function with the app's arguments.
    unsafe { f(source, id, length, message) };
    let bytes: &[u8] = if message.is_null() {
        b"?"
    } else if length < 0 {
        // SAFETY: with a negative length GL requires a NUL-terminated string (the caller's
        // contract); it outlives this call.
        unsafe { CStr::from_ptr(message) }.to_bytes()
    } else {
        // SAFETY: with a non-negative length GL requires `length` readable characters.
        unsafe { std::slice::from_raw_parts(message as *const u8, length as usize) }
    };
    if let Some(before) = before {
        after_push(before, bytes);
    }
    // Driver counters split at top-level groups (a no-op without them).
    guarded(&GROUP_SITE, || crate::driver_counters::pushed_group(bytes));
}

fn pop(r: &Real<PopFn>) {
    let Some(f) = real(r) else { return };
    before_pop();
    guarded(&GROUP_SITE, crate::driver_counters::popping_group);
    // SAFETY: the real glPopDebugGroup*, which takes no arguments.
    unsafe { f() }
}

unsafe extern "C" fn push_debug_group(source: u32, id: u32, length: i32, message: *const c_char) {
    // SAFETY: forwarded unchanged.
    unsafe { push(&next::glPushDebugGroup, source, id, length, message) }
}

unsafe extern "C" fn push_debug_group_khr(source: u32, id: u32, length: i32, message: *const c_char) {
    // SAFETY: forwarded unchanged.
    unsafe { push(&next::glPushDebugGroupKHR, source, id, length, message) }
}

unsafe extern "C" fn pop_debug_group() {
    pop(&next::glPopDebugGroup)
}

unsafe extern "C" fn pop_debug_group_khr() {
    pop(&next::glPopDebugGroupKHR)
}

// ---- the app's queries ----------------------------------------------------------------------

/// Before the app begins or ends a query of `target`.
fn before_app_query(target: u32) {
    guarded(&QUERY_SITE, || samples::app_query(target));
}

/// After the app's `glGetQuery*iv(target, GL_CURRENT_QUERY)` wrote `value`: hides our
/// statistics query from it.
fn after_get_queryiv(target: u32, value: &mut i32) {
    guarded(&QUERY_SITE, || samples::hide_current_query(target, value));
}

fn begin(r: &Real<BeginFn>, target: u32, id: u32) {
    let Some(f) = real(r) else { return };
    before_app_query(target);
    // SAFETY: the real function; plain values, which GL checks.
    unsafe { f(target, id) }
}

fn end(r: &Real<EndFn>, target: u32) {
    let Some(f) = real(r) else { return };
    before_app_query(target);
    // SAFETY: the real function; a plain value, which GL checks.
    unsafe { f(target) }
}

unsafe extern "C" fn begin_query(target: u32, id: u32) {
    begin(&next::glBeginQuery, target, id)
}

unsafe extern "C" fn begin_query_arb(target: u32, id: u32) {
    begin(&next::glBeginQueryARB, target, id)
}

unsafe extern "C" fn begin_query_indexed(target: u32, index: u32, id: u32) {
    let Some(f) = real(&next::glBeginQueryIndexed) else {
        return;
    };
    before_app_query(target);
    // SAFETY: the real function; plain values, which GL checks.
    unsafe { f(target, index, id) }
}

unsafe extern "C" fn end_query(target: u32) {
    end(&next::glEndQuery, target)
}

unsafe extern "C" fn end_query_arb(target: u32) {
    end(&next::glEndQueryARB, target)
}

unsafe extern "C" fn end_query_indexed(target: u32, index: u32) {
    let Some(f) = real(&next::glEndQueryIndexed) else {
        return;
    };
    before_app_query(target);
    // SAFETY: the real function; plain values, which GL checks.
    unsafe { f(target, index) }
}

/// `glGetQueryiv*` through `r`.
///
/// # Safety
/// `params` is the app's pointer, valid for what GL writes for `pname`.
unsafe fn get_iv(r: &Real<GetQueryivFn>, target: u32, pname: u32, params: *mut i32) {
    let Some(f) = real(r) else { return };
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, pname, params) };
    if pname == GL_CURRENT_QUERY {
        // SAFETY: GL just wrote one integer there for GL_CURRENT_QUERY (the app's pointer,
        // valid for this call); null is left alone.
        if let Some(value) = unsafe { params.as_mut() } {
            after_get_queryiv(target, value);
        }
    }
}

unsafe extern "C" fn get_queryiv(target: u32, pname: u32, params: *mut i32) {
    // SAFETY: forwarded unchanged.
    unsafe { get_iv(&next::glGetQueryiv, target, pname, params) }
}

unsafe extern "C" fn get_queryiv_arb(target: u32, pname: u32, params: *mut i32) {
    // SAFETY: forwarded unchanged.
    unsafe { get_iv(&next::glGetQueryivARB, target, pname, params) }
}

unsafe extern "C" fn get_query_indexediv(target: u32, index: u32, pname: u32, params: *mut i32) {
    let Some(f) = real(&next::glGetQueryIndexediv) else {
        return;
    };
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, index, pname, params) };
    if pname == GL_CURRENT_QUERY {
        // SAFETY: as in `get_iv`.
        if let Some(value) = unsafe { params.as_mut() } {
            after_get_queryiv(target, value);
        }
    }
}
