//! Tests across the codec: RFC 7541 Appendix C, encoder/decoder round
//! trips, and malformed blocks.

mod errors;
mod replay;
mod rfc7541;
mod round_trip;

use super::{huffman, integer, DecodeError, Decoder, Encoder, DEFAULT_TABLE_SIZE};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Bytes from a hex dump; whitespace is ignored.
fn hex(dump: &str) -> Vec<u8> {
    let digits: Vec<u8> = dump.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

fn fields(list: &[(&str, &str)]) -> Fields {
    list.iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// Decodes a block with no list size limit.
fn decode(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, DecodeError> {
    decode_limited(decoder, block, usize::MAX)
}

fn decode_limited(
    decoder: &mut Decoder,
    block: &[u8],
    max_list_size: usize,
) -> Result<Fields, DecodeError> {
    let mut out = Vec::new();
    decoder
        .decode(block, max_list_size, |n, v| {
            out.push((n.to_vec(), v.to_vec()))
        })
        .map(|()| out)
}
