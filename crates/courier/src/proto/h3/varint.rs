//! QUIC variable-length integers (RFC 9000 §16): the two top bits of the
//! first byte give the length (1, 2, 4 or 8 bytes), the rest is the value,
//! big-endian. Every HTTP/3 frame type, length, setting and stream type is
//! one.

use bytes::BufMut;

/// The largest value a varint holds (2^62 - 1).
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// The encoded length of `value` (at most [`MAX`]).
pub(crate) const fn len(value: u64) -> usize {
    if value < 1 << 6 {
        1
    } else if value < 1 << 14 {
        2
    } else if value < 1 << 30 {
        4
    } else {
        8
    }
}

/// Appends `value`, in the shortest form. Values over [`MAX`] are a bug of
/// ours (every value written is a length or a constant): clamped in
/// release, caught in debug.
pub(crate) fn put(dst: &mut impl BufMut, value: u64) {
    debug_assert!(value <= MAX, "varint {value} over 2^62-1");
    let value = value.min(MAX);
    match len(value) {
        1 => dst.put_u8(value as u8),
        2 => dst.put_u16(value as u16 | 0x4000),
        4 => dst.put_u32(value as u32 | 0x8000_0000),
        _ => dst.put_u64(value | 0xc000_0000_0000_0000),
    }
}

/// Reads a varint from the start of `src`: its value and length, or `None`
/// if `src` ends first. Any byte sequence is a valid varint (a longer form
/// than needed included, as RFC 9000 allows).
pub(crate) fn get(src: &[u8]) -> Option<(u64, usize)> {
    let first = *src.first()?;
    let n = 1usize << (first >> 6);
    let bytes = src.get(..n)?;
    let mut value = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        value = value << 8 | u64::from(b);
    }
    Some((value, n))
}

/// Reads a varint from `src`, advancing it past; `None` if it ends first
/// (then `src` is left as it was).
pub(crate) fn take(src: &mut &[u8]) -> Option<u64> {
    let (value, n) = get(src)?;
    *src = &src[n..];
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, v);
        out
    }

    #[test]
    fn rfc_9000_appendix_a_examples() {
        let examples: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in examples {
            assert_eq!(get(bytes), Some((value, bytes.len())));
            assert_eq!(encoded(value), bytes);
        }
        // A longer form than needed reads the same (RFC 9000 §A.1: 0x4025).
        assert_eq!(get(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn round_trips_at_every_boundary() {
        for v in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, MAX] {
            let bytes = encoded(v);
            assert_eq!(bytes.len(), len(v), "{v}");
            assert_eq!(get(&bytes), Some((v, bytes.len())), "{v}");
            let mut src = &bytes[..];
            assert_eq!(take(&mut src), Some(v));
            assert!(src.is_empty());
        }
    }

    #[test]
    fn a_cut_varint_is_incomplete_and_consumes_nothing() {
        let bytes = encoded(MAX);
        for cut in 0..bytes.len() {
            let mut src = &bytes[..cut];
            assert_eq!(get(src), None, "cut at {cut}");
            assert_eq!(take(&mut src), None);
            assert_eq!(src.len(), cut);
        }
    }
}
