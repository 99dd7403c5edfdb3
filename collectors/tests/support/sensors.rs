//! Helpers shared by the `sensors_*` tests: fixture roots and reading a source by name.

#![allow(dead_code)]

use framescope_collectors::source::CounterSource;
use framescope_core::counters::CounterWindow;
use std::path::PathBuf;

/// `tests/fixtures/sensors/<name>` at the repository root.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/sensors")
        .join(name)
}

/// One read of `src` at `now_ns`, as (counter name, value) pairs, plus the window.
pub fn read_named(src: &mut dyn CounterSource, now_ns: u64) -> (Vec<(String, f64)>, CounterWindow) {
    let mut out = vec![0.0; src.catalogue().len()];
    let w = src.read(now_ns, &mut out).expect("read");
    let named = src.catalogue().iter().map(|c| c.name.clone()).zip(out).collect();
    (named, w)
}

/// The value of counter `name` in a [`read_named`] result; panics if it is not there.
pub fn get(values: &[(String, f64)], name: &str) -> f64 {
    values
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no counter {name} in {values:?}"))
}

/// Asserts `a` is within `1e-9` relative of `b`.
#[track_caller]
pub fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} != {b}");
}
