//! Every derived Mali Bifrost counter of seed 001, evaluated by the engine on a fixture,
//! against a hand computation written here (with the digest's corrected formulas and
//! the cardinality corrections for summed SC and L2 blocks).

mod support {
    pub mod mali_fixture;
}

use framescope_collectors::{databases, BlockType};
use support::mali_fixture::{self as fx, total as t};

/// (counter, expected value), computed by hand from the fixture's totals.
fn expected() -> Vec<(&'static str, f64)> {
    let cores = f64::from(fx::CORES);
    let slices = f64::from(fx::SLICES);
    let bus = f64::from(fx::BUS_BYTES);
    let lsc_issues = 400_000.0 + 100_000.0 + 200_000.0 + 50_000.0 + 10_000.0;
    let input_prims = 1_000.0 + 2_000.0 + 97_000.0;
    vec![
        // JM: 8e6 active cycles out of 500 MHz x 20 ms = 1e7 cycles.
        ("JM.GPU_UTILIZATION", 8_000_000.0 / 10_000_000.0),
        ("JM.JS0_UTILIZATION", 6.0 / 8.0),
        ("JM.JS1_UTILIZATION", 2.0 / 8.0),
        ("JM.PIXEL_COUNT", 2_040.0 * 1024.0),
        // SC: summed over 4 cores, so ratios against JM divide by the core count.
        ("SC.EXEC_CORE_UTILIZATION", 20_000_000.0 / (cores * 8_000_000.0)),
        ("SC.COMPUTE_QUAD_CYCLES", 20.0),
        ("SC.FRAG_QUADS_KILLED_BY_OVERDRAW", 1_000_000.0 - 200_000.0 - 700_000.0),
        ("SC.FRAG_QUADS_TRANSPARENT", 1_000_000.0 - 200_000.0 - 600_000.0),
        ("SC.FRAG_PARTIAL_QUAD_PERCENTAGE", 0.2),
        ("SC.FRAG_QUAD_CYCLES", 24_000_000.0 / 700_000.0),
        ("SC.EE_UTILIZATION", 0.6),
        ("SC.LSC_ISSUES", lsc_issues),
        ("SC.LSC_UTILIZATION", lsc_issues / 20_000_000.0),
        ("SC.LSC_L2_BYTES_PER_ISSUE", 300_000.0 * 16.0 / lsc_issues),
        ("SC.LSC_EXTERNAL_BYTES_PER_ISSUE", 60_000.0 * 16.0 / lsc_issues),
        ("SC.TEX_UTILIZATION", 0.15),
        ("SC.TEX_CPI", 1.5),
        ("SC.TEX_L2_BYTES_PER_ISSUE", 4.8),
        ("SC.TEX_EXTERNAL_BYTES_PER_ISSUE", 1_600_000.0 / 3_000_000.0),
        ("SC.VARY_UTILIZATION", 0.05),
        // TI: the culling funnel, each stage relative to its own input.
        ("TI.INPUT_PRIMITIVES", input_prims),
        ("TI.CULLED_FACING_PERCENT", 0.4),
        ("TI.CULLED_FRUSTUM_PERCENT", 12_000.0 / 60_000.0),
        ("TI.CULLED_COVERAGE_PERCENT", 4_800.0 / 48_000.0),
        // L2: summed over 2 slices; per-slice utilisations divide by the slice count.
        ("L2.INTERNAL_UTILIZATION", 4_000_000.0 / (8_000_000.0 * slices)),
        ("L2.READ_MISS_RATE", 0.25),
        ("L2.WRITE_MISS_RATE", 0.75),
        ("L2.EXTERNAL_READ_BYTES", 1_000_000.0 * bus),
        ("L2.EXTERNAL_READ_UTILIZATION", 1_000_000.0 / (8_000_000.0 * slices)),
        ("L2.EXTERNAL_WRITE_BYTES", 1_200_000.0 * bus),
        ("L2.EXTERNAL_WRITE_UTILIZATION", 1_200_000.0 / (8_000_000.0 * slices)),
        // Histogram buckets synthesised by subtraction.
        (
            "L2.EXT_RRESP_384_PLUS",
            1_000_000.0 - 400_000.0 - 300_000.0 - 150_000.0 - 80_000.0 - 40_000.0,
        ),
        ("L2.EXT_READ_CNT_Q4", 250_000.0 - 100_000.0 - 80_000.0 - 50_000.0),
        ("L2.EXT_WRITE_CNT_Q4", 300_000.0 - 150_000.0 - 100_000.0 - 40_000.0),
    ]
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn fixture_totals_are_what_the_hand_computation_assumes() {
    assert_eq!(t("SC.EXEC_CORE_ACTIVE"), 20_000_000.0);
    let raw = fx::raw();
    for &(name, v) in fx::TOTALS {
        assert_eq!(raw.get(name), Some(v), "{name}");
    }
    assert_eq!(fx::instances().instances("SC.FRAG_QUADS"), 4);
    assert_eq!(fx::instances().instances("L2.ANY_LOOKUP"), 2);
}

#[test]
fn every_raw_counter_of_seed_001_is_in_the_fixture_and_the_database() {
    let set = databases().unwrap().counter_set("mali-g76").unwrap();
    let raw: Vec<_> = set
        .counters()
        .iter()
        .filter(|c| !c.is_derived() && c.block != BlockType::Common)
        .map(|c| c.key.as_str())
        .collect();
    let mut fixture: Vec<_> = fx::TOTALS.iter().map(|(n, _)| *n).collect();
    let mut db = raw.clone();
    fixture.sort_unstable();
    db.sort_unstable();
    assert_eq!(db, fixture);
    // Digest §2: 75 raw counters (JM 5, SC 38, TI 12, L2 20).
    let per = |p: &str| raw.iter().filter(|k| k.starts_with(p)).count();
    assert_eq!((per("JM."), per("SC."), per("TI."), per("L2.")), (5, 38, 12, 20));
}

#[test]
fn every_derived_counter_matches_the_hand_computation() {
    let set = databases().unwrap().counter_set("mali-g76").unwrap();
    let expected = expected();
    let mut derived: Vec<_> = set
        .counters()
        .iter()
        .filter(|c| c.is_derived() && c.block != BlockType::Common)
        .map(|c| c.key.as_str())
        .collect();
    let mut covered: Vec<_> = expected.iter().map(|(k, _)| *k).collect();
    derived.sort_unstable();
    covered.sort_unstable();
    assert_eq!(derived, covered, "the table must cover every derived counter");
    assert_eq!(
        derived.len(),
        34,
        "digest §2: 31 derived counters + 3 synthesised buckets"
    );

    let (raw, consts) = (fx::raw(), fx::constants());
    for (key, want) in expected {
        let got = set
            .evaluate(key, &raw, &consts)
            .unwrap()
            .unwrap_or_else(|| panic!("{key}: no value"));
        assert!(close(got, want), "{key}: engine {got}, hand {want}");
    }
}

#[test]
fn every_bifrost_gpu_shares_the_formulas() {
    let dbs = databases().unwrap();
    let (raw, consts) = (fx::raw(), fx::constants());
    let g76 = dbs.counter_set("mali-g76").unwrap();
    for gpu in ["mali-g71", "mali-g72", "mali-g31", "mali-g51", "mali-g52"] {
        let s = dbs.counter_set(gpu).unwrap();
        for (key, _) in expected() {
            assert_eq!(
                s.evaluate(key, &raw, &consts),
                g76.evaluate(key, &raw, &consts),
                "{gpu} {key}"
            );
        }
    }
}
