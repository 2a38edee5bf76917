//! Malformed blocks are errors, never panics, and a header list over its
//! limit still keeps the table in sync.

use super::*;

fn invalid(decoder: &mut Decoder, block: &[u8]) -> bool {
    matches!(decode(decoder, block), Err(DecodeError::Invalid(_)))
}

/// A valid block as one hex string per representation, and its fields:
/// cutting between representations leaves a valid block, cutting inside one
/// must not.
type Pieces = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// Valid blocks, in pieces.
const PIECES: &[Pieces] = &[
    (
        &[
            "82",
            "86",
            "84",
            "410f 7777 772e 6578 616d 706c 652e 636f 6d",
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
        ],
    ),
    (
        // C.6.1: Huffman-coded values.
        &[
            "4882 6402",
            "5885 aec3 771a 4b",
            "6196 d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
            "6e91 9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
        ],
        &[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ],
    ),
    (
        // Size updates (to 0, then 4096), a new name, never indexed, and a
        // name from the dynamic table.
        &[
            "20",
            "3fe1 1f",
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            "1008 7061 7373 776f 7264 0673 6563 7265 74",
            "1f2f 0176",
        ],
        &[
            ("custom-key", "custom-header"),
            ("password", "secret"),
            ("custom-key", "v"),
        ],
    ),
];

#[test]
fn truncated_blocks_are_invalid() {
    for &(pieces, expected) in PIECES {
        let pieces: Vec<Vec<u8>> = pieces.iter().map(|p| hex(p)).collect();
        let block = pieces.concat();
        assert_eq!(
            decode(&mut Decoder::new(4096), &block),
            Ok(fields(expected))
        );
        // Where each whole representation ends, and how many fields come
        // before: a size update has none.
        let mut boundaries = vec![(0, 0)];
        let mut end = 0;
        for piece in &pieces {
            end += piece.len();
            let count = boundaries.last().unwrap().1 + usize::from(piece[0] & 0xe0 != 0x20);
            boundaries.push((end, count));
        }
        for cut in 0..block.len() {
            let got = decode(&mut Decoder::new(4096), &block[..cut]);
            match boundaries.iter().find(|b| b.0 == cut) {
                Some(&(_, count)) => assert_eq!(got, Ok(fields(&expected[..count])), "cut {cut}"),
                None => assert!(
                    matches!(got, Err(DecodeError::Invalid(_))),
                    "cut {cut}: {got:?}"
                ),
            }
        }
    }
}

#[test]
fn bad_huffman_is_invalid() {
    let literal = |value: &[u8]| {
        // Literal without indexing, new name "a", Huffman-coded value.
        let mut block = vec![0x00, 0x01, b'a', 0x80 | value.len() as u8];
        block.extend_from_slice(value);
        block
    };
    let mut decoder = Decoder::new(4096);
    let mut good = Vec::new();
    huffman::encode(b"ok", &mut good);
    assert_eq!(
        decode(&mut decoder, &literal(&good)),
        Ok(fields(&[("a", "ok")]))
    );
    // '0' (00000) padded with zeros.
    assert!(invalid(&mut decoder, &literal(&[0x00])));
    // A whole byte of padding.
    good.push(0xff);
    assert!(invalid(&mut decoder, &literal(&good)));
    // EOS.
    assert!(invalid(&mut decoder, &literal(&[0xff, 0xff, 0xff, 0xff])));
    // A Huffman-coded name with bad padding.
    assert!(invalid(&mut decoder, &[0x00, 0x81, 0x00, 0x00]));
}

#[test]
fn bad_indexes_are_invalid() {
    let mut decoder = Decoder::new(4096);
    // Index 0, as a field and as a name (0 means a new name for literals,
    // so use an indexed field).
    assert!(invalid(&mut decoder, &hex("80")));
    // 62 with an empty dynamic table: as a field, and as a name.
    assert!(invalid(&mut decoder, &hex("be")));
    assert!(invalid(&mut decoder, &hex("7e 0161")));
    assert!(invalid(&mut decoder, &hex("0f2f 0161")));
    assert!(invalid(&mut decoder, &hex("1f2f 0161")));
    // One entry: 62 is valid, 63 is not.
    assert_eq!(
        decode(&mut decoder, &hex("4001 6101 62")),
        Ok(fields(&[("a", "b")]))
    );
    assert_eq!(decode(&mut decoder, &hex("be")), Ok(fields(&[("a", "b")])));
    assert!(invalid(&mut decoder, &hex("bf")));
    // A huge index.
    assert!(invalid(&mut decoder, &hex("ff ffff ffff 0f")));
    // A string length past the end of the block, or overflowing.
    assert!(invalid(&mut decoder, &hex("0001 6105 6262")));
    assert!(invalid(&mut decoder, &hex("0001 617f ffff ffff 0f")));
}

#[test]
fn size_updates() {
    let mut decoder = Decoder::new(4096);
    // Above the limit.
    assert!(invalid(&mut decoder, &hex("3fe2 1f")));
    // After a field.
    assert!(invalid(&mut decoder, &hex("82 20")));
    // Several in a row, at the start: the table is emptied by the first.
    assert_eq!(
        decode(&mut decoder, &hex("4001 6101 62")),
        Ok(fields(&[("a", "b")]))
    );
    assert_eq!(
        decode(&mut decoder, &hex("20 3fe1 1f 82")),
        Ok(fields(&[(":method", "GET")]))
    );
    assert_eq!(decoder.table().max_size(), 4096);
    assert!(invalid(&mut decoder, &hex("be")));
    // A smaller table evicts, and a block of only an update is valid.
    assert_eq!(
        decode(&mut decoder, &hex("4001 6101 62 4001 6301 64")).map(|f| f.len()),
        Ok(2)
    );
    assert_eq!(decode(&mut decoder, &hex("3f05")), Ok(vec![]));
    assert_eq!(decoder.table().fields(), fields(&[("c", "d")]));
    assert_eq!(decoder.table().max_size(), 36);
}

#[test]
fn list_too_large_keeps_the_table_in_sync() {
    let mut decoder = Decoder::new(4096);
    // :method GET (42) and :scheme http (43) fit in 85; custom-key:
    // custom-header (55) does not, and neither does anything after it.
    let block = hex("8286 400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572 84");
    let mut out = Vec::new();
    let result = decoder.decode(&block, 85, |n, v| out.push((n.to_vec(), v.to_vec())));
    assert_eq!(result, Err(DecodeError::ListTooLarge));
    assert_eq!(out, fields(&[(":method", "GET"), (":scheme", "http")]));
    // The entry was inserted all the same.
    assert_eq!(
        decode(&mut decoder, &hex("be")),
        Ok(fields(&[("custom-key", "custom-header")]))
    );
    // The limit is per block.
    assert_eq!(
        decode_limited(&mut decoder, &hex("be"), 55).map(|f| f.len()),
        Ok(1)
    );
    assert_eq!(
        decode_limited(&mut decoder, &hex("be"), 54),
        Err(DecodeError::ListTooLarge)
    );
    // An invalid block is Invalid even when the list is also too large.
    assert!(matches!(
        decode_limited(&mut decoder, &hex("be bf"), 0),
        Err(DecodeError::Invalid(_))
    ));
}

/// Random blocks, and valid ones with bytes changed: errors or fields, but
/// never a panic, and the table stays within its limit.
#[test]
fn arbitrary_input_never_panics() {
    let mut next = crate::test_support::xorshift(0x9e37_79b9_7f4a_7c15_u64);
    let valid: Vec<Vec<u8>> = PIECES
        .iter()
        .map(|(pieces, _)| pieces.iter().flat_map(|p| hex(p)).collect())
        .collect();
    let mut decoder = Decoder::new(256);
    for i in 0..20_000 {
        let block: Vec<u8> = if i % 2 == 0 {
            let len = next() as usize % 40;
            (0..len).map(|_| next() as u8).collect()
        } else {
            let mut block = valid[next() as usize % valid.len()].clone();
            for _ in 0..1 + next() % 3 {
                let at = next() as usize % block.len();
                block[at] = next() as u8;
            }
            block
        };
        let _ = decode_limited(&mut decoder, &block, 1000);
        assert!(decoder.table().size() <= decoder.table().max_size());
        assert!(decoder.table().max_size() <= 256);
    }
}
