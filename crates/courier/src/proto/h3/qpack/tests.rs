//! QPACK's codecs against RFC 9204's examples (those that apply to a table
//! of capacity 0), round trips and malformed input.

use bytes::BytesMut;

use super::encode::{field, prefix};
use super::static_table::STATIC;
use super::*;
use crate::proto::h2::hpack::huffman::encoded_len as huffman_len;

/// Decoded (name, value) pairs.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn decoded(block: &[u8], max: u64) -> Result<Fields, DecodeError> {
    let mut out = Vec::new();
    decode(block, max, |n, v| {
        out.push((n.to_vec(), v.to_vec()));
        Ok(())
    })?;
    Ok(out)
}

fn encoded(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut dst = BytesMut::new();
    prefix(&mut dst);
    for (n, v) in fields {
        field(&mut dst, n, v, false);
    }
    dst.to_vec()
}

fn owned(fields: &[(&[u8], &[u8])]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect()
}

#[test]
fn rfc_9204_b1_literal_with_name_reference() {
    // Appendix B.1: the encoded field section, with no dynamic table.
    let block = [
        0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d, 0x6c,
    ];
    assert_eq!(
        decoded(&block, 1024),
        Ok(owned(&[(b":path", b"/index.html")]))
    );
}

#[test]
fn rfc_9204_dynamic_table_examples_are_refused() {
    // B.2's field section (Required Insert Count 2, then two relative
    // indices), and lines that name the dynamic table (a Required Insert
    // Count, an indexed dynamic line, a post-base index, a dynamic name
    // reference): each is what a capacity of 0 never allows.
    for block in [
        &[0x03, 0x81, 0x10, 0x11][..],
        &[0x05, 0x00, 0x80, 0xc1, 0x81][..],
        &[0x00, 0x00, 0x80][..],
        &[0x00, 0x00, 0x10][..],
        &[0x00, 0x00, 0x40, 0x01, b'x'][..],
    ] {
        assert!(
            matches!(decoded(block, 1024), Err(DecodeError::Invalid(_))),
            "{block:x?}"
        );
    }
    // The encoder stream of B.2 (capacity 220, inserts): refused; the one
    // instruction a capacity of 0 allows passes.
    let b2_encoder = [0x3f, 0xbd, 0x01, 0xc0, 0x0f, b'w', b'w', b'w'];
    assert_eq!(
        check_encoder_stream(&b2_encoder),
        Err(DecodeError::EncoderStream(0x3f))
    );
    assert_eq!(check_encoder_stream(&[0x20, 0x20]), Ok(()));
    for insert in [0xc0, 0x80, 0x40, 0x00, 0x21] {
        assert_eq!(
            check_encoder_stream(&[0x20, insert]),
            Err(DecodeError::EncoderStream(insert))
        );
    }
}

#[test]
fn every_static_entry_round_trips() {
    for &(name, value) in &STATIC {
        // Whole match: two prefix bytes and one or two index bytes.
        let block = encoded(&[(name, value)]);
        assert!(block.len() <= 4, "{name:?}: {block:x?}");
        assert_eq!(decoded(&block, 4096), Ok(owned(&[(name, value)])));
        // Name match with another value.
        let other: &[u8] = b"another value, not in the table";
        assert_eq!(
            decoded(&encoded(&[(name, other)]), 4096),
            Ok(owned(&[(name, other)]))
        );
    }
}

#[test]
fn literals_round_trip_raw_and_huffman_coded() {
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let fields: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"example.com:8443"),
        (b":path", b"/a/b?c=d"),
        (b"x-custom", b"value"),
        (b"x-empty", b""),
        (b"x-binary", &all_bytes),
        (b"user-agent", b"courier/0.1"),
        (
            b"x-a-very-long-name-that-needs-more-than-seven-length-bits",
            b"v",
        ),
    ];
    let block = encoded(&fields);
    assert_eq!(decoded(&block, 64 << 10), Ok(owned(&fields)));
    // Huffman where it is shorter: "example.com:8443" is, binary is not.
    let mut one = BytesMut::new();
    field(&mut one, b":authority", b"example.com:8443", false);
    assert_eq!(one[0], 0x50, "a name reference to static 0");
    assert!(one[1] & 0x80 != 0, "Huffman-coded");
    let mut bin = BytesMut::new();
    field(&mut bin, b"x-binary", &all_bytes, false);
    assert_eq!(bin[0] & 0xe0, 0x20, "a literal name");
    // All 256 byte values Huffman-code longer than raw: the value is raw.
    assert!(huffman_len(&all_bytes) > all_bytes.len());
    assert!(bin.len() < all_bytes.len() + 16, "{}", bin.len());
}

#[test]
fn the_never_index_bit_is_set_for_sensitive_fields() {
    let mut dst = BytesMut::new();
    field(&mut dst, b"authorization", b"secret", true);
    assert_eq!(dst[0] & 0xf0, 0x70, "01NT with N and T");
    let mut dst = BytesMut::new();
    field(&mut dst, b"x-token", b"secret", true);
    assert_eq!(dst[0] & 0xf0, 0x30, "001N with N");
    let mut block = vec![0, 0];
    block.extend_from_slice(&dst);
    assert_eq!(decoded(&block, 1024), Ok(owned(&[(b"x-token", b"secret")])));
}

#[test]
fn the_field_section_size_is_bounded() {
    let fields: Vec<(&[u8], &[u8])> = vec![(b"x-a", b"1234567890"); 10];
    let block = encoded(&fields);
    // Each field counts 3 + 10 + 32 = 45.
    assert_eq!(decoded(&block, 450).map(|f| f.len()), Ok(10));
    assert_eq!(
        decoded(&block, 449),
        Err(DecodeError::TooLarge { max: 449 })
    );
}

#[test]
fn malformed_sections_are_typed_errors() {
    let cases: &[&[u8]] = &[
        &[],                                                     // no prefix
        &[0x00],                                                 // no Delta Base
        &[0x01, 0x00],                                           // Required Insert Count 1
        &[0x00, 0x00, 0xff],                                     // index integer cut short
        &[0x00, 0x00, 0xc0 | 63, 0x30],                          // static index 99: past the table
        &[0x00, 0x00, 0x51, 0x05, b'a'],                         // value past the end
        &[0x00, 0x00, 0x51, 0x81, 0xff],                         // Huffman: EOS padding too long
        &[0x00, 0x00, 0x27, 0x00],                               // literal name length cut short
        &[0x00, 0x00, 0x51, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // length overflow
    ];
    for block in cases {
        assert!(
            matches!(decoded(block, 64 << 10), Err(DecodeError::Invalid(_))),
            "{block:x?}: {:?}",
            decoded(block, 64 << 10)
        );
    }
}

#[test]
fn never_panics_on_arbitrary_input() {
    let mut next = crate::test_support::xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let state = next();
        let len = (state % 20) as usize;
        let mut bytes: Vec<u8> = (0..len)
            .map(|i| (state >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(31))
            .collect();
        if let Some(b) = bytes.get_mut(0) {
            *b &= 0x01; // mostly a valid prefix, to reach the field lines
        }
        let _ = decoded(&bytes, 256);
        let _ = check_encoder_stream(&bytes);
    }
}
