//! The README's config key table is exactly `framescope_core::config::markdown_table()`, so the
//! documented keys, values, defaults and descriptions cannot drift from the code.

const BEGIN: &str = "<!-- config-keys:begin -->";
const END: &str = "<!-- config-keys:end -->";

/// The text between the marker lines, each marker alone on its line.
fn marked_block(readme: &str) -> Result<&str, String> {
    let begin = readme
        .find(&format!("{BEGIN}\n"))
        .ok_or(format!("README.md has no line '{BEGIN}'"))?
        + BEGIN.len()
        + 1;
    let end = readme[begin..]
        .find(&format!("\n{END}"))
        .map(|e| begin + e + 1)
        .or_else(|| readme[begin..].starts_with(END).then_some(begin))
        .ok_or(format!("README.md has no line '{END}' after '{BEGIN}'"))?;
    if readme[end + END.len()..].contains(BEGIN) {
        return Err(format!("README.md has '{BEGIN}' more than once"));
    }
    Ok(&readme[begin..end])
}

/// Where `actual` first differs from `expected`, by line, for a failure message.
fn first_difference(expected: &str, actual: &str) -> Option<String> {
    let (mut e, mut a) = (expected.split('\n'), actual.split('\n'));
    for n in 1.. {
        match (e.next(), a.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                let show =
                    |l: Option<&str>| l.map_or("(nothing: the block ends here)".to_string(), |l| format!("{l:?}"));
                return Some(format!(
                    "first difference at line {n} of the block:\n  markdown_table(): {}\n  README.md:        {}",
                    show(x),
                    show(y)
                ));
            }
        }
    }
    unreachable!()
}

#[test]
fn readme_config_table_is_markdown_table() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).expect("README.md");
    let block = marked_block(&readme).unwrap_or_else(|e| panic!("{e}"));
    let table = framescope_core::config::markdown_table();
    if let Some(diff) = first_difference(&table, block) {
        panic!(
            "README.md's config key table (between {BEGIN} and {END}) is not what \
             framescope_core::config::markdown_table() produces; `cargo xtask readme-keys` writes it.\n{diff}"
        );
    }
}

#[test]
fn differences_are_found_and_named() {
    assert_eq!(first_difference("a\nb\n", "a\nb\n"), None);
    let d = first_difference("a\nb\n", "a\nc\n").unwrap();
    assert!(
        d.contains("line 2") && d.contains("\"b\"") && d.contains("\"c\""),
        "{d}"
    );
    assert!(first_difference("a\n", "a\nextra\n").unwrap().contains("line 2"));
    assert!(first_difference("a\nb\n", "a\n").unwrap().contains("line 2"));
    let readme = format!("x\n{BEGIN}\n| t |\n{END}\ny\n");
    assert_eq!(marked_block(&readme).unwrap(), "| t |\n");
    assert_eq!(marked_block(&format!("{BEGIN}\n{END}\n")).unwrap(), "");
    assert!(marked_block("no markers").is_err());
    assert!(marked_block(&format!("{BEGIN}\n| t |\n")).is_err());
}
