//! One test per erratum of seed 001/002 listed in seed-digest.md §2.6 and §7 (A-7 to
//! A-20), plus the aggregation decisions the corrected formulas rely on.

mod support {
    pub mod mali_fixture;
}

use framescope_collectors::{databases, Constants, CounterSet, EvalError, SetError};
use support::mali_fixture as fx;

fn g76() -> &'static CounterSet {
    databases().unwrap().counter_set("mali-g76").unwrap()
}

fn value(set: &CounterSet, key: &str, consts: &Constants) -> f64 {
    set.evaluate(key, &fx::raw(), consts).unwrap().unwrap()
}

fn unknown_name(formula: &str) -> String {
    match g76().bind(formula) {
        Err(SetError::UnknownName { name, .. }) => name,
        other => panic!("{formula}: expected an unknown name, got {other:?}"),
    }
}

fn inputs(key: &str) -> Vec<String> {
    g76()
        .resolved(key)
        .unwrap()
        .counters()
        .into_iter()
        .map(String::from)
        .collect()
}

fn errata_ids(key: &str) -> Vec<&'static str> {
    g76().get(key).unwrap().errata.iter().map(|e| e.id.as_str()).collect()
}

#[test]
fn every_printed_formula_fails_or_differs_from_its_correction() {
    let set = g76();
    let (raw, consts) = (fx::raw(), fx::constants());
    let mut checked = 0;
    for c in set.counters().iter().filter(|c| c.is_derived()) {
        let corrected = set.evaluate(&c.key, &raw, &consts).unwrap();
        for e in &c.errata {
            checked += 1;
            if let Ok(printed) = set.bind(&e.printed) {
                let v = set.evaluate_expr(&printed, &raw, &consts).unwrap();
                assert_ne!(v, corrected, "{} {}: printed formula gives the same value", c.key, e.id);
            }
        }
    }
    assert!(checked >= 15, "only {checked} errata checked");
}

#[test]
fn a7_ezs_kill_is_ezs_killed() {
    assert_eq!(
        unknown_name("SC.FRAG_QUADS_RAST - SC.FRAG_QUADS_EZS_KILL - SC.FRAG_QUADS"),
        "SC.FRAG_QUADS_EZS_KILL"
    );
    for key in ["SC.FRAG_QUADS_KILLED_BY_OVERDRAW", "SC.FRAG_QUADS_TRANSPARENT"] {
        assert!(inputs(key).contains(&"SC.FRAG_QUADS_EZS_KILLED".to_string()), "{key}");
        assert_eq!(errata_ids(key), ["A-7"]);
    }
}

#[test]
fn a8_wrong_prefixes_are_corrected() {
    assert_eq!(
        unknown_name("TI.CULLED_FACING / TI_INPUT_PRIMITIVES"),
        "TI_INPUT_PRIMITIVES"
    );
    assert_eq!(
        unknown_name("TI.CULLED_FRUSTUM / (TI.INPUT_PRIMITIVES - TL.CULLED_FACING)"),
        "TL.CULLED_FACING"
    );
    for key in [
        "TI.CULLED_FACING_PERCENT",
        "TI.CULLED_FRUSTUM_PERCENT",
        "TI.CULLED_COVERAGE_PERCENT",
    ] {
        assert!(errata_ids(key).contains(&"A-8"), "{key}");
        assert!(inputs(key).iter().all(|n| n.starts_with("TI.")), "{key}");
    }
}

#[test]
fn a9_coverage_percent_uses_culled_coverage() {
    let set = g76();
    let consts = fx::constants();
    assert!(inputs("TI.CULLED_COVERAGE_PERCENT").contains(&"TI.CULLED_COVERAGE".to_string()));
    // The printed numerator (with A-8's prefixes fixed) reads the frustum count instead.
    let printed = set
        .bind("TI.CULLED_FRUSTUM / (TI.INPUT_PRIMITIVES - TI.CULLED_FACING - TI.CULLED_FRUSTUM)")
        .unwrap();
    let as_printed = set.evaluate_expr(&printed, &fx::raw(), &consts).unwrap().unwrap();
    assert_eq!(as_printed, 12_000.0 / 48_000.0);
    assert_eq!(value(set, "TI.CULLED_COVERAGE_PERCENT", &consts), 4_800.0 / 48_000.0);
}

#[test]
fn a10_internal_utilization_is_an_l2_counter() {
    assert!(g76().get("L2.INTERNAL_UTILIZATION").is_some());
    assert!(g76().counters().iter().all(|c| !c.key.starts_with("LS.")));
    assert!(g76()
        .bind("LS.INTERNAL_UTILIZATION = L2.ANY_LOOKUP / JM.GPU_ACTIVE")
        .is_err());
    assert_eq!(errata_ids("L2.INTERNAL_UTILIZATION"), ["A-10"]);
}

#[test]
fn a11_miss_rates_are_not_inverted() {
    let set = g76();
    let consts = fx::constants();
    for (key, printed) in [
        ("L2.READ_MISS_RATE", "L2.READ_REQUEST / L2.EXTERNAL_READ_REQUEST"),
        ("L2.WRITE_MISS_RATE", "L2.WRITE_REQUEST / L2.EXTERNAL_WRITE_REQUEST"),
    ] {
        let v = value(set, key, &consts);
        let p = set
            .evaluate_expr(&set.bind(printed).unwrap(), &fx::raw(), &consts)
            .unwrap()
            .unwrap();
        assert!(v <= 1.0 && p >= 1.0, "{key}: {v} vs printed {p}");
        assert!((v * p - 1.0).abs() < 1e-12, "{key}: printed is the reciprocal");
    }
}

#[test]
fn a12_external_utilization_uses_jm_gpu_active_per_slice() {
    assert_eq!(unknown_name("L2.EXTERNAL_READ_BEATS / SC.GPU_ACTIVE"), "SC.GPU_ACTIVE");
    let set = g76();
    let two = fx::constants();
    let one = Constants::mali_bifrost(fx::CORES, 1, fx::BUS_BYTES)
        .unwrap()
        .with_sample(fx::SPAN_S, fx::MHZ)
        .unwrap();
    for key in ["L2.EXTERNAL_READ_UTILIZATION", "L2.EXTERNAL_WRITE_UTILIZATION"] {
        assert!(inputs(key).contains(&"JM.GPU_ACTIVE".to_string()), "{key}");
        assert!(errata_ids(key).contains(&"A-12"), "{key}");
        // Summed over 2 slices, the per-slice value is half of the 1-slice reading.
        assert_eq!(value(set, key, &two) * 2.0, value(set, key, &one), "{key}");
    }
}

#[test]
fn a13_outstanding_histograms_use_external_requests_and_clamp_at_zero() {
    assert_eq!(
        unknown_name("L2.EXTERNAL_READ - L2.EXT_READ_CNT_Q1"),
        "L2.EXTERNAL_READ"
    );
    assert_eq!(
        unknown_name("L2.EXTERNAL_WRITE - L2.EXT_WRITE_CNT_Q1"),
        "L2.EXTERNAL_WRITE"
    );
    let set = g76();
    assert!(inputs("L2.EXT_READ_CNT_Q4").contains(&"L2.EXTERNAL_READ_REQUEST".to_string()));
    assert!(inputs("L2.EXT_WRITE_CNT_Q4").contains(&"L2.EXTERNAL_WRITE_REQUEST".to_string()));
    let mut raw = fx::raw();
    raw.set("L2.EXTERNAL_READ_REQUEST", 1.0)
        .set("L2.EXTERNAL_WRITE_REQUEST", 1.0)
        .set("L2.EXTERNAL_READ_BEATS", 1.0);
    for key in ["L2.EXT_READ_CNT_Q4", "L2.EXT_WRITE_CNT_Q4", "L2.EXT_RRESP_384_PLUS"] {
        assert_eq!(set.evaluate(key, &raw, &fx::constants()).unwrap(), Some(0.0), "{key}");
        assert!(set.get(key).unwrap().approx, "{key} is approximate");
    }
}

#[test]
fn a14_gpu_utilization_divides_by_the_time_span() {
    let set = g76();
    let no_span = Constants::mali_bifrost(fx::CORES, fx::SLICES, fx::BUS_BYTES).unwrap();
    let err = set.evaluate("JM.GPU_UTILIZATION", &fx::raw(), &no_span).unwrap_err();
    assert!(matches!(err, EvalError::MissingConstant(_)), "{err}");
    let short = value(set, "JM.GPU_UTILIZATION", &fx::constants());
    let long = Constants::mali_bifrost(fx::CORES, fx::SLICES, fx::BUS_BYTES)
        .unwrap()
        .with_sample(fx::SPAN_S * 2.0, fx::MHZ)
        .unwrap();
    assert_eq!(value(set, "JM.GPU_UTILIZATION", &long) * 2.0, short);
    assert!(short <= 1.0);
}

#[test]
fn a15_bus_width_is_a_constant_in_bytes() {
    assert_eq!(
        unknown_name("L2.EXTERNAL_READ_BEATS * L2.AXI_WIDTH_BYTES"),
        "L2.AXI_WIDTH_BYTES"
    );
    let set = g76();
    let narrow = Constants::mali_bifrost(fx::CORES, fx::SLICES, 8)
        .unwrap()
        .with_sample(fx::SPAN_S, fx::MHZ)
        .unwrap();
    assert_eq!(value(set, "L2.EXTERNAL_READ_BYTES", &narrow), 8_000_000.0);
    assert_eq!(value(set, "L2.EXTERNAL_WRITE_BYTES", &fx::constants()), 19_200_000.0);
    assert!(
        Constants::mali_bifrost(4, 2, 128).is_err(),
        "a width in bits is refused"
    );
}

#[test]
fn a16_write_counters_describe_writes() {
    let beats = g76().get("L2.EXTERNAL_WRITE_BEATS").unwrap();
    assert!(beats.description.contains("written") && !beats.description.contains("read off"));
    assert_eq!(errata_ids("L2.EXTERNAL_WRITE_BEATS"), ["A-16"]);
    let ins = inputs("L2.EXTERNAL_WRITE_UTILIZATION");
    assert!(
        ins.contains(&"L2.EXTERNAL_WRITE_BEATS".to_string()) && !ins.contains(&"L2.EXTERNAL_READ_BEATS".to_string())
    );
}

#[test]
fn a17_idvs_batches_are_four_vertices() {
    let set = g76();
    let c = set.get("TI.IDVS_POSITION_SHADING_REQUEST").unwrap();
    assert_eq!(c.item.as_deref(), Some("batches of 4 vertices"));
    assert_eq!(errata_ids("TI.IDVS_POSITION_SHADING_REQUEST"), ["A-17"]);
    assert_eq!(value(set, "vertices_shaded", &fx::constants()), 4.0 * 30_000.0);
}

#[test]
fn a18_a19_shader_core_ratios_correct_cardinality_and_flag_clock_domains() {
    let set = g76();
    assert!(set.cross_clock_domain("SC.EXEC_CORE_UTILIZATION"));
    // Every ratio that mixes clock domains says so in its description.
    for c in set.counters() {
        if set.cross_clock_domain(&c.key) {
            assert!(
                c.description.contains("clock domain"),
                "{} lacks the clock-domain caveat",
                c.key
            );
        }
    }
    let eight = Constants::mali_bifrost(8, fx::SLICES, fx::BUS_BYTES)
        .unwrap()
        .with_sample(fx::SPAN_S, fx::MHZ)
        .unwrap();
    let v4 = value(set, "SC.EXEC_CORE_UTILIZATION", &fx::constants());
    assert_eq!(value(set, "SC.EXEC_CORE_UTILIZATION", &eight) * 2.0, v4);
    // seed 002's example has unbalanced parentheses.
    assert!(set
        .bind("(SC.EXEC_CORE_ACTIVE / (MALI_CONFIG_SHADER_CORE_COUNT * JM.GPU_ACTIVE) * 100")
        .is_err());
    assert_eq!(errata_ids("SC.EXEC_CORE_UTILIZATION"), ["A-19"]);
}

#[test]
fn a20_l2_is_in_the_top_level_clock_domain() {
    let set = g76();
    for key in [
        "L2.INTERNAL_UTILIZATION",
        "L2.EXTERNAL_READ_UTILIZATION",
        "L2.EXTERNAL_WRITE_UTILIZATION",
    ] {
        assert!(!set.cross_clock_domain(key), "{key}");
    }
}

#[test]
fn a1_shader_core_values_are_summed_and_the_average_is_explicit() {
    let iv = fx::instances();
    assert_eq!(iv.total().get("SC.FRAG_QUADS"), Some(700_000.0));
    assert_eq!(iv.mean_per_instance("SC.FRAG_QUADS"), Some(175_000.0));
}

#[test]
fn a6_seed_001_percent_counters_are_ratios() {
    let set = g76();
    for key in ["SC.FRAG_PARTIAL_QUAD_PERCENTAGE", "TI.CULLED_FACING_PERCENT"] {
        assert_eq!(set.get(key).unwrap().unit, framescope_collectors::Unit::Ratio);
        assert!(value(set, key, &fx::constants()) <= 1.0);
    }
    // The common metric is a 0..100 percentage of the same quantity.
    let busy = value(set, "gpu_busy_pct", &fx::constants());
    assert!((busy - 100.0 * value(set, "JM.GPU_UTILIZATION", &fx::constants())).abs() < 1e-9);
}
