//! A connection's last request head, kept HPACK-encoded with what it was
//! encoded from, so that the same head again is a copy of its bytes, not an
//! encoding (HTTP/3 keeps its QPACK heads the same way).
//!
//! Encoding a head is a table search per field (about a thousand
//! instructions for a typical head); comparing it with the kept one is a
//! few hundred. The bytes are only right while the encoder's dynamic table
//! is as it was when they were made: they are kept only from a block that
//! inserted nothing, and used only while the encoder's generation (which
//! every insertion, eviction and size change moves) is the one they were
//! made at. `:path` and an added content-length, which change from request
//! to request and never touch the table, are encoded each time between the
//! kept pieces.
//!
//! Bounded: one head, ours, in one buffer reused head to head.

use http::{HeaderMap, HeaderName};

/// The last request head encoded with no table insertion, as bytes.
#[derive(Debug, Default)]
pub(crate) struct Template {
    /// The encoder's generation the bytes were made at; `None`: none kept.
    generation: Option<u64>,
    /// The head's key ([`key`]), then the block before `:path`, then the
    /// block after it (without an added content-length), end to end.
    buf: Vec<u8>,
    /// Where the key and the block before `:path` end in `buf`.
    ends: [usize; 2],
    /// The request's own headers have a content-length (none is added).
    own_length: bool,
}

/// What a request head's block depends on but `:path` and an added
/// content-length (borrowed from [`super::encode::Head`]).
pub(crate) struct Key<'a> {
    pub(crate) method: &'a str,
    pub(crate) scheme: &'a str,
    pub(crate) authority: &'a str,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) defaults: &'a HeaderMap,
    pub(crate) withheld: &'a [HeaderName],
}

/// The pieces of a kept block, for [`super::encode::request`] to copy.
pub(crate) struct Kept<'a> {
    pub(crate) before_path: &'a [u8],
    pub(crate) after_path: &'a [u8],
    pub(crate) own_length: bool,
}

impl Template {
    /// The kept block's pieces, if `head` is the head they were made from
    /// and the encoder's table is as it was then.
    pub(crate) fn get(&self, generation: u64, head: &Key<'_>) -> Option<Kept<'_>> {
        if self.generation != Some(generation) {
            return None;
        }
        let [key_end, pre_end] = self.ends;
        let mut same = Compare {
            rest: &self.buf[..key_end],
            same: true,
        };
        key(head, &mut same);
        (same.same && same.rest.is_empty()).then(|| Kept {
            before_path: &self.buf[key_end..pre_end],
            after_path: &self.buf[pre_end..],
            own_length: self.own_length,
        })
    }

    /// Keeps the block just encoded for `head`, with no table insertion,
    /// at the encoder's `generation`.
    pub(crate) fn keep(
        &mut self,
        generation: u64,
        head: &Key<'_>,
        before_path: &[u8],
        after_path: &[u8],
    ) {
        self.buf.clear();
        key(head, &mut Record(&mut self.buf));
        let key_end = self.buf.len();
        self.buf.extend_from_slice(before_path);
        self.ends = [key_end, self.buf.len()];
        self.buf.extend_from_slice(after_path);
        self.own_length = head.headers.contains_key(http::header::CONTENT_LENGTH);
        self.generation = Some(generation);
    }

    /// Nothing kept: the last block is not one to copy.
    pub(crate) fn clear(&mut self) {
        self.generation = None;
    }
}

/// Where a head's key goes: recorded, or compared with a recorded one.
trait Sink {
    fn bytes(&mut self, bytes: &[u8]);
}

struct Record<'a>(&'a mut Vec<u8>);

impl Sink for Record<'_> {
    fn bytes(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(&bytes.len().to_le_bytes());
        self.0.extend_from_slice(bytes);
    }
}

struct Compare<'a> {
    rest: &'a [u8],
    same: bool,
}

impl Sink for Compare<'_> {
    fn bytes(&mut self, bytes: &[u8]) {
        const LEN: usize = std::mem::size_of::<usize>();
        if !self.same {
            return;
        }
        let end = LEN + bytes.len();
        let same = self.rest.get(..end).is_some_and(|next| {
            let (len, kept) = next.split_at(LEN);
            // The length as a number, not a slice comparison (a call).
            len.try_into().ok().map(usize::from_le_bytes) == Some(bytes.len()) && kept == bytes
        });
        match same {
            true => self.rest = &self.rest[end..],
            false => self.same = false,
        }
    }
}

/// `head` as bytes: each string with its
/// length first and each list with its count first, so that two different
/// heads never make the same key. Sensitivity is a field's too (a
/// sensitive value is a never-indexed literal; `HeaderValue`'s `==` leaves
/// it out).
fn key(head: &Key<'_>, sink: &mut impl Sink) {
    sink.bytes(head.method.as_bytes());
    sink.bytes(head.scheme.as_bytes());
    sink.bytes(head.authority.as_bytes());
    fields(head.headers, sink);
    fields(head.defaults, sink);
    sink.bytes(&head.withheld.len().to_le_bytes());
    for name in head.withheld {
        sink.bytes(name.as_str().as_bytes());
    }
}

fn fields(map: &HeaderMap, sink: &mut impl Sink) {
    sink.bytes(&map.len().to_le_bytes());
    for (name, value) in map {
        let name: &HeaderName = name;
        sink.bytes(name.as_str().as_bytes());
        sink.bytes(value.as_bytes());
        sink.bytes(&[u8::from(value.is_sensitive())]);
    }
}
