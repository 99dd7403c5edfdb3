//! The i915 perf uAPI (`include/uapi/drm/i915_drm.h`): opening a periodic OA stream with
//! `DRM_IOCTL_I915_PERF_OPEN`, the stream fd's ioctls, the two `GETPARAM`s the source needs,
//! the render timestamp read for calibration, and the framing of what `read()` returns.
//! Record parsing is pure and never panics (it is fuzzed).

use crate::sys::{ioc, Fd, IoctlArg, Sys, UserBuffer};
use std::io;

/// `DRM_COMMAND_BASE` (`drm.h`): driver ioctls are numbered from here.
const DRM_COMMAND_BASE: u8 = 0x40;

/// `struct drm_i915_perf_open_param { __u32 flags; __u32 num_properties; __u64
/// properties_ptr; }`: 16 bytes.
pub const PERF_OPEN_PARAM_SIZE: usize = 16;
/// `DRM_IOCTL_I915_PERF_OPEN = DRM_IOW(DRM_COMMAND_BASE + DRM_I915_PERF_OPEN (0x36),
/// struct drm_i915_perf_open_param)`.
pub const DRM_IOCTL_I915_PERF_OPEN: u64 = ioc::iow(b'd', DRM_COMMAND_BASE + 0x36, PERF_OPEN_PARAM_SIZE);

/// `struct drm_i915_getparam { __s32 param; int __user *value; }`: 16 bytes on LP64 (the
/// pointer is 8-aligned, after 4 bytes of padding).
pub const GETPARAM_SIZE: usize = 16;
/// `DRM_IOCTL_I915_GETPARAM = DRM_IOWR(DRM_COMMAND_BASE + DRM_I915_GETPARAM (0x06),
/// drm_i915_getparam_t)`.
pub const DRM_IOCTL_I915_GETPARAM: u64 = ioc::iowr(b'd', DRM_COMMAND_BASE + 0x06, GETPARAM_SIZE);

/// `struct drm_i915_reg_read { __u64 offset; __u64 val; }`: 16 bytes.
pub const REG_READ_SIZE: usize = 16;
/// `DRM_IOCTL_I915_REG_READ = DRM_IOWR(DRM_COMMAND_BASE + DRM_I915_REG_READ (0x31),
/// struct drm_i915_reg_read)`.
pub const DRM_IOCTL_I915_REG_READ: u64 = ioc::iowr(b'd', DRM_COMMAND_BASE + 0x31, REG_READ_SIZE);

/// Stream fd ioctls: `I915_PERF_IOCTL_ENABLE _IO('i', 0x0)`, `DISABLE _IO('i', 0x1)`,
/// `CONFIG _IO('i', 0x2)` (the metrics set id passed by value).
pub const I915_PERF_IOCTL_ENABLE: u64 = ioc::io(b'i', 0);
pub const I915_PERF_IOCTL_DISABLE: u64 = ioc::io(b'i', 1);
pub const I915_PERF_IOCTL_CONFIG: u64 = ioc::io(b'i', 2);

/// `drm_i915_perf_open_param.flags`.
pub const I915_PERF_FLAG_FD_CLOEXEC: u32 = 1 << 0;
pub const I915_PERF_FLAG_FD_NONBLOCK: u32 = 1 << 1;
pub const I915_PERF_FLAG_DISABLED: u32 = 1 << 2;

/// `enum drm_i915_perf_property_id`.
pub const PROP_SAMPLE_OA: u64 = 2;
pub const PROP_OA_METRICS_SET: u64 = 3;
pub const PROP_OA_FORMAT: u64 = 4;
pub const PROP_OA_EXPONENT: u64 = 5;

/// `enum drm_i915_oa_format` values of the seed's four Counter Select layouts.
pub const I915_OA_FORMAT_C4_B8: u64 = 7;
pub const I915_OA_FORMAT_A12: u64 = 8;
pub const I915_OA_FORMAT_A12_B8_C8: u64 = 9;
pub const I915_OA_FORMAT_A32U40_A4U32_B8_C8: u64 = 10;

/// `I915_PARAM_EU_TOTAL` and `I915_PARAM_CS_TIMESTAMP_FREQUENCY`.
pub const I915_PARAM_EU_TOTAL: i32 = 34;
pub const I915_PARAM_CS_TIMESTAMP_FREQUENCY: i32 = 51;

/// The render command streamer's `TIMESTAMP` register (`RING_TIMESTAMP(RENDER_RING_BASE)`,
/// 0x2000 + 0x358), with `I915_REG_READ_8B_WA` (bit 0) as Mesa's
/// `intel_gem_read_render_timestamp` asks for it: the only register `REG_READ` allows.
pub const RENDER_TIMESTAMP_REG: u64 = 0x2358 | 1;

/// `enum drm_i915_perf_record_type`.
pub const RECORD_SAMPLE: u32 = 1;
pub const RECORD_OA_REPORT_LOST: u32 = 2;
pub const RECORD_OA_BUFFER_LOST: u32 = 3;
/// `struct drm_i915_perf_record_header { __u32 type; __u16 pad; __u16 size; }`.
pub const RECORD_HEADER_SIZE: usize = 8;

/// The i915 `enum drm_i915_oa_format` of a Counter Select value (seed 004 formats).
pub fn oa_format_for_select(select: u8) -> Option<u64> {
    match select {
        0 => Some(I915_OA_FORMAT_A12),
        2 => Some(I915_OA_FORMAT_A12_B8_C8),
        5 => Some(I915_OA_FORMAT_A32U40_A4U32_B8_C8),
        7 => Some(I915_OA_FORMAT_C4_B8),
        _ => None,
    }
}

/// What to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    pub metrics_set: u64,
    pub oa_format: u64,
    pub exponent: u32,
}

impl StreamConfig {
    /// The `(id, value)` properties, in the order the kernel is given them.
    pub fn properties(&self) -> [(u64, u64); 4] {
        [
            (PROP_SAMPLE_OA, 1),
            (PROP_OA_METRICS_SET, self.metrics_set),
            (PROP_OA_FORMAT, self.oa_format),
            (PROP_OA_EXPONENT, u64::from(self.exponent)),
        ]
    }
}

/// The flags the source opens with: close-on-exec, non-blocking reads (the collector never
/// waits on the stream), and disabled until the explicit `ENABLE`, so that nothing is
/// sampled before the source is ready to read.
pub const OPEN_FLAGS: u32 = I915_PERF_FLAG_FD_CLOEXEC | I915_PERF_FLAG_FD_NONBLOCK | I915_PERF_FLAG_DISABLED;

/// Opens a periodic OA stream on the DRM fd `drm` and returns the stream fd.
pub fn open_stream(sys: &mut dyn Sys, drm: Fd, cfg: &StreamConfig) -> io::Result<Fd> {
    let props = cfg.properties();
    let mut list = Vec::with_capacity(props.len() * 16);
    for (id, v) in props {
        list.extend_from_slice(&id.to_le_bytes());
        list.extend_from_slice(&v.to_le_bytes());
    }
    let mut param = [0u8; PERF_OPEN_PARAM_SIZE];
    param[0..4].copy_from_slice(&OPEN_FLAGS.to_le_bytes());
    param[4..8].copy_from_slice(&(props.len() as u32).to_le_bytes());
    let buf = UserBuffer {
        bytes: &mut list,
        ptr_at: 8,
        links_at: &[],
    };
    sys.ioctl_fd(
        drm,
        DRM_IOCTL_I915_PERF_OPEN,
        IoctlArg::StructWithBuffer(&mut param, buf),
    )
}

/// Parses the properties array of a `PERF_OPEN` argument (for fakes and tests).
pub fn parse_properties(param: &[u8], list: &[u8]) -> Option<(u32, Vec<(u64, u64)>)> {
    let flags = u32::from_le_bytes(param.get(0..4)?.try_into().ok()?);
    let n = u32::from_le_bytes(param.get(4..8)?.try_into().ok()?) as usize;
    let bytes = list.get(..n.checked_mul(16)?)?;
    let props = bytes
        .chunks_exact(16)
        .map(|c| {
            let id = u64::from_le_bytes(c[0..8].try_into().unwrap_or_default());
            let v = u64::from_le_bytes(c[8..16].try_into().unwrap_or_default());
            (id, v)
        })
        .collect();
    Some((flags, props))
}

/// `I915_GETPARAM`: the kernel writes an `int` where `value` points.
pub fn getparam(sys: &mut dyn Sys, drm: Fd, param: i32) -> io::Result<i32> {
    let mut arg = [0u8; GETPARAM_SIZE];
    arg[0..4].copy_from_slice(&param.to_le_bytes());
    let mut value = [0u8; 4];
    let buf = UserBuffer {
        bytes: &mut value,
        ptr_at: 8,
        links_at: &[],
    };
    sys.ioctl(drm, DRM_IOCTL_I915_GETPARAM, IoctlArg::StructWithBuffer(&mut arg, buf))?;
    Ok(i32::from_le_bytes(value))
}

/// The render timestamp now (its low 32 bits are what OA reports carry on Gen8-Gen12).
pub fn read_render_timestamp(sys: &mut dyn Sys, drm: Fd) -> io::Result<u64> {
    let mut arg = [0u8; REG_READ_SIZE];
    arg[0..8].copy_from_slice(&RENDER_TIMESTAMP_REG.to_le_bytes());
    sys.ioctl(drm, DRM_IOCTL_I915_REG_READ, IoctlArg::Struct(&mut arg))?;
    Ok(u64::from_le_bytes(arg[8..16].try_into().unwrap_or_default()))
}

/// One record of a stream `read()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// A raw OA report.
    Sample(&'a [u8]),
    /// The OA unit lost a report (`OA_REPORT_LOST`).
    ReportLost,
    /// The OA buffer overflowed and was reset (`OA_BUFFER_LOST`).
    BufferLost,
    /// A record type this parser does not know; skipped.
    Unknown(u32),
}

/// The records of a `read()` buffer. The kernel only returns whole records; a header whose
/// size is below the header's own or runs past the buffer ends the walk, and
/// [`Records::malformed`] says so.
pub fn records(buf: &[u8]) -> Records<'_> {
    Records {
        buf,
        at: 0,
        malformed: false,
    }
}

pub struct Records<'a> {
    buf: &'a [u8],
    at: usize,
    malformed: bool,
}

impl Records<'_> {
    /// True once a bad header stopped the walk.
    pub fn malformed(&self) -> bool {
        self.malformed
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        let rest = self.buf.get(self.at..)?;
        if rest.is_empty() {
            return None;
        }
        let Some(h) = rest.get(..RECORD_HEADER_SIZE) else {
            self.malformed = true;
            self.at = self.buf.len();
            return None;
        };
        let ty = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let size = usize::from(u16::from_le_bytes([h[6], h[7]]));
        if size < RECORD_HEADER_SIZE || size > rest.len() {
            self.malformed = true;
            self.at = self.buf.len();
            return None;
        }
        self.at += size;
        let payload = &rest[RECORD_HEADER_SIZE..size];
        Some(match ty {
            RECORD_SAMPLE => Record::Sample(payload),
            RECORD_OA_REPORT_LOST => Record::ReportLost,
            RECORD_OA_BUFFER_LOST => Record::BufferLost,
            other => Record::Unknown(other),
        })
    }
}

/// A record as the kernel frames it (for fakes, tests and the fuzzer's corpus).
pub fn frame_record(ty: u32, payload: &[u8]) -> Vec<u8> {
    let size = (RECORD_HEADER_SIZE + payload.len()).min(usize::from(u16::MAX)) as u16;
    let mut v = Vec::with_capacity(usize::from(size));
    v.extend_from_slice(&ty.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&payload[..usize::from(size) - RECORD_HEADER_SIZE]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_uapi_header() {
        // _IOC(dir, type, nr, size) = dir << 30 | size << 16 | type << 8 | nr, with
        // _IOC_WRITE = 1, _IOC_READ = 2 (asm-generic/ioctl.h); 'd' = 0x64, 'i' = 0x69.
        // PERF_OPEN: _IOW('d', 0x40 + 0x36, 16) = 1 << 30 | 16 << 16 | 0x64 << 8 | 0x76.
        assert_eq!(DRM_IOCTL_I915_PERF_OPEN, 0x4000_0000 | 0x10_0000 | 0x6400 | 0x76);
        assert_eq!(DRM_IOCTL_I915_PERF_OPEN, 0x4010_6476);
        // GETPARAM: _IOWR('d', 0x40 + 0x06, 16) = 3 << 30 | 16 << 16 | 0x6400 | 0x46.
        assert_eq!(DRM_IOCTL_I915_GETPARAM, 0xC010_6446);
        // REG_READ: _IOWR('d', 0x40 + 0x31, 16).
        assert_eq!(DRM_IOCTL_I915_REG_READ, 0xC010_6471);
        // Stream ioctls: _IO('i', n) = 0x69 << 8 | n.
        assert_eq!(
            (I915_PERF_IOCTL_ENABLE, I915_PERF_IOCTL_DISABLE, I915_PERF_IOCTL_CONFIG),
            (0x6900, 0x6901, 0x6902)
        );
    }

    #[test]
    fn records_stop_at_a_bad_header() {
        let mut b = frame_record(RECORD_SAMPLE, &[1, 2, 3, 4]);
        b.extend(frame_record(RECORD_OA_REPORT_LOST, &[]));
        b.extend_from_slice(&[9, 0, 0, 0, 0, 0, 4, 0]); // size 4 < header
        let mut it = records(&b);
        assert_eq!(it.next(), Some(Record::Sample(&[1, 2, 3, 4])));
        assert_eq!(it.next(), Some(Record::ReportLost));
        assert_eq!(it.next(), None);
        assert!(it.malformed());
    }
}
