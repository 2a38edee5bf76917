//! Field lines written against the static table alone (RFC 9204 §4.5): a
//! whole match is one indexed line, a name match a literal with a name
//! reference, anything else a literal with a literal name; each string
//! Huffman-coded when that is shorter. The section prefix is always
//! Required Insert Count 0, Delta Base 0.

use bytes::{BufMut, BytesMut};

use super::static_table::{self, Match};
use crate::proto::h2::hpack::{huffman, integer};

/// Appends the section prefix (§4.5.1): no dynamic table referenced.
pub(crate) fn prefix(dst: &mut BytesMut) {
    dst.put_slice(&[0x00, 0x00]);
}

/// Appends one field line. `name` must be lowercase (HTTP/3 field names
/// are, §4.2; `http`'s header names already are). `sensitive` sets the N
/// bit: an intermediary must not put the field in a dynamic table.
pub(crate) fn field(dst: &mut BytesMut, name: &[u8], value: &[u8], sensitive: bool) {
    let never = if sensitive { 0x20 } else { 0x00 };
    match static_table::find(name, value) {
        Some(Match::Field(index)) => integer::encode(dst, index, 6, 0xc0),
        Some(Match::Name(index)) => {
            // 01NT: T = 1, static.
            integer::encode(dst, index, 4, 0x50 | never);
            string(dst, value, 7, 0x00);
        }
        None => {
            // 001N H: the name's H bit is 0x08, its length a 3-bit prefix.
            string(dst, name, 3, 0x20 | (never >> 1));
            string(dst, value, 7, 0x00);
        }
    }
}

/// A string literal whose length has a `prefix`-bit prefix, `flags` above
/// the H bit (the bit just over the prefix), Huffman-coded when shorter.
fn string(dst: &mut BytesMut, s: &[u8], prefix: u8, flags: u8) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        integer::encode(dst, coded, prefix, flags | 1 << prefix);
        huffman::encode(s, dst);
    } else {
        integer::encode(dst, s.len(), prefix, flags);
        dst.put_slice(s);
    }
}
