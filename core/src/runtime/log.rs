//! stderr logging with the `framescope:` prefix, filtered by the `log` config key.

use std::fmt::Arguments;
use std::sync::atomic::{AtomicU8, Ordering};

pub const QUIET: u8 = 0;
pub const INFO: u8 = 1;
pub const DEBUG: u8 = 2;

static LEVEL: AtomicU8 = AtomicU8::new(INFO);

pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

/// Errors are always printed.
pub fn error(args: Arguments<'_>) {
    eprintln!("framescope: {args}");
}

pub fn info(args: Arguments<'_>) {
    if LEVEL.load(Ordering::Relaxed) >= INFO {
        eprintln!("framescope: {args}");
    }
}

pub fn debug(args: Arguments<'_>) {
    if LEVEL.load(Ordering::Relaxed) >= DEBUG {
        eprintln!("framescope: {args}");
    }
}
