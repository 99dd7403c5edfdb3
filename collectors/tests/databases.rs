//! The embedded databases load, validate, and expose a counter set per GPU.

use framescope_collectors::{databases, BlockType, Scope};

#[test]
fn embedded_databases_load_and_validate() {
    let dbs = databases().unwrap_or_else(|e| panic!("database error: {e}"));
    for p in dbs.profiles() {
        let set = dbs.counter_set(&p.name).unwrap();
        assert!(!set.counters().is_empty(), "{}", p.name);
        for c in set.counters() {
            let e = set.resolved(&c.key).unwrap();
            assert!(
                e.counters().iter().all(|n| set.get(n).is_some_and(|h| !h.is_derived())),
                "{}: {e}",
                c.key
            );
        }
    }
}

#[test]
fn gpu_names_and_aliases_resolve() {
    let dbs = databases().unwrap();
    for (name, db) in [
        ("mali-g76", "mali-bifrost"),
        ("MALI-G71", "mali-bifrost"),
        ("g76", "mali-bifrost"),
        ("amd-rdna3", "amd-gpa"),
        ("gfx11", "amd-gpa"),
        ("vega", "amd-gpa"),
        ("amd-gfx8", "amd-gpa"),
        ("skylake", "intel-oa"),
    ] {
        assert_eq!(dbs.counter_set(name).unwrap().db(), db, "{name}");
    }
    assert!(dbs.counter_set("mali-g710").is_err());
}

#[test]
fn mali_counters_are_frame_and_periodic_only() {
    // Digest A-2: a tiler has no per-draw counter mechanism.
    let set = databases().unwrap().counter_set("mali-g76").unwrap();
    for c in set.counters() {
        assert_eq!(c.scopes, vec![Scope::Frame, Scope::Periodic], "{}", c.key);
    }
}

#[test]
fn intel_report_formats_cover_every_a_counter_in_101b() {
    let dbs = databases().unwrap();
    let f = dbs.intel_formats.by_select(0b101).unwrap();
    assert_eq!(f.size_bytes, 256);
    for i in 0..36 {
        let parts = f
            .fields
            .iter()
            .filter(|x| x.counter.as_deref() == Some(&format!("OA.A{i}")))
            .count();
        // A0-A31 are 40-bit (low dword + high byte), A32-A35 are 32-bit.
        assert_eq!(parts, if i < 32 { 2 } else { 1 }, "A{i}");
    }
    // Seed 004, format 000b: A(n) low dword at byte 4*(n-3).
    let f0 = dbs.intel_formats.by_select(0).unwrap();
    let a7 = f0.fields.iter().find(|x| x.name == "A7").unwrap();
    assert_eq!((a7.offset, f0.size_bytes), (16, 64));
    assert!(dbs.intel_formats.by_select(1).is_none());
    let set = dbs.counter_set("intel-gen9").unwrap();
    let a: Vec<_> = set
        .counters()
        .iter()
        .filter(|c| c.block == BlockType::OaA && !c.is_derived())
        .collect();
    assert_eq!(a.len(), 36);
}

#[test]
fn per_gpu_overrides_change_the_resolution_of_one_gpu_only() {
    use framescope_collectors::db::generic;
    let text = r#"{
        "schema": 1, "id": "test-db", "vendor": "arm", "family": "test", "source": "test",
        "gpus": [{"name": "gpu-a"}, {"name": "gpu-b", "overrides": {"JM.RATIO": "JM.A / (2 * JM.B)"}}],
        "scopes": ["frame"],
        "counters": [
            {"name": "JM.A", "block": "jm", "unit": "cycles", "description": "a"},
            {"name": "JM.B", "block": "jm", "unit": "cycles", "description": "b"},
            {"name": "JM.RATIO", "block": "jm", "unit": "ratio", "description": "r", "equation": "JM.A / JM.B"}
        ]
    }"#;
    let f = generic::parse_file("test", text).unwrap();
    let sets: Vec<_> = f
        .gpus
        .iter()
        .map(|g| framescope_collectors::CounterSet::new(&g.name, &f.id, generic::counters_for(&f, g).unwrap()).unwrap())
        .collect();
    let raw: framescope_collectors::RawValues = [("JM.A", 6.0), ("JM.B", 3.0)].into_iter().collect();
    let c = framescope_collectors::Constants::new();
    assert_eq!(sets[0].evaluate("JM.RATIO", &raw, &c).unwrap(), Some(2.0));
    assert_eq!(sets[1].evaluate("JM.RATIO", &raw, &c).unwrap(), Some(1.0));

    let bad = text.replace("\"JM.RATIO\": \"JM.A / (2 * JM.B)\"", "\"JM.A\": \"1\"");
    let f = generic::parse_file("test", &bad).unwrap();
    assert!(
        generic::counters_for(&f, &f.gpus[1]).is_err(),
        "only derived counters can be overridden"
    );
    let unknown_field = text.replace("\"family\"", "\"famly\"");
    assert!(generic::parse_file("test", &unknown_field).is_err());
}
