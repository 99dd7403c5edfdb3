//! The app's GL waits, timed into the calling thread's waits (`framescope_core::waits`):
//! `glFinish` and `glClientWaitSync`. Exported as well as handed out by lookups (`lib.rs`):
//! most apps import them straight from libGL. Each forwards first and only then adds its
//! time.

use crate::dl::{Family, Real, Slot};
use framescope_core::waits::{self, WaitKind};
use libc::c_void;

static FINISH: Real<unsafe extern "C" fn()> = Real::new(c"glFinish", Family::Gl);
static CLIENT_WAIT_SYNC: Real<unsafe extern "C" fn(*mut c_void, u32, u64) -> u32> =
    Real::new(c"glClientWaitSync", Family::Gl);

/// `GL_WAIT_FAILED`: what a wait answers when it could not be made.
const GL_WAIT_FAILED: u32 = 0x911D;

pub unsafe extern "C" fn finish() {
    let Some(f) = FINISH.get() else {
        return;
    };
    // SAFETY: f is the real glFinish.
    waits::timed(WaitKind::GlSync, || unsafe { f() })
}

pub unsafe extern "C" fn client_wait_sync(sync: *mut c_void, flags: u32, timeout: u64) -> u32 {
    let Some(f) = CLIENT_WAIT_SYNC.get() else {
        return GL_WAIT_FAILED;
    };
    // SAFETY: f is the real glClientWaitSync; the arguments are the app's.
    waits::timed(WaitKind::GlSync, || unsafe { f(sync, flags, timeout) })
}

/// For a waiting entry point we wrap: the slot of the real function and our wrapper.
pub fn intercept(name: &[u8]) -> Option<(&'static Slot, usize)> {
    Some(match name {
        b"glFinish" => (FINISH.slot(), finish as *const () as usize),
        b"glClientWaitSync" => (CLIENT_WAIT_SYNC.slot(), client_wait_sync as *const () as usize),
        _ => return None,
    })
}
