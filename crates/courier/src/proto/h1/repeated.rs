//! A response head laid out as the connection's last one: read without
//! `httparse`.
//!
//! A server answers one connection's requests with heads that differ, if at
//! all, in a few values of the same length (`Date`, an `ETag`, a
//! `Content-Length` of the same number of digits). Such a head has the last
//! head's bytes everywhere outside its header values (status line, names,
//! separators, line ends), and its values at the same offsets. Comparing
//! those bytes (a few `memcmp`s) costs a tenth of parsing the head again
//! (about 2,000 instructions for nginx's 8 headers), and `httparse` would
//! find the same status, names and value offsets in it.
//!
//! That holds only if a value's new bytes cannot end it, or move where it
//! starts or ends: a value that differs from the template's (see
//! `names.rs`) is taken only when it has no control byte and no whitespace
//! at either end (`httparse` trims those); otherwise the head is parsed.

use super::decode::Seen;

/// Heads longer than this are parsed every time: a connection keeps at
/// most this much of a layout (nginx's heads are about 250 B), whatever
/// size of head the server sends.
pub(super) const MAX_LAYOUT: usize = 2048;

/// The layout of the last head `httparse` read: its bytes outside the
/// header values, and where each value was.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    /// The whole head, through its empty line (empty: nothing kept).
    bytes: Vec<u8>,
    /// Each header's value, as offsets into `bytes`, in order.
    values: Vec<(u32, u32)>,
    /// The status code and minor version `httparse` read from it.
    code: u16,
    minor: u8,
    /// Set when `bytes` are the last head's, values and all, and the
    /// template's values are its values: what its framing headers said.
    /// The same bytes again read the same, without a look at a value.
    seen: Option<Seen>,
}

impl Layout {
    /// Keeps the layout of `head` (the head's bytes, ending with its empty
    /// line), whose values `httparse` found at `values` (offsets), its
    /// status `code` and minor version.
    pub(super) fn keep(
        &mut self,
        head: &[u8],
        values: impl Iterator<Item = (usize, usize)>,
        code: u16,
        minor: u8,
    ) {
        self.forget();
        if head.len() > MAX_LAYOUT {
            return;
        }
        let len = head.len() as u32;
        self.values.extend(values.map(|(start, end)| {
            // Within `head`, so within u32.
            (start as u32, end as u32)
        }));
        debug_assert!(self.values.iter().all(|&(s, e)| s <= e && e <= len));
        self.bytes.extend_from_slice(head);
        self.code = code;
        self.minor = minor;
    }

    /// Keeps nothing: the next head is parsed.
    pub(super) fn forget(&mut self) {
        self.bytes.clear();
        self.values.clear();
        self.seen = None;
    }

    /// The head last read, `Some((head, seen))`, has the template's values
    /// (and its framing headers said `seen`): its bytes, laid out as those
    /// kept (or the same), are kept for [`exact`](Self::exact). `None`: the
    /// template's values are not the last head's.
    pub(super) fn synced(&mut self, last: Option<(&[u8], Seen)>) {
        self.seen = match last {
            Some((head, seen)) if head.len() == self.bytes.len() => {
                self.bytes.copy_from_slice(head);
                Some(seen)
            }
            _ => None,
        };
    }

    /// If `buf` starts with the last head's bytes, whose values are the
    /// template's: as [`matches`](Self::matches), and what its framing
    /// headers said.
    pub(super) fn exact(&self, buf: &[u8]) -> Option<(usize, u16, u8, Seen)> {
        let seen = self.seen?;
        let len = self.bytes.len();
        (buf.len() >= len && buf[..len] == self.bytes[..])
            .then_some((len, self.code, self.minor, seen))
    }

    /// The number of headers of the head kept.
    pub(super) fn headers(&self) -> usize {
        self.values.len()
    }

    /// If `buf` starts with a head laid out as the one kept: its length,
    /// status code and minor version. Its values are [`value`](Self::value).
    pub(super) fn matches(&self, buf: &[u8]) -> Option<(usize, u16, u8)> {
        let len = self.bytes.len();
        if len == 0 || buf.len() < len {
            return None;
        }
        let (new, old) = (&buf[..len], &self.bytes[..]);
        let mut at = 0;
        for &(start, end) in &self.values {
            let start = start as usize;
            if new[at..start] != old[at..start] {
                return None;
            }
            at = end as usize;
        }
        (new[at..] == old[at..]).then_some((len, self.code, self.minor))
    }

    /// The bytes of value number `i` in a head that [`matches`](Self::matches).
    pub(super) fn value<'b>(&self, head: &'b [u8], i: usize) -> &'b [u8] {
        let (start, end) = self.values[i];
        &head[start as usize..end as usize]
    }
}

/// Whether `value`, found where the kept head had a value, is one
/// `httparse` would find there too: visible ASCII, with spaces or tabs only
/// inside (none at either end, which `httparse` would trim, moving the
/// value's ends). Anything else (obs-text, a control byte) is left to
/// `httparse` to accept or refuse.
pub(super) fn plain_value(value: &[u8]) -> bool {
    let visible = |b: &u8| (0x21..=0x7e).contains(b);
    match value {
        [] => true,
        [only] => visible(only),
        [first, inside @ .., last] => {
            visible(first)
                && visible(last)
                && inside
                    .iter()
                    .all(|b| visible(b) || *b == b' ' || *b == b'\t')
        }
    }
}
