//! HTTP/2's and HTTP/3's readings of the same response heads, held to each
//! other: the fields a server sends mean the same whichever protocol
//! carries them (`proto::fields`), so the two decoders must agree on every
//! head, replays included, and on the same fields as trailers.

use bytes::BytesMut;
use http::{HeaderMap, StatusCode};

use crate::proto::h2::head::{Block, BlockDecoder, BlockError};
use crate::proto::h2::hpack::Encoder;
use crate::proto::h3::head::{trailer_fields, HeadError, Replay};
use crate::proto::h3::qpack::encode;

/// What a decoder made of a head.
#[derive(Debug, PartialEq)]
enum Reading {
    Final {
        status: StatusCode,
        headers: HeaderMap,
        length: Option<u64>,
    },
    Interim,
    Malformed,
    TooLarge,
}

/// The field-section bound both decoders are given.
const MAX: usize = 16 * 1024;

/// Fields and values a byte stands for, so that a fuzzer's one-byte name
/// or value reaches the ones the rules are about.
const NAMES: [&[u8]; 12] = [
    b":status",
    b"content-length",
    b"transfer-encoding",
    b"te",
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"upgrade",
    b"host",
    b":path",
    b"Content-Length",
    b"x-a",
];
const VALUES: [&[u8]; 12] = [
    b"200",
    b"101",
    b"103",
    b"5",
    b"+5",
    b"05",
    b"",
    b"5, 5",
    b"trailers",
    b"Trailers",
    b"chunked",
    b"a\r\nb",
];

fn expand<'a>(bytes: &'a [u8], table: &[&'static [u8]]) -> &'a [u8] {
    match bytes {
        [b] => table[usize::from(*b) % table.len()],
        _ => bytes,
    }
}

/// Decodes each head in `heads` (its fields in order; a one-byte name or
/// value stands for one of the tables above) over one HTTP/2 connection and
/// one HTTP/3 connection, and panics where the two readings differ. Heads
/// past the bound are left out (the protocols count a section's size
/// alike, but the fuzzer has nothing to learn there).
pub fn heads_differential(heads: &[Vec<(Vec<u8>, Vec<u8>)>]) {
    let mut encoder = Encoder::new();
    let mut h2 = BlockDecoder::new(4096, MAX);
    let h3 = Replay::default();
    for fields in heads {
        let fields: Vec<(&[u8], &[u8])> = fields
            .iter()
            .map(|(n, v)| (expand(n, &NAMES), expand(v, &VALUES)))
            .collect();
        let size: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        if size > MAX / 2 {
            continue;
        }
        let mut hpack = BytesMut::new();
        encoder.begin(&mut hpack);
        let mut qpack = BytesMut::new();
        encode::prefix(&mut qpack);
        for (name, value) in &fields {
            encoder.field(name, value, false, &mut hpack);
            encode::field(&mut qpack, name, value, false);
        }
        let over_h2 = match h2.decode(&hpack, false) {
            Ok(Block::Response(head, declared)) => match declared.length() {
                Ok(length) => Reading::Final {
                    status: head.parts.status,
                    headers: head.headers().clone(),
                    length,
                },
                Err(_) => Reading::Malformed,
            },
            Ok(Block::Informational) => Reading::Interim,
            Ok(Block::Trailers(_)) => unreachable!("decoded as a head"),
            Err(BlockError::Malformed(_)) => Reading::Malformed,
            Err(BlockError::TooLarge) => Reading::TooLarge,
            Err(BlockError::Compression(what)) => panic!("our own HPACK refused: {what}"),
        };
        let over_h3 = match h3.response(&qpack, MAX as u64) {
            Ok(head) if head.parts.status.is_informational() => Reading::Interim,
            Ok(head) => Reading::Final {
                status: head.parts.status,
                headers: head.headers().clone(),
                length: head.length,
            },
            Err(HeadError::Malformed(_)) => Reading::Malformed,
            Err(HeadError::TooLarge(_)) => Reading::TooLarge,
            Err(HeadError::Qpack(e)) => panic!("our own QPACK refused: {e}"),
        };
        assert_eq!(over_h2, over_h3, "{fields:?}");
        // The same fields as a trailer section (encoded again: decoding
        // inserts into HPACK's table as the encoder did).
        let mut hpack = BytesMut::new();
        encoder.begin(&mut hpack);
        for (name, value) in &fields {
            encoder.field(name, value, false, &mut hpack);
        }
        let over_h2 = match h2.decode(&hpack, true) {
            Ok(Block::Trailers(headers)) => Ok(headers),
            Ok(_) => unreachable!("decoded as trailers"),
            Err(BlockError::Malformed(_)) => Err(Reading::Malformed),
            Err(BlockError::TooLarge) => Err(Reading::TooLarge),
            Err(BlockError::Compression(what)) => panic!("our own HPACK refused: {what}"),
        };
        let over_h3 = match trailer_fields(&qpack, MAX as u64) {
            Ok(headers) => Ok(headers),
            Err(HeadError::Malformed(_)) => Err(Reading::Malformed),
            Err(HeadError::TooLarge(_)) => Err(Reading::TooLarge),
            Err(HeadError::Qpack(e)) => panic!("our own QPACK refused: {e}"),
        };
        assert_eq!(over_h2, over_h3, "trailers {fields:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair of the tables' fields after each status, as one head,
    /// then the same heads again (replayed by both).
    #[test]
    fn the_two_readings_agree_on_every_pair_of_fields() {
        let mut heads = Vec::new();
        for status in [b"200".as_slice(), b"101", b"103", b"204"] {
            for name in 0..NAMES.len() as u8 {
                for value in 0..VALUES.len() as u8 {
                    let head = vec![
                        (b":status".to_vec(), status.to_vec()),
                        (vec![name], vec![value]),
                    ];
                    heads.push(head.clone());
                    heads.push(head);
                }
            }
        }
        heads_differential(&heads);
    }
}
