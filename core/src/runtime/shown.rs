//! User text (config values, paths) as it appears inside one log line: escaped so it stays on
//! the line, and cut so a value of any size costs a bounded line (a 120 KB config value made a
//! 120 KB error line).

/// Characters of the escaped text kept before the cut: room for any real path or value.
const KEEP: usize = 320;

/// `s` escaped (`escape_debug`), cut after [`KEEP`] characters with its full size appended.
pub fn shown(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.escape_debug().enumerate() {
        if n == KEEP {
            out.push_str(&format!("… ({} bytes in all)", s.len()));
            return out;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_escaped_and_long_text_cut() {
        assert_eq!(shown("a\nb"), "a\\nb");
        let long = shown(&"y".repeat(120_000));
        assert!(long.len() < KEEP + 40, "{long}");
        assert!(long.ends_with("… (120000 bytes in all)"), "{long}");
        assert_eq!(shown(&"x".repeat(KEEP)), "x".repeat(KEEP));
    }
}
