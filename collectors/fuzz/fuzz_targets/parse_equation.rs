//! Fuzzes the equation parser, the printer and the binder/evaluator behind it.
//!
//! Invariants: no panic or stack overflow on any input; a parsed equation prints back
//! to text that parses to the same AST; evaluation never yields NaN or infinity.
#![no_main]

use framescope_collectors::{databases, parse, Constants, RawValues};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let Ok(expr) = parse(src) else { return };
    let printed = expr.to_string();
    let reparsed = parse(&printed).unwrap_or_else(|e| panic!("{src:?} printed as {printed:?}: {e}"));
    assert_eq!(reparsed, expr, "{src:?} printed as {printed:?}");

    // Bind against a real counter set and evaluate on values that include zeros, so
    // divisions by zero and huge intermediate results are exercised.
    let set = databases()
        .expect("embedded databases")
        .counter_set("mali-g76")
        .expect("mali-g76");
    if let Ok(bound) = set.bind(src) {
        let raw: RawValues = set
            .counters()
            .iter()
            .filter(|c| !c.is_derived())
            .enumerate()
            .map(|(i, c)| (c.key.clone(), if i % 3 == 0 { 0.0 } else { 1e150 * i as f64 }))
            .collect();
        let consts = Constants::mali_bifrost(4, 2, 16)
            .unwrap()
            .with_sample(0.016, 800.0)
            .unwrap();
        if let Ok(Some(v)) = set.evaluate_expr(&bound, &raw, &consts) {
            assert!(v.is_finite(), "{src:?} evaluated to {v}");
        }
    }
});
