//! Reading the text of kernel files (procfs, sysfs): numbers, lines, PCI addresses. Never
//! panics on malformed text.

use crate::seam::Fs;
use crate::source::GpuHint;
use std::path::Path;

/// Strips ASCII whitespace at both ends.
pub(crate) fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// A non-negative decimal integer, surrounding whitespace allowed; `None` on anything else
/// (including overflow), so a garbled file gives NaN instead of a wrong number.
pub(crate) fn parse_u64(b: &[u8]) -> Option<u64> {
    let b = trim(b);
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// A decimal number such as `3400.000` (from `/proc/cpuinfo`).
pub(crate) fn parse_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(trim(b)).ok()?;
    let v: f64 = s.parse().ok()?;
    v.is_finite().then_some(v)
}

/// A hexadecimal integer with or without `0x` (sysfs `vendor`).
pub(crate) fn parse_hex(b: &[u8]) -> Option<u64> {
    let b = trim(b);
    let b = b.strip_prefix(b"0x").or_else(|| b.strip_prefix(b"0X")).unwrap_or(b);
    let s = std::str::from_utf8(b).ok()?;
    u64::from_str_radix(s, 16).ok()
}

/// Reads a file holding one integer; NaN when it is missing or not an integer.
pub(crate) fn read_u64(fs: &mut dyn Fs, path: &Path, buf: &mut Vec<u8>) -> Option<u64> {
    fs.read(path, buf).ok()?;
    parse_u64(buf)
}

/// The PCI address `0000:03:00.0` that `hint` names, if it names one.
pub(crate) fn hint_pci(hint: &GpuHint) -> Option<String> {
    match hint {
        GpuHint::Pci {
            domain,
            bus,
            device,
            function,
        } => Some(format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}")),
        _ => None,
    }
}

/// The PCI address of a sysfs device directory `dir` (`.../cardN/device`, `.../hwmonK/device`):
/// the name its `device` link points at, else `PCI_SLOT_NAME` from its `uevent`.
pub(crate) fn pci_address(fs: &mut dyn Fs, parent: &Path, buf: &mut Vec<u8>) -> Option<String> {
    let link = parent.join("device");
    if let Ok(target) = fs.read_link(&link) {
        if let Some(name) = target.file_name().and_then(|n| n.to_str()) {
            if looks_like_pci(name) {
                return Some(name.to_ascii_lowercase());
            }
        }
    }
    fs.read(&link.join("uevent"), buf).ok()?;
    buf.split(|&c| c == b'\n').find_map(|l| {
        let v = l.strip_prefix(b"PCI_SLOT_NAME=")?;
        let s = std::str::from_utf8(trim(v)).ok()?;
        looks_like_pci(s).then(|| s.to_ascii_lowercase())
    })
}

fn looks_like_pci(s: &str) -> bool {
    // dddd:bb:dd.f
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// Lines of a text file, without their `\n`.
pub(crate) fn lines(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    buf.split(|&c| c == b'\n')
}

/// Fills `out` with NaN: the "no value this time" of every counter.
pub(crate) fn clear(out: &mut [f64]) {
    out.iter_mut().for_each(|v| *v = f64::NAN);
}
