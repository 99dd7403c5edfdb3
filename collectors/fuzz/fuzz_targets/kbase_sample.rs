//! Fuzzes the Mali kbase parsers that read kernel-written memory: the v5 block layout
//! (vinstr / Panfrost dumps), the kinstr_prfcnt sample metadata walk and enumeration list,
//! the GPU property blob and the vinstr buffer metadata. None may panic on any input.
//!
//! Input: 16 bytes of shape (L2 slices, item sizes, values per block type, offset, core
//! mask), then the buffer the parsers read.

#![no_main]

use framescope_collectors::mali::{kinstr_prfcnt, layout, props, vinstr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<16>() else {
        return;
    };
    let core_mask = u64::from_le_bytes(head[8..16].try_into().unwrap_or([0; 8]));
    let l2_slices = u32::from(head[0] & 0x1F);
    let mut totals = layout::Totals::default();
    let _ = layout::accumulate_v5(body, &layout::V5Shape { l2_slices, core_mask }, &mut totals);
    let item_size = usize::from(u16::from_le_bytes([head[1], head[2]]));
    let per_kind = u16::from(head[3]);
    let shape = kinstr_prfcnt::SampleShape {
        item_size,
        values_per_kind: [per_kind, per_kind / 2, per_kind, per_kind.wrapping_mul(3)],
        core_mask,
        l2_slices,
    };
    let offset = usize::from(u16::from_le_bytes([head[5], head[6]]));
    let _ = kinstr_prfcnt::parse_sample(body, offset, &shape, &mut totals);
    let _ = kinstr_prfcnt::parse_enum(body, item_size, usize::from(head[7]));
    let _ = props::parse(body);
    let _ = vinstr::parse_meta(body, head[4] & 1 != 0);
});
