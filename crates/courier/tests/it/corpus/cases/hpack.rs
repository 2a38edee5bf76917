//! HPACK abuse (RFC 7541): a small block that decodes to a huge header
//! list (the "HPACK bomb"), dynamic table size games, indices and integers
//! out of range, strings that lie about their length.

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, w};
use crate::corpus::case::{Case, Class::Hpack};
use crate::support::h2::{hpack_int, hpack_str, STATUS_200};

/// A 4000-byte field inserted into the dynamic table, then referenced
/// `refs` times: a few KiB on the wire, `refs` × 4 KB decoded.
fn bomb(refs: usize) -> Vec<u8> {
    let mut block = vec![STATUS_200, 0x40];
    hpack_str(b"x-bomb", &mut block);
    hpack_str(&[b'a'; 4000], &mut block);
    // Dynamic index 62 is the newest entry.
    block.extend(std::iter::repeat_n(0x80 | 62, refs));
    block
}

pub fn cases() -> Vec<Case> {
    vec![
        Case::h2("hpack-bomb", Hpack, |s| {
            vec![w(super::headers::continued(s, &bomb(10_000)))]
        })
        .err(HeadersTooLarge)
        .tls_too(),
        Case::h2("hpack-bomb-in-trailers", Hpack, |s| {
            let mut trailers = super::headers::continued(s, &bomb(10_000)[1..]);
            // Trailers end the stream: END_STREAM on their HEADERS frame.
            trailers[4] |= crate::support::h2::END_STREAM;
            let head = h2_headers(s, &block_200(&[]), false);
            vec![w(cat(&[&head, &data(s, b"hello", false), &trailers]))]
        })
        .err(Body),
        Case::h2("hpack-table-size-over-limit", Hpack, |s| {
            let mut block = Vec::new();
            hpack_int(0x20, 5, 1 << 20, &mut block);
            block.push(STATUS_200);
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("hpack-size-update-after-field", Hpack, |s| {
            let mut block = vec![STATUS_200];
            hpack_int(0x20, 5, 0, &mut block);
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("hpack-three-size-updates", Hpack, |s| {
            let mut block = Vec::new();
            for size in [0, 100, 200] {
                hpack_int(0x20, 5, size, &mut block);
            }
            block.push(STATUS_200);
            vec![w(h2_headers(s, &block, true))]
        })
        .ok(200, b""),
        Case::h2("hpack-size-update-to-zero", Hpack, |s| {
            let mut block = Vec::new();
            hpack_int(0x20, 5, 0, &mut block);
            block.push(STATUS_200);
            vec![w(cat(&[
                &h2_headers(s, &block, false),
                &data(s, b"hello", true),
            ]))]
        })
        .ok(200, b"hello"),
        Case::h2("hpack-index-zero", Hpack, |s| {
            vec![w(h2_headers(s, &[STATUS_200, 0x80], true))]
        })
        .err(Protocol),
        Case::h2("hpack-index-past-table", Hpack, |s| {
            vec![w(h2_headers(s, &[STATUS_200, 0x80 | 70], true))]
        })
        .err(Protocol),
        Case::h2("hpack-integer-overflow", Hpack, |s| {
            let block = [&[STATUS_200, 0xff][..], &[0xff; 12], &[0x01]].concat();
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("hpack-string-longer-than-block", Hpack, |s| {
            let mut block = vec![STATUS_200, 0x00];
            hpack_int(0, 7, 1000, &mut block);
            block.extend_from_slice(b"short");
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("hpack-huffman-eos", Hpack, |s| {
            // A Huffman string holding the EOS symbol (30 one bits).
            let block = [
                &[STATUS_200, 0x00, 0x81, b'x', 0x84][..],
                &[0xff, 0xff, 0xff, 0xff],
            ]
            .concat();
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("hpack-table-churn", Hpack, |s| {
            // 2000 fresh insertions, each evicting the last: costly, but legal,
            // and small once decoded (one field repeated is not kept).
            let mut block = vec![STATUS_200];
            for i in 0..200u32 {
                block.push(0x40);
                hpack_str(format!("x-{i}").as_bytes(), &mut block);
                hpack_str(&[b'v'; 100], &mut block);
            }
            vec![w(cat(&[
                &super::headers::continued(s, &block),
                &data(s, b"hello", true),
            ]))]
        })
        .ok(200, b"hello"),
    ]
}
