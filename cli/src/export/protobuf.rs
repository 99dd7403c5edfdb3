//! The protobuf wire format, only as much as the Perfetto export writes: varints,
//! 64-bit doubles and length-delimited fields (strings, bytes, nested messages). A message is
//! built bottom-up into its own buffer and appended to its parent with its length, so no
//! size has to be known in advance.

/// Wire types (protobuf encoding, "Message Structure").
const VARINT: u64 = 0;
const I64: u64 = 1;
const LEN: u64 = 2;

/// One message being encoded.
#[derive(Default, Clone, Debug)]
pub struct Msg {
    buf: Vec<u8>,
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Msg {
    pub fn new() -> Msg {
        Msg::default()
    }

    fn tag(&mut self, field: u32, wire: u64) {
        put_varint(&mut self.buf, (u64::from(field) << 3) | wire);
    }

    /// `uint64`, `uint32`, `bool` and enum fields.
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Msg {
        self.tag(field, VARINT);
        put_varint(&mut self.buf, v);
        self
    }

    pub fn double(&mut self, field: u32, v: f64) -> &mut Msg {
        self.tag(field, I64);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn bytes(&mut self, field: u32, b: &[u8]) -> &mut Msg {
        self.tag(field, LEN);
        put_varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    pub fn string(&mut self, field: u32, s: &str) -> &mut Msg {
        self.bytes(field, s.as_bytes())
    }

    pub fn message(&mut self, field: u32, m: &Msg) -> &mut Msg {
        self.bytes(field, &m.buf)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    /// Decodes one varint, as a reader would; `None` past 10 bytes or at the end.
    fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
        let mut v = 0u64;
        for (i, &byte) in b.iter().enumerate().take(10) {
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Some((v, i + 1));
            }
        }
        None
    }

    #[test]
    fn varint_edges() {
        assert_eq!(varint(0), [0x00]);
        assert_eq!(varint(1), [0x01]);
        assert_eq!(varint(127), [0x7f]);
        assert_eq!(varint(128), [0x80, 0x01]);
        assert_eq!(varint(300), [0xac, 0x02]);
        assert_eq!(varint(16383), [0xff, 0x7f]);
        assert_eq!(varint(16384), [0x80, 0x80, 0x01]);
        assert_eq!(varint(u32::MAX as u64), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        let max = varint(u64::MAX);
        assert_eq!(max.len(), 10);
        assert_eq!(max[9], 0x01);
        for v in [0, 1, 127, 128, 255, 256, 1 << 35, (1 << 63) - 1, 1 << 63, u64::MAX] {
            assert_eq!(read_varint(&varint(v)), Some((v, varint(v).len())), "{v}");
        }
    }

    #[test]
    fn negative_int64_is_ten_bytes_twos_complement() {
        // `int64` is the two's complement as a varint (not zigzag, which is `sint64`).
        let mut m = Msg::new();
        m.uint(1, -1i64 as u64);
        assert_eq!(
            m.as_bytes(),
            [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn tags_of_large_field_numbers_take_two_bytes() {
        // TracePacket.track_descriptor is field 60: (60 << 3) | 2 = 482.
        let mut m = Msg::new();
        m.bytes(60, b"");
        assert_eq!(m.as_bytes(), [0xe2, 0x03, 0x00]);
        let mut m = Msg::new();
        m.uint(15, 1).uint(16, 1);
        assert_eq!(m.as_bytes(), [0x78, 0x01, 0x80, 0x01, 0x01]);
    }

    #[test]
    fn scalars() {
        let mut m = Msg::new();
        m.uint(1, 150).string(2, "testing").double(3, 1.5);
        let mut want = vec![0x08, 0x96, 0x01, 0x12, 0x07];
        want.extend_from_slice(b"testing");
        want.push(0x19);
        want.extend_from_slice(&1.5f64.to_le_bytes());
        assert_eq!(m.as_bytes(), want);
    }

    #[test]
    fn nested_messages_carry_their_length() {
        let mut inner = Msg::new();
        inner.uint(1, 150);
        let mut mid = Msg::new();
        mid.message(3, &inner).message(4, &Msg::new());
        let mut outer = Msg::new();
        outer.message(1, &mid);
        assert_eq!(outer.as_bytes(), [0x0a, 0x07, 0x1a, 0x03, 0x08, 0x96, 0x01, 0x22, 0x00]);
        // A nested message longer than 127 bytes has a two-byte length.
        let mut big = Msg::new();
        big.bytes(1, &[7u8; 200]);
        let mut outer = Msg::new();
        outer.message(2, &big);
        let b = outer.as_bytes();
        assert_eq!(&b[..3], [0x12, 0xcb, 0x01]);
        assert_eq!(b.len(), 3 + 203);
    }
}
