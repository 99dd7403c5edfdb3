//! A deterministic, stable-Rust stand-in for the fuzz target (collectors/fuzz): random
//! token soups must parse or fail cleanly, print back to the same AST, and evaluate to a
//! finite value or none.

use framescope_collectors::{databases, parse, Constants, RawValues};

/// xorshift64*: enough randomness for generating inputs, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const TOKENS: &[&str] = &[
    "JM.GPU_ACTIVE",
    "SC.LSC_ISSUES",
    "TI.INPUT_PRIMITIVES",
    "L2.READ_MISS_RATE",
    "MALI_CONFIG_SHADER_CORE_COUNT",
    "GPU_MHZ",
    "unknown",
    "0",
    "1",
    "16",
    "1e300",
    "2.5",
    "0.0001",
    "+",
    "-",
    "-",
    "*",
    "/",
    "(",
    "(",
    ")",
    ")",
    "min(",
    "max(",
    ",",
    " ",
    "$",
    ".",
    "SUM(",
];

#[test]
fn random_equations_round_trip_and_evaluate_finitely() {
    let set = databases().unwrap().counter_set("mali-g76").unwrap();
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
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut parsed, mut bound) = (0, 0);
    for _ in 0..20_000 {
        let len = 1 + rng.next() % 24;
        let src: String = (0..len).map(|_| rng.pick(TOKENS)).collect::<Vec<_>>().join(" ");
        let Ok(e) = parse(&src) else { continue };
        parsed += 1;
        let printed = e.to_string();
        assert_eq!(parse(&printed).as_ref(), Ok(&e), "{src:?} printed as {printed:?}");
        if let Ok(b) = set.bind(&src) {
            bound += 1;
            if let Ok(Some(v)) = set.evaluate_expr(&b, &raw, &consts) {
                assert!(v.is_finite(), "{src:?} = {v}");
            }
        }
    }
    // The generator must actually reach the interesting paths.
    assert!(parsed > 500 && bound > 200, "parsed {parsed}, bound {bound}");
}
