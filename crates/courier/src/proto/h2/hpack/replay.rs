//! The last header block a decoder read, kept so that the same block again
//! need not be decoded again.
//!
//! A server repeats its response heads: nginx sends the same seven fields,
//! six of them Huffman-coded and inserted into the table, on every response
//! until the `date` changes a second later. Decoding them is most of the
//! client's work per response. A block whose fields came from its own bytes
//! alone (no index into the dynamic table, no size update) decodes to the
//! same fields whenever its bytes come again, and changes the table the same
//! way, by the same insertions. So the decoder keeps the last block's bytes
//! and what it inserted, and `Decoder::replay` redoes only the insertions.
//!
//! Servers on the `h2` crate (hyper's, and so most Rust servers) send the
//! other kind once their fields are in the table: each field an index into
//! it, the content-length a literal not indexed; nine bytes, read from the
//! table and inserting nothing. Such a block changes nothing, so right
//! after it the table is what it read, and the same bytes again mean the
//! same fields: it may be replayed too, as long as it inserted nothing.

/// Longest block kept: a typical response head is about 100 bytes.
const MAX_BLOCK: usize = 1024;

/// The last block, when it can be replayed.
#[derive(Debug, Default)]
pub(super) struct Last {
    block: Vec<u8>,
    /// Names and values the block inserted into the table, back to back.
    inserted: Vec<u8>,
    /// (name length, value length) of each insertion, in order.
    lengths: Vec<(usize, usize)>,
    /// Whether the block may be replayed: it decoded without error, did not
    /// resize the table, and either read nothing from the table or inserted
    /// nothing into it (see `reads`).
    pure: bool,
    /// The block read the dynamic table: replayable only if it inserted
    /// nothing, so that the table it read is still there.
    reads: bool,
    /// Whether the block before it was this same block, and pure.
    repeated: bool,
}

impl Last {
    /// Starts recording `block`, about to be decoded.
    pub(super) fn start(&mut self, block: &[u8]) {
        self.repeated = self.is(block);
        self.pure = block.len() <= MAX_BLOCK;
        self.reads = false;
        self.block.clear();
        self.inserted.clear();
        self.lengths.clear();
        if self.pure {
            self.block.extend_from_slice(block);
        }
    }

    /// The block changed the table other than by insertions (a size
    /// update), or failed.
    pub(super) fn impure(&mut self) {
        self.pure = false;
    }

    /// The block read an entry of the dynamic table.
    pub(super) fn reads_table(&mut self) {
        self.reads = true;
    }

    /// Whether the block, decoded again right after itself, would read and
    /// do what it did: it depended on nothing but its bytes, or on a table
    /// it left as it found it.
    fn replayable(&self) -> bool {
        self.pure && (!self.reads || self.lengths.is_empty())
    }

    pub(super) fn insert(&mut self, name: &[u8], value: &[u8]) {
        if self.pure {
            self.inserted.extend_from_slice(name);
            self.inserted.extend_from_slice(value);
            self.lengths.push((name.len(), value.len()));
        }
    }

    /// Whether `block` is the last block again, and that one may be replayed.
    pub(super) fn is(&self, block: &[u8]) -> bool {
        self.replayable() && self.block == block
    }

    /// Whether the block just decoded was the same as the one before, both
    /// replayable: worth keeping what it decoded to.
    pub(super) fn repeated(&self) -> bool {
        self.repeated && self.replayable()
    }

    /// The insertions of the last block, in order.
    pub(super) fn insertions(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut rest = &self.inserted[..];
        self.lengths.iter().map(move |&(name, value)| {
            let (field, tail) = rest.split_at(name + value);
            rest = tail;
            field.split_at(name)
        })
    }
}
