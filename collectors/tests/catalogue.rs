//! Counter-set binding: references to derived counters, unknown names, cycles, scaled
//! counters, clock domains, and accumulation over draws.

use framescope_collectors::model::Erratum;
use framescope_collectors::{
    parse, BlockType, Constants, Counter, CounterId, CounterKind, CounterSet, RawValues, Scope, SetError, Unit,
};

fn counter(key: &str, block: BlockType, kind: CounterKind, unit: Unit) -> Counter {
    Counter {
        id: CounterId::of("test", key),
        key: key.into(),
        name: key.into(),
        group: "g".into(),
        block,
        kind,
        unit,
        item: None,
        description: String::new(),
        scopes: vec![Scope::Frame],
        additive: unit.is_additive(),
        approx: false,
        errata: Vec::<Erratum>::new(),
        vendor_unit: None,
    }
}

fn basic(key: &str, block: BlockType) -> Counter {
    counter(key, block, CounterKind::Basic, Unit::Cycles)
}

fn derived(key: &str, eq: &str) -> Counter {
    counter(
        key,
        BlockType::ShaderCore,
        CounterKind::Derived {
            equation: eq.into(),
            expr: parse(eq).unwrap(),
        },
        Unit::Ratio,
    )
}

fn set(counters: Vec<Counter>) -> Result<CounterSet, SetError> {
    CounterSet::new("test-gpu", "test", counters)
}

fn raw(values: &[(&str, f64)]) -> RawValues {
    values.iter().map(|(k, v)| (*k, *v)).collect()
}

#[test]
fn derived_counters_may_reference_derived_counters() {
    let s = set(vec![
        basic("SC.A", BlockType::ShaderCore),
        basic("SC.B", BlockType::ShaderCore),
        derived("SC.SUM", "SC.A + SC.B"),
        derived("SC.SHARE", "SC.A / SC.SUM"),
        derived("SC.PCT", "100 * SC.SHARE"),
    ])
    .unwrap();
    assert_eq!(
        s.resolved("SC.PCT").unwrap().to_string(),
        "100 * (SC.A / (SC.A + SC.B))"
    );
    let v = s
        .evaluate("SC.PCT", &raw(&[("SC.A", 1.0), ("SC.B", 3.0)]), &Constants::new())
        .unwrap();
    assert_eq!(v, Some(25.0));
}

#[test]
fn unknown_names_fail_at_load() {
    let e = set(vec![
        basic("SC.A", BlockType::ShaderCore),
        derived("SC.X", "SC.A / SC.NOPE"),
    ])
    .unwrap_err();
    assert_eq!(
        e,
        SetError::UnknownName {
            counter: "SC.X".into(),
            name: "SC.NOPE".into()
        }
    );
}

#[test]
fn constants_are_recognised_and_must_be_bound_at_evaluation() {
    let s = set(vec![
        basic("SC.A", BlockType::ShaderCore),
        derived("SC.PER_CORE", "SC.A / MALI_CONFIG_SHADER_CORE_COUNT"),
    ])
    .unwrap();
    assert_eq!(
        s.resolved("SC.PER_CORE").unwrap().constants(),
        vec!["MALI_CONFIG_SHADER_CORE_COUNT"]
    );
    let r = raw(&[("SC.A", 8.0)]);
    assert!(s.evaluate("SC.PER_CORE", &r, &Constants::new()).is_err());
    let c = Constants::mali_bifrost(4, 1, 16).unwrap();
    assert_eq!(s.evaluate("SC.PER_CORE", &r, &c).unwrap(), Some(2.0));
}

#[test]
fn reference_cycles_fail_at_load() {
    let e = set(vec![derived("X", "Y + 1"), derived("Y", "Z * 2"), derived("Z", "X")]).unwrap_err();
    assert_eq!(e, SetError::Cycle(vec!["X".into(), "Y".into(), "Z".into(), "X".into()]));
    assert!(matches!(set(vec![derived("S", "S + 1")]).unwrap_err(), SetError::Cycle(p) if p == ["S", "S"]));
    // A diamond (two paths to one counter) is not a cycle.
    let ok = set(vec![
        basic("H", BlockType::Jm),
        derived("L", "H"),
        derived("R", "H * 2"),
        derived("T", "L + R"),
    ]);
    assert!(ok.is_ok());
}

#[test]
fn duplicate_keys_are_rejected() {
    let e = set(vec![basic("A", BlockType::Jm), basic("A", BlockType::Jm)]).unwrap_err();
    assert_eq!(e, SetError::DuplicateKey("A".into()));
}

#[test]
fn scaled_counters_are_multiplied_before_use() {
    // Seed 002: the hardware increments once per N events; raw 10 with N = 4 reads 40.
    let s = set(vec![
        counter(
            "L2.SCALED",
            BlockType::L2,
            CounterKind::Scaled { multiplier: 4 },
            Unit::Items,
        ),
        derived("L2.TWICE", "L2.SCALED * 2"),
    ])
    .unwrap();
    let r = raw(&[("L2.SCALED", 10.0)]);
    assert_eq!(s.evaluate("L2.SCALED", &r, &Constants::new()).unwrap(), Some(40.0));
    assert_eq!(s.evaluate("L2.TWICE", &r, &Constants::new()).unwrap(), Some(80.0));
    assert_eq!(s.get("L2.SCALED").unwrap().kind.scale_multiplier(), 4);
}

#[test]
fn division_by_zero_and_missing_counters_evaluate_to_none() {
    let s = set(vec![
        basic("A", BlockType::Jm),
        basic("B", BlockType::Jm),
        derived("R", "A / B"),
    ])
    .unwrap();
    let c = Constants::new();
    assert_eq!(s.evaluate("R", &raw(&[("A", 1.0), ("B", 0.0)]), &c).unwrap(), None);
    assert_eq!(s.evaluate("R", &raw(&[("A", 1.0)]), &c).unwrap(), None);
    assert!(s.evaluate("NOPE", &raw(&[]), &c).is_err());
}

#[test]
fn mixing_clock_domains_is_detected() {
    let s = set(vec![
        basic("SC.X", BlockType::ShaderCore),
        basic("JM.Y", BlockType::Jm),
        basic("L2.Z", BlockType::L2),
        derived("SC.MIX", "SC.X / JM.Y"),
        derived("L2.TOP", "L2.Z / JM.Y"),
        derived("SC.INNER", "SC.X / 2"),
    ])
    .unwrap();
    assert!(s.cross_clock_domain("SC.MIX"));
    assert!(!s.cross_clock_domain("L2.TOP"));
    assert!(!s.cross_clock_domain("SC.INNER"));
}

#[test]
fn frame_percentages_come_from_summed_raw_values() {
    let s = set(vec![
        basic("HIT", BlockType::Gpa),
        basic("REQ", BlockType::Gpa),
        counter("VENDOR_PCT", BlockType::Gpa, CounterKind::Basic, Unit::Percent),
        derived("HIT_PCT", "100 * HIT / REQ"),
        derived("VENDOR_COPY", "VENDOR_PCT"),
    ])
    .unwrap();
    let mut acc = s.accumulator();
    acc.add(&raw(&[("HIT", 1.0), ("REQ", 1.0), ("VENDOR_PCT", 100.0)]));
    acc.add(&raw(&[("HIT", 0.0), ("REQ", 3.0), ("VENDOR_PCT", 0.0)]));
    let total = acc.total();
    let c = Constants::new();
    // 1 hit in 4 requests: 25 %, not the 50 % that averaging 100 % and 0 % would give.
    assert_eq!(s.evaluate("HIT_PCT", &total, &c).unwrap(), Some(25.0));
    // A vendor percentage cannot be summed: it has no frame value.
    assert_eq!(s.evaluate("VENDOR_COPY", &total, &c).unwrap(), None);
}

#[test]
fn a_counter_missing_from_one_draw_has_no_frame_total() {
    let s = set(vec![basic("A", BlockType::Gpa)]).unwrap();
    let mut acc = s.accumulator();
    acc.add(&raw(&[("A", 1.0)]));
    acc.add(&raw(&[]));
    assert_eq!(acc.total().get("A"), None);
}

#[test]
fn user_formulas_bind_against_the_set() {
    let s = set(vec![basic("A", BlockType::Jm), derived("D", "A * 2")]).unwrap();
    let e = s.bind("D + 1").unwrap();
    assert_eq!(e.to_string(), "A * 2 + 1");
    assert_eq!(
        s.evaluate_expr(&e, &raw(&[("A", 3.0)]), &Constants::new()).unwrap(),
        Some(7.0)
    );
    assert!(matches!(s.bind("D +").unwrap_err(), SetError::Parse { .. }));
    assert!(matches!(s.bind("E").unwrap_err(), SetError::UnknownName { .. }));
}

#[test]
fn constant_values_are_validated() {
    assert!(Constants::mali_bifrost(4, 2, 16).is_ok());
    assert!(Constants::mali_bifrost(4, 2, 8).is_ok());
    // Digest A-15: the bus size is in bytes; 128 (bits) is refused.
    assert!(Constants::mali_bifrost(4, 2, 128).is_err());
    assert!(Constants::new().set("NOT_A_CONSTANT", 1.0).is_err());
    assert!(Constants::new().set("GPU_MHZ", 0.0).is_err());
    assert!(Constants::new().set("GPU_MHZ", f64::NAN).is_err());
}
