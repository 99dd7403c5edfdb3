//! The README documents every config key with its real default.

#[test]
fn readme_documents_every_config_key_with_its_default() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).expect("README.md");
    for spec in framescope_core::config::KEYS {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", spec.name)))
            .unwrap_or_else(|| panic!("README has no config table row for `{}`", spec.name));
        assert!(
            row.contains(&format!("| `{}` |", spec.default)),
            "README row for `{}` lacks its default `{}`: {row}",
            spec.name,
            spec.default
        );
    }
}
