//! Decoding of header blocks (RFC 7541 §3, §6): the peer's response
//! headers.
//!
//! Fields are handed to a callback as slices instead of being collected:
//! they point into the block itself (raw strings), into the dynamic table
//! (indexed fields), or into a scratch buffer (Huffman-decoded strings), so
//! a block decodes without an allocation per field.

use std::fmt;

use super::replay::Last;
use super::static_table::{self, STATIC};
use super::table::{Table, ENTRY_OVERHEAD};
use super::{huffman, integer};

/// Scratch capacity kept between blocks; a larger one (left by an unusually
/// large field) is released after the block.
const SCRATCH_KEEP: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The block is not valid HPACK (bad index, truncated integer/string, integer overflow,
    /// invalid Huffman code/padding, EOS symbol, table size update above the limit or not at the
    /// start of the block, ...). A connection error (COMPRESSION_ERROR) for the caller.
    Invalid(&'static str),
    /// The decoded header list exceeded `max_list_size` (RFC 9113 size: name + value + 32 per
    /// field). The whole block WAS still decoded, so the dynamic table stays in sync and the
    /// connection can go on; only the fields were not all emitted.
    ListTooLarge,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Invalid(what) => write!(f, "invalid HPACK header block: {what}"),
            DecodeError::ListTooLarge => f.write_str("header list too large"),
        }
    }
}

impl std::error::Error for DecodeError {}

#[derive(Debug)]
pub(crate) struct Decoder {
    table: Table,
    /// The SETTINGS_HEADER_TABLE_SIZE we advertise: the most a dynamic
    /// table size update may ask for.
    max_table_size: usize,
    /// Huffman-decoded strings and copied names of the current field.
    scratch: Vec<u8>,
    /// The last block, to replay when it comes again.
    last: Last,
    /// Entries inserted by the replays of the last block since it was last
    /// decoded, all of them fitting the table.
    streak: usize,
    /// Replaying the last block leaves the table as it is: see `replay`.
    fixed: bool,
}

/// A string of the current field: still in the block when it was sent raw,
/// or decoded into the scratch buffer.
#[derive(Debug, Clone, Copy)]
enum Str {
    Static(&'static [u8]),
    Block(usize, usize),
    Scratch(usize, usize),
}

impl Str {
    fn bytes<'a>(self, block: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            Str::Static(bytes) => bytes,
            Str::Block(start, end) => &block[start..end],
            Str::Scratch(start, end) => &scratch[start..end],
        }
    }
}

/// How a literal field is to be indexed (§6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Indexing {
    /// Incremental indexing: insert it in the dynamic table.
    Insert,
    /// Without indexing, or never indexed: the same to a decoder that does
    /// not pass fields on to another hop.
    None,
}

impl Decoder {
    /// `max_table_size`: the SETTINGS_HEADER_TABLE_SIZE we advertise (the
    /// most a table size update may ask for). The table starts at that size:
    /// a peer that uses less signals it, and one that uses more than we
    /// allow would only see fields evicted early, never misread.
    pub(crate) fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: Table::new(max_table_size),
            max_table_size,
            scratch: Vec::new(),
            last: Last::default(),
            streak: 0,
            fixed: false,
        }
    }

    /// If `block` is the last block decoded again, byte for byte, and that
    /// block's fields came from its bytes alone, or from a table it left as
    /// it found it (see [`super::replay`]), makes its insertions into
    /// the table again and returns true: the table is then as decoding
    /// `block` would leave it, and its fields are the last block's, which
    /// the caller kept. Otherwise does nothing and returns false.
    ///
    /// Once the table holds nothing but this block's insertions, it is the
    /// longest run of them, ending with the block's last, that fits its
    /// size; inserting them once more keeps it so. When a replay leaves as
    /// many entries as it found, the table is that run and a fixed point:
    /// further replays insert nothing (nginx's head, about 1,400
    /// instructions a response, until its `date` changes).
    pub(crate) fn replay(&mut self, block: &[u8]) -> bool {
        if !self.last.is(block) {
            return false;
        }
        if self.fixed {
            return true;
        }
        let (before, mut inserted) = (self.table.len(), 0);
        let mut all_fit = true;
        for (name, value) in self.last.insertions() {
            all_fit &= self.table.insert(name, value, |_, _, _| {});
            inserted += 1;
        }
        if !all_fit {
            // An insertion larger than the table emptied it: count afresh.
            self.streak = 0;
            return true;
        }
        // Every entry there before came from this streak's insertions.
        let only_ours = self.streak >= before;
        self.streak = self.streak.saturating_add(inserted);
        self.fixed = inserted > 0 && only_ours && self.table.len() == before;
        true
    }

    /// Replaying the last block no longer changes the table (tests).
    #[cfg(test)]
    pub(crate) fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// Whether the block last decoded was the same as the one before it,
    /// and may be replayed: what it decoded to is worth keeping.
    pub(crate) fn repeated(&self) -> bool {
        self.last.repeated()
    }

    /// Decodes one complete header block (HEADERS + CONTINUATION fragments already concatenated),
    /// calling `emit(name, value)` for each field in order. Pseudo-header names start with ':'.
    /// Slices are valid only during the call (they may point into the tables or a scratch buffer
    /// owned by the decoder, which is reused across calls: no allocation per field in steady state).
    /// After ListTooLarge is detected, keeps decoding (to keep the table in sync) but emits nothing more.
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        max_list_size: usize,
        emit: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let mut sink = Sink {
            emit,
            max: max_list_size,
            size: 0,
            too_large: false,
        };
        // A block decoded may change the table any way: replays count afresh.
        self.streak = 0;
        self.fixed = false;
        self.last.start(block);
        let result = self.decode_fields(block, &mut sink);
        if self.scratch.capacity() > SCRATCH_KEEP {
            self.scratch = Vec::new();
        }
        if result.is_err() || sink.too_large {
            self.last.impure();
        }
        result?;
        if sink.too_large {
            return Err(DecodeError::ListTooLarge);
        }
        Ok(())
    }

    fn decode_fields<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        sink: &mut Sink<F>,
    ) -> Result<(), DecodeError> {
        let mut pos = 0;
        // Size updates may only come before the first field (§4.2).
        let mut at_start = true;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let index = integer::decode(block, &mut pos, 7)?;
                if index > static_table::LEN {
                    self.last.reads_table();
                }
                let (name, value) = indexed(&self.table, index)?;
                sink.field(name, value);
            } else if first & 0x40 != 0 {
                // Literal with incremental indexing (§6.2.1).
                self.literal(block, &mut pos, 6, Indexing::Insert, sink)?;
            } else if first & 0x20 != 0 {
                // Dynamic table size update (§6.3).
                if !at_start {
                    return Err(DecodeError::Invalid(
                        "dynamic table size update after a field",
                    ));
                }
                let size = integer::decode(block, &mut pos, 5)?;
                if size > self.max_table_size {
                    return Err(DecodeError::Invalid(
                        "dynamic table size update above the limit",
                    ));
                }
                self.table.set_max_size(size, |_, _, _| {});
                self.last.impure();
                continue;
            } else {
                // Literal without indexing (0000) or never indexed (0001)
                // (§6.2.2, §6.2.3).
                self.literal(block, &mut pos, 4, Indexing::None, sink)?;
            }
            at_start = false;
        }
        Ok(())
    }

    /// A literal field whose name index has a `prefix`-bit prefix.
    fn literal<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        prefix: u8,
        indexing: Indexing,
        sink: &mut Sink<F>,
    ) -> Result<(), DecodeError> {
        self.scratch.clear();
        let name_index = integer::decode(block, pos, prefix)?;
        if name_index > static_table::LEN {
            self.last.reads_table();
        }
        let name = match name_index {
            0 => read_string(block, pos, &mut self.scratch)?,
            1..=static_table::LEN => Str::Static(STATIC[name_index - 1].0),
            _ if indexing == Indexing::Insert => {
                // Copied out: inserting the field may evict the entry it
                // takes its name from.
                let (name, _) = indexed(&self.table, name_index)?;
                let start = self.scratch.len();
                self.scratch.extend_from_slice(name);
                Str::Scratch(start, self.scratch.len())
            }
            _ => {
                // Not inserted: the name can stay in the table.
                let value = read_string(block, pos, &mut self.scratch)?;
                let (name, _) = indexed(&self.table, name_index)?;
                sink.field(name, value.bytes(block, &self.scratch));
                return Ok(());
            }
        };
        let value = read_string(block, pos, &mut self.scratch)?;
        let name = name.bytes(block, &self.scratch);
        let value = value.bytes(block, &self.scratch);
        if indexing == Indexing::Insert {
            self.table.insert(name, value, |_, _, _| {});
            self.last.insert(name, value);
        }
        sink.field(name, value);
        Ok(())
    }
}

/// The field at a (static or dynamic) index.
fn indexed(table: &Table, index: usize) -> Result<(&[u8], &[u8]), DecodeError> {
    match index {
        0 => Err(DecodeError::Invalid("index 0")),
        1..=static_table::LEN => Ok(STATIC[index - 1]),
        _ => table
            .get(index - static_table::LEN - 1)
            .ok_or(DecodeError::Invalid("index out of range")),
    }
}

/// Reads a string literal (§5.2) at `*pos`; a Huffman-coded one is decoded
/// into `scratch`.
fn read_string(block: &[u8], pos: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, DecodeError> {
    let huffman = block.get(*pos).is_some_and(|b| b & 0x80 != 0);
    let len = integer::decode(block, pos, 7)?;
    let start = *pos;
    let end = start
        .checked_add(len)
        .filter(|&end| end <= block.len())
        .ok_or(DecodeError::Invalid("truncated string"))?;
    *pos = end;
    if !huffman {
        return Ok(Str::Block(start, end));
    }
    let decoded_start = scratch.len();
    huffman::decode(&block[start..end], scratch)?;
    Ok(Str::Scratch(decoded_start, scratch.len()))
}

/// Passes fields on until the header list grows past its limit.
struct Sink<F> {
    emit: F,
    max: usize,
    /// RFC 9113 §6.5.2 size of the fields so far.
    size: usize,
    too_large: bool,
}

impl<F: FnMut(&[u8], &[u8])> Sink<F> {
    fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.too_large {
            return;
        }
        self.size = self
            .size
            .saturating_add(name.len() + value.len() + ENTRY_OVERHEAD);
        if self.size > self.max {
            self.too_large = true;
            return;
        }
        (self.emit)(name, value);
    }
}

#[cfg(test)]
impl Decoder {
    pub(super) fn table(&self) -> &Table {
        &self.table
    }
}
