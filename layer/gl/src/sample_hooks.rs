//! Hooks of the GL entry points that matter for samples and statistics: debug groups
//! (`glPushDebugGroup`/`glPopDebugGroup`, `KHR` names on GLES) and the app's own queries
//! (`glBeginQuery`/`glEndQuery`, their `ARB` and `Indexed` forms, and `glGetQuery*iv`, whose
//! `GL_CURRENT_QUERY` must not reveal our statistics queries).
//!
//! Like the draw wrappers, these are handed out when the app looks the names up through
//! `*GetProcAddress*`, `dlsym` or `dlvsym`. The query hooks are also exported (see `lib.rs`):
//! an app that imports `glBeginQuery` straight from libGL must still find our statistics
//! queries ended before its own of the same target begins, or its call would fail. Debug
//! groups imported directly simply give no label samples. GLES has no statistics queries, so
//! its `EXT` query names are not hooked.
//!
//! Each hook forwards to the real function; our part runs inside `guarded`.

use crate::dl::{Family, Real, Slot};
use crate::samples;
use crate::stats::GL_CURRENT_QUERY;
use framescope_core::guard::{guarded, report_once, Site};
use libc::c_char;
use std::ffi::CStr;

static GROUP_SITE: Site = Site::new("debug group sample");
static QUERY_SITE: Site = Site::new("query hook");
static MISSING: Site = Site::new("real GL function lookup");

type PushFn = unsafe extern "C" fn(u32, u32, i32, *const c_char);
type PopFn = unsafe extern "C" fn();
type BeginFn = unsafe extern "C" fn(u32, u32);
type BeginIndexedFn = unsafe extern "C" fn(u32, u32, u32);
type EndFn = unsafe extern "C" fn(u32);
type EndIndexedFn = unsafe extern "C" fn(u32, u32);
type GetQueryivFn = unsafe extern "C" fn(u32, u32, *mut i32);
type GetQueryIndexedivFn = unsafe extern "C" fn(u32, u32, u32, *mut i32);

pub static PUSH_DEBUG_GROUP: Real<PushFn> = Real::new(c"glPushDebugGroup", Family::Gl);
pub static PUSH_DEBUG_GROUP_KHR: Real<PushFn> = Real::new(c"glPushDebugGroupKHR", Family::Gl);
pub static POP_DEBUG_GROUP: Real<PopFn> = Real::new(c"glPopDebugGroup", Family::Gl);
pub static POP_DEBUG_GROUP_KHR: Real<PopFn> = Real::new(c"glPopDebugGroupKHR", Family::Gl);
pub static BEGIN_QUERY: Real<BeginFn> = Real::new(c"glBeginQuery", Family::Gl);
pub static BEGIN_QUERY_ARB: Real<BeginFn> = Real::new(c"glBeginQueryARB", Family::Gl);
pub static BEGIN_QUERY_INDEXED: Real<BeginIndexedFn> = Real::new(c"glBeginQueryIndexed", Family::Gl);
pub static END_QUERY: Real<EndFn> = Real::new(c"glEndQuery", Family::Gl);
pub static END_QUERY_ARB: Real<EndFn> = Real::new(c"glEndQueryARB", Family::Gl);
pub static END_QUERY_INDEXED: Real<EndIndexedFn> = Real::new(c"glEndQueryIndexed", Family::Gl);
pub static GET_QUERYIV: Real<GetQueryivFn> = Real::new(c"glGetQueryiv", Family::Gl);
pub static GET_QUERYIV_ARB: Real<GetQueryivFn> = Real::new(c"glGetQueryivARB", Family::Gl);
pub static GET_QUERY_INDEXEDIV: Real<GetQueryIndexedivFn> = Real::new(c"glGetQueryIndexediv", Family::Gl);

/// For a name hooked here: the slot of its real function and our hook.
pub fn intercept(name: &[u8]) -> Option<(&'static Slot, usize)> {
    Some(match name {
        b"glPushDebugGroup" => (PUSH_DEBUG_GROUP.slot(), push_debug_group as *const () as usize),
        b"glPushDebugGroupKHR" => (PUSH_DEBUG_GROUP_KHR.slot(), push_debug_group_khr as *const () as usize),
        b"glPopDebugGroup" => (POP_DEBUG_GROUP.slot(), pop_debug_group as *const () as usize),
        b"glPopDebugGroupKHR" => (POP_DEBUG_GROUP_KHR.slot(), pop_debug_group_khr as *const () as usize),
        b"glBeginQuery" => (BEGIN_QUERY.slot(), begin_query as *const () as usize),
        b"glBeginQueryARB" => (BEGIN_QUERY_ARB.slot(), begin_query_arb as *const () as usize),
        b"glBeginQueryIndexed" => (BEGIN_QUERY_INDEXED.slot(), begin_query_indexed as *const () as usize),
        b"glEndQuery" => (END_QUERY.slot(), end_query as *const () as usize),
        b"glEndQueryARB" => (END_QUERY_ARB.slot(), end_query_arb as *const () as usize),
        b"glEndQueryIndexed" => (END_QUERY_INDEXED.slot(), end_query_indexed as *const () as usize),
        b"glGetQueryiv" => (GET_QUERYIV.slot(), get_queryiv as *const () as usize),
        b"glGetQueryivARB" => (GET_QUERYIV_ARB.slot(), get_queryiv_arb as *const () as usize),
        b"glGetQueryIndexediv" => (GET_QUERY_INDEXEDIV.slot(), get_query_indexediv as *const () as usize),
        _ => return None,
    })
}

/// The real function of `r`, or `None` (the call is then dropped, as the other hooks do).
fn real<F: crate::loader::FnPtr>(r: &Real<F>) -> Option<F> {
    let f = r.get();
    if f.is_none() {
        report_once(
            &MISSING,
            format_args!(
                "cannot find the real {}; the call is dropped",
                r.name().to_string_lossy()
            ),
        );
    }
    f
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
    guarded(&GROUP_SITE, || crate::monitors::pushed_group(bytes));
}

fn pop(r: &Real<PopFn>) {
    let Some(f) = real(r) else { return };
    before_pop();
    guarded(&GROUP_SITE, crate::monitors::popping_group);
    // SAFETY: the real glPopDebugGroup*, which takes no arguments.
    unsafe { f() }
}

pub unsafe extern "C" fn push_debug_group(source: u32, id: u32, length: i32, message: *const c_char) {
    // SAFETY: forwarded unchanged.
    unsafe { push(&PUSH_DEBUG_GROUP, source, id, length, message) }
}

pub unsafe extern "C" fn push_debug_group_khr(source: u32, id: u32, length: i32, message: *const c_char) {
    // SAFETY: forwarded unchanged.
    unsafe { push(&PUSH_DEBUG_GROUP_KHR, source, id, length, message) }
}

pub unsafe extern "C" fn pop_debug_group() {
    pop(&POP_DEBUG_GROUP)
}

pub unsafe extern "C" fn pop_debug_group_khr() {
    pop(&POP_DEBUG_GROUP_KHR)
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

pub unsafe extern "C" fn begin_query(target: u32, id: u32) {
    begin(&BEGIN_QUERY, target, id)
}

pub unsafe extern "C" fn begin_query_arb(target: u32, id: u32) {
    begin(&BEGIN_QUERY_ARB, target, id)
}

pub unsafe extern "C" fn begin_query_indexed(target: u32, index: u32, id: u32) {
    let Some(f) = real(&BEGIN_QUERY_INDEXED) else {
        return;
    };
    before_app_query(target);
    // SAFETY: the real function; plain values, which GL checks.
    unsafe { f(target, index, id) }
}

pub unsafe extern "C" fn end_query(target: u32) {
    end(&END_QUERY, target)
}

pub unsafe extern "C" fn end_query_arb(target: u32) {
    end(&END_QUERY_ARB, target)
}

pub unsafe extern "C" fn end_query_indexed(target: u32, index: u32) {
    let Some(f) = real(&END_QUERY_INDEXED) else {
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

pub unsafe extern "C" fn get_queryiv(target: u32, pname: u32, params: *mut i32) {
    // SAFETY: forwarded unchanged.
    unsafe { get_iv(&GET_QUERYIV, target, pname, params) }
}

pub unsafe extern "C" fn get_queryiv_arb(target: u32, pname: u32, params: *mut i32) {
    // SAFETY: forwarded unchanged.
    unsafe { get_iv(&GET_QUERYIV_ARB, target, pname, params) }
}

pub unsafe extern "C" fn get_query_indexediv(target: u32, index: u32, pname: u32, params: *mut i32) {
    let Some(f) = real(&GET_QUERY_INDEXEDIV) else {
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
