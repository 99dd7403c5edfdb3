//! The draw hooks: when the app looks a `glDraw*`/`glMultiDraw*` entry point up through
//! `glXGetProcAddress*`, `eglGetProcAddress`, `dlsym` or `dlvsym`, it gets a wrapper here that
//! counts the draw for its [`DrawKind`] (`draw_counts`) and calls the real function. Every one of
//! them is also exported under its GL name, so an app that imports it straight from libGL
//! (most native games: SDL's `-lGL` builds, neverball) calls the same wrapper: the preloaded
//! shim's definition comes first, and the wrapper finds libGL's through `RTLD_NEXT`. The
//! exports are thin functions of their own (see `dl::gl_hooks`). Counting follows the dump's
//! rule: one per command, whatever its draw or instance count.
//!
//! With `samples=draw` each wrapper also puts the draw between two timestamps (see `samples`),
//! with its parameters as the app passed them: `vertex_count` for array draws, `index_count`
//! for element draws, `instance_count` (1 for non-instanced draws), all 0 for indirect and
//! multi draws (their counts are in GPU or array memory), as the Vulkan layer reports them.
//! Below `draw` level a wrapper reads one thread-local flag and takes no lock.
//!
//! Each wrapper also reads one relaxed atomic (`creation::first_use_pending`): while a program
//! waits for its first draw, that draw is timed as the program's first use (see `creation`).

use crate::dl::{gl_hooks, real};
use crate::draw_counts::count;
use crate::{creation, samples};
use framescope_core::frame::DrawKind;
use libc::c_void;

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

/// Each line: the GL name, its [`DrawKind`], its signature, and the draw parameters from its
/// arguments; gives the hook of that name and its `gl_hooks!` entry (exported).
macro_rules! draw_wrappers {
    ($( $name:ident, $kind:ident, ( $($arg:ident : $ty:ty),* ) [$v:expr, $ix:expr, $inst:expr, $ind:expr]; )*) => {
        $(
            #[allow(non_snake_case)]
            unsafe extern "C" fn $name($($arg: $ty),*) {
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
                let Some(f) = real(&next::$name) else {
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

        gl_hooks! {
            $( export $name: Gl fn($($arg: $ty),*) => $name; )*
        }
    };
}

draw_wrappers! {
    glDrawArrays, Draw, (m: E, f: I, n: I) [n, 0, 1, false];
    glDrawArraysEXT, Draw, (m: E, f: I, n: I) [n, 0, 1, false];
    glDrawArraysInstanced, Draw, (m: E, f: I, n: I, k: I) [n, 0, k, false];
    glDrawArraysInstancedARB, Draw, (m: E, f: I, n: I, k: I) [n, 0, k, false];
    glDrawArraysInstancedEXT, Draw, (m: E, f: I, n: I, k: I) [n, 0, k, false];
    glDrawArraysInstancedBaseInstance, Draw, (m: E, f: I, n: I, k: I, b: U) [n, 0, k, false];
    glDrawElements, DrawIndexed, (m: E, n: I, t: E, x: P) [0, n, 1, false];
    glDrawRangeElements, DrawIndexed, (m: E, s: U, e: U, n: I, t: E, x: P) [0, n, 1, false];
    glDrawRangeElementsEXT, DrawIndexed, (m: E, s: U, e: U, n: I, t: E, x: P) [0, n, 1, false];
    glDrawElementsInstanced, DrawIndexed, (m: E, n: I, t: E, x: P, k: I) [0, n, k, false];
    glDrawElementsInstancedARB, DrawIndexed, (m: E, n: I, t: E, x: P, k: I) [0, n, k, false];
    glDrawElementsInstancedEXT, DrawIndexed, (m: E, n: I, t: E, x: P, k: I) [0, n, k, false];
    glDrawElementsBaseVertex, DrawIndexed, (m: E, n: I, t: E, x: P, v: I) [0, n, 1, false];
    glDrawRangeElementsBaseVertex, DrawIndexed, (m: E, s: U, e: U, n: I, t: E, x: P, v: I) [0, n, 1, false];
    glDrawElementsInstancedBaseVertex, DrawIndexed, (m: E, n: I, t: E, x: P, k: I, v: I) [0, n, k, false];
    glDrawElementsInstancedBaseInstance, DrawIndexed, (m: E, n: I, t: E, x: P, k: I, b: U) [0, n, k, false];
    glDrawElementsInstancedBaseVertexBaseInstance, DrawIndexed, (m: E, n: I, t: E, x: P, k: I, v: I, b: U) [0, n, k, false];
    glDrawArraysIndirect, DrawIndirect, (m: E, x: P) [0, 0, 0, true];
    glDrawElementsIndirect, DrawIndexedIndirect, (m: E, t: E, x: P) [0, 0, 0, true];
    glMultiDrawArraysIndirect, DrawIndirect, (m: E, x: P, n: I, s: I) [0, 0, 0, true];
    glMultiDrawElementsIndirect, DrawIndexedIndirect, (m: E, t: E, x: P, n: I, s: I) [0, 0, 0, true];
    glMultiDrawArraysIndirectCount, DrawIndirectCount, (m: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    glMultiDrawArraysIndirectCountARB, DrawIndirectCount, (m: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    glMultiDrawElementsIndirectCount, DrawIndexedIndirectCount, (m: E, t: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    glMultiDrawElementsIndirectCountARB, DrawIndexedIndirectCount, (m: E, t: E, x: P, c: isize, n: I, s: I) [0, 0, 0, true];
    glMultiDrawArrays, DrawMulti, (m: E, f: *const I, n: *const I, d: I) [0, 0, 0, false];
    glMultiDrawArraysEXT, DrawMulti, (m: E, f: *const I, n: *const I, d: I) [0, 0, 0, false];
    glMultiDrawElements, DrawMultiIndexed, (m: E, n: *const I, t: E, x: *const P, d: I) [0, 0, 0, false];
    glMultiDrawElementsEXT, DrawMultiIndexed, (m: E, n: *const I, t: E, x: *const P, d: I) [0, 0, 0, false];
    glMultiDrawElementsBaseVertex, DrawMultiIndexed, (m: E, n: *const I, t: E, x: *const P, d: I, v: *const I) [0, 0, 0, false];
}
