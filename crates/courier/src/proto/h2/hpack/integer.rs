//! Prefixed integers (RFC 7541 §5.1): the low `prefix` bits of the first
//! byte, then, if they are all ones, 7 more bits per byte, least significant
//! first, while the top bit is set.

use bytes::{BufMut, BytesMut};

use super::DecodeError;

/// Continuation bytes accepted after the prefix. Five carry 35 bits, more
/// than any value we accept, so a longer run is an overflow (or zero padding
/// meant to make us loop).
const MAX_CONTINUATION_BYTES: usize = 5;

/// The largest value we accept: lengths, indexes and table sizes beyond
/// `u32` mean nothing in a header block, and it keeps arithmetic on `usize`
/// safe on 32-bit targets.
const MAX_VALUE: u64 = u32::MAX as u64;

/// Appends `value` with a `prefix`-bit prefix (1 to 8); `flags` fills the
/// bits of the first byte above the prefix.
pub(crate) fn encode(dst: &mut BytesMut, value: usize, prefix: u8, flags: u8) {
    debug_assert!((1..=8).contains(&prefix));
    let max = (1usize << prefix) - 1;
    if value < max {
        dst.put_u8(flags | value as u8);
        return;
    }
    dst.put_u8(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        dst.put_u8(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    dst.put_u8(rest as u8);
}

/// Reads an integer with a `prefix`-bit prefix at `*pos`, advancing `*pos`
/// past it. The bits of the first byte above the prefix are ignored (the
/// caller has read them).
pub(crate) fn decode(src: &[u8], pos: &mut usize, prefix: u8) -> Result<usize, DecodeError> {
    let max = (1u64 << prefix) - 1;
    let first = *src
        .get(*pos)
        .ok_or(DecodeError::Invalid("truncated integer"))?;
    *pos += 1;
    let mut value = u64::from(first) & max;
    if value < max {
        return Ok(value as usize);
    }
    for i in 0..MAX_CONTINUATION_BYTES {
        let byte = *src
            .get(*pos)
            .ok_or(DecodeError::Invalid("truncated integer"))?;
        *pos += 1;
        value += u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            if value > MAX_VALUE {
                break;
            }
            return Ok(value as usize);
        }
    }
    Err(DecodeError::Invalid("integer overflow"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: usize, prefix: u8) -> Vec<u8> {
        let mut dst = BytesMut::new();
        encode(&mut dst, value, prefix, 0);
        dst.to_vec()
    }

    fn decoded(src: &[u8], prefix: u8) -> Result<(usize, usize), DecodeError> {
        let mut pos = 0;
        decode(src, &mut pos, prefix).map(|v| (v, pos))
    }

    /// RFC 7541 C.1.
    #[test]
    fn rfc_examples() {
        assert_eq!(encoded(10, 5), [0x0a]);
        assert_eq!(encoded(1337, 5), [0x1f, 0x9a, 0x0a]);
        assert_eq!(encoded(42, 8), [0x2a]);
        assert_eq!(decoded(&[0x0a], 5), Ok((10, 1)));
        assert_eq!(decoded(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
        assert_eq!(decoded(&[0x2a], 8), Ok((42, 1)));
    }

    #[test]
    fn flags_are_kept_and_ignored() {
        let mut dst = BytesMut::new();
        encode(&mut dst, 62, 6, 0x40);
        encode(&mut dst, 63, 6, 0x40);
        assert_eq!(&dst[..], [0x7e, 0x7f, 0x00]);
        assert_eq!(decoded(&dst, 6), Ok((62, 1)));
        assert_eq!(decoded(&dst[1..], 6), Ok((63, 2)));
    }

    #[test]
    fn round_trips_across_prefixes() {
        let values = [
            0,
            1,
            14,
            15,
            16,
            126,
            127,
            128,
            255,
            256,
            4096,
            65535,
            1 << 21,
        ];
        for prefix in 1..=8 {
            for &value in &values {
                let bytes = encoded(value, prefix);
                assert_eq!(decoded(&bytes, prefix), Ok((value, bytes.len())));
            }
        }
        let max = u32::MAX as usize;
        assert_eq!(decoded(&encoded(max, 5), 5).map(|r| r.0), Ok(max));
    }

    #[test]
    fn rejects_truncation_and_overflow() {
        let invalid = |src: &[u8]| decoded(src, 5).is_err();
        assert!(invalid(&[]));
        assert!(invalid(&[0x1f]));
        assert!(invalid(&[0x1f, 0x9a]));
        // u32::MAX + 1.
        assert!(invalid(&encoded(u32::MAX as usize + 1, 5)));
        // Six continuation bytes, even if they are zero padding.
        assert!(invalid(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]));
        assert!(invalid(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]));
    }
}
