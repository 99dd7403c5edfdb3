//! The app's GL waits, timed into the calling thread's waits (`framescope_core::waits`):
//! `glFinish` and `glClientWaitSync`. Exported as well as handed out by lookups (`export`):
//! most apps import them straight from libGL. Each forwards first and only then adds its time.

use crate::dl::{gl_hooks, real};
use framescope_core::waits::{self, WaitKind};
use libc::c_void;

gl_hooks! {
    export glFinish: Gl fn() => finish;
    export glClientWaitSync: Gl fn(sync: *mut c_void, flags: u32, timeout: u64) -> u32 => client_wait_sync;
}

/// `GL_WAIT_FAILED`: what a wait answers when it could not be made.
const GL_WAIT_FAILED: u32 = 0x911D;

unsafe extern "C" fn finish() {
    let Some(f) = real(&next::glFinish) else {
        return;
    };
    // SAFETY: f is the real glFinish.
    waits::timed(WaitKind::GlSync, || unsafe { f() })
}

unsafe extern "C" fn client_wait_sync(sync: *mut c_void, flags: u32, timeout: u64) -> u32 {
    let Some(f) = real(&next::glClientWaitSync) else {
        return GL_WAIT_FAILED;
    };
    // SAFETY: f is the real glClientWaitSync; the arguments are the app's.
    waits::timed(WaitKind::GlSync, || unsafe { f(sync, flags, timeout) })
}
