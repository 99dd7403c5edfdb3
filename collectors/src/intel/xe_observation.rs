//! The Xe KMD observation uAPI (`include/uapi/drm/xe_drm.h`): an OA stream opened with
//! `DRM_IOCTL_XE_OBSERVATION` and a chain of `drm_xe_ext_set_property` extensions, the OA
//! timestamp frequency from `DRM_XE_DEVICE_QUERY_OA_UNITS`, and the stream status read
//! after `read()` fails with `EIO`. Unlike i915, `read()` returns bare reports with no
//! record headers (vendor-counter-backends §3.3); splitting them is pure and never panics.

use crate::sys::{ioc, Fd, IoctlArg, Sys, UserBuffer};
use std::io;

const DRM_COMMAND_BASE: u8 = 0x40;

/// `struct drm_xe_observation_param { __u64 extensions; __u64 observation_type; __u64
/// observation_op; __u64 param; }`: 32 bytes; `param` points at the first extension.
pub const OBSERVATION_PARAM_SIZE: usize = 32;
/// `DRM_IOCTL_XE_OBSERVATION = DRM_IOW(DRM_COMMAND_BASE + DRM_XE_OBSERVATION (0x0b),
/// struct drm_xe_observation_param)`.
pub const DRM_IOCTL_XE_OBSERVATION: u64 = ioc::iow(b'd', DRM_COMMAND_BASE + 0x0b, OBSERVATION_PARAM_SIZE);

/// `struct drm_xe_device_query { __u64 extensions; __u32 query; __u32 size; __u64 data;
/// __u64 reserved[2]; }`: 40 bytes.
pub const DEVICE_QUERY_SIZE: usize = 40;
/// `DRM_IOCTL_XE_DEVICE_QUERY = DRM_IOWR(DRM_COMMAND_BASE + DRM_XE_DEVICE_QUERY (0x00),
/// struct drm_xe_device_query)`.
pub const DRM_IOCTL_XE_DEVICE_QUERY: u64 = ioc::iowr(b'd', DRM_COMMAND_BASE, DEVICE_QUERY_SIZE);
pub const DRM_XE_DEVICE_QUERY_OA_UNITS: u32 = 8;

/// `enum drm_xe_observation_ioctls`: `_IO('i', 0x0..0x4)`.
pub const DRM_XE_OBSERVATION_IOCTL_ENABLE: u64 = ioc::io(b'i', 0);
pub const DRM_XE_OBSERVATION_IOCTL_DISABLE: u64 = ioc::io(b'i', 1);
pub const DRM_XE_OBSERVATION_IOCTL_STATUS: u64 = ioc::io(b'i', 3);

/// `DRM_XE_OBSERVATION_TYPE_OA` and `DRM_XE_OBSERVATION_OP_STREAM_OPEN`.
pub const OBSERVATION_TYPE_OA: u64 = 0;
pub const OBSERVATION_OP_STREAM_OPEN: u64 = 0;

/// `struct drm_xe_ext_set_property { struct drm_xe_user_extension base { __u64
/// next_extension; __u32 name; __u32 pad; }; __u32 property; __u32 pad; __u64 value; __u64
/// reserved[2]; }`: 48 bytes.
pub const SET_PROPERTY_SIZE: usize = 48;
/// `DRM_XE_OA_EXTENSION_SET_PROPERTY`.
pub const OA_EXTENSION_SET_PROPERTY: u32 = 0;

/// `enum drm_xe_oa_property_id`.
pub const PROP_OA_UNIT_ID: u32 = 1;
pub const PROP_SAMPLE_OA: u32 = 2;
pub const PROP_OA_METRIC_SET: u32 = 3;
pub const PROP_OA_FORMAT: u32 = 4;
pub const PROP_OA_PERIOD_EXPONENT: u32 = 5;
pub const PROP_OA_DISABLED: u32 = 6;

/// `DRM_XE_OA_FMT_TYPE_OAG`.
pub const OA_FMT_TYPE_OAG: u64 = 0;

/// `struct drm_xe_oa_stream_status { __u64 extensions; __u64 oa_status; __u64
/// reserved[3]; }`: 40 bytes.
pub const STREAM_STATUS_SIZE: usize = 40;
pub const OASTATUS_REPORT_LOST: u64 = 1 << 0;
pub const OASTATUS_BUFFER_OVERFLOW: u64 = 1 << 1;
pub const OASTATUS_COUNTER_OVERFLOW: u64 = 1 << 2;
pub const OASTATUS_MMIO_TRG_Q_FULL: u64 = 1 << 3;

/// The `DRM_XE_OA_PROPERTY_OA_FORMAT` value: fmt_type in bits 7:0, counter_sel 15:8,
/// counter_size 23:16, bc_report 31:24 (`DRM_XE_OA_FORMAT_MASK_*`).
pub fn oa_format(fmt_type: u64, counter_sel: u8, counter_size: u8, bc_report: u8) -> u64 {
    (fmt_type & 0xff) | u64::from(counter_sel) << 8 | u64::from(counter_size) << 16 | u64::from(bc_report) << 24
}

/// What to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    pub oa_unit: u64,
    pub metric_set: u64,
    /// Packed with [`oa_format`].
    pub format: u64,
    pub exponent: u32,
}

impl StreamConfig {
    /// The properties, in chain order. The stream is opened disabled (`OA_DISABLED`) and
    /// enabled with its own ioctl once the source is ready to read.
    pub fn properties(&self) -> [(u32, u64); 6] {
        [
            (PROP_OA_UNIT_ID, self.oa_unit),
            (PROP_SAMPLE_OA, 1),
            (PROP_OA_METRIC_SET, self.metric_set),
            (PROP_OA_FORMAT, self.format),
            (PROP_OA_PERIOD_EXPONENT, u64::from(self.exponent)),
            (PROP_OA_DISABLED, 1),
        ]
    }
}

/// Lays out `props` as a chain of `drm_xe_ext_set_property` in one buffer: extension `i` at
/// offset `48 i`, its `next_extension` holding the offset of extension `i + 1` (0 ends the
/// chain). Returns the buffer and the offsets of the link fields, as
/// [`UserBuffer::links_at`] wants them.
pub fn property_chain(props: &[(u32, u64)]) -> (Vec<u8>, Vec<usize>) {
    let mut b = vec![0u8; props.len() * SET_PROPERTY_SIZE];
    let mut links = Vec::with_capacity(props.len());
    for (i, (id, v)) in props.iter().enumerate() {
        let at = i * SET_PROPERTY_SIZE;
        let next = if i + 1 < props.len() {
            (at + SET_PROPERTY_SIZE) as u64
        } else {
            0
        };
        b[at..at + 8].copy_from_slice(&next.to_le_bytes());
        b[at + 8..at + 12].copy_from_slice(&OA_EXTENSION_SET_PROPERTY.to_le_bytes());
        b[at + 16..at + 20].copy_from_slice(&id.to_le_bytes());
        b[at + 24..at + 32].copy_from_slice(&v.to_le_bytes());
        links.push(at);
    }
    (b, links)
}

/// Walks a chain laid out by [`property_chain`] (offsets, as fakes see it): the
/// `(property, value)` pairs, or `None` on a link outside the buffer, a backward link (a
/// loop), or an extension name other than set-property.
pub fn parse_property_chain(b: &[u8]) -> Option<Vec<(u32, u64)>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let e = b.get(at..at.checked_add(SET_PROPERTY_SIZE)?)?;
        let next = u64::from_le_bytes(e[0..8].try_into().ok()?);
        let name = u32::from_le_bytes(e[8..12].try_into().ok()?);
        if name != OA_EXTENSION_SET_PROPERTY {
            return None;
        }
        let id = u32::from_le_bytes(e[16..20].try_into().ok()?);
        let v = u64::from_le_bytes(e[24..32].try_into().ok()?);
        out.push((id, v));
        if next == 0 {
            return Some(out);
        }
        let next = usize::try_from(next).ok()?;
        if next <= at {
            return None;
        }
        at = next;
    }
}

/// Opens an OA stream on the DRM fd `drm` and returns the stream fd.
pub fn open_stream(sys: &mut dyn Sys, drm: Fd, cfg: &StreamConfig) -> io::Result<Fd> {
    let (mut chain, links) = property_chain(&cfg.properties());
    let mut param = [0u8; OBSERVATION_PARAM_SIZE];
    param[8..16].copy_from_slice(&OBSERVATION_TYPE_OA.to_le_bytes());
    param[16..24].copy_from_slice(&OBSERVATION_OP_STREAM_OPEN.to_le_bytes());
    let buf = UserBuffer {
        bytes: &mut chain,
        ptr_at: 24,
        links_at: &links,
    };
    sys.ioctl_fd(
        drm,
        DRM_IOCTL_XE_OBSERVATION,
        IoctlArg::StructWithBuffer(&mut param, buf),
    )
}

/// Offsets in the `DRM_XE_DEVICE_QUERY_OA_UNITS` reply: `struct drm_xe_query_oa_units {
/// __u64 extensions; __u32 num_oa_units; __u32 pad; __u64 oa_units[]; }`, the first
/// `struct drm_xe_oa_unit { __u64 extensions; __u32 oa_unit_id; __u32 oa_unit_type; __u64
/// capabilities; __u64 oa_timestamp_freq; ... }` at 16.
const OA_UNITS_COUNT_AT: usize = 8;
const FIRST_UNIT_AT: usize = 16;
const UNIT_ID_AT: usize = FIRST_UNIT_AT + 8;
const UNIT_FREQ_AT: usize = FIRST_UNIT_AT + 24;
/// The most the source accepts for the reply (a handful of units with their engines).
const MAX_QUERY_SIZE: u32 = 64 * 1024;

/// The first OA unit (the OAG unit of GT 0, which samples the render engine): its id and
/// timestamp frequency. Two calls, as `xe_drm.h` prescribes: size 0 asks for the size.
pub fn query_first_oa_unit(sys: &mut dyn Sys, drm: Fd) -> io::Result<(u64, u64)> {
    let mut q = [0u8; DEVICE_QUERY_SIZE];
    q[8..12].copy_from_slice(&DRM_XE_DEVICE_QUERY_OA_UNITS.to_le_bytes());
    let none = UserBuffer {
        bytes: &mut [],
        ptr_at: 16,
        links_at: &[],
    };
    sys.ioctl(drm, DRM_IOCTL_XE_DEVICE_QUERY, IoctlArg::StructWithBuffer(&mut q, none))?;
    let size = u32::from_le_bytes([q[12], q[13], q[14], q[15]]);
    if (size as usize) < UNIT_FREQ_AT + 8 || size > MAX_QUERY_SIZE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("OA units query of {size} bytes"),
        ));
    }
    let mut data = vec![0u8; size as usize];
    let buf = UserBuffer {
        bytes: &mut data,
        ptr_at: 16,
        links_at: &[],
    };
    sys.ioctl(drm, DRM_IOCTL_XE_DEVICE_QUERY, IoctlArg::StructWithBuffer(&mut q, buf))?;
    parse_first_oa_unit(&data).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no OA unit"))
}

/// `(oa_unit_id, oa_timestamp_freq)` of the first unit of an OA units reply.
pub fn parse_first_oa_unit(data: &[u8]) -> Option<(u64, u64)> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?));
    if u32_at(OA_UNITS_COUNT_AT)? == 0 {
        return None;
    }
    Some((u64::from(u32_at(UNIT_ID_AT)?), u64_at(UNIT_FREQ_AT)?))
}

/// `DRM_XE_OBSERVATION_IOCTL_STATUS`: the `oa_status` bits (`DRM_XE_OASTATUS_*`).
pub fn stream_status(sys: &mut dyn Sys, stream: Fd) -> io::Result<u64> {
    let mut s = [0u8; STREAM_STATUS_SIZE];
    sys.ioctl(stream, DRM_XE_OBSERVATION_IOCTL_STATUS, IoctlArg::Struct(&mut s))?;
    Ok(u64::from_le_bytes(s[8..16].try_into().unwrap_or_default()))
}

/// The whole reports in a `read()` buffer, and how many trailing bytes made no whole report
/// (the kernel returns whole reports; a remainder means a format mismatch). A zero report
/// size yields nothing.
pub fn split_reports(buf: &[u8], report_size: usize) -> (std::slice::ChunksExact<'_, u8>, usize) {
    if report_size == 0 {
        return (buf[..0].chunks_exact(1), buf.len());
    }
    (buf.chunks_exact(report_size), buf.len() % report_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_uapi_header() {
        // _IOW('d', 0x40 + 0x0b, 32) = 1 << 30 | 32 << 16 | 0x64 << 8 | 0x4b.
        assert_eq!(DRM_IOCTL_XE_OBSERVATION, 0x4000_0000 | 0x20_0000 | 0x6400 | 0x4b);
        assert_eq!(DRM_IOCTL_XE_OBSERVATION, 0x4020_644B);
        // _IOWR('d', 0x40, 40) = 3 << 30 | 40 << 16 | 0x6440.
        assert_eq!(DRM_IOCTL_XE_DEVICE_QUERY, 0xC028_6440);
        assert_eq!(DRM_XE_OBSERVATION_IOCTL_STATUS, 0x6903);
    }

    #[test]
    fn chain_round_trips() {
        let props = [(1, 0), (3, 7), (4, 0x500)];
        let (b, links) = property_chain(&props);
        assert_eq!(b.len(), 3 * 48);
        assert_eq!(links, [0, 48, 96]);
        assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 48);
        assert_eq!(parse_property_chain(&b).unwrap(), props);
        assert_eq!(oa_format(OA_FMT_TYPE_OAG, 5, 0, 0), 0x500);
    }
}
