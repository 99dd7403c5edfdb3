//! kinstr_prfcnt, kbase's counter interface from JM 11.37 / CSF 1.17 (kbase uAPI
//! `mali_kbase_hwcnt_reader.h`, the `prfcnt_*` structs; libGPUCounters
//! `ioctl/kinstr_prfcnt/types.hpp`, `hwcnt/sampler/kinstr_prfcnt/*`).
//!
//! `ENUM_INFO` lists the block types (called twice: sizes, then items); `SETUP` takes a
//! request list (mode, one enable per block type) and returns a sample fd whose memory is
//! mapped; `CMD` starts, samples (with a `user_data` tag that comes back in the sample) and
//! stops; `GET_SAMPLE` hands out the offset of a sample's metadata list, `PUT_SAMPLE` takes
//! it back. Item sizes come from the kernel (`info_item_size`, `prfcnt_metadata_item_size`),
//! never from our own struct sizes. Parsers here are pure and bounded.

use super::kbase_ioctl::KBASE_TYPE;
use super::layout::{BlockKind, Totals, MAX_VALUES};
use super::le;
use crate::sys::ioc::{ior, iow, iowr};
use crate::sys::{Fd, IoctlArg, MapId, Sys, UserBuffer};
use std::fmt;
use std::io;

/// `struct kbase_ioctl_kinstr_prfcnt_enum_info { __u32 info_item_size; __u32
/// info_item_count; __u64 info_list_ptr; }`.
pub const ENUM_INFO_SIZE: usize = 16;
pub const ENUM_INFO: u64 = iowr(KBASE_TYPE, 0x38, ENUM_INFO_SIZE);
/// `union kbase_ioctl_kinstr_prfcnt_setup`: in `{ __u32 request_item_count; __u32
/// request_item_size; __u64 requests_ptr; }`, out `{ __u32 prfcnt_metadata_item_size; __u32
/// prfcnt_mmap_size_bytes; }`.
pub const SETUP_SIZE: usize = 16;
pub const SETUP: u64 = iowr(KBASE_TYPE, 0x39, SETUP_SIZE);

/// The sample fd's ioctl type.
pub const SAMPLE_TYPE: u8 = 0xBF;
/// `struct prfcnt_control_cmd { __u16 cmd; __u16 pad[3]; __u64 user_data; }`.
pub const CMD_SIZE: usize = 16;
pub const CMD: u64 = iow(SAMPLE_TYPE, 0x00, CMD_SIZE);
/// `struct prfcnt_sample_access { __u64 sequence; __u64 sample_offset_bytes; }`.
pub const ACCESS_SIZE: usize = 16;
pub const GET_SAMPLE: u64 = ior(SAMPLE_TYPE, 0x01, ACCESS_SIZE);
pub const PUT_SAMPLE: u64 = iow(SAMPLE_TYPE, 0x10, ACCESS_SIZE);

pub const CMD_START: u16 = 1;
pub const CMD_STOP: u16 = 2;
pub const CMD_SAMPLE_SYNC: u16 = 3;

/// `FLEX_LIST_TYPE(list, subtype) = (list & 0xf) << 12 | (subtype & 0xfff)`.
const fn flex(list: u16, subtype: u16) -> u16 {
    ((list & 0xF) << 12) | (subtype & 0xFFF)
}
pub const TYPE_NONE: u16 = flex(0, 0);
pub const ENUM_BLOCK: u16 = flex(0, 0);
pub const ENUM_REQUEST: u16 = flex(0, 1);
pub const ENUM_SAMPLE_INFO: u16 = flex(0, 2);
pub const REQUEST_MODE: u16 = flex(1, 0);
pub const REQUEST_ENABLE: u16 = flex(1, 1);
pub const META_SAMPLE: u16 = flex(2, 0);
pub const META_CLOCK: u16 = flex(2, 1);
pub const META_BLOCK: u16 = flex(2, 2);

pub const MODE_MANUAL: u8 = 0;
pub const SET_PRIMARY: u8 = 0;
/// `prfcnt_block_state`: a block of a core that is not present.
pub const BLOCK_STATE_UNAVAILABLE: u32 = 1 << 3;
/// `prfcnt_sample_metadata.flags`.
pub const SAMPLE_FLAG_OVERFLOW: u32 = 1 << 0;
pub const SAMPLE_FLAG_ERROR: u32 = 1 << 30;

/// Our request items: `struct prfcnt_request_item` is a 4-byte header, 4 bytes of padding
/// and a 24-byte union.
pub const REQUEST_ITEM_SIZE: usize = 32;
/// The smallest item sizes the kernel may announce (`struct prfcnt_enum_item` 32 bytes,
/// `struct prfcnt_metadata` 48 bytes).
pub const MIN_ENUM_ITEM_SIZE: usize = 32;
pub const MIN_META_ITEM_SIZE: usize = 48;
/// Bounds on what the kernel may announce.
pub const MAX_ENUM_ITEMS: usize = 256;
pub const MAX_META_ITEMS: usize = 4096;
pub const MAX_MMAP_BYTES: usize = 16 << 20;
pub const MAX_CLOCK_DOMAINS: usize = 4;

/// One enumerated block type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumBlock {
    pub block_type: u8,
    pub set: u8,
    pub num_instances: u16,
    pub num_values: u16,
    pub counter_mask: [u64; 2],
}

/// What `ENUM_INFO` said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnumInfo {
    pub blocks: Vec<EnumBlock>,
    /// `(request item type, versions mask)`.
    pub requests: Vec<(u16, u32)>,
    pub num_clock_domains: u32,
}

impl EnumInfo {
    /// Values per block of each counted block type (0: not enumerated).
    pub fn values_per_kind(&self) -> [u16; 4] {
        let mut v = [0u16; 4];
        for b in &self.blocks {
            if let Some(k) = BlockKind::from_kinstr(b.block_type) {
                if b.set == SET_PRIMARY {
                    v[k as usize] = b.num_values;
                }
            }
        }
        v
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KinstrError {
    /// An item or value array runs outside the buffer.
    OutOfBounds(&'static str),
    /// A size or count the kernel gave is not usable.
    BadSize(&'static str, u64),
    /// The metadata list has no sample item, or no end.
    Malformed(&'static str),
}

impl fmt::Display for KinstrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KinstrError::OutOfBounds(what) => write!(f, "kinstr_prfcnt {what} outside the sample buffer"),
            KinstrError::BadSize(what, n) => write!(f, "kinstr_prfcnt {what} of {n} is not usable"),
            KinstrError::Malformed(what) => write!(f, "kinstr_prfcnt sample metadata {what}"),
        }
    }
}

impl std::error::Error for KinstrError {}

/// Parses the `ENUM_INFO` item list. The BLOCK type code equals the "none" code, so the
/// list ends at a BLOCK item with no instances and no values (libGPUCounters
/// `enum_info_parser.hpp`), or after `count` items.
pub fn parse_enum(bytes: &[u8], item_size: usize, count: usize) -> Result<EnumInfo, KinstrError> {
    if !(MIN_ENUM_ITEM_SIZE..=4096).contains(&item_size) {
        return Err(KinstrError::BadSize("enum item size", item_size as u64));
    }
    if count > MAX_ENUM_ITEMS {
        return Err(KinstrError::BadSize("enum item count", count as u64));
    }
    let mut info = EnumInfo::default();
    for i in 0..count {
        let at = i * item_size;
        let item = bytes
            .get(at..at + item_size)
            .ok_or(KinstrError::OutOfBounds("enum item"))?;
        let ty = le::u16_at(item, 0).unwrap_or(0);
        match ty {
            ENUM_BLOCK => {
                let b = EnumBlock {
                    block_type: item[8],
                    set: item[9],
                    num_instances: le::u16_at(item, 12).unwrap_or(0),
                    num_values: le::u16_at(item, 14).unwrap_or(0),
                    counter_mask: [le::u64_at(item, 16).unwrap_or(0), le::u64_at(item, 24).unwrap_or(0)],
                };
                if b.num_instances == 0 && b.num_values == 0 {
                    break;
                }
                if usize::from(b.num_values) > MAX_VALUES {
                    return Err(KinstrError::BadSize("values per block", u64::from(b.num_values)));
                }
                info.blocks.push(b);
            }
            ENUM_REQUEST => info
                .requests
                .push((le::u16_at(item, 8).unwrap_or(0), le::u32_at(item, 12).unwrap_or(0))),
            ENUM_SAMPLE_INFO => info.num_clock_domains = le::u32_at(item, 8).unwrap_or(0),
            _ => {}
        }
    }
    Ok(info)
}

/// The `SETUP` request list: manual mode, then an enable of every counter of each
/// enumerated primary-set block type we count, then a zeroed terminator item.
pub fn build_requests(info: &EnumInfo) -> Vec<u8> {
    let mut out = Vec::new();
    let mut item = [0u8; REQUEST_ITEM_SIZE];
    le::put_u16(&mut item, 0, REQUEST_MODE);
    item[8] = MODE_MANUAL;
    out.extend_from_slice(&item);
    for b in &info.blocks {
        if BlockKind::from_kinstr(b.block_type).is_none() || b.set != SET_PRIMARY {
            continue;
        }
        let mut item = [0u8; REQUEST_ITEM_SIZE];
        le::put_u16(&mut item, 0, REQUEST_ENABLE);
        item[8] = b.block_type;
        item[9] = b.set;
        le::put_u64(&mut item, 16, u64::MAX);
        le::put_u64(&mut item, 24, u64::MAX);
        out.extend_from_slice(&item);
    }
    out.extend_from_slice(&[0u8; REQUEST_ITEM_SIZE]);
    out
}

/// A sample's own metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleInfo {
    pub timestamp_start_ns: u64,
    pub timestamp_end_ns: u64,
    pub seq: u64,
    /// The tag given with the command that took the sample.
    pub user_data: u64,
    pub flags: u32,
    pub num_clock_domains: u32,
    /// Cycles per clock domain over the sample (domain 0: the GPU top level).
    pub cycles: [u64; MAX_CLOCK_DOMAINS],
}

/// What [`parse_sample`] needs of the GPU and the enumeration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleShape {
    pub item_size: usize,
    pub values_per_kind: [u16; 4],
    pub core_mask: u64,
    pub l2_slices: u32,
}

/// Walks a sample's metadata list at `offset` of the sample memory `mem` and adds every
/// counted block to `totals`. Shader-core blocks are kept by physical core index: a block
/// whose index is not in the core mask, or that the kernel marks unavailable, is skipped.
/// Values are `u64` arrays at `values_offset` of `mem`; their first 4 slots are the header.
pub fn parse_sample(
    mem: &[u8],
    offset: usize,
    shape: &SampleShape,
    totals: &mut Totals,
) -> Result<SampleInfo, KinstrError> {
    let size = shape.item_size;
    if !(MIN_META_ITEM_SIZE..=4096).contains(&size) {
        return Err(KinstrError::BadSize("metadata item size", size as u64));
    }
    let mut sample = None;
    let (mut clocks, mut num_domains) = ([0u64; MAX_CLOCK_DOMAINS], 0u32);
    for i in 0..MAX_META_ITEMS {
        let at = i
            .checked_mul(size)
            .and_then(|d| offset.checked_add(d))
            .ok_or(KinstrError::OutOfBounds("metadata item"))?;
        let item = at
            .checked_add(size)
            .and_then(|end| mem.get(at..end))
            .ok_or(KinstrError::OutOfBounds("metadata item"))?;
        match le::u16_at(item, 0).unwrap_or(0) {
            TYPE_NONE => {
                let s: SampleInfo = sample.ok_or(KinstrError::Malformed("has no sample item"))?;
                return Ok(SampleInfo {
                    num_clock_domains: num_domains,
                    cycles: clocks,
                    ..s
                });
            }
            META_SAMPLE => {
                sample = Some(SampleInfo {
                    timestamp_start_ns: le::u64_at(item, 8).unwrap_or(0),
                    timestamp_end_ns: le::u64_at(item, 16).unwrap_or(0),
                    seq: le::u64_at(item, 24).unwrap_or(0),
                    user_data: le::u64_at(item, 32).unwrap_or(0),
                    flags: le::u32_at(item, 40).unwrap_or(0),
                    ..SampleInfo::default()
                });
            }
            META_CLOCK => {
                num_domains = le::u32_at(item, 8).unwrap_or(0).min(MAX_CLOCK_DOMAINS as u32);
                for (d, c) in clocks.iter_mut().enumerate().take(num_domains as usize) {
                    *c = le::u64_at(item, 16 + d * 8).unwrap_or(0);
                }
            }
            META_BLOCK => add_block(mem, item, shape, totals)?,
            _ => {}
        }
    }
    Err(KinstrError::Malformed("has no end"))
}

fn add_block(mem: &[u8], item: &[u8], shape: &SampleShape, totals: &mut Totals) -> Result<(), KinstrError> {
    let Some(kind) = BlockKind::from_kinstr(item[8]) else {
        return Ok(());
    };
    let (idx, set, state) = (u32::from(item[9]), item[10], le::u32_at(item, 12).unwrap_or(0));
    if set != SET_PRIMARY || state & BLOCK_STATE_UNAVAILABLE != 0 {
        return Ok(());
    }
    let present = match kind {
        BlockKind::ShaderCore => idx < 64 && shape.core_mask & (1u64 << idx) != 0,
        BlockKind::Memory => idx < shape.l2_slices,
        _ => idx == 0,
    };
    if !present {
        return Ok(());
    }
    let n = usize::from(shape.values_per_kind[kind as usize]).min(MAX_VALUES);
    let at = le::u32_at(item, 16).unwrap_or(0) as usize;
    let values = at
        .checked_add(n * 8)
        .and_then(|end| mem.get(at..end))
        .ok_or(KinstrError::OutOfBounds("block values"))?;
    totals.add_block(kind, n, |i| le::u64_at(values, i * 8).unwrap_or(0));
    Ok(())
}

/// A setup or read failure, with the errno when the kernel gave one.
#[derive(Debug)]
pub struct KinstrFailure {
    pub what: String,
    pub errno: Option<i32>,
}

impl KinstrFailure {
    fn io(what: &str, e: &io::Error) -> Self {
        KinstrFailure {
            what: format!("{what}: {e}"),
            errno: e.raw_os_error(),
        }
    }

    fn parse(e: KinstrError) -> Self {
        KinstrFailure {
            what: e.to_string(),
            errno: None,
        }
    }
}

impl fmt::Display for KinstrFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

/// Enumerates the kernel's block types (two calls: sizes, then items).
pub fn enum_info(sys: &mut dyn Sys, kbase: Fd) -> Result<EnumInfo, KinstrFailure> {
    let mut arg = [0u8; ENUM_INFO_SIZE];
    let empty = UserBuffer {
        bytes: &mut [],
        ptr_at: 8,
        links_at: &[],
    };
    sys.ioctl(kbase, ENUM_INFO, IoctlArg::StructWithBuffer(&mut arg, empty))
        .map_err(|e| KinstrFailure::io("KINSTR_PRFCNT_ENUM_INFO", &e))?;
    let size = le::u32_at(&arg, 0).unwrap_or(0) as usize;
    let count = le::u32_at(&arg, 4).unwrap_or(0) as usize;
    if !(MIN_ENUM_ITEM_SIZE..=4096).contains(&size) || count == 0 || count > MAX_ENUM_ITEMS {
        return Err(KinstrFailure::parse(KinstrError::BadSize(
            "enum list",
            (size * count) as u64,
        )));
    }
    let mut list = vec![0u8; size * count];
    let buf = UserBuffer {
        bytes: &mut list,
        ptr_at: 8,
        links_at: &[],
    };
    sys.ioctl(kbase, ENUM_INFO, IoctlArg::StructWithBuffer(&mut arg, buf))
        .map_err(|e| KinstrFailure::io("KINSTR_PRFCNT_ENUM_INFO", &e))?;
    parse_enum(&list, size, count).map_err(KinstrFailure::parse)
}

/// An open kinstr_prfcnt sample fd and its mapping.
#[derive(Debug)]
pub struct KinstrReader {
    fd: Fd,
    map: MapId,
    pub mmap_len: usize,
    pub item_size: usize,
    pub values_per_kind: [u16; 4],
}

fn command(sys: &mut dyn Sys, fd: Fd, cmd: u16, user_data: u64) -> io::Result<i32> {
    let mut arg = [0u8; CMD_SIZE];
    le::put_u16(&mut arg, 0, cmd);
    le::put_u64(&mut arg, 8, user_data);
    sys.ioctl(fd, CMD, IoctlArg::Struct(&mut arg))
}

impl KinstrReader {
    /// Sets up a manual-mode session over every enumerated counter, maps it and starts it.
    pub fn open(sys: &mut dyn Sys, kbase: Fd, info: &EnumInfo) -> Result<Self, KinstrFailure> {
        let mut requests = build_requests(info);
        let count = (requests.len() / REQUEST_ITEM_SIZE) as u32;
        let mut arg = [0u8; SETUP_SIZE];
        le::put_u32(&mut arg, 0, count);
        le::put_u32(&mut arg, 4, REQUEST_ITEM_SIZE as u32);
        let buf = UserBuffer {
            bytes: &mut requests,
            ptr_at: 8,
            links_at: &[],
        };
        let fd = sys
            .ioctl_fd(kbase, SETUP, IoctlArg::StructWithBuffer(&mut arg, buf))
            .map_err(|e| KinstrFailure::io("KINSTR_PRFCNT_SETUP", &e))?;
        let item_size = le::u32_at(&arg, 0).unwrap_or(0) as usize;
        let mmap_len = le::u32_at(&arg, 4).unwrap_or(0) as usize;
        let checked = if !(MIN_META_ITEM_SIZE..=4096).contains(&item_size) {
            Err(KinstrError::BadSize("metadata item size", item_size as u64))
        } else if mmap_len == 0 || mmap_len > MAX_MMAP_BYTES {
            Err(KinstrError::BadSize("mapping size", mmap_len as u64))
        } else {
            Ok(())
        };
        if let Err(e) = checked {
            sys.close(fd);
            return Err(KinstrFailure::parse(e));
        }
        let map = match sys.mmap(fd, mmap_len, 0) {
            Ok(m) => m,
            Err(e) => {
                sys.close(fd);
                return Err(KinstrFailure::io("mmap of the kinstr_prfcnt buffer", &e));
            }
        };
        let reader = KinstrReader {
            fd,
            map,
            mmap_len,
            item_size,
            values_per_kind: info.values_per_kind(),
        };
        if let Err(e) = command(sys, fd, CMD_START, 0) {
            reader.close(sys);
            return Err(KinstrFailure::io("kinstr_prfcnt START", &e));
        }
        Ok(reader)
    }

    /// Takes a sample tagged `user_data`, copies the sample memory into `mem`, parses it
    /// into `totals` and gives the sample back.
    pub fn sample(
        &mut self,
        sys: &mut dyn Sys,
        user_data: u64,
        core_mask: u64,
        l2_slices: u32,
        mem: &mut Vec<u8>,
        totals: &mut Totals,
    ) -> Result<SampleInfo, KinstrFailure> {
        command(sys, self.fd, CMD_SAMPLE_SYNC, user_data).map_err(|e| KinstrFailure::io("kinstr_prfcnt SAMPLE", &e))?;
        let mut access = [0u8; ACCESS_SIZE];
        sys.ioctl(self.fd, GET_SAMPLE, IoctlArg::Struct(&mut access))
            .map_err(|e| KinstrFailure::io("kinstr_prfcnt GET_SAMPLE", &e))?;
        let offset = le::u64_at(&access, 8).unwrap_or(u64::MAX);
        mem.resize(self.mmap_len, 0);
        let parsed = match sys.read_mapped(self.map, 0, mem) {
            Ok(()) => {
                let shape = SampleShape {
                    item_size: self.item_size,
                    values_per_kind: self.values_per_kind,
                    core_mask,
                    l2_slices,
                };
                usize::try_from(offset)
                    .map_err(|_| KinstrError::OutOfBounds("metadata offset"))
                    .and_then(|o| parse_sample(mem, o, &shape, totals))
                    .map_err(KinstrFailure::parse)
            }
            Err(e) => Err(KinstrFailure::io("reading the kinstr_prfcnt buffer", &e)),
        };
        // The sample goes back whatever it held, or the kernel runs out of buffers.
        let put = sys.ioctl(self.fd, PUT_SAMPLE, IoctlArg::Struct(&mut access));
        let info = parsed?;
        put.map_err(|e| KinstrFailure::io("kinstr_prfcnt PUT_SAMPLE", &e))?;
        Ok(info)
    }

    /// Stops the session, unmaps and closes.
    pub fn close(self, sys: &mut dyn Sys) {
        let _ = command(sys, self.fd, CMD_STOP, 0);
        sys.munmap(self.map);
        sys.close(self.fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_published_values() {
        assert_eq!(ENUM_INFO, 0xC010_8038);
        assert_eq!(SETUP, 0xC010_8039);
        assert_eq!(CMD, 0x4010_BF00);
        assert_eq!(GET_SAMPLE, 0x8010_BF01);
        assert_eq!(PUT_SAMPLE, 0x4010_BF10);
        assert_eq!(
            (REQUEST_MODE, REQUEST_ENABLE, META_SAMPLE, META_BLOCK),
            (0x1000, 0x1001, 0x2000, 0x2002)
        );
    }

    fn enum_item(ty: u16, f: impl FnOnce(&mut [u8])) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        le::put_u16(&mut b, 0, ty);
        f(&mut b);
        b
    }

    #[test]
    fn enum_list_ends_at_the_empty_block_item() {
        let mut list = Vec::new();
        list.extend(enum_item(ENUM_BLOCK, |b| {
            b[8] = 3;
            le::put_u16(b, 12, 8);
            le::put_u16(b, 14, 64);
        }));
        list.extend(enum_item(ENUM_SAMPLE_INFO, |b| le::put_u32(b, 8, 2)));
        list.extend(enum_item(ENUM_BLOCK, |_| {}));
        list.extend(enum_item(ENUM_BLOCK, |b| le::put_u16(b, 14, 64)));
        let info = parse_enum(&list, 32, 4).unwrap();
        assert_eq!(info.blocks.len(), 1);
        assert_eq!(info.num_clock_domains, 2);
        assert_eq!(info.values_per_kind(), [0, 0, 0, 64]);
        assert!(parse_enum(&list[..40], 32, 2).is_err());
        assert!(parse_enum(&list, 8, 4).is_err());
        // mode + one enable + terminator
        assert_eq!(build_requests(&info).len(), 3 * REQUEST_ITEM_SIZE);
    }

    #[test]
    fn garbage_metadata_gives_errors() {
        let shape = SampleShape {
            item_size: 48,
            values_per_kind: [64; 4],
            core_mask: 1,
            l2_slices: 1,
        };
        let mut t = Totals::default();
        assert!(parse_sample(&[0u8; 48], 0, &shape, &mut t).is_err());
        assert!(parse_sample(&[0u8; 48], usize::MAX, &shape, &mut t).is_err());
        let mut mem = vec![0u8; 96];
        le::put_u16(&mut mem, 0, META_BLOCK);
        mem[8] = 0;
        le::put_u32(&mut mem, 16, u32::MAX);
        assert_eq!(
            parse_sample(&mem, 0, &shape, &mut t),
            Err(KinstrError::OutOfBounds("block values"))
        );
    }
}
