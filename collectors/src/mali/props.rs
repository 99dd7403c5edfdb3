//! kbase GPU properties: the packed key/value blob `KBASE_IOCTL_GET_GPUPROPS` fills
//! (kbase uAPI `mali_kbase_ioctl.h`, "GPU properties"; libGPUCounters
//! `backend/device/src/device/handle_impl.hpp`). Pure parsing, no syscalls.
//!
//! Each entry is a little-endian `u32` key `(prop_id << 2) | size_code` (0: u8, 1: u16,
//! 2: u32, 3: u64) followed by the value in that many bytes.

use super::le;
use std::fmt;

pub const PRODUCT_ID: u32 = 1;
pub const L2_NUM_L2_SLICES: u32 = 15;
pub const RAW_SHADER_PRESENT: u32 = 25;
pub const RAW_L2_FEATURES: u32 = 29;
pub const RAW_GPU_ID: u32 = 55;
pub const COHERENCY_NUM_CORE_GROUPS: u32 = 62;
pub const COHERENCY_GROUP_0: u32 = 64;
const COHERENCY_GROUPS: u32 = 16;

/// What the counter backends need of the GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuProps {
    /// `RAW_GPU_ID`, or `PRODUCT_ID << 16` from kernels that lack it.
    pub gpu_id: u64,
    /// Present shader cores by physical index; may be sparse (`0b1011_0111`).
    pub core_mask: u64,
    pub l2_slices: u32,
    /// External bus width in bytes, from `RAW_L2_FEATURES` bits 31:24 (log2 of the width in
    /// bits); `None` when the kernel does not report it.
    pub bus_bytes: Option<u32>,
}

impl GpuProps {
    pub fn num_cores(&self) -> u32 {
        self.core_mask.count_ones()
    }

    /// `(arch_major, product_major)`, the key of libGPUCounters' product table.
    pub fn product_key(&self) -> (u8, u8) {
        product_key(self.gpu_id)
    }
}

/// `(arch_major, product_major)` of a GPU id. 32-bit ids carry them in bits 31:28 and 19:16
/// (kbase `GPU_ID2_MODEL_MAKE`); 64-bit ids, flagged by 0xF in bits 31:28, in bits 63:56 and
/// 39:32 (libGPUCounters `product_id.cpp`). Midgard ids (`0x0860....`) give arch 0.
pub fn product_key(gpu_id: u64) -> (u8, u8) {
    if (gpu_id >> 28) & 0xF == 0xF {
        (((gpu_id >> 56) & 0xFF) as u8, ((gpu_id >> 32) & 0xFF) as u8)
    } else {
        (((gpu_id >> 28) & 0xF) as u8, ((gpu_id >> 16) & 0xF) as u8)
    }
}

/// Bus width in bytes from an L2_FEATURES register value; `None` for a nonsensical width.
pub fn bus_bytes_from_l2_features(l2_features: u64) -> Option<u32> {
    let log2_bits = (l2_features >> 24) & 0xFF;
    if !(3..=12).contains(&log2_bits) {
        return None;
    }
    Some((1u32 << log2_bits) / 8)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropsError {
    /// An entry runs past the end of the blob.
    Truncated { at: usize },
    /// A property the backend needs is absent (or zero).
    Missing(&'static str),
}

impl fmt::Display for PropsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropsError::Truncated { at } => write!(f, "GPU property blob truncated at byte {at}"),
            PropsError::Missing(what) => write!(f, "GPU properties lack {what}"),
        }
    }
}

impl std::error::Error for PropsError {}

/// Parses a property blob.
pub fn parse(blob: &[u8]) -> Result<GpuProps, PropsError> {
    let (mut gpu_id, mut product_id, mut shader_present, mut l2_slices, mut l2_features) =
        (None, None, None, None, None);
    let mut groups = [0u64; COHERENCY_GROUPS as usize];
    let mut num_groups = None;
    let mut at = 0usize;
    while at < blob.len() {
        let key = le::u32_at(blob, at).ok_or(PropsError::Truncated { at })?;
        let value_at = at + 4;
        let (value, size) = match key & 3 {
            0 => (blob.get(value_at).map(|&v| u64::from(v)), 1),
            1 => (le::u16_at(blob, value_at).map(u64::from), 2),
            2 => (le::u32_at(blob, value_at).map(u64::from), 4),
            _ => (le::u64_at(blob, value_at), 8),
        };
        let value = value.ok_or(PropsError::Truncated { at })?;
        match key >> 2 {
            PRODUCT_ID => product_id = Some(value),
            L2_NUM_L2_SLICES => l2_slices = Some(value),
            RAW_SHADER_PRESENT => shader_present = Some(value),
            RAW_L2_FEATURES => l2_features = Some(value),
            RAW_GPU_ID => gpu_id = Some(value),
            COHERENCY_NUM_CORE_GROUPS => num_groups = Some(value),
            id if (COHERENCY_GROUP_0..COHERENCY_GROUP_0 + COHERENCY_GROUPS).contains(&id) => {
                groups[(id - COHERENCY_GROUP_0) as usize] = value;
            }
            _ => {}
        }
        at = value_at + size;
    }
    let gpu_id = gpu_id
        .or(product_id.map(|p| p << 16))
        .ok_or(PropsError::Missing("the GPU id"))?;
    // RAW_SHADER_PRESENT is the register itself; older kernels are read through the
    // coherency groups, whose OR is the same mask (libGPUCounters does the latter).
    let core_mask = match shader_present {
        Some(m) if m != 0 => m,
        _ => {
            let n = num_groups
                .unwrap_or(u64::from(COHERENCY_GROUPS))
                .min(u64::from(COHERENCY_GROUPS));
            groups.iter().take(n as usize).fold(0, |m, g| m | g)
        }
    };
    if core_mask == 0 {
        return Err(PropsError::Missing("the shader core mask"));
    }
    let l2_slices = match l2_slices {
        Some(n) if (1..=64).contains(&n) => n as u32,
        _ => return Err(PropsError::Missing("the number of L2 slices")),
    };
    Ok(GpuProps {
        gpu_id,
        core_mask,
        l2_slices,
        bus_bytes: l2_features.and_then(bus_bytes_from_l2_features),
    })
}

/// Appends one entry to a property blob (fixtures and tests build blobs with it).
pub fn push(blob: &mut Vec<u8>, id: u32, value: u64, size_code: u32) {
    blob.extend_from_slice(&((id << 2) | (size_code & 3)).to_le_bytes());
    match size_code & 3 {
        0 => blob.push(value as u8),
        1 => blob.extend_from_slice(&(value as u16).to_le_bytes()),
        2 => blob.extend_from_slice(&(value as u32).to_le_bytes()),
        _ => blob.extend_from_slice(&value.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g76_blob() -> Vec<u8> {
        let mut b = Vec::new();
        push(&mut b, PRODUCT_ID, 0x7211, 2);
        push(&mut b, L2_NUM_L2_SLICES, 2, 0);
        push(&mut b, RAW_L2_FEATURES, 0x0700_0000 | 0x0706, 2);
        push(&mut b, COHERENCY_NUM_CORE_GROUPS, 1, 0);
        push(&mut b, COHERENCY_GROUP_0, 0b1011_0111, 3);
        push(&mut b, RAW_GPU_ID, 0x7211_0010, 3);
        b
    }

    #[test]
    fn parses_a_g76_blob() {
        let p = parse(&g76_blob()).unwrap();
        assert_eq!(p.gpu_id, 0x7211_0010);
        assert_eq!(p.core_mask, 0b1011_0111);
        assert_eq!(p.num_cores(), 6);
        assert_eq!(p.l2_slices, 2);
        // 1 << 7 = 128 bits = 16 bytes.
        assert_eq!(p.bus_bytes, Some(16));
        // G76 is GPU_ID2_MODEL_MAKE(7, 1) ("TNOx").
        assert_eq!(p.product_key(), (7, 1));
    }

    #[test]
    fn shader_present_wins_over_groups_and_ids_of_both_widths_decode() {
        let mut b = g76_blob();
        push(&mut b, RAW_SHADER_PRESENT, 0b11, 3);
        assert_eq!(parse(&b).unwrap().core_mask, 0b11);
        assert_eq!(product_key(0xF000_0000 | (10 << 56) | (0x08 << 32)), (10, 8));
        assert_eq!(product_key(0x7003_0000), (7, 3));
    }

    #[test]
    fn truncation_and_missing_properties_are_errors() {
        let b = g76_blob();
        for cut in 0..b.len() {
            let _ = parse(&b[..cut]);
        }
        assert_eq!(
            parse(&b[..b.len() - 1]),
            Err(PropsError::Truncated { at: b.len() - 12 })
        );
        assert_eq!(parse(&[]), Err(PropsError::Missing("the GPU id")));
        assert_eq!(parse(&[0xff, 0xff, 0xff]), Err(PropsError::Truncated { at: 0 }));
    }
}
