//! The AMD GPUPerfAPI catalogue against seed 003, checked with data transcribed
//! independently of `db/amd_gpa.json` (support/gpa_expected.rs comes from the digest's
//! §4.4.2 lists; the per-group counts below are the digest's §4.4 table).

mod support {
    pub mod gpa_expected;
}

use std::collections::BTreeSet;

use framescope_collectors::db::amd::Section;
use framescope_collectors::{databases, Unit};
use support::gpa_expected::EXPECTED;

/// Digest §4.4 "Counts per generation (graphics tables)" and the compute counts.
/// (generation, [(group, count)], total).
type Counts = (&'static str, &'static [(&'static str, usize)], usize);

const GRAPHICS_COUNTS: &[Counts] = &[
    (
        "RDNA3",
        &[
            ("Timing", 29),
            ("VertexGeometry", 2),
            ("PreTessellation", 1),
            ("PostTessellation", 1),
            ("PrimitiveAssembly", 5),
            ("PixelShader", 3),
            ("ComputeShader", 14),
            ("TextureUnit", 7),
            ("DepthAndStencil", 24),
            ("ColorBuffer", 4),
            ("MemoryCache", 24),
            ("GlobalMemory", 10),
            ("RayTracing", 4),
        ],
        128,
    ),
    (
        "RDNA2",
        &[
            ("Timing", 29),
            ("VertexGeometry", 3),
            ("PreTessellation", 1),
            ("PostTessellation", 1),
            ("PrimitiveAssembly", 5),
            ("PixelShader", 3),
            ("ComputeShader", 16),
            ("TextureUnit", 7),
            ("DepthAndStencil", 24),
            ("ColorBuffer", 6),
            ("MemoryCache", 24),
            ("GlobalMemory", 10),
            ("RayTracing", 4),
        ],
        133,
    ),
    (
        "RDNA",
        &[
            ("Timing", 29),
            ("VertexGeometry", 9),
            ("PreTessellation", 7),
            ("PostTessellation", 7),
            ("PrimitiveAssembly", 5),
            ("PixelShader", 9),
            ("ComputeShader", 26),
            ("TextureUnit", 7),
            ("DepthAndStencil", 24),
            ("ColorBuffer", 6),
            ("MemoryCache", 24),
            ("GlobalMemory", 10),
        ],
        163,
    ),
    (
        "Vega",
        &[
            ("Timing", 29),
            ("VertexGeometry", 9),
            ("PreTessellation", 7),
            ("PostTessellation", 7),
            ("PrimitiveAssembly", 5),
            ("PixelShader", 9),
            ("ComputeShader", 28),
            ("TextureUnit", 7),
            ("DepthAndStencil", 24),
            ("ColorBuffer", 6),
            ("MemoryCache", 3),
            ("GlobalMemory", 17),
        ],
        151,
    ),
    (
        "Graphics IP v8",
        &[
            ("Timing", 32),
            ("VertexShader", 7),
            ("HullShader", 7),
            ("DomainShader", 7),
            ("GeometryShader", 8),
            ("PrimitiveAssembly", 5),
            ("PixelShader", 9),
            ("ComputeShader", 28),
            ("TextureUnit", 7),
            ("DepthAndStencil", 24),
            ("ColorBuffer", 6),
            ("MemoryCache", 3),
            ("GlobalMemory", 12),
        ],
        155,
    ),
];

const COMPUTE_COUNTS: &[(&str, [usize; 3])] = &[
    ("RDNA3", [10, 2, 8]),
    ("RDNA2", [10, 2, 8]),
    ("RDNA", [10, 2, 8]),
    ("Vega", [11, 3, 7]),
    ("Graphics IP v8", [11, 3, 6]),
];

fn section(name: &str) -> Section {
    if name == "graphics" {
        Section::Graphics
    } else {
        Section::Compute
    }
}

#[test]
fn group_counts_match_the_seed_tables() {
    let dbs = databases().unwrap();
    for (gen, groups, total) in GRAPHICS_COUNTS {
        let g = dbs.amd_generation(gen).unwrap();
        let got: Vec<(&str, usize)> = g
            .graphics
            .iter()
            .map(|x| (x.group.as_str(), x.counters.len()))
            .collect();
        assert_eq!(got, groups.to_vec(), "{gen}");
        assert_eq!(g.iter(Section::Graphics).count(), *total, "{gen}");
    }
    for (gen, counts) in COMPUTE_COUNTS {
        let g = dbs.amd_generation(gen).unwrap();
        let got: Vec<(&str, usize)> = g.compute.iter().map(|x| (x.group.as_str(), x.counters.len())).collect();
        assert_eq!(
            got,
            vec![
                ("General", counts[0]),
                ("LocalMemory", counts[1]),
                ("GlobalMemory", counts[2])
            ],
            "{gen}"
        );
    }
}

#[test]
fn every_counter_name_and_usage_is_present_for_its_generation() {
    let dbs = databases().unwrap();
    assert_eq!(EXPECTED.len(), 63 + 15, "transcription covers every group table");
    for (gen, sec, group, counters) in EXPECTED {
        let g = dbs.amd_generation(gen).unwrap();
        let grp = g
            .groups(section(sec))
            .iter()
            .find(|x| x.group == *group)
            .unwrap_or_else(|| panic!("{gen} {sec} {group}"));
        let got: Vec<&str> = grp.counters.iter().map(|c| c.name.as_str()).collect();
        let want: Vec<&str> = counters.iter().map(|(n, _)| *n).collect();
        assert_eq!(got, want, "{gen} {sec} {group}");
        for ((name, abbrev), c) in counters.iter().zip(&grp.counters) {
            let usage = match *abbrev {
                "ns" => "Nanoseconds",
                "%" => "Percentage",
                "cyc" => "Cycles",
                "items" => "Items",
                "B" => "Bytes",
                "KB" => "Kilobytes",
                other => panic!("unknown usage {other}"),
            };
            assert_eq!(c.usage, usage, "{gen} {name}");
            assert!(!c.description.is_empty(), "{gen} {name}");
        }
    }
}

#[test]
fn distinct_name_counts_match_the_digest() {
    let dbs = databases().unwrap();
    let names = |s: Section| -> BTreeSet<&str> {
        dbs.amd
            .generations
            .iter()
            .flat_map(|g| g.iter(s).map(|(_, c)| c.name.as_str()))
            .collect()
    };
    let (gfx, cs) = (names(Section::Graphics), names(Section::Compute));
    assert_eq!((gfx.len(), cs.len(), gfx.union(&cs).count()), (213, 23, 227));
}

#[test]
fn each_generation_has_a_counter_set_with_every_counter() {
    let dbs = databases().unwrap();
    for (gen, profile) in [
        ("RDNA3", "amd-rdna3"),
        ("RDNA2", "amd-rdna2"),
        ("RDNA", "amd-rdna"),
        ("Vega", "amd-vega"),
        ("Graphics IP v8", "amd-gfx8"),
    ] {
        let set = dbs.counter_set(profile).unwrap();
        let g = dbs.amd_generation(gen).unwrap();
        for (_, c) in g.iter(Section::Graphics) {
            let got = set.get(&c.name).unwrap_or_else(|| panic!("{profile}: {}", c.name));
            assert_eq!(got.vendor_unit.as_deref(), Some(c.usage.as_str()));
        }
        for (_, c) in g.iter(Section::Compute) {
            assert!(
                set.get(&format!("compute/{}", c.name)).is_some(),
                "{profile}: compute/{}",
                c.name
            );
        }
    }
}

#[test]
fn same_name_different_unit_is_kept_apart() {
    // Digest A-27: FetchSize is bytes in the graphics tables and kilobytes in compute.
    let set = databases().unwrap().counter_set("amd-rdna3").unwrap();
    assert_eq!(set.get("FetchSize").unwrap().unit, Unit::Bytes);
    assert_eq!(set.get("compute/FetchSize").unwrap().unit, Unit::Kilobytes);
    assert_ne!(
        set.get("FetchSize").unwrap().id,
        set.get("compute/FetchSize").unwrap().id
    );
}

#[test]
fn a28_tag_conflict_stall_counters_are_cycles() {
    let set = databases().unwrap().counter_set("amd-rdna2").unwrap();
    let c = set.get("L0TagConflictReadStalledCycles").unwrap();
    assert_eq!((c.unit, c.vendor_unit.as_deref()), (Unit::Cycles, Some("Items")));
    assert_eq!(c.errata[0].id, "A-28");
}

#[test]
fn percentages_and_averages_are_not_summed_over_draws() {
    let set = databases().unwrap().counter_set("amd-rdna3").unwrap();
    for (key, additive) in [
        ("GPUBusy", false),
        ("GPUBusyCycles", true),
        ("GPUTime", true),
        ("ExecutionStart", false),
        ("compute/VALUInsts", false),
        ("CSThreads", true),
    ] {
        assert_eq!(set.get(key).unwrap().additive, additive, "{key}");
    }
}
