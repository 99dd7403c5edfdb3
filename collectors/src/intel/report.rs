//! OA report decoding. The layouts are not written here: they come from
//! `collectors/db/intel_oa_formats.json` (seed 004 "Performance Counter Report Format" 000b,
//! 010b and 111b; 101b is i915's `A32u40_A4u32_B8_C8`, marked [ext] there because the
//! seed's image of it is missing). Every field is a little-endian dword at a fixed offset,
//! except the high bytes of the 40-bit A counters, which the hardware "simply swizzles"
//! into a separate byte array (seed 004, digest §5.2).
//!
//! Decoding never panics: a report shorter than its format is an error, offsets are
//! checked when the layout is built and read with `get`.

use crate::db::oa_formats::{Part, ReportFormat};
use std::fmt;

/// One counter field of a layout: a low dword and, for 40-bit A counters, a high byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterField {
    /// The counter's key in `intel_oa.json` (`OA.A0`, `OA.B3`, ...).
    pub name: String,
    low_at: usize,
    high_at: Option<usize>,
}

impl CounterField {
    /// 40 when the report carries the high byte, else 32 (formats 000b and 010b carry only
    /// the low dword of A7-A18, so their deltas wrap at 2^32: digest R-OA-5).
    pub fn bits(&self) -> u32 {
        if self.high_at.is_some() {
            40
        } else {
            32
        }
    }
}

/// A report layout compiled from the format table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub counter_select: u8,
    pub name: String,
    pub size: usize,
    ts_at: usize,
    ctx_at: usize,
    ticks_at: usize,
    pub counters: Vec<CounterField>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Counter Select values other than 000b, 010b, 101b and 111b are not described for
    /// this generation (digest §5.2): refused.
    UnknownSelect(u8),
    /// The format table lacks a header field or has a field outside the report.
    Table(String),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::UnknownSelect(s) => write!(f, "OA counter select {s:03b} is not supported"),
            LayoutError::Table(w) => write!(f, "OA format table: {w}"),
        }
    }
}

impl std::error::Error for LayoutError {}

impl Layout {
    /// The layout of a Counter Select value, from the embedded format table.
    pub fn for_select(select: u8) -> Result<Layout, LayoutError> {
        let dbs = crate::db::databases().map_err(|e| LayoutError::Table(e.to_string()))?;
        let f = dbs
            .intel_formats
            .by_select(select)
            .ok_or(LayoutError::UnknownSelect(select))?;
        Layout::from_format(f)
    }

    /// Compiles one format of the table.
    pub fn from_format(f: &ReportFormat) -> Result<Layout, LayoutError> {
        let size = f.size_bytes as usize;
        let header = |name: &str| {
            f.fields
                .iter()
                .find(|x| x.name == name && x.bits == 32)
                .map(|x| x.offset as usize)
                .filter(|&at| at.checked_add(4).is_some_and(|e| e <= size))
                .ok_or_else(|| LayoutError::Table(format!("{}: no 32-bit {name}", f.name)))
        };
        let (ts_at, ctx_at, ticks_at) = (header("TIME_STAMP")?, header("CTX_ID")?, header("GPU_TICKS")?);
        let mut counters: Vec<CounterField> = Vec::new();
        for fld in &f.fields {
            let Some(c) = fld.counter.as_deref() else { continue };
            if matches!(fld.name.as_str(), "TIME_STAMP" | "GPU_TICKS") {
                continue;
            }
            let at = fld.offset as usize;
            let width = (fld.bits / 8) as usize;
            if at.checked_add(width).is_none_or(|e| e > size) {
                return Err(LayoutError::Table(format!(
                    "{}: {} outside the report",
                    f.name, fld.name
                )));
            }
            let i = match counters.iter().position(|x| x.name == c) {
                Some(i) => i,
                None => {
                    counters.push(CounterField {
                        name: c.to_string(),
                        low_at: usize::MAX,
                        high_at: None,
                    });
                    counters.len() - 1
                }
            };
            match fld.part {
                Some(Part::High8) => counters[i].high_at = Some(at),
                _ => counters[i].low_at = at,
            }
        }
        if let Some(c) = counters.iter().find(|c| c.low_at == usize::MAX) {
            return Err(LayoutError::Table(format!("{}: {} has no low dword", f.name, c.name)));
        }
        Ok(Layout {
            counter_select: f.counter_select,
            name: f.name.clone(),
            size,
            ts_at,
            ctx_at,
            ticks_at,
            counters,
        })
    }

    /// The index of counter `name` in [`Layout::counters`] (and in decoded values).
    pub fn index(&self, name: &str) -> Option<usize> {
        self.counters.iter().position(|c| c.name == name)
    }

    /// Decodes `bytes` (at least [`Layout::size`] long; extra bytes are ignored) into `out`,
    /// reusing its storage.
    pub fn decode_into(&self, bytes: &[u8], out: &mut Report) -> Result<(), DecodeError> {
        if bytes.len() < self.size {
            return Err(DecodeError::Short {
                need: self.size,
                got: bytes.len(),
            });
        }
        let d = |at: usize| {
            dword(bytes, at).ok_or(DecodeError::Short {
                need: at + 4,
                got: bytes.len(),
            })
        };
        out.rpt_id = d(0)?;
        out.timestamp = d(self.ts_at)?;
        out.ctx_id = d(self.ctx_at)?;
        out.gpu_ticks = d(self.ticks_at)?;
        out.counters.clear();
        for c in &self.counters {
            let low = u64::from(d(c.low_at)?);
            let high = match c.high_at {
                Some(at) => u64::from(*bytes.get(at).ok_or(DecodeError::Short {
                    need: at + 1,
                    got: bytes.len(),
                })?),
                None => 0,
            };
            out.counters.push(low | high << 32);
        }
        Ok(())
    }

    /// Decodes into a new [`Report`].
    pub fn decode(&self, bytes: &[u8]) -> Result<Report, DecodeError> {
        let mut r = Report::default();
        self.decode_into(bytes, &mut r)?;
        Ok(r)
    }
}

fn dword(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    Short { need: usize, got: usize },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short { need, got } => write!(f, "OA report of {got} bytes, the format needs {need}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// One decoded report: the four header dwords (seed 004: DW0 RPT_ID, DW1 TIME_STAMP[31:0],
/// DW2 context id, DW3 GPU_TICKS[31:0]) and the counters in layout order, 40-bit ones
/// already joined from their low dword and high byte.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub rpt_id: u32,
    pub timestamp: u32,
    pub ctx_id: u32,
    pub gpu_ticks: u32,
    pub counters: Vec<u64>,
}

/// Which of the seed's two RPT_ID tables applies (digest A-34): Gen8 has Render Context
/// Valid at bit 25 and Timer Enabled at bit 16; Gen9 (Skylake) has Render Context Valid at
/// bit 16 and the squashed clock frequencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RptVariant {
    Gen8,
    Gen9,
}

/// Report Reason bits (RPT_ID bits 24:19, seed 004).
pub mod reason {
    pub const TIMER: u8 = 1 << 0;
    pub const TRIGGER_1: u8 = 1 << 1;
    pub const TRIGGER_2: u8 = 1 << 2;
    pub const CONTEXT_SWITCH: u8 = 1 << 3;
    pub const GO_TRANSITION: u8 = 1 << 4;
    /// Gen9 only: clock ratio change.
    pub const CLOCK_RATIO: u8 = 1 << 5;
}

/// The fields of RPT_ID (DW0) in a report the OA unit wrote itself (reports written by
/// `MI_REPORT_PERF_COUNT` hold the command's report id instead: digest §5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RptId {
    /// Report Reason[5:0], see [`reason`].
    pub reason: u8,
    pub start_trigger: bool,
    pub threshold: bool,
    pub context_valid: bool,
    /// Gen8 only.
    pub timer_enabled: Option<bool>,
    /// Gen9 only: squashed slice clock frequency, 9 bits (bits 31:25 and 10:9).
    pub slice_clock: Option<u16>,
    /// Gen9 only: squashed unslice clock frequency, 9 bits (bits 8:0).
    pub unslice_clock: Option<u16>,
}

pub fn decode_rpt_id(v: u32, variant: RptVariant) -> RptId {
    let bit = |n: u32| v >> n & 1 == 1;
    let reason = (v >> 19 & 0x3f) as u8;
    match variant {
        RptVariant::Gen8 => RptId {
            reason: reason & 0x1f,
            start_trigger: bit(18),
            threshold: bit(17),
            context_valid: bit(25),
            timer_enabled: Some(bit(16)),
            slice_clock: None,
            unslice_clock: None,
        },
        RptVariant::Gen9 => RptId {
            reason,
            start_trigger: bit(18),
            threshold: bit(17),
            context_valid: bit(16),
            timer_enabled: None,
            slice_clock: Some(((v >> 25 & 0x7f) | (v >> 9 & 0x3) << 7) as u16),
            unslice_clock: Some((v & 0x1ff) as u16),
        },
    }
}
