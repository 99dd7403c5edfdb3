//! The vinstr hardware-counter reader of JM kbase (and CSF before 1.21): set up with
//! `KBASE_IOCTL_HWCNT_READER_SETUP` on `/dev/mali0`, which returns a reader fd whose ioctls
//! (magic 0xBE) dump, hand out and take back the buffers of a mapped ring (kbase uAPI
//! `mali_kbase_hwcnt_reader.h`; libGPUCounters `hwcnt/sampler/vinstr/*`). Each buffer is one
//! v5 dump (see [`super::layout`]).

use super::kbase_ioctl::KBASE_TYPE;
use super::le;
use crate::sys::ioc::{ior, iow};
use crate::sys::{Fd, IoctlArg, MapId, Sys};
use std::fmt;
use std::io;

/// `struct kbase_ioctl_hwcnt_reader_setup { __u32 buffer_count; __u32 fe_bm; __u32
/// shader_bm; __u32 tiler_bm; __u32 mmu_l2_bm; }`.
pub const SETUP_SIZE: usize = 20;
pub const HWCNT_READER_SETUP: u64 = iow(KBASE_TYPE, 0x08, SETUP_SIZE);

/// The reader fd's ioctl type.
pub const READER_TYPE: u8 = 0xBE;
pub const GET_HWVER: u64 = ior(READER_TYPE, 0x00, 4);
pub const GET_BUFFER_SIZE: u64 = ior(READER_TYPE, 0x01, 4);
pub const DUMP: u64 = iow(READER_TYPE, 0x10, 4);
pub const CLEAR: u64 = iow(READER_TYPE, 0x11, 4);
/// `struct kbase_hwcnt_reader_metadata { __u64 timestamp; __u32 event_id; __u32 buffer_idx; }`.
pub const META_SIZE: usize = 16;
/// `struct kbase_hwcnt_reader_metadata_with_cycles`: the metadata, then
/// `struct kbase_hwcnt_reader_metadata_cycles { __u64 top; __u64 shader_cores; }`.
pub const META_WITH_CYCLES_SIZE: usize = 32;
pub const GET_BUFFER: u64 = ior(READER_TYPE, 0x20, META_SIZE);
pub const GET_BUFFER_WITH_CYCLES: u64 = ior(READER_TYPE, 0x20, META_WITH_CYCLES_SIZE);
pub const PUT_BUFFER: u64 = iow(READER_TYPE, 0x21, META_SIZE);
pub const PUT_BUFFER_WITH_CYCLES: u64 = iow(READER_TYPE, 0x21, META_WITH_CYCLES_SIZE);
pub const SET_INTERVAL: u64 = iow(READER_TYPE, 0x30, 4);
pub const GET_API_VERSION: u64 = iow(READER_TYPE, 0xFF, 4);
/// `struct kbase_hwcnt_reader_api_version { __u32 version; __u32 features; }`.
pub const GET_API_VERSION_WITH_FEATURES: u64 = iow(READER_TYPE, 0xFF, 8);
pub const FEATURE_CYCLES_TOP: u32 = 1 << 0;
pub const FEATURE_CYCLES_SHADER_CORE: u32 = 1 << 1;

/// Event id of a manual dump.
pub const EVENT_MANUAL: u32 = 0;
/// Ring buffers asked for; halved while the kernel answers `ENOMEM`.
pub const BUFFER_COUNT: u32 = 16;
/// The largest buffer accepted (a v5 dump of 16 L2 slices and 64 cores is 21 KiB).
pub const MAX_BUFFER_BYTES: usize = 1 << 20;
/// How long a dump may take to appear (kbase waits for the GPU synchronously; this only
/// bounds a broken kernel).
pub const POLL_MS: i32 = 100;

/// One buffer's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferMeta {
    /// Kernel time of the dump, ns.
    pub timestamp_ns: u64,
    pub event_id: u32,
    pub buffer_idx: u32,
    /// GPU top-level and shader-core clock cycles over the sample, when the kernel has the
    /// cycles feature.
    pub cycles_top: Option<u64>,
    pub cycles_shader_cores: Option<u64>,
}

/// Parses `GET_BUFFER` metadata (16 bytes, or 32 with cycles). Pure.
pub fn parse_meta(b: &[u8], with_cycles: bool) -> Option<BufferMeta> {
    Some(BufferMeta {
        timestamp_ns: le::u64_at(b, 0)?,
        event_id: le::u32_at(b, 8)?,
        buffer_idx: le::u32_at(b, 12)?,
        cycles_top: if with_cycles { Some(le::u64_at(b, 16)?) } else { None },
        cycles_shader_cores: if with_cycles { Some(le::u64_at(b, 24)?) } else { None },
    })
}

/// The setup argument: every counter group of every block enabled.
pub fn setup_arg(buffer_count: u32) -> [u8; SETUP_SIZE] {
    let mut a = [0u8; SETUP_SIZE];
    le::put_u32(&mut a, 0, buffer_count);
    for at in [4, 8, 12, 16] {
        le::put_u32(&mut a, at, u32::MAX);
    }
    a
}

/// A setup or read failure, with the errno when the kernel gave one.
#[derive(Debug)]
pub struct ReaderError {
    pub what: String,
    pub errno: Option<i32>,
}

impl ReaderError {
    fn io(what: &str, e: &io::Error) -> Self {
        ReaderError {
            what: format!("{what}: {e}"),
            errno: e.raw_os_error(),
        }
    }

    fn bad(what: String) -> Self {
        ReaderError { what, errno: None }
    }
}

impl fmt::Display for ReaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

/// An open vinstr reader: its fd and ring mapping.
#[derive(Debug)]
pub struct VinstrReader {
    fd: Fd,
    map: MapId,
    pub hwver: u32,
    pub buffer_size: usize,
    pub buffer_count: u32,
    pub with_cycles: bool,
}

fn read_u32_ioctl(sys: &mut dyn Sys, fd: Fd, request: u64) -> io::Result<u32> {
    let mut v = [0u8; 4];
    sys.ioctl(fd, request, IoctlArg::Struct(&mut v))?;
    Ok(u32::from_le_bytes(v))
}

impl VinstrReader {
    /// Sets up a manual-dump reader on an open, handshaken kbase fd.
    pub fn open(sys: &mut dyn Sys, kbase: Fd) -> Result<Self, ReaderError> {
        let mut count = BUFFER_COUNT;
        let fd = loop {
            let mut arg = setup_arg(count);
            match sys.ioctl_fd(kbase, HWCNT_READER_SETUP, IoctlArg::Struct(&mut arg)) {
                Ok(fd) => break fd,
                Err(e) if e.raw_os_error() == Some(libc::ENOMEM) && count > 1 => count /= 2,
                Err(e) => return Err(ReaderError::io("HWCNT_READER_SETUP", &e)),
            }
        };
        match Self::configure(sys, fd, count) {
            Ok(r) => Ok(r),
            Err(e) => {
                sys.close(fd);
                Err(e)
            }
        }
    }

    fn configure(sys: &mut dyn Sys, fd: Fd, buffer_count: u32) -> Result<Self, ReaderError> {
        // The features variant is newer; a kernel without it has no cycle counts.
        let mut api = [0u8; 8];
        let features = match sys.ioctl(fd, GET_API_VERSION_WITH_FEATURES, IoctlArg::Struct(&mut api)) {
            Ok(_) => le::u32_at(&api, 4).unwrap_or(0),
            Err(_) => 0,
        };
        let hwver = read_u32_ioctl(sys, fd, GET_HWVER).map_err(|e| ReaderError::io("GET_HWVER", &e))?;
        if hwver < 5 {
            // v4 (T60x..T76x) orders the blocks differently; not handled.
            return Err(ReaderError::bad(format!(
                "hardware counter layout v{hwver} is not supported"
            )));
        }
        let size = read_u32_ioctl(sys, fd, GET_BUFFER_SIZE).map_err(|e| ReaderError::io("GET_BUFFER_SIZE", &e))?;
        let buffer_size = size as usize;
        if buffer_size == 0 || buffer_size > MAX_BUFFER_BYTES {
            return Err(ReaderError::bad(format!(
                "hwcnt reader buffer size {size} is not usable"
            )));
        }
        let ring = buffer_size
            .checked_mul(buffer_count as usize)
            .ok_or_else(|| ReaderError::bad("hwcnt ring size overflows".into()))?;
        let map = sys
            .mmap(fd, ring, 0)
            .map_err(|e| ReaderError::io("mmap of the hwcnt ring", &e))?;
        // 0: no periodic sampling; dumps only when asked.
        if let Err(e) = sys.ioctl(fd, SET_INTERVAL, IoctlArg::Int(0)) {
            sys.munmap(map);
            return Err(ReaderError::io("SET_INTERVAL", &e));
        }
        Ok(VinstrReader {
            fd,
            map,
            hwver,
            buffer_size,
            buffer_count,
            with_cycles: features & FEATURE_CYCLES_TOP != 0,
        })
    }

    /// Requests a manual dump, waits for it, copies its buffer into `out` (resized to the
    /// buffer size) and gives the buffer back.
    pub fn dump(&mut self, sys: &mut dyn Sys, out: &mut Vec<u8>) -> Result<BufferMeta, ReaderError> {
        sys.ioctl(self.fd, DUMP, IoctlArg::Int(0))
            .map_err(|e| ReaderError::io("hwcnt DUMP", &e))?;
        let ready = sys
            .poll_readable(self.fd, POLL_MS)
            .map_err(|e| ReaderError::io("poll of the hwcnt reader", &e))?;
        if !ready {
            return Err(ReaderError::bad("the hwcnt dump did not arrive".into()));
        }
        let (get, put, len) = if self.with_cycles {
            (GET_BUFFER_WITH_CYCLES, PUT_BUFFER_WITH_CYCLES, META_WITH_CYCLES_SIZE)
        } else {
            (GET_BUFFER, PUT_BUFFER, META_SIZE)
        };
        let mut meta = [0u8; META_WITH_CYCLES_SIZE];
        sys.ioctl(self.fd, get, IoctlArg::Struct(&mut meta[..len]))
            .map_err(|e| ReaderError::io("hwcnt GET_BUFFER", &e))?;
        let copied = self.copy(sys, &meta[..len], out);
        // The buffer goes back whatever its contents were, or the ring fills up.
        let put_result = sys.ioctl(self.fd, put, IoctlArg::Struct(&mut meta[..len]));
        let m = copied?;
        put_result.map_err(|e| ReaderError::io("hwcnt PUT_BUFFER", &e))?;
        Ok(m)
    }

    fn copy(&self, sys: &mut dyn Sys, meta: &[u8], out: &mut Vec<u8>) -> Result<BufferMeta, ReaderError> {
        let m = parse_meta(meta, self.with_cycles).ok_or_else(|| ReaderError::bad("short hwcnt metadata".into()))?;
        if m.buffer_idx >= self.buffer_count {
            return Err(ReaderError::bad(format!(
                "hwcnt buffer index {} outside the ring of {}",
                m.buffer_idx, self.buffer_count
            )));
        }
        out.resize(self.buffer_size, 0);
        let at = m.buffer_idx as usize * self.buffer_size;
        sys.read_mapped(self.map, at, out)
            .map_err(|e| ReaderError::io("reading the hwcnt buffer", &e))?;
        Ok(m)
    }

    /// Unmaps the ring and closes the reader fd.
    pub fn close(self, sys: &mut dyn Sys) {
        sys.munmap(self.map);
        sys.close(self.fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_published_values() {
        assert_eq!(HWCNT_READER_SETUP, 0x4014_8008);
        assert_eq!(GET_HWVER, 0x8004_BE00);
        assert_eq!(GET_BUFFER_SIZE, 0x8004_BE01);
        assert_eq!(DUMP, 0x4004_BE10);
        assert_eq!(CLEAR, 0x4004_BE11);
        assert_eq!(GET_BUFFER, 0x8010_BE20);
        assert_eq!(GET_BUFFER_WITH_CYCLES, 0x8020_BE20);
        assert_eq!(PUT_BUFFER, 0x4010_BE21);
        assert_eq!(PUT_BUFFER_WITH_CYCLES, 0x4020_BE21);
        assert_eq!(SET_INTERVAL, 0x4004_BE30);
        assert_eq!(GET_API_VERSION, 0x4004_BEFF);
        assert_eq!(GET_API_VERSION_WITH_FEATURES, 0x4008_BEFF);
    }

    #[test]
    fn metadata_parses_and_short_metadata_does_not() {
        let mut b = [0u8; 32];
        le::put_u64(&mut b, 0, 5_000);
        le::put_u32(&mut b, 12, 3);
        le::put_u64(&mut b, 16, 777);
        let m = parse_meta(&b, true).unwrap();
        assert_eq!((m.timestamp_ns, m.buffer_idx, m.cycles_top), (5_000, 3, Some(777)));
        assert_eq!(parse_meta(&b[..16], false).unwrap().cycles_top, None);
        assert!(parse_meta(&b[..16], true).is_none());
        assert!(parse_meta(&b[..15], false).is_none());
    }
}
