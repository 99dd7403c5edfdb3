//! Draw-call counting: when the app looks a `glDraw*`/`glMultiDraw*` entry point up through
//! `glXGetProcAddress*`, `eglGetProcAddress`, `dlsym` or `dlvsym`, it gets a wrapper here that
//! bumps a per-thread counter for its [`DrawKind`] and calls the real function. Every one of
//! them is also exported under its GL name, so an app that imports it straight from libGL
//! (most native games: SDL's `-lGL` builds, neverball) calls the same wrapper: the preloaded
//! shim's definition comes first, and the wrapper finds libGL's through `RTLD_NEXT`. The
//! exports are thin functions of their own: handing out an exported symbol's address would
//! resolve through the GOT to whichever definition comes first (see `hooks`). Counting follows
//! the dump's rule: one per command, whatever its draw or instance count.
//!
//! The counter is per thread (a GL context is current on one thread at a time and the frame
//! ends on the thread that swaps); the swap hook takes and resets it.
//!
//! With `samples=draw` each wrapper also puts the draw between two timestamps (see `samples`),
//! with its parameters as the app passed them: `vertex_count` for array draws, `index_count`
//! for element draws, `instance_count` (1 for non-instanced draws), all 0 for indirect and
//! multi draws (their counts are in GPU or array memory), as the Vulkan layer reports them.
//! Below `draw` level a wrapper reads one thread-local flag and takes no lock.
//!
//! Each wrapper also reads one relaxed atomic (`creation::first_use_pending`): while a program
//! waits for its first draw, that draw is timed as the program's first use (see `creation`).

use crate::dl::{Family, Real, Slot};
use crate::{creation, samples};
use framescope_core::frame::{DrawCounts, DrawKind};
use libc::c_void;
use std::cell::Cell;

thread_local! {
    static COUNTS: [Cell<u32>; DrawKind::COUNT] = const { [const { Cell::new(0) }; DrawKind::COUNT] };
}

#[inline]
fn count(kind: DrawKind) {
    let _ = COUNTS.try_with(|c| {
        let cell = &c[kind as usize];
        cell.set(cell.get().wrapping_add(1));
    });
}

/// The draws counted on this thread since the last call, and resets them.
pub fn take() -> DrawCounts {
    let mut out = DrawCounts::default();
    let _ = COUNTS.try_with(|c| {
        for (o, cell) in out.0.iter_mut().zip(c.iter()) {
            *o = cell.replace(0);
        }
    });
    out
}

type E = u32; // GLenum
type I = i32; // GLint / GLsizei
type U = u32; // GLuint
type P = *const c_void;

/// Draw parameters from GL's signed counts (a negative count is an error the draw reports; it
/// draws nothing).
#[inline]
fn params(vertices: I, indices: I, instances: I, indirect: bool) -> (u32, u32, u32, bool) {
    (
        vertices.max(0) as u32,
        indices.max(0) as u32,
        instances.max(0) as u32,
        indirect,
    )
}

/// `name` with its terminating NUL, at compile time.
const fn c_name(with_nul: &'static str) -> &'static std::ffi::CStr {
    match std::ffi::CStr::from_bytes_with_nul(with_nul.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a GL name with a NUL inside"),
    }
}

macro_rules! draw_wrappers {
    ($( $name:literal => $slot:ident, $wrapper:ident, $kind:ident, ( $($arg:ident : $ty:ty),* )
        [$v:expr, $ix:expr, $inst:expr, $ind:expr]; )*) => {
        $(
            static $slot: Real<unsafe extern "C" fn($($ty),*)> =
                Real::new(c_name(concat!($name, "\0")), Family::Gl);

            const _: () = {
                /// The exported entry point of this name, for apps that import it from libGL.
                #[export_name = $name]
                unsafe extern "C" fn export($($arg: $ty),*) {
                    // SAFETY: forwarded unchanged.
                    unsafe { $wrapper($($arg),*) }
                }
            };

            unsafe extern "C" fn $wrapper($($arg: $ty),*) {
                type Real = unsafe extern "C" fn($($ty),*);
                /// The draw, sampled or not.
                // The GL function's own arguments (up to 7) and the real function.
                #[allow(clippy::too_many_arguments)]
                #[inline(always)]
                unsafe fn draw(f: Real, $($arg: $ty),*) {
                    // SAFETY: f is the real GL function of this name (never one of ours, see
                    // `Slot::offer`), with the signature from the GL registry; the arguments
                    // are the app's own.
                    let real = || unsafe { f($($arg),*) };
                    if samples::draws_sampled() {
                        samples::around_draw(DrawKind::$kind, || params($v, $ix, $inst, $ind), real);
                    } else {
                        real();
                    }
                }
                /// The draw that may be a program's first (out of line, so the steady path
                /// builds nothing for it: measured in docs/performance.md).
                #[allow(clippy::too_many_arguments)]
                #[cold]
                #[inline(never)]
                unsafe fn first_use(f: Real, $($arg: $ty),*) {
                    // SAFETY: forwarded as `draw` requires.
                    creation::first_draw(|| unsafe { draw(f, $($arg),*) })
                }
                count(DrawKind::$kind);
                let Some(f) = $slot.get() else {
                    return;
                };
                if creation::first_use_pending() {
                    // SAFETY: f and the arguments as `draw` requires.
                    return unsafe { first_use(f, $($arg),*) };
                }
                // SAFETY: as above.
                unsafe { draw(f, $($arg),*) }
            }
        )*

        /// For a draw entry point we wrap: the slot of the real function and our wrapper.
        pub fn intercept(name: &[u8]) -> Option<(&'static Slot, usize)> {
            $(
                if name == $name.as_bytes() {
                    return Some(($slot.slot(), $wrapper as *const () as usize));
                }
            )*
            None
        }
    };
}

draw_wrappers! {
    "glDrawArrays" => DRAW_ARRAYS, draw_arrays, Draw, (m: E, f: I, n: I) [n, 0, 1, false];
    "glDrawArraysEXT" => DRAW_ARRAYS_EXT, draw_arrays_ext, Draw, (m: E, f: I, n: I) [n, 0, 1, false];
    "glDrawArraysInstanced" => DRAW_ARRAYS_INST, draw_arrays_inst, Draw, (m: E, f: I, n: I, k: I) [n, 0, k, false];
    "glDrawArraysInstancedARB" => DRAW_ARRAYS_INST_ARB, draw_arrays_inst_arb, Draw, (m: E, f: I, n: I, k: I) [n, 0, k, false];
    "glDrawArraysInstancedEXT" => DRAW_ARRAYS_INST_EXT, draw_arrays_inst_ext, Draw, (m: E, f: I, n: I, k: I) [n, 0, k, false];
    "glDrawArraysInstancedBaseInstance" => DRAW_ARRAYS_INST_BI, draw_arrays_inst_bi, Draw,
        (m: E, f: I, n: I, k: I, b: U) [n, 0, k, false];
    "glDrawElements" => DRAW_ELEMENTS, draw_elements, DrawIndexed, (m: E, n: I, t: E, x: P) [0, n, 1, false];
    "glDrawRangeElements" => DRAW_RANGE_ELEMENTS, draw_range_elements, DrawIndexed,
        (m: E, s: U, e: U, n: I, t: E, x: P) [0, n, 1, false];
    "glDrawRangeElementsEXT" => DRAW_RANGE_ELEMENTS_EXT, draw_range_elements_ext, DrawIndexed,
        (m: E, s: U, e: U, n: I, t: E, x: P) [0, n, 1, false];
    "glDrawElementsInstanced" => DRAW_ELEMENTS_INST, draw_elements_inst, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I) [0, n, k, false];
    "glDrawElementsInstancedARB" => DRAW_ELEMENTS_INST_ARB, draw_elements_inst_arb, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I) [0, n, k, false];
    "glDrawElementsInstancedEXT" => DRAW_ELEMENTS_INST_EXT, draw_elements_inst_ext, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I) [0, n, k, false];
    "glDrawElementsBaseVertex" => DRAW_ELEMENTS_BV, draw_elements_bv, DrawIndexed,
        (m: E, n: I, t: E, x: P, v: I) [0, n, 1, false];
    "glDrawRangeElementsBaseVertex" => DRAW_RANGE_ELEMENTS_BV, draw_range_elements_bv, DrawIndexed,
        (m: E, s: U, e: U, n: I, t: E, x: P, v: I) [0, n, 1, false];
    "glDrawElementsInstancedBaseVertex" => DRAW_ELEMENTS_INST_BV, draw_elements_inst_bv, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I, v: I) [0, n, k, false];
    "glDrawElementsInstancedBaseInstance" => DRAW_ELEMENTS_INST_BI, draw_elements_inst_bi, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I, b: U) [0, n, k, false];
    "glDrawElementsInstancedBaseVertexBaseInstance" => DRAW_ELEMENTS_INST_BV_BI, draw_elements_inst_bv_bi,
        DrawIndexed, (m: E, n: I, t: E, x: P, k: I, v: I, b: U) [0, n, k, false];
    "glDrawArraysIndirect" => DRAW_ARRAYS_INDIRECT, draw_arrays_indirect, DrawIndirect, (m: E, x: P) [0, 0, 0, true];
    "glDrawElementsIndirect" => DRAW_ELEMENTS_INDIRECT, draw_elements_indirect, DrawIndexedIndirect,
        (m: E, t: E, x: P) [0, 0, 0, true];
    "glMultiDrawArraysIndirect" => MULTI_DRAW_ARRAYS_INDIRECT, multi_draw_arrays_indirect, DrawIndirect,
        (m: E, x: P, n: I, s: I) [0, 0, 0, true];
    "glMultiDrawElementsIndirect" => MULTI_DRAW_ELEMENTS_INDIRECT, multi_draw_elements_indirect,
        DrawIndexedIndirect, (m: E, t: E, x: P, n: I, s: I) [0, 0, 0, true];
    "glMultiDrawArraysIndirectCount" => MULTI_DRAW_ARRAYS_INDIRECT_COUNT, multi_draw_arrays_indirect_count,
        DrawIndirectCount, (m: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    "glMultiDrawArraysIndirectCountARB" => MULTI_DRAW_ARRAYS_INDIRECT_COUNT_ARB,
        multi_draw_arrays_indirect_count_arb, DrawIndirectCount, (m: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    "glMultiDrawElementsIndirectCount" => MULTI_DRAW_ELEMENTS_INDIRECT_COUNT,
        multi_draw_elements_indirect_count, DrawIndexedIndirectCount, (m: E, t: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    "glMultiDrawElementsIndirectCountARB" => MULTI_DRAW_ELEMENTS_INDIRECT_COUNT_ARB,
        multi_draw_elements_indirect_count_arb, DrawIndexedIndirectCount, (m: E, t: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    "glMultiDrawArrays" => MULTI_DRAW_ARRAYS, multi_draw_arrays, DrawMulti,
        (m: E, f: *const I, n: *const I, d: I) [0, 0, 0, false];
    "glMultiDrawArraysEXT" => MULTI_DRAW_ARRAYS_EXT, multi_draw_arrays_ext, DrawMulti,
        (m: E, f: *const I, n: *const I, d: I) [0, 0, 0, false];
    "glMultiDrawElements" => MULTI_DRAW_ELEMENTS, multi_draw_elements, DrawMultiIndexed,
        (m: E, n: *const I, t: E, x: *const P, d: I) [0, 0, 0, false];
    "glMultiDrawElementsEXT" => MULTI_DRAW_ELEMENTS_EXT, multi_draw_elements_ext, DrawMultiIndexed,
        (m: E, n: *const I, t: E, x: *const P, d: I) [0, 0, 0, false];
    "glMultiDrawElementsBaseVertex" => MULTI_DRAW_ELEMENTS_BV, multi_draw_elements_bv, DrawMultiIndexed,
        (m: E, n: *const I, t: E, x: *const P, d: I, v: *const I) [0, 0, 0, false];
}

// ---- legacy GL: immediate mode and display lists ----------------------------------------------
//
// Counted, never sampled (a timestamp cannot go between `glBegin` and `glEnd`, and a list's
// draws run inside the driver). These are also exported (see `lib.rs`): apps that use them
// link libGL and call them directly (glxgears compiles its gears into display lists with
// `glBegin`/`glEnd` and calls one list per gear per frame), so lookups alone would miss them.
// Nothing is drawn while a list is being compiled with `GL_COMPILE`: `glNewList`/`glEndList`
// keep a per-thread flag, and `glEnd`/`glCallList(s)` then count nothing. A list called
// between `glBegin` and `glEnd` only adds vertices to that primitive: not counted either.

const GL_COMPILE: u32 = 0x1300;

thread_local! {
    /// Inside `glNewList(…, GL_COMPILE)` .. `glEndList` on this thread.
    static COMPILING: Cell<bool> = const { Cell::new(false) };
    /// Inside `glBegin` .. `glEnd`: a list called there adds vertices to that one primitive.
    static IN_BEGIN: Cell<bool> = const { Cell::new(false) };
}

fn compiling() -> bool {
    COMPILING.try_with(Cell::get).unwrap_or(false)
}

fn in_begin() -> bool {
    IN_BEGIN.try_with(Cell::get).unwrap_or(false)
}

static BEGIN: Real<unsafe extern "C" fn(E)> = Real::new(c"glBegin", Family::Gl);
static END: Real<unsafe extern "C" fn()> = Real::new(c"glEnd", Family::Gl);
static CALL_LIST: Real<unsafe extern "C" fn(U)> = Real::new(c"glCallList", Family::Gl);
static CALL_LISTS: Real<unsafe extern "C" fn(I, E, P)> = Real::new(c"glCallLists", Family::Gl);
static NEW_LIST: Real<unsafe extern "C" fn(U, E)> = Real::new(c"glNewList", Family::Gl);
static END_LIST: Real<unsafe extern "C" fn()> = Real::new(c"glEndList", Family::Gl);

pub unsafe extern "C" fn begin(mode: E) {
    let Some(f) = BEGIN.get() else {
        return;
    };
    let _ = IN_BEGIN.try_with(|c| c.set(true));
    // SAFETY: f is the real glBegin; the argument is the app's.
    unsafe { f(mode) }
}

pub unsafe extern "C" fn end() {
    let Some(f) = END.get() else {
        return;
    };
    let _ = IN_BEGIN.try_with(|c| c.set(false));
    if !compiling() {
        count(DrawKind::DrawImmediate);
    }
    // SAFETY: f is the real glEnd (never ours, see `Slot::offer`).
    unsafe { f() }
}

pub unsafe extern "C" fn call_list(list: U) {
    let Some(f) = CALL_LIST.get() else {
        return;
    };
    if !compiling() && !in_begin() {
        count(DrawKind::DrawCallList);
    }
    // SAFETY: f is the real glCallList; the argument is the app's.
    unsafe { f(list) }
}

pub unsafe extern "C" fn call_lists(n: I, kind: E, lists: P) {
    let Some(f) = CALL_LISTS.get() else {
        return;
    };
    if !compiling() && !in_begin() {
        // One per list called; a negative n is an error that calls none.
        let _ = COUNTS.try_with(|c| {
            let cell = &c[DrawKind::DrawCallList as usize];
            cell.set(cell.get().wrapping_add(n.max(0) as u32));
        });
    }
    // SAFETY: f is the real glCallLists; the arguments are the app's.
    unsafe { f(n, kind, lists) }
}

pub unsafe extern "C" fn new_list(list: U, mode: E) {
    let Some(f) = NEW_LIST.get() else {
        return;
    };
    // SAFETY: f is the real glNewList; the arguments are the app's.
    unsafe { f(list, mode) };
    // An invalid mode or a nested glNewList is an error that starts no list; GL_COMPILE is the
    // one mode that draws nothing (GL_COMPILE_AND_EXECUTE draws as it compiles).
    let _ = COMPILING.try_with(|c| c.set(mode == GL_COMPILE));
}

pub unsafe extern "C" fn end_list() {
    let Some(f) = END_LIST.get() else {
        return;
    };
    let _ = COMPILING.try_with(|c| c.set(false));
    // SAFETY: f is the real glEndList.
    unsafe { f() }
}

/// For a legacy entry point we wrap: the slot of the real function and our wrapper.
pub fn intercept_legacy(name: &[u8]) -> Option<(&'static Slot, usize)> {
    Some(match name {
        b"glBegin" => (BEGIN.slot(), begin as *const () as usize),
        b"glEnd" => (END.slot(), end as *const () as usize),
        b"glCallList" => (CALL_LIST.slot(), call_list as *const () as usize),
        b"glCallLists" => (CALL_LISTS.slot(), call_lists as *const () as usize),
        b"glNewList" => (NEW_LIST.slot(), new_list as *const () as usize),
        b"glEndList" => (END_LIST.slot(), end_list as *const () as usize),
        _ => return None,
    })
}
