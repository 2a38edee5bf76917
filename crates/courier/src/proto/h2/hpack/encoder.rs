//! Encoding of header blocks (RFC 7541 §6): our request headers.
//!
//! Fields that repeat from request to request (`:authority`, `user-agent`,
//! `accept`, custom headers) go into the dynamic table the first time and
//! are one indexed byte afterwards, so the table does the compressing.
//! Strings are written raw, never Huffman-coded: coding them costs CPU on
//! every literal for a saving of about a quarter of its bytes, and a client
//! that mostly repeats its fields sends few literals (and `:path`, the one
//! that always changes, is usually short).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::{BufMut, BytesMut};

use super::static_table::{self, Match};
use super::table::{entry_size, Table};
use super::{integer, DEFAULT_TABLE_SIZE};

/// The most dynamic table we use whatever the peer allows: enough for the
/// fields a client repeats, and memory per connection is what we save.
const MAX_USED_TABLE_SIZE: usize = DEFAULT_TABLE_SIZE;

/// Names whose values change with every request: not worth a table entry.
const NOT_INDEXED: [&[u8]; 3] = [b":path", b"content-length", b"set-cookie"];

/// Secrets: not in the table either, and marked never-indexed (§7.1.3) so
/// that no intermediary indexes them, where guessing a value could be
/// checked through the compressed size.
const NEVER_INDEXED: [&[u8]; 3] = [b"authorization", b"proxy-authorization", b"cookie"];

/// First-byte patterns and prefix lengths of the representations (§6).
const INDEXED: (u8, u8) = (0x80, 7);
const LITERAL_INSERT: (u8, u8) = (0x40, 6);
const LITERAL_NOT_INDEXED: (u8, u8) = (0x00, 4);
const LITERAL_NEVER_INDEXED: (u8, u8) = (0x10, 4);
const SIZE_UPDATE: (u8, u8) = (0x20, 5);

#[derive(Debug)]
pub(crate) struct Encoder {
    /// Our copy of the table the peer's decoder keeps.
    table: Table,
    /// Hash of (name, value) → id of the newest entry with that field.
    fields: IdMap,
    /// Hash of a name → id of the newest entry with that name.
    names: IdMap,
    /// Smallest and last table size set since the last block, to signal at
    /// the start of the next one.
    pending_update: Option<(usize, usize)>,
    /// Counts the table's changes (insertions, evictions, size changes):
    /// while it stands still, the same fields encode to the same bytes
    /// ([`super::super::template`] keeps them).
    generation: u64,
}

/// Keys are already hashes: the map's hasher passes them through.
type IdMap = HashMap<u64, u64, BuildHasherDefault<PassThrough>>;

impl Encoder {
    /// An encoder for a peer with the default table size.
    pub(crate) fn new() -> Encoder {
        Encoder {
            table: Table::new(DEFAULT_TABLE_SIZE.min(MAX_USED_TABLE_SIZE)),
            fields: IdMap::default(),
            names: IdMap::default(),
            pending_update: None,
            generation: 0,
        }
    }

    /// Changes when the table does: equal generations, equal tables.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed: the next block starts with a dynamic table
    /// size update (to min(new, what we choose to use)), evicting as needed. Handle a decrease
    /// then increase before the next block correctly (RFC 7541 §4.2: signal the minimum, then the final).
    pub(crate) fn set_max_table_size(&mut self, size: usize) {
        let size = size.min(MAX_USED_TABLE_SIZE);
        if self.pending_update.is_none() && size == self.table.max_size() {
            return;
        }
        let smallest = self.pending_update.map_or(size, |(min, _)| min.min(size));
        self.pending_update = Some((smallest, size));
        self.generation += 1;
        let Encoder {
            table,
            fields,
            names,
            ..
        } = self;
        table.set_max_size(size, |id, name, value| {
            forget(fields, names, id, name, value)
        });
    }

    /// Starts a header block: writes any pending table size update.
    pub(crate) fn begin(&mut self, dst: &mut BytesMut) {
        if let Some((smallest, last)) = self.pending_update.take() {
            // The decoder must evict what we evicted at the smallest size
            // before growing again (§4.2).
            if smallest < last {
                write_int(dst, SIZE_UPDATE, smallest);
            }
            write_int(dst, SIZE_UPDATE, last);
        }
    }

    /// Appends the static table's field `index` (1 to 61), a field the
    /// caller knows is there: the same bytes as [`field`](Self::field)
    /// writes for it, without looking it up.
    pub(crate) fn static_field(&mut self, index: usize, dst: &mut BytesMut) {
        debug_assert!((1..=static_table::LEN).contains(&index));
        write_int(dst, INDEXED, index);
    }

    /// Appends one field. `name` is lowercase (pseudo-headers start with ':'). `sensitive` fields
    /// are written as never-indexed literals (0x10 prefix).
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8], sensitive: bool, dst: &mut BytesMut) {
        let static_match = static_table::find(name, value);
        self.field_matched(name, value, sensitive, static_match, dst);
    }

    /// [`field`](Self::field) for a name the caller knows is the static
    /// table's `index` with none of its static values (`:authority`,
    /// `:path`, written on every request): the same bytes, without looking
    /// the name up.
    pub(crate) fn static_name_field(
        &mut self,
        index: usize,
        name: &[u8],
        value: &[u8],
        dst: &mut BytesMut,
    ) {
        debug_assert_eq!(
            static_table::find(name, value),
            Some(Match::Name(index)),
            "{name:?}"
        );
        self.field_matched(name, value, false, Some(Match::Name(index)), dst);
    }

    /// [`static_name_field`](Self::static_name_field) for `:path`
    /// (static name 4), which is never indexed (it changes with every
    /// request): the literal [`field`](Self::field) writes for it, without
    /// deciding so each time.
    pub(crate) fn path_field(&mut self, value: &[u8], dst: &mut BytesMut) {
        debug_assert!(NOT_INDEXED.contains(&&b":path"[..]));
        literal(dst, LITERAL_NOT_INDEXED, Some(4), b":path", value);
    }

    fn field_matched(
        &mut self,
        name: &[u8],
        value: &[u8],
        sensitive: bool,
        static_match: Option<Match>,
        dst: &mut BytesMut,
    ) {
        if sensitive || NEVER_INDEXED.contains(&name) {
            let name_index = self.name_index(name, static_match);
            return literal(dst, LITERAL_NEVER_INDEXED, name_index, name, value);
        }
        let static_name = match static_match {
            Some(Match::Field(index)) => return write_int(dst, INDEXED, index),
            Some(Match::Name(index)) => Some(index),
            None => None,
        };
        // Large fields would push out several small ones that repeat.
        if NOT_INDEXED.contains(&name) || entry_size(name, value) > self.table.max_size() / 4 {
            let name_index = self.name_index(name, static_match);
            return literal(dst, LITERAL_NOT_INDEXED, name_index, name, value);
        }
        let field_hash = hash_field(name, value);
        if let Some(index) = self.find_field(field_hash, name, value) {
            return write_int(dst, INDEXED, index);
        }
        let name_index = static_name.or_else(|| self.find_name(name));
        literal(dst, LITERAL_INSERT, name_index, name, value);
        self.insert(name, value, field_hash);
    }

    /// The index of `name` in the static or dynamic table.
    fn name_index(&self, name: &[u8], static_match: Option<Match>) -> Option<usize> {
        match static_match {
            Some(Match::Field(index) | Match::Name(index)) => Some(index),
            None => self.find_name(name),
        }
    }

    /// The HPACK index of a dynamic table entry with this name and value.
    fn find_field(&self, field_hash: u64, name: &[u8], value: &[u8]) -> Option<usize> {
        let id = *self.fields.get(&field_hash)?;
        let (index, n, v) = self.table.get_id(id)?;
        // Equal hashes may be different fields.
        (n == name && v == value).then_some(static_table::LEN + 1 + index)
    }

    /// The HPACK index of a dynamic table entry with this name.
    fn find_name(&self, name: &[u8]) -> Option<usize> {
        let id = *self.names.get(&hash_name(name))?;
        let (index, n, _) = self.table.get_id(id)?;
        (n == name).then_some(static_table::LEN + 1 + index)
    }

    fn insert(&mut self, name: &[u8], value: &[u8], field_hash: u64) {
        self.generation += 1;
        let id = self.table.next_id();
        let Encoder {
            table,
            fields,
            names,
            ..
        } = self;
        let inserted = table.insert(name, value, |id, n, v| forget(fields, names, id, n, v));
        if inserted {
            fields.insert(field_hash, id);
            names.insert(hash_name(name), id);
        }
    }
}

/// Drops an evicted entry from the maps, unless they point to a newer one.
fn forget(fields: &mut IdMap, names: &mut IdMap, id: u64, name: &[u8], value: &[u8]) {
    let field_hash = hash_field(name, value);
    if fields.get(&field_hash) == Some(&id) {
        fields.remove(&field_hash);
    }
    let name_hash = hash_name(name);
    if names.get(&name_hash) == Some(&id) {
        names.remove(&name_hash);
    }
}

/// A literal field (§6.2), with an indexed name if there is one.
fn literal(
    dst: &mut BytesMut,
    representation: (u8, u8),
    name_index: Option<usize>,
    name: &[u8],
    value: &[u8],
) {
    match name_index {
        Some(index) => write_int(dst, representation, index),
        None => {
            write_int(dst, representation, 0);
            write_string(dst, name);
        }
    }
    write_string(dst, value);
}

fn write_int(dst: &mut BytesMut, (flags, prefix): (u8, u8), value: usize) {
    integer::encode(dst, value, prefix, flags);
}

/// A raw string literal (§5.2 with H = 0).
fn write_string(dst: &mut BytesMut, s: &[u8]) {
    integer::encode(dst, s.len(), 7, 0x00);
    dst.put_slice(s);
}

fn hash_name(name: &[u8]) -> u64 {
    hash(0, name)
}

fn hash_field(name: &[u8], value: &[u8]) -> u64 {
    hash(hash(0, name) ^ name.len() as u64, value)
}

/// A fast non-cryptographic hash (8 bytes per multiply, in the manner of
/// FxHash). Our own fields are hashed, not the peer's, and a collision only
/// costs a missed index, as matches are compared in full.
fn hash(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let mut h = seed;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = mix(h, u64::from_le_bytes(word));
    }
    let mut word = [0u8; 8];
    let rest = chunks.remainder();
    word[..rest.len()].copy_from_slice(rest);
    let h = mix(h, u64::from_le_bytes(word) ^ ((bytes.len() as u64) << 56));
    // The multiplies mix upwards: fold the high bits into the low ones,
    // which pick the bucket.
    h ^ (h >> 32)
}

/// A hasher for keys that are hashes already.
#[derive(Debug, Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = hash(self.0, bytes);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
impl Encoder {
    pub(super) fn table(&self) -> &Table {
        &self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(encoder: &mut Encoder, fields: &[(&str, &str, bool)]) -> Vec<u8> {
        let mut dst = BytesMut::new();
        encoder.begin(&mut dst);
        for &(name, value, sensitive) in fields {
            encoder.field(name.as_bytes(), value.as_bytes(), sensitive, &mut dst);
        }
        dst.to_vec()
    }

    fn one(encoder: &mut Encoder, name: &str, value: &str) -> Vec<u8> {
        encode(encoder, &[(name, value, false)])
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn static_fields_are_one_byte() {
        let mut encoder = Encoder::new();
        assert_eq!(one(&mut encoder, ":method", "GET"), [0x82]);
        assert_eq!(one(&mut encoder, ":method", "POST"), [0x83]);
        assert_eq!(one(&mut encoder, ":scheme", "https"), [0x87]);
        assert_eq!(one(&mut encoder, ":path", "/"), [0x84]);
        assert_eq!(
            one(&mut encoder, "accept-encoding", "gzip, deflate"),
            [0x90]
        );
        assert_eq!(encoder.table.len(), 0);
    }

    #[test]
    fn repeated_fields_are_indexed() {
        let mut encoder = Encoder::new();
        // Static name (:authority is 1), inserted as 62.
        let first = one(&mut encoder, ":authority", "example.com");
        assert_eq!(first, cat(&[&[0x41, 11], b"example.com"]));
        assert_eq!(one(&mut encoder, ":authority", "example.com"), [0xbe]);
        // A new name; the :authority entry moves to 63.
        let custom = one(&mut encoder, "x-a", "1");
        assert_eq!(custom, cat(&[&[0x40, 3], b"x-a", &[1], b"1"]));
        assert_eq!(one(&mut encoder, ":authority", "example.com"), [0xbf]);
        // Same name, other value: the name is taken from the table (62).
        assert_eq!(one(&mut encoder, "x-a", "2"), cat(&[&[0x7e, 1], b"2"]));
        assert_eq!(one(&mut encoder, "x-a", "1"), [0xbf]);
        assert_eq!(one(&mut encoder, "x-a", "2"), [0xbe]);
        // A method not in the static table: its name is.
        assert_eq!(
            one(&mut encoder, ":method", "PUT"),
            cat(&[&[0x42, 3], b"PUT"])
        );
        assert_eq!(one(&mut encoder, ":method", "PUT"), [0xbe]);
    }

    #[test]
    fn unindexed_fields() {
        let mut encoder = Encoder::new();
        // :path changes with every request: literal without indexing, name 4.
        let path = cat(&[&[0x04, 6], b"/items"]);
        assert_eq!(one(&mut encoder, ":path", "/items"), path);
        assert_eq!(one(&mut encoder, ":path", "/items"), path);
        // content-length is 28 (15 + 13), set-cookie 55 (15 + 40).
        assert_eq!(
            one(&mut encoder, "content-length", "10"),
            cat(&[&[0x0f, 13, 2], b"10"])
        );
        assert_eq!(
            one(&mut encoder, "set-cookie", "a"),
            cat(&[&[0x0f, 40, 1], b"a"])
        );
        // Over a quarter of the table.
        let big = "x".repeat(1000);
        let expected = cat(&[&[0x00, 5], b"x-big", &[0x7f, 0xe9, 0x06], big.as_bytes()]);
        assert_eq!(one(&mut encoder, "x-big", &big), expected);
        assert_eq!(encoder.table.len(), 0);
    }

    #[test]
    fn secrets_are_never_indexed() {
        let mut encoder = Encoder::new();
        // authorization is 23 (15 + 8), cookie 32 (15 + 17).
        let auth = cat(&[&[0x1f, 8, 3], b"abc"]);
        assert_eq!(one(&mut encoder, "authorization", "abc"), auth);
        assert_eq!(one(&mut encoder, "authorization", "abc"), auth);
        assert_eq!(
            one(&mut encoder, "cookie", "a=b"),
            cat(&[&[0x1f, 17, 3], b"a=b"])
        );
        // Sensitive: a new name, then a name from the dynamic table (62).
        let secret = encode(&mut encoder, &[("x-key", "k", true)]);
        assert_eq!(secret, cat(&[&[0x10, 5], b"x-key", &[1], b"k"]));
        one(&mut encoder, "x-key", "public");
        let secret = encode(&mut encoder, &[("x-key", "k", true)]);
        assert_eq!(secret, cat(&[&[0x1f, 47, 1], b"k"]));
        // Even a static match.
        assert_eq!(
            encode(&mut encoder, &[(":method", "GET", true)]),
            cat(&[&[0x12, 3], b"GET"])
        );
        assert_eq!(encoder.table.len(), 1);
    }

    #[test]
    fn table_size_updates() {
        let mut encoder = Encoder::new();
        // Nothing to signal at first, nor for a larger size than we use.
        assert!(encode(&mut encoder, &[]).is_empty());
        encoder.set_max_table_size(65536);
        assert!(encode(&mut encoder, &[]).is_empty());

        one(&mut encoder, "x-a", "1");
        // Down to 0 then back up: both are signalled, and the table was
        // emptied.
        encoder.set_max_table_size(0);
        encoder.set_max_table_size(4096);
        assert_eq!(encoder.table.len(), 0);
        assert_eq!(encode(&mut encoder, &[]), [0x20, 0x3f, 0xe1, 0x1f]);
        assert!(encode(&mut encoder, &[]).is_empty());

        // Down twice: only the last.
        encoder.set_max_table_size(2048);
        encoder.set_max_table_size(1000);
        assert_eq!(encode(&mut encoder, &[]), [0x3f, 0xc9, 0x07]);

        // Up and down again to where it was: still signalled, harmlessly.
        encoder.set_max_table_size(3000);
        encoder.set_max_table_size(1000);
        assert_eq!(encode(&mut encoder, &[]), [0x3f, 0xc9, 0x07]);

        // With no table, nothing is inserted.
        encoder.set_max_table_size(0);
        let block = encode(&mut encoder, &[("x-a", "1", false)]);
        assert_eq!(block, cat(&[&[0x20, 0x00, 3], b"x-a", &[1], b"1"]));
        assert_eq!(encoder.table.len(), 0);
    }

    #[test]
    fn evicted_entries_are_forgotten() {
        let mut encoder = Encoder::new();
        encoder.set_max_table_size(300);
        encode(&mut encoder, &[]);
        // 3 + 38 + 32 = 73 bytes each (under a quarter of 300): four fit.
        let value = |c: &str| c.repeat(38);
        for name in ["x-a", "x-b", "x-c", "x-d", "x-e"] {
            one(&mut encoder, name, &value("v"));
        }
        assert_eq!(encoder.table.len(), 4);
        assert_eq!(encoder.fields.len(), 4);
        assert_eq!(encoder.names.len(), 4);
        // x-a was evicted: a literal again, with a new name.
        let x_a = cat(&[&[0x40, 3], b"x-a", &[38], value("v").as_bytes()]);
        assert_eq!(one(&mut encoder, "x-a", &value("v")), x_a);
        assert_eq!(one(&mut encoder, "x-a", &value("v")), [0xbe]);
        // The newest entry with a name is the one used for it.
        one(&mut encoder, "x-a", &value("w"));
        assert_eq!(one(&mut encoder, "x-a", &value("u"))[0], 0x7e);
        assert_eq!(encoder.fields.len(), encoder.table.len());
    }
}
