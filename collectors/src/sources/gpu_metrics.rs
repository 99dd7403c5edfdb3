//! amdgpu's binary `gpu_metrics` sysfs file: a `metrics_table_header { u16 structure_size;
//! u8 format_revision; u8 content_revision }` followed by the revision's struct
//! (`gpu_metrics_vX_Y` in the kernel's `kgd_pp_interface.h`), little-endian, naturally
//! aligned. Format 1 is dGPUs, format 2 APUs.
//!
//! Only the fields the HUD shows are read, by offset. The kernel fills fields a chip does not
//! report with 0xFF bytes, so a u16 of 0xFFFF is "no value" (NaN).
//!
//! Units differ by format: v1 temperatures are °C and power W; v2 temperatures are
//! centi-°C and power mW. v1.4/v1.5 (Instinct MI300) have no edge temperature: their
//! `temp_c` is the hotspot. v2 has a fan PWM duty, not a speed, so `fan_rpm` is NaN there.

use std::fmt;

/// The values read from one `gpu_metrics` blob; NaN where the revision or chip has none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuMetrics {
    pub temp_c: f64,
    pub power_w: f64,
    /// The firmware's average graphics clock where the revision has one, else the current.
    pub gfx_clock_mhz: f64,
    /// The memory (UMC) clock, average where the revision has one, else the current.
    pub mem_clock_mhz: f64,
    pub fan_rpm: f64,
}

impl GpuMetrics {
    pub const NONE: GpuMetrics = GpuMetrics {
        temp_c: f64::NAN,
        power_w: f64::NAN,
        gfx_clock_mhz: f64::NAN,
        mem_clock_mhz: f64::NAN,
        fan_rpm: f64::NAN,
    };
}

/// Why a blob gave no values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsError {
    /// Fewer than the 4 bytes of the header.
    NoHeader { len: usize },
    /// A revision this parser has no layout for.
    UnknownRevision { format: u8, content: u8 },
    /// The header says the struct is longer than what was read.
    Truncated { structure_size: u16, len: usize },
    /// The header's size is smaller than the revision's struct.
    SizeMismatch {
        format: u8,
        content: u8,
        structure_size: u16,
        expected: u16,
    },
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MetricsError::NoHeader { len } => write!(f, "gpu_metrics: {len} bytes, no header"),
            MetricsError::UnknownRevision { format, content } => {
                write!(f, "gpu_metrics v{format}.{content}: revision not known to framescope")
            }
            MetricsError::Truncated { structure_size, len } => {
                write!(f, "gpu_metrics: header says {structure_size} bytes, read {len}")
            }
            MetricsError::SizeMismatch {
                format,
                content,
                structure_size,
                expected,
            } => write!(
                f,
                "gpu_metrics v{format}.{content}: header says {structure_size} bytes, the layout has {expected}"
            ),
        }
    }
}

/// Byte offsets of the fields read, and the struct's size, for one revision.
struct Layout {
    size: u16,
    temp: usize,
    power: usize,
    avg_gfxclk: Option<usize>,
    cur_gfxclk: usize,
    avg_uclk: Option<usize>,
    cur_uclk: usize,
    fan_rpm: Option<usize>,
    /// `temp` is in centi-°C and `power` in mW (format 2).
    apu_units: bool,
}

// v1.1 to v1.3 share their leading fields; later revisions only append.
const fn v1_1(size: u16) -> Layout {
    Layout {
        size,
        temp: 4,
        power: 22,
        avg_gfxclk: Some(40),
        cur_gfxclk: 54,
        avg_uclk: Some(44),
        cur_uclk: 58,
        fan_rpm: Some(72),
        apu_units: false,
    }
}

// Likewise v2.1 to v2.4.
const fn v2_1(size: u16) -> Layout {
    Layout {
        size,
        temp: 4,
        power: 40,
        avg_gfxclk: Some(64),
        cur_gfxclk: 76,
        avg_uclk: Some(68),
        cur_uclk: 80,
        fan_rpm: None,
        apu_units: true,
    }
}

fn layout(format: u8, content: u8) -> Option<Layout> {
    Some(match (format, content) {
        // v1.0 and v2.0 put the u64 timestamp right after the header (padded to offset 8).
        (1, 0) => Layout {
            size: 80,
            temp: 16,
            power: 34,
            avg_gfxclk: Some(40),
            cur_gfxclk: 54,
            avg_uclk: Some(44),
            cur_uclk: 58,
            fan_rpm: Some(72),
            apu_units: false,
        },
        (1, 1) => v1_1(96),
        (1, 2) => v1_1(104),
        (1, 3) => v1_1(120),
        // v1.4 and v1.5: hotspot temperature, current socket power, per-instance clocks.
        (1, 4) => Layout {
            size: 288,
            temp: 4,
            power: 10,
            avg_gfxclk: None,
            cur_gfxclk: 240,
            avg_uclk: None,
            cur_uclk: 280,
            fan_rpm: None,
            apu_units: false,
        },
        (1, 5) => Layout {
            size: 360,
            temp: 4,
            power: 10,
            avg_gfxclk: None,
            cur_gfxclk: 312,
            avg_uclk: None,
            cur_uclk: 352,
            fan_rpm: None,
            apu_units: false,
        },
        (2, 0) => Layout {
            size: 120,
            temp: 16,
            power: 44,
            avg_gfxclk: Some(68),
            cur_gfxclk: 80,
            avg_uclk: Some(72),
            cur_uclk: 84,
            fan_rpm: None,
            apu_units: true,
        },
        (2, 1) => v2_1(120),
        (2, 2) => v2_1(128),
        (2, 3) => v2_1(152),
        (2, 4) => v2_1(168),
        _ => return None,
    })
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off + 2)?;
    let v = u16::from_le_bytes([s[0], s[1]]);
    (v != u16::MAX).then_some(v)
}

fn value(b: &[u8], off: usize, scale: f64) -> f64 {
    u16_at(b, off).map_or(f64::NAN, |v| f64::from(v) * scale)
}

fn first_of(b: &[u8], avg: Option<usize>, cur: usize) -> f64 {
    avg.and_then(|o| u16_at(b, o))
        .or_else(|| u16_at(b, cur))
        .map_or(f64::NAN, f64::from)
}

/// The header's `(structure_size, format_revision, content_revision)`.
pub fn header(buf: &[u8]) -> Option<(u16, u8, u8)> {
    let h = buf.get(..4)?;
    Some((u16::from_le_bytes([h[0], h[1]]), h[2], h[3]))
}

/// Parses a `gpu_metrics` blob as read from sysfs.
pub fn parse(buf: &[u8]) -> Result<GpuMetrics, MetricsError> {
    let (structure_size, format, content) = header(buf).ok_or(MetricsError::NoHeader { len: buf.len() })?;
    let l = layout(format, content).ok_or(MetricsError::UnknownRevision { format, content })?;
    if usize::from(structure_size) > buf.len() {
        return Err(MetricsError::Truncated {
            structure_size,
            len: buf.len(),
        });
    }
    if structure_size < l.size {
        return Err(MetricsError::SizeMismatch {
            format,
            content,
            structure_size,
            expected: l.size,
        });
    }
    let b = &buf[..usize::from(structure_size)];
    let (t_scale, p_scale) = if l.apu_units { (0.01, 0.001) } else { (1.0, 1.0) };
    Ok(GpuMetrics {
        temp_c: value(b, l.temp, t_scale),
        power_w: value(b, l.power, p_scale),
        gfx_clock_mhz: first_of(b, l.avg_gfxclk, l.cur_gfxclk),
        mem_clock_mhz: first_of(b, l.avg_uclk, l.cur_uclk),
        fan_rpm: l.fan_rpm.map_or(f64::NAN, |o| value(b, o, 1.0)),
    })
}
