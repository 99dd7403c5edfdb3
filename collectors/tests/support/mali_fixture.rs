//! A synthetic Bifrost sample: 4 shader cores, 2 L2 slices, 16-byte bus, 20 ms at 500 MHz.
//! Shader-core and L2 totals are spread unevenly over their instances, so the engine
//! sees per-instance data and has to sum it.

// Shared by several test crates; each uses a different part of it.
#![allow(dead_code)]

use framescope_collectors::{Constants, InstanceValues, RawValues};

pub const CORES: u32 = 4;
pub const SLICES: u32 = 2;
pub const BUS_BYTES: u32 = 16;
pub const SPAN_S: f64 = 0.02;
pub const MHZ: f64 = 500.0;

/// Per-GPU totals (the sum over instances) of every raw counter.
pub const TOTALS: &[(&str, f64)] = &[
    ("JM.GPU_ACTIVE", 8_000_000.0),
    ("JM.JS0_ACTIVE", 6_000_000.0),
    ("JM.JS1_ACTIVE", 2_000_000.0),
    ("JM.IRQ_ACTIVE", 1_000.0),
    ("JM.JS0_TASKS", 2_040.0),
    ("SC.COMPUTE_ACTIVE", 2_000_000.0),
    ("SC.FRAG_ACTIVE", 24_000_000.0),
    ("SC.EXEC_CORE_ACTIVE", 20_000_000.0),
    ("SC.COMPUTE_QUADS", 100_000.0),
    ("SC.FRAG_PRIMITIVES_RAST", 50_000.0),
    ("SC.FRAG_QUADS_RAST", 1_000_000.0),
    ("SC.FRAG_QUADS_EZS_TEST", 900_000.0),
    ("SC.FRAG_QUADS_EZS_UPDATE", 500_000.0),
    ("SC.FRAG_QUADS_EZS_KILLED", 200_000.0),
    ("SC.FRAG_QUADS_OPAQUE", 600_000.0),
    ("SC.FRAG_QUAD_BUFFER_NOT_EMPTY", 10_000_000.0),
    ("SC.FRAG_QUADS", 700_000.0),
    ("SC.FRAG_PARTIAL_QUADS", 140_000.0),
    ("SC.FRAG_THREADS_LZS_TEST", 50_000.0),
    ("SC.FRAG_THREADS_LZS_KILLED", 10_000.0),
    ("SC.FRAG_NUM_TILES", 8_000.0),
    ("SC.FRAG_TILES_CRC_CULLED", 2_000.0),
    ("SC.EE_INSTRS", 12_000_000.0),
    ("SC.EE_INSTRS_DIVERGED", 1_000_000.0),
    ("SC.LSC_READS_FULL", 400_000.0),
    ("SC.LSC_READS_SHORT", 100_000.0),
    ("SC.LSC_WRITES_FULL", 200_000.0),
    ("SC.LSC_WRITES_SHORT", 50_000.0),
    ("SC.LSC_ATOMICS", 10_000.0),
    ("SC.LSC_READ_BEATS", 300_000.0),
    ("SC.LSC_READ_BEATS_EXTERNAL", 60_000.0),
    ("SC.LSC_WRITE_BEATS", 150_000.0),
    ("SC.TEX_INSTRS", 2_000_000.0),
    ("SC.TEX_ISSUES", 3_000_000.0),
    ("SC.TEX_INSTR_3D", 10.0),
    ("SC.TEX_INSTR_TRILINEAR", 500_000.0),
    ("SC.TEX_INSTR_MIPMAP", 1_500_000.0),
    ("SC.TEX_INSTR_COMPRESSED", 1_000_000.0),
    ("SC.TEX_READ_BEATS", 900_000.0),
    ("SC.TEX_READ_BEATS_EXTERNAL", 100_000.0),
    ("SC.VARY_INSTR", 400_000.0),
    ("SC.VARY_ISSUES_16", 600_000.0),
    ("SC.VARY_ISSUES_32", 400_000.0),
    ("TI.ACTIVE", 3_000_000.0),
    ("TI.PRIMITIVE_POINTS", 1_000.0),
    ("TI.PRIMITIVE_LINES", 2_000.0),
    ("TI.PRIMITIVE_TRIANGLES", 97_000.0),
    ("TI.CULLED_FACING", 40_000.0),
    ("TI.CULLED_FRUSTUM", 12_000.0),
    ("TI.CULLED_COVERAGE", 4_800.0),
    ("TI.PRIMITIVE_VISIBLE", 43_200.0),
    ("TI.FRONT_FACING", 40_000.0),
    ("TI.BACK_FACING", 3_200.0),
    ("TI.IDVS_POSITION_SHADING_REQUEST", 30_000.0),
    ("TI.IDVS_VARYING_SHADING_REQUEST", 25_000.0),
    ("L2.ANY_LOOKUP", 4_000_000.0),
    ("L2.READ_REQUEST", 1_000_000.0),
    ("L2.EXTERNAL_READ_REQUEST", 250_000.0),
    ("L2.WRITE_REQUEST", 400_000.0),
    ("L2.EXTERNAL_WRITE_REQUEST", 300_000.0),
    ("L2.EXTERNAL_READ_BEATS", 1_000_000.0),
    ("L2.EXTERNAL_READ_STALL", 5_000.0),
    ("L2.EXT_RRESP_0_127", 400_000.0),
    ("L2.EXT_RRESP_128_191", 300_000.0),
    ("L2.EXT_RRESP_192_255", 150_000.0),
    ("L2.EXT_RRESP_256_319", 80_000.0),
    ("L2.EXT_RRESP_320_383", 40_000.0),
    ("L2.EXT_READ_CNT_Q1", 100_000.0),
    ("L2.EXT_READ_CNT_Q2", 80_000.0),
    ("L2.EXT_READ_CNT_Q3", 50_000.0),
    ("L2.EXTERNAL_WRITE_BEATS", 1_200_000.0),
    ("L2.EXTERNAL_WRITE_STALL", 2_000.0),
    ("L2.EXT_WRITE_CNT_Q1", 150_000.0),
    ("L2.EXT_WRITE_CNT_Q2", 100_000.0),
    ("L2.EXT_WRITE_CNT_Q3", 40_000.0),
];

pub fn total(name: &str) -> f64 {
    TOTALS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name} not in fixture"))
        .1
}

/// The fixture as the hardware would emit it: SC values over 4 cores (10/20/30/40 %),
/// L2 values over 2 slices (25/75 %), JM and TI in one instance.
pub fn instances() -> InstanceValues {
    let mut iv = InstanceValues::new();
    for &(name, t) in TOTALS {
        let shares: &[f64] = match &name[..2] {
            "SC" => &[0.1, 0.2, 0.3],
            "L2" => &[0.25],
            _ => &[],
        };
        let mut rest = t;
        for (i, s) in shares.iter().enumerate() {
            let part = (t * s).round();
            iv.push(name, i as u32, part);
            rest -= part;
        }
        iv.push(name, shares.len() as u32, rest);
    }
    iv
}

pub fn raw() -> RawValues {
    instances().total()
}

pub fn constants() -> Constants {
    Constants::mali_bifrost(CORES, SLICES, BUS_BYTES)
        .unwrap()
        .with_sample(SPAN_S, MHZ)
        .unwrap()
}
