//! Printing text that came from outside (dumps, paths, arguments). Arguments that must be text
//! are checked where they are parsed (`crate::usage::text`).

use std::ffi::OsStr;
use std::fmt::Write;

/// Longest piece of outside text printed whole; the rest is counted, not printed, so a forged
/// 16 MiB field cannot flood the terminal.
pub const MAX_SHOWN: usize = 256;

/// `s` made safe for a terminal: control characters (which could move the cursor, clear the
/// screen or retitle the window through escape sequences) and the bidirectional overrides
/// (which reorder what is shown, Unicode TR 9) are written as `\u{..}`; text past
/// [`MAX_SHOWN`] characters is replaced by a count.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_SHOWN));
    for (n, c) in s.chars().enumerate() {
        if n == MAX_SHOWN {
            let _ = write!(out, "...({} more characters)", s.chars().count() - n);
            break;
        }
        if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// A path or argument as it can be shown: bytes that are not UTF-8 become U+FFFD, then
/// [`escape`].
pub fn show(s: &OsStr) -> String {
    escape(&s.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape("a\x1b[2Jb\n\u{202e}c"), "a\\u{1b}[2Jb\\u{a}\\u{202e}c");
        assert_eq!(escape("café"), "café");
    }

    #[test]
    fn long_text_is_cut_with_a_count() {
        let s = "x".repeat(MAX_SHOWN + 10);
        let e = escape(&s);
        assert!(e.ends_with("...(10 more characters)"), "{e}");
        assert!(e.starts_with(&"x".repeat(MAX_SHOWN)));
    }

    #[test]
    fn non_utf8_is_shown_lossily() {
        let bad = OsStr::from_bytes(b"caf\xe9");
        assert_eq!(show(bad), "caf\u{fffd}");
    }
}
