//! The part of the protocol buffers wire format that pprof's profile.proto needs, written by hand:
//! varints, length-delimited fields and packed repeated integers. One small message family does
//! not justify a code generator and its build step.

/// Wire types of the fields written here.
const VARINT: u64 = 0;
const LENGTH_DELIMITED: u64 = 2;

/// Appends `v` as a base-128 varint: seven bits a byte, low bits first, the high bit set on every
/// byte but the last.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One message being written, field by field in the order the caller gives.
#[derive(Debug, Default, Clone)]
pub struct Message {
    buf: Vec<u8>,
}

impl Message {
    pub fn new() -> Message {
        Message::default()
    }

    fn key(&mut self, field: u32, wire: u64) {
        varint(&mut self.buf, (u64::from(field) << 3) | wire);
    }

    /// A `uint64` (or `bool`) field.
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Message {
        self.key(field, VARINT);
        varint(&mut self.buf, v);
        self
    }

    /// An `int64` field: a negative value is its two's complement, ten bytes (not zigzag, which is
    /// `sint64`'s).
    pub fn int(&mut self, field: u32, v: i64) -> &mut Message {
        self.uint(field, v as u64)
    }

    pub fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Message {
        self.key(field, LENGTH_DELIMITED);
        varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }

    pub fn string(&mut self, field: u32, v: &str) -> &mut Message {
        self.bytes(field, v.as_bytes())
    }

    pub fn message(&mut self, field: u32, m: &Message) -> &mut Message {
        self.bytes(field, &m.buf)
    }

    /// A packed repeated `uint64`/`int64` field: one length-delimited run of varints (proto3's
    /// default encoding of repeated integers). Nothing is written for an empty list.
    pub fn packed(&mut self, field: u32, values: impl IntoIterator<Item = u64>) -> &mut Message {
        let mut run = Vec::new();
        for v in values {
            varint(&mut run, v);
        }
        if !run.is_empty() {
            self.bytes(field, &run);
        }
        self
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// A reader of the same wire format for the tests: each field's number and value, in order.
#[cfg(test)]
pub mod decode {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Value {
        Varint(u64),
        Bytes(Vec<u8>),
    }

    impl Value {
        pub fn uint(&self) -> u64 {
            match self {
                Value::Varint(v) => *v,
                Value::Bytes(_) => panic!("a length-delimited field where a varint was expected"),
            }
        }
        pub fn bytes(&self) -> &[u8] {
            match self {
                Value::Bytes(b) => b,
                Value::Varint(_) => panic!("a varint where a length-delimited field was expected"),
            }
        }
        pub fn text(&self) -> String {
            String::from_utf8(self.bytes().to_vec()).unwrap()
        }
    }

    /// Reads a varint at `*at`, moving past it; None when the bytes end inside one or it is
    /// longer than ten bytes.
    pub fn varint(buf: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = *buf.get(*at)?;
            *at += 1;
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    pub fn fields(buf: &[u8]) -> Vec<(u32, Value)> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < buf.len() {
            let key = varint(buf, &mut at).expect("a field key");
            let value = match key & 7 {
                0 => Value::Varint(varint(buf, &mut at).expect("a varint")),
                2 => {
                    let len = varint(buf, &mut at).expect("a length") as usize;
                    let v = buf[at..at + len].to_vec();
                    at += len;
                    Value::Bytes(v)
                }
                w => panic!("wire type {w} is not written by this encoder"),
            };
            out.push(((key >> 3) as u32, value));
        }
        out
    }

    /// The varints of a packed field.
    pub fn packed(buf: &[u8]) -> Vec<u64> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < buf.len() {
            out.push(varint(buf, &mut at).expect("a packed varint"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::decode::{fields, Value};
    use super::*;
    use proptest::prelude::*;

    fn encoded(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, v);
        out
    }

    #[test]
    fn varints_at_their_edges() {
        assert_eq!(encoded(0), [0x00]);
        assert_eq!(encoded(1), [0x01]);
        assert_eq!(encoded(127), [0x7f]);
        assert_eq!(encoded(128), [0x80, 0x01]);
        // The protobuf documentation's own example.
        assert_eq!(encoded(150), [0x96, 0x01]);
        assert_eq!(encoded(16_383), [0xff, 0x7f]);
        assert_eq!(encoded(16_384), [0x80, 0x80, 0x01]);
        assert_eq!(encoded(u64::from(u32::MAX)), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        let max = encoded(u64::MAX);
        assert_eq!(max.len(), 10);
        assert_eq!(max[9], 0x01);
        assert!(max[..9].iter().all(|&b| b == 0xff));
    }

    #[test]
    fn a_negative_int64_takes_ten_bytes_as_twos_complement() {
        let mut m = Message::new();
        m.int(1, -1);
        let bytes = m.into_bytes();
        assert_eq!(bytes[0], 0x08, "field 1, varint");
        assert_eq!(bytes.len(), 11);
        assert_eq!(fields(&bytes)[0].1.uint() as i64, -1);
    }

    #[test]
    fn fields_keys_and_lengths_are_those_of_the_wire_format() {
        let mut inner = Message::new();
        inner.uint(1, 150);
        let mut m = Message::new();
        m.string(2, "testing")
            .message(3, &inner)
            .packed(4, [3, 270, 86_942]);
        m.packed(5, []);
        let bytes = m.into_bytes();
        // The documentation's examples: "testing" in field 2, 150 in a nested field 3, and the
        // packed 3, 270, 86942 in field 4.
        assert_eq!(
            bytes,
            [
                0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g', //
                0x1a, 0x03, 0x08, 0x96, 0x01, //
                0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05,
            ]
        );
        let read = fields(&bytes);
        assert_eq!(read.len(), 3, "an empty packed field is left out");
        assert_eq!(read[0], (2, Value::Bytes(b"testing".to_vec())));
        assert_eq!(fields(read[1].1.bytes()), [(1, Value::Varint(150))]);
        assert_eq!(decode::packed(read[2].1.bytes()), [3, 270, 86_942]);
    }

    proptest! {
        #[test]
        fn every_varint_reads_back(v in any::<u64>()) {
            let bytes = encoded(v);
            let mut at = 0;
            prop_assert_eq!(decode::varint(&bytes, &mut at), Some(v));
            prop_assert_eq!(at, bytes.len());
            // Seven bits a byte: the length is fixed by the highest bit set.
            let bits = 64 - v.leading_zeros().min(63) as usize;
            prop_assert_eq!(bytes.len(), bits.div_ceil(7).max(1));
        }
    }
}
