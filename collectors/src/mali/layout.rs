//! The Mali hardware-counter block layout and per-block-type accumulation. Pure, no syscalls.
//!
//! A "v5" dump (every Mali since the T8xx: the vinstr ring and Panfrost's `PERFCNT_DUMP`
//! buffer) is a run of blocks of 64 `u32`: the front-end/job manager, the tiler, one memory
//! block per L2 slice, then one block per shader core placed by its PHYSICAL index in the
//! core mask, so a sparse mask leaves unused slots (libGPUCounters
//! `hwcnt/sampler/vinstr/sample_layout.hpp`; `panfrost_perfcnt.c`: "shader_present might be
//! sparse ... hence fls64"). Every block starts with 4 header words, the enable mask
//! `PRFCNT_EN` in word 2, each bit of which enables 4 consecutive counters (kbase
//! `KBASE_HWCNT_V5_HEADERS_PER_BLOCK`, `KBASE_HWCNT_V5_PRFCNT_EN_HEADER`; seed-digest §1.5).
//!
//! Totals are sums over the instances of a block type, as seed 002 and the database's
//! equations expect (SC and L2 summed; cardinality corrections are in the equations).

use super::le;
use std::fmt;

pub const HEADER_WORDS: usize = 4;
pub const PRFCNT_EN_WORD: usize = 2;
/// Counters per block in a v5 dump.
pub const V5_COUNTERS: usize = 64;
pub const V5_BLOCK_BYTES: usize = V5_COUNTERS * 4;
/// The most values a kinstr_prfcnt block may carry (128 from the G715 on).
pub const MAX_VALUES: usize = 128;
/// The most L2 slices accepted (kbase's L2 slice field is 4 bits: at most 16).
pub const MAX_L2_SLICES: u32 = 16;

/// A block type, numbered as kinstr_prfcnt's `prfcnt_block_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    FrontEnd = 0,
    Tiler = 1,
    Memory = 2,
    ShaderCore = 3,
}

impl BlockKind {
    pub const ALL: [BlockKind; 4] = [
        BlockKind::FrontEnd,
        BlockKind::Tiler,
        BlockKind::Memory,
        BlockKind::ShaderCore,
    ];

    /// From kinstr_prfcnt's block type; firmware and CSG blocks (4, 5) are not counted.
    pub fn from_kinstr(t: u8) -> Option<Self> {
        BlockKind::ALL.get(usize::from(t)).copied()
    }
}

/// Per-block-type sums of one sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Totals {
    values: [[u64; MAX_VALUES]; 4],
    instances: [u32; 4],
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            values: [[0; MAX_VALUES]; 4],
            instances: [0; 4],
        }
    }
}

impl Totals {
    pub fn clear(&mut self) {
        *self = Totals::default();
    }

    /// The sum of counter `index` over every block of `kind` (0 outside the block).
    pub fn get(&self, kind: BlockKind, index: usize) -> u64 {
        self.values[kind as usize].get(index).copied().unwrap_or(0)
    }

    /// How many blocks of `kind` were added.
    pub fn instances(&self, kind: BlockKind) -> u32 {
        self.instances[kind as usize]
    }

    /// Adds one block's values (`value(i)` for counter `i`; header slots are skipped).
    pub fn add_block(&mut self, kind: BlockKind, count: usize, mut value: impl FnMut(usize) -> u64) {
        let row = &mut self.values[kind as usize];
        for (i, slot) in row
            .iter_mut()
            .enumerate()
            .take(count.min(MAX_VALUES))
            .skip(HEADER_WORDS)
        {
            *slot = slot.saturating_add(value(i));
        }
        self.instances[kind as usize] = self.instances[kind as usize].saturating_add(1);
    }
}

/// The shape of a v5 dump: how many L2 slices, which shader cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct V5Shape {
    pub l2_slices: u32,
    pub core_mask: u64,
}

impl V5Shape {
    /// Shader-core slots: up to the highest present core (`fls64`).
    pub fn core_slots(&self) -> usize {
        64 - self.core_mask.leading_zeros() as usize
    }

    pub fn blocks(&self) -> usize {
        2 + self.l2_slices as usize + self.core_slots()
    }

    pub fn dump_bytes(&self) -> usize {
        self.blocks() * V5_BLOCK_BYTES
    }

    /// Byte offset of the block of physical shader core `core`.
    pub fn core_offset(&self, core: usize) -> usize {
        (2 + self.l2_slices as usize + core) * V5_BLOCK_BYTES
    }

    fn check(&self) -> Result<(), LayoutError> {
        if self.core_mask == 0 {
            return Err(LayoutError::BadShape("no shader cores"));
        }
        if !(1..=MAX_L2_SLICES).contains(&self.l2_slices) {
            return Err(LayoutError::BadShape("L2 slice count outside 1..=16"));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The dump is shorter than its shape needs.
    Short {
        need: usize,
        got: usize,
    },
    BadShape(&'static str),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Short { need, got } => {
                write!(f, "counter dump of {got} bytes, the GPU's layout needs {need}")
            }
            LayoutError::BadShape(why) => write!(f, "unusable counter layout: {why}"),
        }
    }
}

impl std::error::Error for LayoutError {}

/// One block's header: the `PRFCNT_EN` mask.
pub fn block_enable_mask(block: &[u8]) -> u32 {
    le::u32_at(block, PRFCNT_EN_WORD * 4).unwrap_or(0)
}

/// Whether counter `index` is enabled by a block's `PRFCNT_EN` (one bit per 4 counters).
pub fn counter_enabled(mask: u32, index: usize) -> bool {
    let bit = index / 4;
    bit < 32 && mask & (1 << bit) != 0
}

/// Adds every block of a v5 dump to `totals`. Counters whose enable bit is clear count as
/// zero; shader-core slots of absent cores are skipped whatever they hold.
pub fn accumulate_v5(dump: &[u8], shape: &V5Shape, totals: &mut Totals) -> Result<(), LayoutError> {
    shape.check()?;
    let need = shape.dump_bytes();
    if dump.len() < need {
        return Err(LayoutError::Short { need, got: dump.len() });
    }
    let mut add = |kind: BlockKind, offset: usize| {
        let block = &dump[offset..offset + V5_BLOCK_BYTES];
        let mask = block_enable_mask(block);
        totals.add_block(kind, V5_COUNTERS, |i| {
            if counter_enabled(mask, i) {
                u64::from(le::u32_at(block, i * 4).unwrap_or(0))
            } else {
                0
            }
        });
    };
    add(BlockKind::FrontEnd, 0);
    add(BlockKind::Tiler, V5_BLOCK_BYTES);
    for slice in 0..shape.l2_slices as usize {
        add(BlockKind::Memory, (2 + slice) * V5_BLOCK_BYTES);
    }
    for core in 0..shape.core_slots() {
        if shape.core_mask & (1 << core) != 0 {
            add(BlockKind::ShaderCore, shape.core_offset(core));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(values: &[(usize, u32)], en: u32) -> Vec<u8> {
        let mut b = vec![0u8; V5_BLOCK_BYTES];
        le::put_u32(&mut b, PRFCNT_EN_WORD * 4, en);
        for &(i, v) in values {
            le::put_u32(&mut b, i * 4, v);
        }
        b
    }

    #[test]
    fn sparse_cores_are_read_at_their_physical_slots() {
        // Cores 0 and 2 present: slots 0, 1, 2 dumped; slot 1 is poison.
        let shape = V5Shape {
            l2_slices: 1,
            core_mask: 0b101,
        };
        assert_eq!(shape.blocks(), 6);
        let mut dump = Vec::new();
        dump.extend(block(&[(6, 100)], !0));
        dump.extend(block(&[(4, 7)], !0));
        dump.extend(block(&[(25, 3)], !0));
        dump.extend(block(&[(4, 10)], !0));
        dump.extend(block(&[(4, 999)], !0));
        dump.extend(block(&[(4, 20)], !0));
        let mut t = Totals::default();
        accumulate_v5(&dump, &shape, &mut t).unwrap();
        assert_eq!(t.get(BlockKind::FrontEnd, 6), 100);
        assert_eq!(t.get(BlockKind::Tiler, 4), 7);
        assert_eq!(t.get(BlockKind::Memory, 25), 3);
        assert_eq!(t.get(BlockKind::ShaderCore, 4), 30);
        assert_eq!(t.instances(BlockKind::ShaderCore), 2);
        // Header words never count, disabled groups read as zero.
        assert_eq!(t.get(BlockKind::FrontEnd, PRFCNT_EN_WORD), 0);
        let mut t = Totals::default();
        let mut off = dump.clone();
        off[..V5_BLOCK_BYTES].copy_from_slice(&block(&[(6, 100)], !(1 << 1)));
        accumulate_v5(&off, &shape, &mut t).unwrap();
        assert_eq!(t.get(BlockKind::FrontEnd, 6), 0);
    }

    #[test]
    fn short_dumps_and_bad_shapes_are_errors() {
        let shape = V5Shape {
            l2_slices: 2,
            core_mask: 0b1000_0000,
        };
        let mut t = Totals::default();
        assert_eq!(
            accumulate_v5(&[0; 100], &shape, &mut t),
            Err(LayoutError::Short {
                need: 12 * 256,
                got: 100
            })
        );
        let none = V5Shape {
            l2_slices: 2,
            core_mask: 0,
        };
        assert!(accumulate_v5(&[0; 4096], &none, &mut t).is_err());
        let many = V5Shape {
            l2_slices: 40,
            core_mask: 1,
        };
        assert!(accumulate_v5(&[0; 65536], &many, &mut t).is_err());
    }
}
