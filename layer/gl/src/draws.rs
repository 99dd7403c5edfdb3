//! Draw-call counting: when the app looks a `glDraw*`/`glMultiDraw*` entry point up through
//! `glXGetProcAddress*`, `eglGetProcAddress`, `dlsym` or `dlvsym`, it gets a wrapper here that
//! bumps a per-thread counter for its [`DrawKind`] and calls the real function. Calls through
//! functions the app imports directly from libGL are not seen (the shim exports no `gl*`
//! drawing symbols). Counting follows the dump's rule: one per command, whatever its draw or
//! instance count.
//!
//! The counter is per thread (a GL context is current on one thread at a time and the frame
//! ends on the thread that swaps); the swap hook takes and resets it.

use crate::hooks::{Family, Real};
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

macro_rules! draw_wrappers {
    ($( $name:literal => $slot:ident, $wrapper:ident, $kind:ident, ( $($arg:ident : $ty:ty),* ); )*) => {
        $(
            static $slot: Real = Real::new($name, Family::Gl);

            unsafe extern "C" fn $wrapper($($arg: $ty),*) {
                count(DrawKind::$kind);
                let p = $slot.get();
                if p != 0 {
                    // SAFETY: p is the real GL function of this name (never one of ours, see
                    // `Real::offer`), with the signature from the GL registry.
                    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*)>(p)($($arg),*) }
                }
            }
        )*

        /// For a draw entry point we wrap: the slot of the real function and our wrapper.
        pub fn intercept(name: &[u8]) -> Option<(&'static Real, usize)> {
            $(
                if name == $name.to_bytes() {
                    return Some((&$slot, $wrapper as *const () as usize));
                }
            )*
            None
        }
    };
}

draw_wrappers! {
    c"glDrawArrays" => DRAW_ARRAYS, draw_arrays, Draw, (m: E, f: I, n: I);
    c"glDrawArraysEXT" => DRAW_ARRAYS_EXT, draw_arrays_ext, Draw, (m: E, f: I, n: I);
    c"glDrawArraysInstanced" => DRAW_ARRAYS_INST, draw_arrays_inst, Draw, (m: E, f: I, n: I, k: I);
    c"glDrawArraysInstancedARB" => DRAW_ARRAYS_INST_ARB, draw_arrays_inst_arb, Draw, (m: E, f: I, n: I, k: I);
    c"glDrawArraysInstancedEXT" => DRAW_ARRAYS_INST_EXT, draw_arrays_inst_ext, Draw, (m: E, f: I, n: I, k: I);
    c"glDrawArraysInstancedBaseInstance" => DRAW_ARRAYS_INST_BI, draw_arrays_inst_bi, Draw,
        (m: E, f: I, n: I, k: I, b: U);
    c"glDrawElements" => DRAW_ELEMENTS, draw_elements, DrawIndexed, (m: E, n: I, t: E, x: P);
    c"glDrawRangeElements" => DRAW_RANGE_ELEMENTS, draw_range_elements, DrawIndexed,
        (m: E, s: U, e: U, n: I, t: E, x: P);
    c"glDrawRangeElementsEXT" => DRAW_RANGE_ELEMENTS_EXT, draw_range_elements_ext, DrawIndexed,
        (m: E, s: U, e: U, n: I, t: E, x: P);
    c"glDrawElementsInstanced" => DRAW_ELEMENTS_INST, draw_elements_inst, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I);
    c"glDrawElementsInstancedARB" => DRAW_ELEMENTS_INST_ARB, draw_elements_inst_arb, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I);
    c"glDrawElementsInstancedEXT" => DRAW_ELEMENTS_INST_EXT, draw_elements_inst_ext, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I);
    c"glDrawElementsBaseVertex" => DRAW_ELEMENTS_BV, draw_elements_bv, DrawIndexed,
        (m: E, n: I, t: E, x: P, v: I);
    c"glDrawRangeElementsBaseVertex" => DRAW_RANGE_ELEMENTS_BV, draw_range_elements_bv, DrawIndexed,
        (m: E, s: U, e: U, n: I, t: E, x: P, v: I);
    c"glDrawElementsInstancedBaseVertex" => DRAW_ELEMENTS_INST_BV, draw_elements_inst_bv, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I, v: I);
    c"glDrawElementsInstancedBaseInstance" => DRAW_ELEMENTS_INST_BI, draw_elements_inst_bi, DrawIndexed,
        (m: E, n: I, t: E, x: P, k: I, b: U);
    c"glDrawElementsInstancedBaseVertexBaseInstance" => DRAW_ELEMENTS_INST_BV_BI, draw_elements_inst_bv_bi,
        DrawIndexed, (m: E, n: I, t: E, x: P, k: I, v: I, b: U);
    c"glDrawArraysIndirect" => DRAW_ARRAYS_INDIRECT, draw_arrays_indirect, DrawIndirect, (m: E, x: P);
    c"glDrawElementsIndirect" => DRAW_ELEMENTS_INDIRECT, draw_elements_indirect, DrawIndexedIndirect,
        (m: E, t: E, x: P);
    c"glMultiDrawArraysIndirect" => MULTI_DRAW_ARRAYS_INDIRECT, multi_draw_arrays_indirect, DrawIndirect,
        (m: E, x: P, n: I, s: I);
    c"glMultiDrawElementsIndirect" => MULTI_DRAW_ELEMENTS_INDIRECT, multi_draw_elements_indirect,
        DrawIndexedIndirect, (m: E, t: E, x: P, n: I, s: I);
    c"glMultiDrawArraysIndirectCount" => MULTI_DRAW_ARRAYS_INDIRECT_COUNT, multi_draw_arrays_indirect_count,
        DrawIndirectCount, (m: E, x: P, c: isize, n: I, s: I);
    c"glMultiDrawArraysIndirectCountARB" => MULTI_DRAW_ARRAYS_INDIRECT_COUNT_ARB,
        multi_draw_arrays_indirect_count_arb, DrawIndirectCount, (m: E, x: P, c: isize, n: I, s: I);
    c"glMultiDrawElementsIndirectCount" => MULTI_DRAW_ELEMENTS_INDIRECT_COUNT,
        multi_draw_elements_indirect_count, DrawIndexedIndirectCount, (m: E, t: E, x: P, c: isize, n: I, s: I);
    c"glMultiDrawElementsIndirectCountARB" => MULTI_DRAW_ELEMENTS_INDIRECT_COUNT_ARB,
        multi_draw_elements_indirect_count_arb, DrawIndexedIndirectCount, (m: E, t: E, x: P, c: isize, n: I, s: I);
    c"glMultiDrawArrays" => MULTI_DRAW_ARRAYS, multi_draw_arrays, DrawMulti,
        (m: E, f: *const I, n: *const I, d: I);
    c"glMultiDrawArraysEXT" => MULTI_DRAW_ARRAYS_EXT, multi_draw_arrays_ext, DrawMulti,
        (m: E, f: *const I, n: *const I, d: I);
    c"glMultiDrawElements" => MULTI_DRAW_ELEMENTS, multi_draw_elements, DrawMultiIndexed,
        (m: E, n: *const I, t: E, x: *const P, d: I);
    c"glMultiDrawElementsEXT" => MULTI_DRAW_ELEMENTS_EXT, multi_draw_elements_ext, DrawMultiIndexed,
        (m: E, n: *const I, t: E, x: *const P, d: I);
    c"glMultiDrawElementsBaseVertex" => MULTI_DRAW_ELEMENTS_BV, multi_draw_elements_bv, DrawMultiIndexed,
        (m: E, n: *const I, t: E, x: *const P, d: I, v: *const I);
}
