//! Field sections (RFC 9204 §4.5) read against the static table alone: a
//! Required Insert Count other than 0, or any reference to the dynamic
//! table, is QPACK_DECOMPRESSION_FAILED (we announced a capacity of 0, so
//! a peer that sends one broke the protocol, §2.2.3). The decoded size
//! (name + value + 32 per field, RFC 9114 §4.2.2) is bounded by our
//! SETTINGS_MAX_FIELD_SECTION_SIZE, checked field by field.

use crate::proto::h2::hpack::{huffman, integer};

/// Per-field overhead in a field section's size (RFC 9114 §4.2.2).
const FIELD_OVERHEAD: u64 = 32;

/// Why a field section (or an encoder stream) is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Not valid QPACK for a table of capacity 0
    /// (QPACK_DECOMPRESSION_FAILED).
    Invalid(&'static str),
    /// The decoded fields exceed the bound.
    TooLarge { max: u64 },
    /// The peer's encoder stream did more than set capacity 0
    /// (QPACK_ENCODER_STREAM_ERROR).
    EncoderStream(u8),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Invalid(what) => write!(f, "invalid QPACK field section: {what}"),
            DecodeError::TooLarge { max } => write!(f, "field section over {max} bytes"),
            DecodeError::EncoderStream(b) => write!(
                f,
                "QPACK encoder stream instruction {b:#04x} on a table of capacity 0"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A prefixed integer truncated or over `u32` (HPACK's reader).
impl From<crate::proto::h2::hpack::DecodeError> for DecodeError {
    fn from(_: crate::proto::h2::hpack::DecodeError) -> DecodeError {
        DecodeError::Invalid("a bad integer")
    }
}

/// Decodes `block` (a HEADERS frame's payload), calling `field` with each
/// name and value in order. Names are as sent (checking them is the
/// message layer's); values are raw bytes.
///
/// # Errors
/// [`DecodeError::Invalid`] for anything but a static-table section,
/// [`DecodeError::TooLarge`] past `max_size`, or `field`'s own error.
pub(crate) fn decode(
    block: &[u8],
    max_size: u64,
    mut field: impl FnMut(&[u8], &[u8]) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut pos = 0;
    // Required Insert Count (§4.5.1.1): 0 is the only one possible here.
    if integer::decode(block, &mut pos, 8)? != 0 {
        return Err(DecodeError::Invalid(
            "a Required Insert Count with no dynamic table",
        ));
    }
    // Delta Base: meaningless without the dynamic table.
    integer::decode(block, &mut pos, 7)?;
    let mut size = 0u64;
    // Huffman-decoded strings land here (one buffer for names, one for values).
    let mut name_buf = Vec::new();
    let mut value_buf = Vec::new();
    while pos < block.len() {
        let first = block[pos];
        let (name, value): (&[u8], &[u8]) = if first & 0x80 != 0 {
            // Indexed field line (§4.5.2): T must be 1 (static).
            if first & 0x40 == 0 {
                return Err(DecodeError::Invalid("a dynamic table reference"));
            }
            let index = integer::decode(block, &mut pos, 6)?;
            let (name, value) = entry(index)?;
            (name, value)
        } else if first & 0x40 != 0 {
            // Literal with name reference (§4.5.4): T is 0x10.
            if first & 0x10 == 0 {
                return Err(DecodeError::Invalid("a dynamic table reference"));
            }
            let index = integer::decode(block, &mut pos, 4)?;
            let (name, _) = entry(index)?;
            let value = string(block, &mut pos, 7, &mut value_buf)?;
            (name, value)
        } else if first & 0x20 != 0 {
            // Literal with literal name (§4.5.6): H is 0x08, 3-bit length.
            let name = string(block, &mut pos, 3, &mut name_buf)?;
            let value = string(block, &mut pos, 7, &mut value_buf)?;
            (name, value)
        } else {
            // Post-base index or name reference (§4.5.3, §4.5.5).
            return Err(DecodeError::Invalid(
                "a post-base (dynamic table) reference",
            ));
        };
        size += name.len() as u64 + value.len() as u64 + FIELD_OVERHEAD;
        if size > max_size {
            return Err(DecodeError::TooLarge { max: max_size });
        }
        field(name, value)?;
    }
    Ok(())
}

/// A static table entry.
fn entry(index: usize) -> Result<(&'static [u8], &'static [u8]), DecodeError> {
    super::static_table::STATIC
        .get(index)
        .copied()
        .ok_or(DecodeError::Invalid("a static index past the table"))
}

/// A string literal (§4.1.2) whose length has a `prefix`-bit prefix and
/// whose H flag is the bit just above it; Huffman-coded ones are decoded
/// into `buf`.
fn string<'a>(
    block: &'a [u8],
    pos: &mut usize,
    prefix: u8,
    buf: &'a mut Vec<u8>,
) -> Result<&'a [u8], DecodeError> {
    let huffman = block.get(*pos).is_some_and(|b| b & (1 << prefix) != 0);
    let len = integer::decode(block, pos, prefix)?;
    let end = pos
        .checked_add(len)
        .filter(|&end| end <= block.len())
        .ok_or(DecodeError::Invalid("a string past the section's end"))?;
    let raw = &block[*pos..end];
    *pos = end;
    if !huffman {
        return Ok(raw);
    }
    buf.clear();
    huffman::decode(raw, buf).map_err(|_| DecodeError::Invalid("bad Huffman code"))?;
    Ok(buf)
}

/// Checks the next bytes of the peer's encoder stream (§4.3). With the
/// capacity of 0 we announced, the one instruction allowed is Set Dynamic
/// Table Capacity to 0 (the byte 0x20; a larger capacity, an insert or a
/// duplicate is an error), so the check needs no state across chunks.
///
/// # Errors
/// [`DecodeError::EncoderStream`] with the first byte that is not 0x20.
pub(crate) fn check_encoder_stream(bytes: &[u8]) -> Result<(), DecodeError> {
    match bytes.iter().find(|&&b| b != 0x20) {
        Some(&b) => Err(DecodeError::EncoderStream(b)),
        None => Ok(()),
    }
}
