//! Little-endian fields of kernel structs and buffers, by byte offset. Readers return `None`
//! outside the slice instead of panicking: every offset they get may come from the kernel.

/// The `u16` at `at`.
pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

/// The `u32` at `at`.
pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// The `u64` at `at`.
pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut w = [0u8; 8];
    w.copy_from_slice(s);
    Some(u64::from_le_bytes(w))
}

/// Writes `v` at `at`; a field outside `b` is left unwritten (our own structs are sized
/// for their fields, so this only guards against a layout typo turning into a panic).
pub fn put_u16(b: &mut [u8], at: usize, v: u16) {
    put(b, at, &v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    put(b, at, &v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    put(b, at, &v.to_le_bytes());
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if let Some(s) = at.checked_add(v.len()).and_then(|end| b.get_mut(at..end)) {
        s.copy_from_slice(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded() {
        let b = [1u8, 0, 0, 0, 2, 0, 0, 0];
        assert_eq!(u32_at(&b, 4), Some(2));
        assert_eq!(u64_at(&b, 0), Some(0x2_0000_0001));
        assert_eq!(u32_at(&b, 5), None);
        assert_eq!(u16_at(&b, usize::MAX), None);
        let mut w = [0u8; 4];
        put_u32(&mut w, 1, 7);
        assert_eq!(w, [0; 4]);
        put_u16(&mut w, 2, 0x0102);
        assert_eq!(w, [0, 0, 2, 1]);
    }
}
