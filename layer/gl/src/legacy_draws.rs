//! Legacy GL draws, immediate mode and display lists: counted (`draw_counts`), never sampled
//! (a timestamp cannot go between `glBegin` and `glEnd`, and a list's draws run inside the
//! driver). These are also exported: apps that use them link libGL and call them directly
//! (glxgears compiles its gears into display lists with `glBegin`/`glEnd` and calls one list
//! per gear per frame), so lookups alone would miss them. Nothing is drawn while a list is
//! being compiled with `GL_COMPILE`: `glNewList`/`glEndList` keep a per-thread flag, and
//! `glEnd`/`glCallList(s)` then count nothing. A list called between `glBegin` and `glEnd`
//! only adds vertices to that primitive: not counted either.

use crate::dl::{gl_hooks, real};
use crate::draw_counts::{add, count};
use framescope_core::frame::DrawKind;
use libc::c_void;
use std::cell::Cell;

type E = u32; // GLenum
type I = i32; // GLint / GLsizei
type U = u32; // GLuint
type P = *const c_void;

gl_hooks! {
    export glBegin: Gl fn(mode: E) => begin;
    export glEnd: Gl fn() => end;
    export glCallList: Gl fn(list: U) => call_list;
    export glCallLists: Gl fn(n: I, kind: E, lists: P) => call_lists;
    export glNewList: Gl fn(list: U, mode: E) => new_list;
    export glEndList: Gl fn() => end_list;
}

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

unsafe extern "C" fn begin(mode: E) {
    let Some(f) = real(&next::glBegin) else {
        return;
    };
    let _ = IN_BEGIN.try_with(|c| c.set(true));
    // SAFETY: f is the real glBegin; the argument is the app's.
    unsafe { f(mode) }
}

unsafe extern "C" fn end() {
    let Some(f) = real(&next::glEnd) else {
        return;
    };
    let _ = IN_BEGIN.try_with(|c| c.set(false));
    if !compiling() {
        count(DrawKind::DrawImmediate);
    }
    // SAFETY: f is the real glEnd (never ours, see `Slot::offer`).
    unsafe { f() }
}

unsafe extern "C" fn call_list(list: U) {
    let Some(f) = real(&next::glCallList) else {
        return;
    };
    if !compiling() && !in_begin() {
        count(DrawKind::DrawCallList);
    }
    // SAFETY: f is the real glCallList; the argument is the app's.
    unsafe { f(list) }
}

unsafe extern "C" fn call_lists(n: I, kind: E, lists: P) {
    let Some(f) = real(&next::glCallLists) else {
        return;
    };
    if !compiling() && !in_begin() {
        // One per list called; a negative n is an error that calls none.
        add(DrawKind::DrawCallList, n.max(0) as u32);
    }
    // SAFETY: f is the real glCallLists; the arguments are the app's.
    unsafe { f(n, kind, lists) }
}

unsafe extern "C" fn new_list(list: U, mode: E) {
    let Some(f) = real(&next::glNewList) else {
        return;
    };
    // SAFETY: f is the real glNewList; the arguments are the app's.
    unsafe { f(list, mode) };
    // An invalid mode or a nested glNewList is an error that starts no list; GL_COMPILE is the
    // one mode that draws nothing (GL_COMPILE_AND_EXECUTE draws as it compiles).
    let _ = COMPILING.try_with(|c| c.set(mode == GL_COMPILE));
}

unsafe extern "C" fn end_list() {
    let Some(f) = real(&next::glEndList) else {
        return;
    };
    let _ = COMPILING.try_with(|c| c.set(false));
    // SAFETY: f is the real glEndList.
    unsafe { f() }
}
