//! A fake kbase driver (`/dev/mali0`) for a Mali-G76-like GPU, built from the documented
//! uAPI layouts (kbase `mali_kbase_ioctl.h`, `mali_kbase_hwcnt_reader.h`) rather than from
//! the code under test: request numbers are the published values, structs are laid out by
//! hand here.
//!
//! The GPU: shader cores 0, 1, 2, 4, 5, 7 (mask 0b1011_0111, so slots 3 and 6 of a v5 dump
//! are unused and hold poison), 2 L2 slices, a 16-byte bus, 500 MHz. Dump `k` (1, 2, ...;
//! vinstr's priming dump is 0) holds the values of [`value`], and spans
//! `[T0 + SPAN * (k - 1), T0 + SPAN * k]`.

#![allow(dead_code)]

use framescope_collectors::sys::fake::{FakeFile, IoctlReply};
use framescope_collectors::sys::{Access, IoctlArg};
use std::io;
use std::sync::{Arc, Mutex};

pub const CORE_MASK: u64 = 0b1011_0111;
pub const L2_SLICES: usize = 2;
pub const SLOTS: usize = 8;
pub const T0: u64 = 1_000_000_000;
pub const SPAN_NS: u64 = 16_000_000;
/// 500 MHz over 16 ms.
pub const CYCLES: u64 = 8_000_000;
pub const POISON: u32 = 0xDEAD_0000;
pub const BLOCK_BYTES: usize = 256;
/// JM, tiler, 2 L2 slices, 8 shader-core slots.
pub const DUMP_BYTES: usize = (2 + L2_SLICES + SLOTS) * BLOCK_BYTES;

// Published request numbers (vendor-counter-backends.md, Appendix A).
const VERSION_CHECK_JM: u64 = 0xC004_8000;
const VERSION_CHECK_CSF: u64 = 0xC004_8034;
const SET_FLAGS: u64 = 0x4004_8001;
const GET_GPUPROPS: u64 = 0x4010_8003;
const HWCNT_READER_SETUP: u64 = 0x4014_8008;
const ENUM_INFO: u64 = 0xC010_8038;
const KINSTR_SETUP: u64 = 0xC010_8039;
const GET_HWVER: u64 = 0x8004_BE00;
const GET_BUFFER_SIZE: u64 = 0x8004_BE01;
const DUMP: u64 = 0x4004_BE10;
const GET_BUFFER_WITH_CYCLES: u64 = 0x8020_BE20;
const PUT_BUFFER_WITH_CYCLES: u64 = 0x4020_BE21;
const SET_INTERVAL: u64 = 0x4004_BE30;
const GET_API_VERSION_WITH_FEATURES: u64 = 0x4008_BEFF;
const KINSTR_CMD: u64 = 0x4010_BF00;
const GET_SAMPLE: u64 = 0x8010_BF01;
const PUT_SAMPLE: u64 = 0x4010_BF10;

/// Block kinds of a v5 dump / kinstr_prfcnt block types.
pub const FE: u8 = 0;
pub const TILER: u8 = 1;
pub const MEMORY: u8 = 2;
pub const SHADER: u8 = 3;

/// The value of counter `index` of block `kind`, instance `inst` (L2 slice or physical
/// core), in dump `k`; 0 for counters not listed.
pub fn value(kind: u8, inst: usize, index: usize, k: u64) -> u64 {
    let i = inst as u64 + 1;
    match (kind, index) {
        (FE, 6) => 800_000 * k,  // GPU_ACTIVE
        (FE, 9) => 100,          // JS0_TASKS
        (FE, 10) => 600_000 * k, // JS0_ACTIVE
        (FE, 18) => 200_000 * k, // JS1_ACTIVE
        (TILER, 4) => 300_000 * k,
        (TILER, 6) => 9_700,
        (TILER, 7) => 200,
        (TILER, 8) => 100,
        (TILER, 11) => 4_000,
        (MEMORY, 26) => 1_000 * i * k,   // L2_READ_LOOKUP
        (MEMORY, 27) => 500 * i,         // L2_WRITE_LOOKUP
        (MEMORY, 29) => 250 * i,         // L2_EXT_READ
        (MEMORY, 32) => 10_000 * i * k,  // L2_EXT_READ_BEATS
        (MEMORY, 47) => 4_000 * i,       // L2_EXT_WRITE_BEATS
        (SHADER, 4) => 50_000 * i,       // FRAG_ACTIVE
        (SHADER, 22) => 10_000 * i,      // COMPUTE_ACTIVE
        (SHADER, 26) => 100_000 * i * k, // EXEC_CORE_ACTIVE
        _ => 0,
    }
}

/// How the fake kernel misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quirk {
    None,
    /// Setup (vinstr or kinstr_prfcnt) fails with this errno.
    RefuseSetup(i32),
    /// vinstr: a buffer size too small for the GPU's layout.
    ShortBuffers,
    /// vinstr: GET_BUFFER names a buffer outside the ring.
    BadBufferIndex,
    /// kinstr_prfcnt: GET_SAMPLE gives a metadata offset outside the mapping.
    BadMetadataOffset,
    /// kinstr_prfcnt: a block's values lie outside the mapping.
    BadValuesOffset,
    /// kinstr_prfcnt: SETUP announces 16-byte metadata items.
    TinyMetadataItems,
    /// GET_GPUPROPS fills only half of the size it announced.
    TruncatedProps,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    Jm,
    Csf,
}

/// What the fake saw, for tests to check.
#[derive(Debug, Default)]
pub struct Seen {
    /// `user_data` of every kinstr_prfcnt SAMPLE command.
    pub sample_tags: Vec<u64>,
    /// Request list accepted by kinstr_prfcnt SETUP: (mode, enabled block types).
    pub kinstr_setup: Option<(u8, Vec<u8>)>,
    pub set_flags: Option<u32>,
    /// Buffers or samples handed out and not yet given back.
    pub outstanding: i32,
}

#[derive(Clone)]
pub struct Model {
    pub flavour: Flavour,
    pub version: (u16, u16),
    pub quirk: Quirk,
    pub seen: Arc<Mutex<Seen>>,
}

impl Model {
    pub fn jm() -> Self {
        Model {
            flavour: Flavour::Jm,
            version: (11, 30),
            quirk: Quirk::None,
            seen: Arc::default(),
        }
    }

    pub fn csf() -> Self {
        Model {
            flavour: Flavour::Csf,
            version: (1, 20),
            ..Model::jm()
        }
    }

    pub fn quirk(mut self, q: Quirk) -> Self {
        self.quirk = q;
        self
    }

    /// The node to register at `/dev/mali0`.
    pub fn node(&self) -> impl FnMut(Access) -> io::Result<Box<dyn FakeFile>> + Send + 'static {
        let m = self.clone();
        move |_| Ok(Box::new(Kbase { m: m.clone() }) as Box<dyn FakeFile>)
    }
}

fn err(n: i32) -> io::Error {
    io::Error::from_raw_os_error(n)
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// The GPU property blob: `u32 key = id << 2 | size code`, then the value.
pub fn props_blob() -> Vec<u8> {
    let mut b = Vec::new();
    let mut prop = |id: u32, code: u32, v: u64| {
        b.extend_from_slice(&((id << 2) | code).to_le_bytes());
        let n = 1usize << code;
        b.extend_from_slice(&v.to_le_bytes()[..n]);
    };
    prop(1, 1, 0x7211); // PRODUCT_ID
    prop(15, 0, L2_SLICES as u64); // L2_NUM_L2_SLICES
    prop(29, 2, 0x0700_0206); // RAW_L2_FEATURES: 1 << 7 bits = 16 bytes
    prop(55, 3, 0x7211_0000); // RAW_GPU_ID: GPU_ID2_MODEL_MAKE(7, 1), G76
    prop(62, 0, 1); // COHERENCY_NUM_CORE_GROUPS
    prop(64, 3, CORE_MASK); // COHERENCY_GROUP_0
    b
}

/// One v5 dump (u32 counters) for dump `k`, unused core slots poisoned.
pub fn v5_dump(k: u64) -> Vec<u8> {
    let mut d = vec![0u8; DUMP_BYTES];
    let mut block = |slot: usize, kind: u8, inst: usize, poison: bool| {
        let b = &mut d[slot * BLOCK_BYTES..(slot + 1) * BLOCK_BYTES];
        put32(b, 8, 0xFFFF_FFFF); // PRFCNT_EN: every counter group
        for i in 4..64 {
            let v = if poison { POISON } else { value(kind, inst, i, k) as u32 };
            put32(b, i * 4, v);
        }
    };
    block(0, FE, 0, false);
    block(1, TILER, 0, false);
    for s in 0..L2_SLICES {
        block(2 + s, MEMORY, s, false);
    }
    for c in 0..SLOTS {
        block(2 + L2_SLICES + c, SHADER, c, CORE_MASK & (1 << c) == 0);
    }
    d
}

struct Kbase {
    m: Model,
}

impl FakeFile for Kbase {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        let m = &self.m;
        match (request, arg) {
            (VERSION_CHECK_JM, IoctlArg::Struct(s)) => {
                if m.flavour == Flavour::Csf {
                    return Err(err(libc::EPERM));
                }
                put16(s, 0, m.version.0);
                put16(s, 2, m.version.1);
                Ok(IoctlReply::Value(0))
            }
            (VERSION_CHECK_CSF, IoctlArg::Struct(s)) => {
                if m.flavour == Flavour::Jm {
                    return Err(err(libc::ENOTTY));
                }
                put16(s, 0, m.version.0);
                put16(s, 2, m.version.1);
                Ok(IoctlReply::Value(0))
            }
            (SET_FLAGS, IoctlArg::Struct(s)) => {
                m.seen.lock().unwrap().set_flags = Some(get32(s, 0));
                Ok(IoctlReply::Value(0))
            }
            (GET_GPUPROPS, IoctlArg::StructWithBuffer(s, b)) => {
                let blob = props_blob();
                if b.bytes.is_empty() {
                    return Ok(IoctlReply::Value(blob.len() as i32));
                }
                if get32(s, 8) as usize != blob.len() {
                    return Err(err(libc::EINVAL));
                }
                let n = if m.quirk == Quirk::TruncatedProps {
                    blob.len() / 2
                } else {
                    blob.len()
                };
                b.bytes[..n].copy_from_slice(&blob[..n]);
                Ok(IoctlReply::Value(n as i32))
            }
            (HWCNT_READER_SETUP, IoctlArg::Struct(s)) => {
                if let Quirk::RefuseSetup(e) = m.quirk {
                    return Err(err(e));
                }
                let count = get32(s, 0) as usize;
                if count == 0 || (4..20).step_by(4).any(|at| get32(s, at) == 0) {
                    return Err(err(libc::EINVAL));
                }
                Ok(IoctlReply::NewFile(Box::new(Vinstr::new(m.clone(), count))))
            }
            (ENUM_INFO, IoctlArg::StructWithBuffer(s, b)) => {
                let items = enum_items();
                if b.bytes.is_empty() {
                    put32(s, 0, 32);
                    put32(s, 4, (items.len() / 32) as u32);
                } else {
                    b.bytes.copy_from_slice(&items);
                }
                Ok(IoctlReply::Value(0))
            }
            (KINSTR_SETUP, IoctlArg::StructWithBuffer(s, b)) => {
                if let Quirk::RefuseSetup(e) = m.quirk {
                    return Err(err(e));
                }
                let (count, size) = (get32(s, 0) as usize, get32(s, 4) as usize);
                if size != 32 || b.bytes.len() != count * size {
                    return Err(err(libc::EINVAL));
                }
                let list = &b.bytes[..];
                // First the mode, last a zeroed item, enables in between.
                if get16(list, 0) != 0x1000 || list[count * 32 - 32..].iter().any(|&x| x != 0) {
                    return Err(err(libc::EINVAL));
                }
                let mut enabled = Vec::new();
                for i in 1..count - 1 {
                    let it = &list[i * 32..i * 32 + 32];
                    if get16(it, 0) != 0x1001 {
                        return Err(err(libc::EINVAL));
                    }
                    enabled.push(it[8]);
                }
                m.seen.lock().unwrap().kinstr_setup = Some((list[8], enabled));
                let item = if m.quirk == Quirk::TinyMetadataItems { 16 } else { 48 };
                put32(s, 0, item);
                put32(s, 4, KINSTR_MAP as u32);
                Ok(IoctlReply::NewFile(Box::new(Kinstr {
                    m: m.clone(),
                    mem: vec![0; KINSTR_MAP],
                    k: 0,
                })))
            }
            _ => Err(err(libc::ENOTTY)),
        }
    }
}

struct Vinstr {
    m: Model,
    ring: Vec<u8>,
    count: usize,
    dumps: u64,
    ready: Option<(u64, usize)>,
    out: Option<usize>,
}

impl Vinstr {
    fn new(m: Model, count: usize) -> Self {
        Vinstr {
            m,
            ring: vec![0; DUMP_BYTES * count],
            count,
            dumps: 0,
            ready: None,
            out: None,
        }
    }
}

impl FakeFile for Vinstr {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        match (request, arg) {
            (GET_API_VERSION_WITH_FEATURES, IoctlArg::Struct(s)) => {
                put32(s, 0, 1);
                put32(s, 4, 1); // cycles_top
            }
            (GET_HWVER, IoctlArg::Struct(s)) => put32(s, 0, 5),
            (GET_BUFFER_SIZE, IoctlArg::Struct(s)) => {
                let n = if self.m.quirk == Quirk::ShortBuffers {
                    100
                } else {
                    DUMP_BYTES
                };
                put32(s, 0, n as u32);
            }
            (SET_INTERVAL, IoctlArg::Int(0)) => {}
            (DUMP, IoctlArg::Int(_)) => {
                let k = self.dumps;
                self.dumps += 1;
                let idx = (k as usize) % self.count;
                self.ring[idx * DUMP_BYTES..(idx + 1) * DUMP_BYTES].copy_from_slice(&v5_dump(k));
                self.ready = Some((k, idx));
            }
            (GET_BUFFER_WITH_CYCLES, IoctlArg::Struct(s)) => {
                let (k, idx) = self.ready.take().ok_or_else(|| err(libc::EAGAIN))?;
                put64(s, 0, T0 + SPAN_NS * k);
                put32(s, 8, 0); // manual
                let idx = if self.m.quirk == Quirk::BadBufferIndex { 99 } else { idx };
                put32(s, 12, idx as u32);
                put64(s, 16, CYCLES);
                put64(s, 24, CYCLES / 2);
                self.out = Some(idx);
                self.m.seen.lock().unwrap().outstanding += 1;
            }
            (PUT_BUFFER_WITH_CYCLES, IoctlArg::Struct(s)) => {
                if self.out.take() != Some(get32(s, 12) as usize) {
                    return Err(err(libc::EINVAL));
                }
                self.m.seen.lock().unwrap().outstanding -= 1;
            }
            _ => return Err(err(libc::ENOTTY)),
        }
        Ok(IoctlReply::Value(0))
    }

    fn readable(&mut self) -> bool {
        self.ready.is_some()
    }

    fn mapped(&mut self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let at = offset as usize;
        out.copy_from_slice(&self.ring[at..at + out.len()]);
        Ok(())
    }

    fn map_len(&self) -> u64 {
        self.ring.len() as u64
    }
}

/// ENUM_INFO items (32 bytes each): the four block types, two requests, the sample info,
/// and the empty BLOCK item that ends the list.
pub fn enum_items() -> Vec<u8> {
    let mut out = Vec::new();
    let mut item = |f: &dyn Fn(&mut [u8])| {
        let mut b = [0u8; 32];
        f(&mut b);
        out.extend_from_slice(&b);
    };
    for (ty, inst) in [
        (FE, 1u16),
        (TILER, 1),
        (MEMORY, L2_SLICES as u16),
        (SHADER, SLOTS as u16),
    ] {
        item(&|b| {
            put16(b, 0, 0x0000);
            b[8] = ty;
            put16(b, 12, inst);
            put16(b, 14, 64);
            put64(b, 16, u64::MAX);
        });
    }
    item(&|b| {
        put16(b, 0, 0x0001);
        put16(b, 8, 0x1000);
        put32(b, 12, 1);
    });
    item(&|b| {
        put16(b, 0, 0x0001);
        put16(b, 8, 0x1001);
        put32(b, 12, 1);
    });
    item(&|b| {
        put16(b, 0, 0x0002);
        put32(b, 8, 2);
    });
    item(&|_| {});
    out
}

/// kinstr_prfcnt mapping: metadata items at 0, block values from `VALUES_AT`.
pub const KINSTR_MAP: usize = 4096 + 12 * 512;
const VALUES_AT: usize = 4096;

struct Kinstr {
    m: Model,
    mem: Vec<u8>,
    k: u64,
}

impl Kinstr {
    /// Writes sample `k` tagged `user_data`: SAMPLE, CLOCK, one BLOCK per instance (core
    /// slots 3 and 6 reported unavailable, with poison values), the end item.
    fn write_sample(&mut self, k: u64, user_data: u64) {
        self.mem.fill(0);
        let mut items: Vec<[u8; 48]> = Vec::new();
        let mut it = [0u8; 48];
        put16(&mut it, 0, 0x2000);
        put64(&mut it, 8, T0 + SPAN_NS * (k - 1));
        put64(&mut it, 16, T0 + SPAN_NS * k);
        put64(&mut it, 24, k);
        put64(&mut it, 32, user_data);
        items.push(it);
        let mut it = [0u8; 48];
        put16(&mut it, 0, 0x2001);
        put32(&mut it, 8, 2);
        put64(&mut it, 16, CYCLES);
        put64(&mut it, 24, CYCLES / 2);
        items.push(it);
        let mut blocks = vec![(FE, 0usize), (TILER, 0)];
        blocks.extend((0..L2_SLICES).map(|s| (MEMORY, s)));
        blocks.extend((0..SLOTS).map(|c| (SHADER, c)));
        for (n, (kind, inst)) in blocks.into_iter().enumerate() {
            let absent = kind == SHADER && CORE_MASK & (1 << inst) == 0;
            let at = VALUES_AT + n * 512;
            for i in 4..64 {
                let v = if absent {
                    u64::from(POISON)
                } else {
                    value(kind, inst, i, k)
                };
                put64(&mut self.mem, at + i * 8, v);
            }
            let mut it = [0u8; 48];
            put16(&mut it, 0, 0x2002);
            it[8] = kind;
            it[9] = inst as u8;
            put32(&mut it, 12, if absent { 1 << 3 } else { 1 << 0 });
            let values_at = if self.m.quirk == Quirk::BadValuesOffset {
                0xFFFF_0000
            } else {
                at as u32
            };
            put32(&mut it, 16, values_at);
            items.push(it);
        }
        for (i, it) in items.iter().enumerate() {
            self.mem[i * 48..i * 48 + 48].copy_from_slice(it);
        }
    }
}

impl FakeFile for Kinstr {
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> io::Result<IoctlReply> {
        match (request, arg) {
            (KINSTR_CMD, IoctlArg::Struct(s)) => match get16(s, 0) {
                1 | 2 => {}
                3 => {
                    let tag = u64::from_le_bytes(s[8..16].try_into().unwrap());
                    self.k += 1;
                    self.write_sample(self.k, tag);
                    self.m.seen.lock().unwrap().sample_tags.push(tag);
                }
                _ => return Err(err(libc::EINVAL)),
            },
            (GET_SAMPLE, IoctlArg::Struct(s)) => {
                put64(s, 0, self.k);
                let off = if self.m.quirk == Quirk::BadMetadataOffset {
                    1 << 40
                } else {
                    0
                };
                put64(s, 8, off);
                self.m.seen.lock().unwrap().outstanding += 1;
            }
            (PUT_SAMPLE, IoctlArg::Struct(_)) => self.m.seen.lock().unwrap().outstanding -= 1,
            _ => return Err(err(libc::ENOTTY)),
        }
        Ok(IoctlReply::Value(0))
    }

    fn mapped(&mut self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let at = offset as usize;
        out.copy_from_slice(&self.mem[at..at + out.len()]);
        Ok(())
    }

    fn map_len(&self) -> u64 {
        self.mem.len() as u64
    }
}
