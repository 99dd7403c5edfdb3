//! The app's shader compiles and program links, timed into the calling thread's creation
//! tally (`framescope_core::creation`): GL drivers compile at these calls or at the first draw
//! after them, and either makes a frame late. Exported as well as handed out by lookups
//! (`export`): most apps import them straight from libGL. Each forwards first and only then
//! adds its time.
//!
//! First use: Mesa compiles a program's shader variant for the current state at the first draw
//! with it, not at the link (llvmpipe with Mesa's shader cache off, the GL test app's program:
//! link 0.6 ms, first draw 23 ms; with the cache on, the start-up program's first draw took
//! 36 ms), so the first draw after a program that was never drawn with becomes current is
//! timed as a creation of its own
//! ([`CreationKind::FirstUse`]). `glUseProgram` marks such a program pending on its thread and
//! raises [`PENDING_THREADS`]; the draw wrappers (`draws`) read that one relaxed atomic per draw
//! and only while it is non-zero look at their thread's pending program, time the draw, and
//! remember the program as drawn. A link or binary load of a program makes it new again (its
//! next first draw compiles again), and marks it pending if it is current. The set of programs
//! drawn with is per thread (a context is current on one thread at a time): a program linked
//! again on another thread than the one drawing with it, or a program name reused in another
//! share group on the same thread, is missed. Programs bound through program pipelines
//! (`glBindProgramPipeline`) and draws in immediate mode or display lists are not timed.

use crate::dl::{gl_hooks, real};
use framescope_core::creation::{self, CreationKind};
use framescope_core::guard::{guarded, Site};
use libc::c_void;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};

gl_hooks! {
    export glCompileShader: Gl fn(shader: u32) => compile_shader;
    export glLinkProgram: Gl fn(program: u32) => link_program;
    export glProgramBinary: Gl fn(program: u32, format: u32, binary: *const c_void, length: i32) => program_binary;
    export glUseProgram: Gl fn(program: u32) => use_program;
}

static FIRST_USE: Site = Site::new("GL program first use");

/// Threads with a program pending its first draw: the draw wrappers' one check. A thread that
/// ends with one pending leaves it raised: later draws then take the out-of-line path, which
/// finds nothing pending on their thread and times nothing (slower, never wrong).
static PENDING_THREADS: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// The program this thread made current last (0: none).
    static CURRENT: Cell<u32> = const { Cell::new(0) };
    /// The current program, while it waits for its first draw (0: none).
    static PENDING: Cell<u32> = const { Cell::new(0) };
    /// Programs this thread has drawn with since their last link.
    static DRAWN: RefCell<HashSet<u32>> = RefCell::new(HashSet::new());
}

/// Sets the calling thread's pending program, keeping [`PENDING_THREADS`] in step.
fn set_pending(program: u32) {
    let _ = PENDING.try_with(|p| {
        let was = p.replace(program);
        match (was != 0, program != 0) {
            (false, true) => {
                PENDING_THREADS.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                PENDING_THREADS.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    });
}

/// Whether some thread has a program pending its first draw (one relaxed load: the draw
/// wrappers' only cost in steady state).
#[inline(always)]
pub fn first_use_pending() -> bool {
    PENDING_THREADS.load(Ordering::Relaxed) != 0
}

/// Runs the app's `draw`; when it is the first with this thread's pending program, times it
/// into [`CreationKind::FirstUse`] and remembers the program as drawn.
#[inline]
pub fn first_draw(draw: impl FnOnce()) {
    let program = PENDING.try_with(Cell::get).unwrap_or(0);
    if program == 0 {
        return draw();
    }
    let t0 = framescope_core::clock::monotonic_now_ns();
    draw();
    let ns = framescope_core::clock::monotonic_now_ns().saturating_sub(t0);
    guarded(&FIRST_USE, || {
        creation::add(CreationKind::FirstUse, ns);
        set_pending(0);
        let _ = DRAWN.try_with(|d| d.borrow_mut().insert(program));
    });
}

unsafe extern "C" fn use_program(program: u32) {
    let Some(f) = real(&next::glUseProgram) else {
        return;
    };
    // SAFETY: f is the real glUseProgram; the argument is the app's.
    unsafe { f(program) };
    guarded(&FIRST_USE, || {
        let _ = CURRENT.try_with(|c| c.set(program));
        let new = program != 0 && DRAWN.try_with(|d| !d.borrow().contains(&program)).unwrap_or(false);
        set_pending(if new { program } else { 0 });
    });
}

/// After a link or binary load of `program`: its next draw compiles again.
fn relinked(program: u32) {
    guarded(&FIRST_USE, || {
        let _ = DRAWN.try_with(|d| d.borrow_mut().remove(&program));
        // Linking the current program makes the new executable current at once (GL 4.6
        // section 7.3, "Program Objects").
        if program != 0 && CURRENT.try_with(Cell::get) == Ok(program) {
            set_pending(program);
        }
    });
}

unsafe extern "C" fn compile_shader(shader: u32) {
    let Some(f) = real(&next::glCompileShader) else {
        return;
    };
    // SAFETY: f is the real glCompileShader; the argument is the app's.
    creation::timed(CreationKind::Shader, || unsafe { f(shader) })
}

unsafe extern "C" fn link_program(program: u32) {
    let Some(f) = real(&next::glLinkProgram) else {
        return;
    };
    // SAFETY: f is the real glLinkProgram; the argument is the app's.
    creation::timed(CreationKind::Program, || unsafe { f(program) });
    relinked(program);
}

unsafe extern "C" fn program_binary(program: u32, format: u32, binary: *const c_void, length: i32) {
    let Some(f) = real(&next::glProgramBinary) else {
        return;
    };
    // SAFETY: f is the real glProgramBinary; the arguments are the app's.
    creation::timed(CreationKind::Program, || unsafe { f(program, format, binary, length) });
    relinked(program);
}
