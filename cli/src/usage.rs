//! What every command's argument handling shares, below the command line itself (`args`):
//! the exit status and printing of a usage error a command finds itself, and the parser of
//! values that must be text.

use crate::text::show;
use clap::builder::{OsStringValueParser, TypedValueParser};
use std::ffi::OsString;

/// Exit status of a usage error (what clap uses too).
pub const USAGE_EXIT: i32 = 2;

/// A usage error a command finds itself (clap cannot say it): `message`, the command's usage
/// line and where to read more, on stderr. Returns [`USAGE_EXIT`].
/// `A` is the command's `Args`: its usage line is rendered from them alone.
pub fn usage_error<A: clap::Args>(command: &str, message: &str) -> i32 {
    let mut cmd = A::augment_args(clap::Command::new("framescope").bin_name(format!("framescope {command}")));
    cmd.build();
    let usage = cmd.render_usage().to_string();
    // Lower case, as framescope's messages were before clap (scripts grep for it).
    let usage = usage.replacen("Usage:", "usage:", 1);
    eprintln!("{message}\n{usage}\n\nFor more information, try 'framescope {command} --help'.");
    USAGE_EXIT
}

/// A value that must be text (a name, a config string): a value that is not UTF-8 is a usage
/// error that shows it (lossily), not clap's error that names no value.
pub fn text() -> impl TypedValueParser<Value = String> {
    OsStringValueParser::new().try_map(|s: OsString| {
        s.into_string()
            .map_err(|s| format!("'{}' is not valid UTF-8 (it must be text)", show(&s)))
    })
}
