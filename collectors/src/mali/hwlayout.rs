//! Where each counter of `collectors/db/mali_bifrost.json` sits in the hardware blocks, per
//! GPU: `(block, counter index)` with the index counted from the block's start (header words
//! included, so real counters start at 4). Indices are those of Arm's published hardware
//! layout for the Mali-G76 (libGPUCounters `specification/database/hardwarelayout/
//! Mali-G76.xml`, hardware names in the comments). Database counters with no single
//! hardware counter on the G76 (the culling split, the FPK quad counts, the texture issue
//! counts, LSC write beats) are left out; they read as no value.

use super::layout::{BlockKind, Totals};

use BlockKind::{FrontEnd as FE, Memory as MEM, ShaderCore as SC, Tiler as TI};

/// One database counter's hardware position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwCounter {
    pub name: &'static str,
    pub block: BlockKind,
    pub index: usize,
}

const fn c(name: &'static str, block: BlockKind, index: usize) -> HwCounter {
    HwCounter { name, block, index }
}

/// Mali-G76 ("TNOx", `GPU_ID2_MODEL_MAKE(7, 1)`).
pub const MALI_G76: &[HwCounter] = &[
    c("JM.GPU_ACTIVE", FE, 6),
    c("JM.IRQ_ACTIVE", FE, 7),
    c("JM.JS0_TASKS", FE, 9),
    c("JM.JS0_ACTIVE", FE, 10),
    c("JM.JS1_ACTIVE", FE, 18),
    c("TI.ACTIVE", TI, 4),                         // TILER_ACTIVE
    c("TI.PRIMITIVE_TRIANGLES", TI, 6),            // TRIANGLES
    c("TI.PRIMITIVE_LINES", TI, 7),                // LINES
    c("TI.PRIMITIVE_POINTS", TI, 8),               // POINTS
    c("TI.FRONT_FACING", TI, 9),                   // FRONT_FACING
    c("TI.BACK_FACING", TI, 10),                   // BACK_FACING
    c("TI.PRIMITIVE_VISIBLE", TI, 11),             // PRIM_VISIBLE
    c("TI.IDVS_POSITION_SHADING_REQUEST", TI, 21), // IDVS_POS_SHAD_REQ
    c("TI.IDVS_VARYING_SHADING_REQUEST", TI, 37),  // IDVS_VAR_SHAD_REQ
    c("SC.FRAG_ACTIVE", SC, 4),                    // FRAG_ACTIVE
    c("SC.FRAG_PRIMITIVES_RAST", SC, 6),           // FRAG_PRIM_RAST
    c("SC.FRAG_QUADS_RAST", SC, 11),               // FRAG_QUADS_RAST
    c("SC.FRAG_QUADS_EZS_TEST", SC, 12),           // FRAG_QUADS_EZS_TEST
    c("SC.FRAG_QUADS_EZS_UPDATE", SC, 13),         // FRAG_QUADS_EZS_UPDATE
    c("SC.FRAG_QUADS_EZS_KILLED", SC, 14),         // FRAG_QUADS_EZS_KILL
    c("SC.FRAG_THREADS_LZS_TEST", SC, 15),         // FRAG_LZS_TEST
    c("SC.FRAG_THREADS_LZS_KILLED", SC, 16),       // FRAG_LZS_KILL
    c("SC.FRAG_NUM_TILES", SC, 18),                // FRAG_PTILES
    c("SC.FRAG_TILES_CRC_CULLED", SC, 19),         // FRAG_TRANS_ELIM
    c("SC.COMPUTE_ACTIVE", SC, 22),                // COMPUTE_ACTIVE
    c("SC.EXEC_CORE_ACTIVE", SC, 26),              // EXEC_CORE_ACTIVE
    c("SC.EE_INSTRS", SC, 28),                     // EXEC_INSTR_COUNT
    c("SC.EE_INSTRS_DIVERGED", SC, 29),            // EXEC_INSTR_DIVERGED
    c("SC.LSC_READS_FULL", SC, 44),                // LS_MEM_READ_FULL
    c("SC.LSC_READS_SHORT", SC, 45),               // LS_MEM_READ_SHORT
    c("SC.LSC_WRITES_FULL", SC, 46),               // LS_MEM_WRITE_FULL
    c("SC.LSC_WRITES_SHORT", SC, 47),              // LS_MEM_WRITE_SHORT
    c("SC.LSC_ATOMICS", SC, 48),                   // LS_MEM_ATOMIC
    c("SC.VARY_INSTR", SC, 49),                    // VARY_INSTR
    c("SC.VARY_ISSUES_32", SC, 50),                // VARY_SLOT_32
    c("SC.VARY_ISSUES_16", SC, 51),                // VARY_SLOT_16
    c("SC.LSC_READ_BEATS", SC, 56),                // BEATS_RD_LSC
    c("SC.LSC_READ_BEATS_EXTERNAL", SC, 57),       // BEATS_RD_LSC_EXT
    c("SC.TEX_READ_BEATS", SC, 58),                // BEATS_RD_TEX
    c("SC.TEX_READ_BEATS_EXTERNAL", SC, 59),       // BEATS_RD_TEX_EXT
    c("L2.ANY_LOOKUP", MEM, 25),                   // L2_ANY_LOOKUP
    c("L2.READ_REQUEST", MEM, 26),                 // L2_READ_LOOKUP
    c("L2.WRITE_REQUEST", MEM, 27),                // L2_WRITE_LOOKUP
    c("L2.EXTERNAL_READ_REQUEST", MEM, 29),        // L2_EXT_READ
    c("L2.EXTERNAL_READ_BEATS", MEM, 32),          // L2_EXT_READ_BEATS
    c("L2.EXTERNAL_READ_STALL", MEM, 33),          // L2_EXT_AR_STALL
    c("L2.EXT_READ_CNT_Q1", MEM, 34),              // L2_EXT_AR_CNT_Q1
    c("L2.EXT_READ_CNT_Q2", MEM, 35),              // L2_EXT_AR_CNT_Q2
    c("L2.EXT_READ_CNT_Q3", MEM, 36),              // L2_EXT_AR_CNT_Q3
    c("L2.EXT_RRESP_0_127", MEM, 37),              // L2_EXT_RRESP_0_127
    c("L2.EXT_RRESP_128_191", MEM, 38),            // L2_EXT_RRESP_128_191
    c("L2.EXT_RRESP_192_255", MEM, 39),            // L2_EXT_RRESP_192_255
    c("L2.EXT_RRESP_256_319", MEM, 40),            // L2_EXT_RRESP_256_319
    c("L2.EXT_RRESP_320_383", MEM, 41),            // L2_EXT_RRESP_320_383
    c("L2.EXTERNAL_WRITE_REQUEST", MEM, 42),       // L2_EXT_WRITE
    c("L2.EXTERNAL_WRITE_BEATS", MEM, 47),         // L2_EXT_WRITE_BEATS
    c("L2.EXTERNAL_WRITE_STALL", MEM, 48),         // L2_EXT_W_STALL
    c("L2.EXT_WRITE_CNT_Q1", MEM, 49),             // L2_EXT_AW_CNT_Q1
    c("L2.EXT_WRITE_CNT_Q2", MEM, 50),             // L2_EXT_AW_CNT_Q2
    c("L2.EXT_WRITE_CNT_Q3", MEM, 51),             // L2_EXT_AW_CNT_Q3
];

/// A GPU's layout: the database GPU name and its counter positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuLayout {
    pub db_gpu: &'static str,
    pub counters: &'static [HwCounter],
}

impl GpuLayout {
    pub fn find(&self, name: &str) -> Option<&HwCounter> {
        self.counters.iter().find(|c| c.name == name)
    }

    /// A database counter's value in a sample's totals; `None` when this GPU lacks it.
    pub fn value(&self, totals: &Totals, name: &str) -> Option<u64> {
        self.find(name).map(|c| totals.get(c.block, c.index))
    }
}

/// The layout of a product `(arch_major, product_major)`; only GPUs whose published layout
/// was checked against the database are listed.
pub fn for_product(key: (u8, u8)) -> Option<GpuLayout> {
    match key {
        (7, 1) => Some(GpuLayout {
            db_gpu: "mali-g76",
            counters: MALI_G76,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::databases;

    #[test]
    fn every_entry_is_a_raw_database_counter_at_a_real_index() {
        let set = databases().unwrap().counter_set("mali-g76").unwrap();
        for c in MALI_G76 {
            let k = set
                .get(c.name)
                .unwrap_or_else(|| panic!("{} not in the database", c.name));
            assert!(!k.is_derived(), "{}", c.name);
            assert!((4..64).contains(&c.index), "{}", c.name);
        }
        let mut seen: Vec<_> = MALI_G76.iter().map(|c| (c.block as u8, c.index)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), MALI_G76.len(), "two counters share a position");
    }
}
