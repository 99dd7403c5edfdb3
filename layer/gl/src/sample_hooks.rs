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

use crate::guard::{guarded, report_once, Site};
use crate::hooks::{Family, Real};
use crate::samples;
use crate::stats::GL_CURRENT_QUERY;
use libc::c_char;
use std::ffi::CStr;

static GROUP_SITE: Site = Site::new("debug group sample");
static QUERY_SITE: Site = Site::new("query hook");
static MISSING: Site = Site::new("real GL function lookup");

pub static PUSH_DEBUG_GROUP: Real = Real::new(c"glPushDebugGroup", Family::Gl);
pub static PUSH_DEBUG_GROUP_KHR: Real = Real::new(c"glPushDebugGroupKHR", Family::Gl);
pub static POP_DEBUG_GROUP: Real = Real::new(c"glPopDebugGroup", Family::Gl);
pub static POP_DEBUG_GROUP_KHR: Real = Real::new(c"glPopDebugGroupKHR", Family::Gl);
pub static BEGIN_QUERY: Real = Real::new(c"glBeginQuery", Family::Gl);
pub static BEGIN_QUERY_ARB: Real = Real::new(c"glBeginQueryARB", Family::Gl);
pub static BEGIN_QUERY_INDEXED: Real = Real::new(c"glBeginQueryIndexed", Family::Gl);
pub static END_QUERY: Real = Real::new(c"glEndQuery", Family::Gl);
pub static END_QUERY_ARB: Real = Real::new(c"glEndQueryARB", Family::Gl);
pub static END_QUERY_INDEXED: Real = Real::new(c"glEndQueryIndexed", Family::Gl);
pub static GET_QUERYIV: Real = Real::new(c"glGetQueryiv", Family::Gl);
pub static GET_QUERYIV_ARB: Real = Real::new(c"glGetQueryivARB", Family::Gl);
pub static GET_QUERY_INDEXEDIV: Real = Real::new(c"glGetQueryIndexediv", Family::Gl);

type PushFn = unsafe extern "C" fn(u32, u32, i32, *const c_char);
type PopFn = unsafe extern "C" fn();
type BeginFn = unsafe extern "C" fn(u32, u32);
type BeginIndexedFn = unsafe extern "C" fn(u32, u32, u32);
type EndFn = unsafe extern "C" fn(u32);
type EndIndexedFn = unsafe extern "C" fn(u32, u32);
type GetQueryivFn = unsafe extern "C" fn(u32, u32, *mut i32);
type GetQueryIndexedivFn = unsafe extern "C" fn(u32, u32, u32, *mut i32);

/// For a name hooked here: the slot of its real function and our hook.
pub fn intercept(name: &[u8]) -> Option<(&'static Real, usize)> {
    Some(match name {
        b"glPushDebugGroup" => (&PUSH_DEBUG_GROUP, push_debug_group as *const () as usize),
        b"glPushDebugGroupKHR" => (&PUSH_DEBUG_GROUP_KHR, push_debug_group_khr as *const () as usize),
        b"glPopDebugGroup" => (&POP_DEBUG_GROUP, pop_debug_group as *const () as usize),
        b"glPopDebugGroupKHR" => (&POP_DEBUG_GROUP_KHR, pop_debug_group_khr as *const () as usize),
        b"glBeginQuery" => (&BEGIN_QUERY, begin_query as *const () as usize),
        b"glBeginQueryARB" => (&BEGIN_QUERY_ARB, begin_query_arb as *const () as usize),
        b"glBeginQueryIndexed" => (&BEGIN_QUERY_INDEXED, begin_query_indexed as *const () as usize),
        b"glEndQuery" => (&END_QUERY, end_query as *const () as usize),
        b"glEndQueryARB" => (&END_QUERY_ARB, end_query_arb as *const () as usize),
        b"glEndQueryIndexed" => (&END_QUERY_INDEXED, end_query_indexed as *const () as usize),
        b"glGetQueryiv" => (&GET_QUERYIV, get_queryiv as *const () as usize),
        b"glGetQueryivARB" => (&GET_QUERYIV_ARB, get_queryiv_arb as *const () as usize),
        b"glGetQueryIndexediv" => (&GET_QUERY_INDEXEDIV, get_query_indexediv as *const () as usize),
        _ => return None,
    })
}

/// The real function of `r`, or `None` (the call is then dropped, as the other hooks do).
fn real<T: Copy>(r: &Real) -> Option<T> {
    let p = r.get();
    if p == 0 {
        report_once(
            &MISSING,
            format_args!("cannot find the real {}; the call is dropped", r.name.to_string_lossy()),
        );
        return None;
    }
    // SAFETY: every T used here is the fn-pointer type of `r.name`'s GL signature, and p is
    // the real (never our own, see `Real::offer`) non-null function of that name.
    Some(unsafe { std::mem::transmute_copy::<usize, T>(&p) })
}

/// The bytes of a debug-group message: `length` bytes, or up to the NUL when `length < 0`.
///
/// # Safety
/// `message` is null or valid as GL requires for that `length`.
unsafe fn message_bytes<'a>(message: *const c_char, length: i32) -> &'a [u8] {
    if message.is_null() {
        return b"?";
    }
    if length < 0 {
        // SAFETY: with a negative length GL requires a NUL-terminated string.
        unsafe { CStr::from_ptr(message) }.to_bytes()
    } else {
        // SAFETY: with a non-negative length GL requires `length` readable characters.
        unsafe { std::slice::from_raw_parts(message as *const u8, length as usize) }
    }
}

unsafe fn push(r: &Real, source: u32, id: u32, length: i32, message: *const c_char) {
    let Some(f) = real::<PushFn>(r) else { return };
    let before = guarded(&GROUP_SITE, samples::pushing_group).flatten();
    // SAFETY: the real function with the app's arguments.
    unsafe { f(source, id, length, message) };
    if let Some(before) = before {
        guarded(&GROUP_SITE, || {
            // SAFETY: the app's message, valid for its length (GL's own contract).
            samples::pushed_group(before, unsafe { message_bytes(message, length) })
        });
    }
}

unsafe fn pop(r: &Real) {
    let Some(f) = real::<PopFn>(r) else { return };
    guarded(&GROUP_SITE, samples::popping_group);
    // SAFETY: the real function.
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
    // SAFETY: forwarded unchanged.
    unsafe { pop(&POP_DEBUG_GROUP) }
}

pub unsafe extern "C" fn pop_debug_group_khr() {
    // SAFETY: forwarded unchanged.
    unsafe { pop(&POP_DEBUG_GROUP_KHR) }
}

fn before_app_query(target: u32) {
    guarded(&QUERY_SITE, || samples::app_query(target));
}

unsafe fn begin(r: &Real, target: u32, id: u32) {
    let Some(f) = real::<BeginFn>(r) else { return };
    before_app_query(target);
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, id) }
}

unsafe fn end(r: &Real, target: u32) {
    let Some(f) = real::<EndFn>(r) else { return };
    before_app_query(target);
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target) }
}

pub unsafe extern "C" fn begin_query(target: u32, id: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { begin(&BEGIN_QUERY, target, id) }
}

pub unsafe extern "C" fn begin_query_arb(target: u32, id: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { begin(&BEGIN_QUERY_ARB, target, id) }
}

pub unsafe extern "C" fn begin_query_indexed(target: u32, index: u32, id: u32) {
    let Some(f) = real::<BeginIndexedFn>(&BEGIN_QUERY_INDEXED) else {
        return;
    };
    before_app_query(target);
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, index, id) }
}

pub unsafe extern "C" fn end_query(target: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { end(&END_QUERY, target) }
}

pub unsafe extern "C" fn end_query_arb(target: u32) {
    // SAFETY: forwarded unchanged.
    unsafe { end(&END_QUERY_ARB, target) }
}

pub unsafe extern "C" fn end_query_indexed(target: u32, index: u32) {
    let Some(f) = real::<EndIndexedFn>(&END_QUERY_INDEXED) else {
        return;
    };
    before_app_query(target);
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, index) }
}

/// After a `glGetQuery*iv(target, GL_CURRENT_QUERY)`: hides our statistics query from the
/// value GL wrote.
fn after_get_current_query(target: u32, value: &mut i32) {
    guarded(&QUERY_SITE, || samples::hide_current_query(target, value));
}

unsafe fn get_iv(r: &Real, target: u32, pname: u32, params: *mut i32) {
    let Some(f) = real::<GetQueryivFn>(r) else { return };
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, pname, params) };
    if pname == GL_CURRENT_QUERY {
        // SAFETY: GL just wrote one integer there for GL_CURRENT_QUERY (the app's pointer,
        // valid for this call); null is left alone.
        if let Some(value) = unsafe { params.as_mut() } {
            after_get_current_query(target, value);
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
    let Some(f) = real::<GetQueryIndexedivFn>(&GET_QUERY_INDEXEDIV) else {
        return;
    };
    // SAFETY: the real function with the app's arguments.
    unsafe { f(target, index, pname, params) };
    if pname == GL_CURRENT_QUERY {
        // SAFETY: as in `get_iv`.
        if let Some(value) = unsafe { params.as_mut() } {
            after_get_current_query(target, value);
        }
    }
}
