//! Common metrics: the same name on every GPU, each vendor's formula checked by hand.

use framescope_collectors::db::{databases, AMD_GPA, INTEL_OA, MALI_BIFROST};
use framescope_collectors::{Constants, RawValues};

fn raw(values: &[(&str, f64)]) -> RawValues {
    values.iter().map(|(k, v)| (*k, *v)).collect()
}

#[test]
fn every_metric_with_a_formula_exists_on_every_gpu_of_that_vendor() {
    let dbs = databases().unwrap();
    for p in dbs.profiles() {
        let set = dbs.counter_set(&p.name).unwrap();
        for m in &dbs.common.metrics {
            let has = m.formula_for(&p.db, p.variant.as_deref()).is_some();
            assert_eq!(set.get(&m.name).is_some(), has, "{} on {}", m.name, p.name);
        }
    }
}

#[test]
fn gpu_busy_pct_on_each_vendor() {
    let dbs = databases().unwrap();
    // Mali: 8e6 active cycles in 20 ms at 500 MHz (1e7 cycles) = 80 %.
    let mali = dbs.counter_set("mali-g76").unwrap();
    let c = Constants::mali_bifrost(4, 2, 16)
        .unwrap()
        .with_sample(0.02, 500.0)
        .unwrap();
    assert_eq!(
        mali.evaluate("gpu_busy_pct", &raw(&[("JM.GPU_ACTIVE", 8e6)]), &c)
            .unwrap(),
        Some(80.0)
    );
    // Intel: A0 busy over GPU_TICKS elapsed.
    let intel = dbs.counter_set("intel-gen9").unwrap();
    let v = intel
        .evaluate(
            "gpu_busy_pct",
            &raw(&[("OA.A0", 300.0), ("OA.GPU_TICKS", 1200.0)]),
            &Constants::new(),
        )
        .unwrap();
    assert_eq!(v, Some(25.0));
    // AMD: 1.5e6 busy cycles in 2 ms at 1000 MHz (2e6 cycles) = 75 %.
    let amd = dbs.counter_set("amd-rdna2").unwrap();
    let mut ac = Constants::new();
    ac.set("GPU_MHZ", 1000.0).unwrap();
    let v = amd
        .evaluate("gpu_busy_pct", &raw(&[("GPUBusyCycles", 1.5e6), ("GPUTime", 2e6)]), &ac)
        .unwrap();
    assert_eq!(v, Some(75.0));
}

#[test]
fn gpu_time_ns_on_each_vendor() {
    let dbs = databases().unwrap();
    let amd = dbs.counter_set("amd-vega").unwrap();
    assert_eq!(
        amd.evaluate("gpu_time_ns", &raw(&[("GPUTime", 1234.0)]), &Constants::new())
            .unwrap(),
        Some(1234.0)
    );
    let intel = dbs.counter_set("intel-gen9").unwrap();
    let mut ic = Constants::new();
    ic.set("INTEL_OA_TIMESTAMP_HZ", 12e6).unwrap();
    // 12 ticks at 12 MHz = 1 us.
    assert_eq!(
        intel
            .evaluate("gpu_time_ns", &raw(&[("OA.TIME_STAMP", 12.0)]), &ic)
            .unwrap(),
        Some(1000.0)
    );
    let mali = dbs.counter_set("mali-g52").unwrap();
    let mut mc = Constants::new();
    mc.set("GPU_MHZ", 500.0).unwrap();
    // 1000 cycles at 500 MHz = 2 us.
    assert_eq!(
        mali.evaluate("gpu_time_ns", &raw(&[("JM.GPU_ACTIVE", 1000.0)]), &mc)
            .unwrap(),
        Some(2000.0)
    );
}

#[test]
fn generation_specific_formulas_apply() {
    let dbs = databases().unwrap();
    let c = Constants::new();
    let gfx8 = dbs.counter_set("amd-gfx8").unwrap();
    let r = raw(&[
        ("VSBusyCycles", 1.0),
        ("HSBusyCycles", 2.0),
        ("DSBusyCycles", 4.0),
        ("GSBusyCycles", 8.0),
    ]);
    assert_eq!(gfx8.evaluate("vertex_busy_cycles", &r, &c).unwrap(), Some(15.0));
    let rdna3 = dbs.counter_set("amd-rdna3").unwrap();
    let r = raw(&[
        ("VsGsBusyCycles", 1.0),
        ("PreTessellationBusyCycles", 2.0),
        ("PostTessellationBusyCycles", 4.0),
    ]);
    assert_eq!(rdna3.evaluate("vertex_busy_cycles", &r, &c).unwrap(), Some(7.0));
    // Vega and GfxIP8 have no L2 request count: the metric is absent, not zero.
    assert!(dbs.counter_set("amd-vega").unwrap().get("l2_read_requests").is_none());
    assert!(gfx8.get("l2_hit_pct").is_none());
    assert!(rdna3.get("l2_read_requests").is_some());
}

#[test]
fn frame_hit_rate_is_recomputed_from_summed_counts() {
    let set = databases().unwrap().counter_set("amd-rdna3").unwrap();
    let mut acc = set.accumulator();
    acc.add(&raw(&[
        ("L2CacheHitCount", 90.0),
        ("L2CacheMissCount", 10.0),
        ("L2CacheHit", 90.0),
    ]));
    acc.add(&raw(&[
        ("L2CacheHitCount", 0.0),
        ("L2CacheMissCount", 300.0),
        ("L2CacheHit", 0.0),
    ]));
    let total = acc.total();
    // 90 hits in 400 requests = 22.5 %; averaging the draws' 90 % and 0 % would say 45 %.
    assert_eq!(
        set.evaluate("l2_hit_pct", &total, &Constants::new()).unwrap(),
        Some(22.5)
    );
    assert_eq!(total.get("L2CacheHit"), None, "a vendor percentage is never summed");
}

#[test]
fn vendor_keys_are_the_database_ids() {
    let dbs = databases().unwrap();
    for m in &dbs.common.metrics {
        for db in [MALI_BIFROST, AMD_GPA, INTEL_OA] {
            assert!(m.formulas.contains_key(db), "{} lacks {db}", m.name);
        }
    }
}
