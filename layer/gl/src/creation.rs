//! The app's shader compiles and program links, timed into the calling thread's creation
//! tally (`framescope_core::creation`): GL drivers compile at these calls or at the first draw
//! after them, and either makes a frame late. Exported as well as handed out by lookups
//! (`lib.rs`): most apps import them straight from libGL. Each forwards first and only then
//! adds its time.

use crate::dl::{Family, Real, Slot};
use framescope_core::creation::{self, CreationKind};
use libc::c_void;

static COMPILE_SHADER: Real<unsafe extern "C" fn(u32)> = Real::new(c"glCompileShader", Family::Gl);
static LINK_PROGRAM: Real<unsafe extern "C" fn(u32)> = Real::new(c"glLinkProgram", Family::Gl);
static PROGRAM_BINARY: Real<unsafe extern "C" fn(u32, u32, *const c_void, i32)> =
    Real::new(c"glProgramBinary", Family::Gl);

pub unsafe extern "C" fn compile_shader(shader: u32) {
    let Some(f) = COMPILE_SHADER.get() else {
        return;
    };
    // SAFETY: f is the real glCompileShader; the argument is the app's.
    creation::timed(CreationKind::Shader, || unsafe { f(shader) })
}

pub unsafe extern "C" fn link_program(program: u32) {
    let Some(f) = LINK_PROGRAM.get() else {
        return;
    };
    // SAFETY: f is the real glLinkProgram; the argument is the app's.
    creation::timed(CreationKind::Program, || unsafe { f(program) })
}

pub unsafe extern "C" fn program_binary(program: u32, format: u32, binary: *const c_void, length: i32) {
    let Some(f) = PROGRAM_BINARY.get() else {
        return;
    };
    // SAFETY: f is the real glProgramBinary; the arguments are the app's.
    creation::timed(CreationKind::Program, || unsafe { f(program, format, binary, length) })
}

/// For a creating entry point we wrap: the slot of the real function and our wrapper.
pub fn intercept(name: &[u8]) -> Option<(&'static Slot, usize)> {
    Some(match name {
        b"glCompileShader" => (COMPILE_SHADER.slot(), compile_shader as *const () as usize),
        b"glLinkProgram" => (LINK_PROGRAM.slot(), link_program as *const () as usize),
        b"glProgramBinary" => (PROGRAM_BINARY.slot(), program_binary as *const () as usize),
        _ => return None,
    })
}
