//! HTTP/3 frames (RFC 9114 §7): the reader that turns a stream's bytes into
//! frames, and the writers of the few frames a client sends.
//!
//! The reader is the one place where the peer's lengths meet memory, so it
//! bounds them all:
//!
//! - DATA is never held: its payload is handed on in pieces as it arrives
//!   (slices of the chunk quinn gave, no copy);
//! - every other known frame is collected whole before it means anything,
//!   and one that declares more than the bound (the largest field section
//!   accepted) fails at its header, before a byte of it is kept;
//! - GOAWAY, CANCEL_PUSH and MAX_PUSH_ID hold one varint: a longer payload
//!   is malformed at its header;
//! - an unknown or reserved-for-extension type (§9) is skipped by its
//!   length as it passes, whatever the length, so ignoring it costs nothing;
//! - HTTP/2's frame types (§7.2.8) are H3_FRAME_UNEXPECTED at their header.
//!
//! Which frame may come on which stream is the connection's business
//! (`conn`, `request`); this module only reads and writes them.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::code;
use super::varint;

/// Frame types (RFC 9114 §7.2, §11.2.1).
pub(crate) mod kind {
    pub(crate) const DATA: u64 = 0x00;
    pub(crate) const HEADERS: u64 = 0x01;
    pub(crate) const CANCEL_PUSH: u64 = 0x03;
    pub(crate) const SETTINGS: u64 = 0x04;
    pub(crate) const PUSH_PROMISE: u64 = 0x05;
    pub(crate) const GOAWAY: u64 = 0x07;
    pub(crate) const MAX_PUSH_ID: u64 = 0x0d;
    /// HTTP/2's PRIORITY, PING, WINDOW_UPDATE, CONTINUATION: reserved,
    /// an error to receive (§7.2.8).
    pub(crate) const HTTP2: [u64; 4] = [0x02, 0x06, 0x08, 0x09];
}

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub(crate) mod stream_type {
    pub(crate) const CONTROL: u64 = 0x00;
    pub(crate) const PUSH: u64 = 0x01;
    pub(crate) const QPACK_ENCODER: u64 = 0x02;
    pub(crate) const QPACK_DECODER: u64 = 0x03;
}

/// Setting identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub(crate) mod setting {
    pub(crate) const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    pub(crate) const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    pub(crate) const QPACK_BLOCKED_STREAMS: u64 = 0x07;
    /// HTTP/2's identifiers (and 0x00): an error to receive (§7.2.4.1).
    pub(crate) const HTTP2: [u64; 5] = [0x00, 0x02, 0x03, 0x04, 0x05];
}

/// Settings in one SETTINGS frame beyond which it is excessive (a real
/// peer sends a handful; the frame's size is bounded anyway).
const MAX_SETTINGS: usize = 64;

/// One thing read off a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A HEADERS frame's payload: an encoded field section.
    Headers(Bytes),
    /// The next piece of a DATA frame's payload (never empty).
    Data(Bytes),
    /// A SETTINGS frame: (identifier, value) pairs as sent, each identifier
    /// once.
    Settings(Vec<(u64, u64)>),
    /// GOAWAY with its id.
    Goaway(u64),
    CancelPush(u64),
    MaxPushId(u64),
    /// A PUSH_PROMISE: its push id (the field section is not kept).
    PushPromise(u64),
}

/// Why a stream's frames cannot be read on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// A frame other than DATA declared more than the bound.
    TooLarge {
        frame_type: u64,
        length: u64,
        max: u64,
    },
    /// A frame whose payload does not hold what its type says, or a stream
    /// that ended inside a frame (H3_FRAME_ERROR).
    Malformed { frame_type: u64, what: &'static str },
    /// One of HTTP/2's frame types (H3_FRAME_UNEXPECTED).
    Http2Frame(u64),
    /// A SETTINGS frame that breaks §7.2.4 (H3_SETTINGS_ERROR).
    Settings(&'static str),
}

impl FrameError {
    /// The HTTP/3 error code to close the connection (or stop the stream)
    /// with.
    pub(crate) fn code(&self) -> u64 {
        match self {
            FrameError::TooLarge { .. } => code::EXCESSIVE_LOAD,
            FrameError::Malformed { .. } => code::FRAME_ERROR,
            FrameError::Http2Frame(_) => code::FRAME_UNEXPECTED,
            FrameError::Settings(_) => code::SETTINGS_ERROR,
        }
    }

    /// A HEADERS frame over the bound (a response head or trailers too
    /// large, not a malformed peer).
    pub(crate) fn is_headers_too_large(&self) -> bool {
        matches!(
            self,
            FrameError::TooLarge {
                frame_type: kind::HEADERS,
                ..
            }
        )
    }
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge {
                frame_type,
                length,
                max,
            } => write!(
                f,
                "HTTP/3 frame of type {frame_type:#x} declares {length} bytes, over the bound of {max}"
            ),
            FrameError::Malformed { frame_type, what } => {
                write!(f, "malformed HTTP/3 frame of type {frame_type:#x}: {what}")
            }
            FrameError::Http2Frame(t) => write!(f, "HTTP/2 frame type {t:#x} on HTTP/3"),
            FrameError::Settings(what) => write!(f, "invalid HTTP/3 SETTINGS: {what}"),
        }
    }
}

impl std::error::Error for FrameError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a frame's type and length.
    Head,
    /// Inside a DATA payload: handed on as it comes.
    Data,
    /// Inside a known frame's payload: collected.
    Collect,
    /// Inside an unknown frame's payload: dropped.
    Skip,
}

/// Reads one stream's frames from the chunks it delivers.
#[derive(Debug)]
pub(crate) struct FrameReader {
    state: State,
    /// The bound on a frame other than DATA.
    max: u64,
    /// A frame header cut across chunks: its bytes so far (type and length
    /// are at most 8 bytes each).
    head: [u8; 16],
    head_len: usize,
    frame_type: u64,
    /// Payload bytes of the current frame not yet read.
    remaining: u64,
    /// A collected payload cut across chunks.
    payload: BytesMut,
}

impl FrameReader {
    /// Frames other than DATA up to `max` bytes.
    pub(crate) fn new(max: u64) -> FrameReader {
        FrameReader {
            state: State::Head,
            max,
            head: [0; 16],
            head_len: 0,
            frame_type: 0,
            remaining: 0,
            payload: BytesMut::new(),
        }
    }

    /// The next frame (or piece of DATA) in `chunk`, consuming what it
    /// reads; `Ok(None)` once `chunk` is used up without completing one.
    ///
    /// # Errors
    /// A [`FrameError`]; the stream cannot be read on after one.
    pub(crate) fn next(&mut self, chunk: &mut Bytes) -> Result<Option<Frame>, FrameError> {
        loop {
            match self.state {
                State::Head => {
                    let Some((frame_type, length)) = self.read_head(chunk) else {
                        return Ok(None);
                    };
                    // The usual response: HEADERS and DATA each whole in
                    // the chunk, handed on as they lie (what `start` and
                    // the payload's states would come to, in fewer steps).
                    if length != 0 && length <= chunk.len() as u64 {
                        let n = length as usize;
                        if frame_type == kind::DATA {
                            self.frame_type = frame_type;
                            return Ok(Some(Frame::Data(chunk.split_to(n))));
                        }
                        if frame_type == kind::HEADERS && length <= self.max {
                            self.frame_type = frame_type;
                            return Ok(Some(Frame::Headers(chunk.split_to(n))));
                        }
                    }
                    if let Some(frame) = self.start(frame_type, length)? {
                        return Ok(Some(frame));
                    }
                }
                State::Data => {
                    if chunk.is_empty() {
                        return Ok(None);
                    }
                    let n = self.take(chunk.len());
                    return Ok(Some(Frame::Data(chunk.split_to(n))));
                }
                State::Skip => {
                    if chunk.is_empty() {
                        return Ok(None);
                    }
                    let n = self.take(chunk.len());
                    chunk.advance(n);
                }
                State::Collect => {
                    if chunk.is_empty() {
                        return Ok(None);
                    }
                    let n = self.take(chunk.len());
                    if self.state == State::Collect {
                        self.payload.extend_from_slice(&chunk[..n]);
                        chunk.advance(n);
                        continue;
                    }
                    // The payload is complete: whole in this chunk (no
                    // copy), or the end of one collected before.
                    let payload = if self.payload.is_empty() {
                        chunk.split_to(n)
                    } else {
                        self.payload.extend_from_slice(&chunk[..n]);
                        chunk.advance(n);
                        self.payload.split().freeze()
                    };
                    return parse(self.frame_type, payload).map(Some);
                }
            }
        }
    }

    /// Whether the stream is at a frame boundary (its end there is clean).
    pub(crate) fn at_boundary(&self) -> bool {
        self.state == State::Head && self.head_len == 0
    }

    /// The stream ended: an error if it ended inside a frame (§7.1).
    ///
    /// # Errors
    /// [`FrameError::Malformed`] for a frame cut short.
    pub(crate) fn finish(&self) -> Result<(), FrameError> {
        if self.at_boundary() {
            return Ok(());
        }
        Err(FrameError::Malformed {
            frame_type: self.frame_type,
            what: "the stream ended inside a frame",
        })
    }

    /// Counts up to `available` bytes off the current payload; how many.
    fn take(&mut self, available: usize) -> usize {
        let n = usize::try_from(self.remaining).map_or(available, |r| r.min(available));
        self.remaining -= n as u64;
        if self.remaining == 0 {
            self.state = State::Head;
        }
        n
    }

    /// A frame's type and length, once both are in.
    fn read_head(&mut self, chunk: &mut Bytes) -> Option<(u64, u64)> {
        if self.head_len == 0 {
            // Usual case: the whole header in this chunk.
            if let Some((t, a)) = varint::get(chunk) {
                if let Some((l, b)) = varint::get(&chunk[a..]) {
                    chunk.advance(a + b);
                    return Some((t, l));
                }
            }
        }
        loop {
            let head = &self.head[..self.head_len];
            if let Some((t, a)) = varint::get(head) {
                if let Some((l, _)) = varint::get(&head[a..]) {
                    self.head_len = 0;
                    return Some((t, l));
                }
            }
            let (&b, _) = chunk.split_first()?;
            chunk.advance(1);
            self.head[self.head_len] = b;
            self.head_len += 1;
        }
    }

    /// A frame's header read: what follows it.
    fn start(&mut self, frame_type: u64, length: u64) -> Result<Option<Frame>, FrameError> {
        self.frame_type = frame_type;
        self.remaining = length;
        self.payload.clear();
        let next = match frame_type {
            kind::DATA => State::Data,
            kind::HEADERS | kind::SETTINGS | kind::PUSH_PROMISE => {
                if length > self.max {
                    return Err(FrameError::TooLarge {
                        frame_type,
                        length,
                        max: self.max,
                    });
                }
                State::Collect
            }
            kind::GOAWAY | kind::CANCEL_PUSH | kind::MAX_PUSH_ID => {
                if length == 0 || length > 8 {
                    return Err(FrameError::Malformed {
                        frame_type,
                        what: "not one varint",
                    });
                }
                State::Collect
            }
            t if kind::HTTP2.contains(&t) => return Err(FrameError::Http2Frame(t)),
            _ => State::Skip,
        };
        if length > 0 {
            self.state = next;
            return Ok(None);
        }
        self.state = State::Head;
        match next {
            State::Collect => parse(frame_type, Bytes::new()).map(Some),
            _ => Ok(None),
        }
    }
}

/// A collected frame's payload, parsed.
fn parse(frame_type: u64, payload: Bytes) -> Result<Frame, FrameError> {
    let malformed = |what| FrameError::Malformed { frame_type, what };
    let one_varint = || {
        let mut src = &payload[..];
        match varint::take(&mut src) {
            Some(v) if src.is_empty() => Ok(v),
            _ => Err(malformed("not one varint")),
        }
    };
    Ok(match frame_type {
        kind::HEADERS => Frame::Headers(payload),
        kind::SETTINGS => Frame::Settings(parse_settings(&payload)?),
        kind::GOAWAY => Frame::Goaway(one_varint()?),
        kind::CANCEL_PUSH => Frame::CancelPush(one_varint()?),
        kind::MAX_PUSH_ID => Frame::MaxPushId(one_varint()?),
        kind::PUSH_PROMISE => {
            let mut src = &payload[..];
            Frame::PushPromise(varint::take(&mut src).ok_or(malformed("no push id"))?)
        }
        _ => unreachable!("only known types are collected"),
    })
}

fn parse_settings(mut src: &[u8]) -> Result<Vec<(u64, u64)>, FrameError> {
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    while !src.is_empty() {
        let (Some(id), Some(value)) = (varint::take(&mut src), varint::take(&mut src)) else {
            return Err(FrameError::Malformed {
                frame_type: kind::SETTINGS,
                what: "a setting cut short",
            });
        };
        if setting::HTTP2.contains(&id) {
            return Err(FrameError::Settings("an HTTP/2 setting identifier"));
        }
        if pairs.iter().any(|&(seen, _)| seen == id) {
            return Err(FrameError::Settings("an identifier twice"));
        }
        if pairs.len() == MAX_SETTINGS {
            return Err(FrameError::Settings("too many settings"));
        }
        pairs.push((id, value));
    }
    Ok(pairs)
}

/// Everything `wire` reads to, cut into chunks at `cuts`, with DATA
/// pieces joined (how they are cut depends on the chunks); for the tests
/// and the fuzz target, which hold it to reading the same however cut.
#[cfg(any(test, feature = "internal-hooks"))]
pub(crate) fn read_all(max: u64, wire: &[u8], cuts: &[usize]) -> Result<Vec<Frame>, FrameError> {
    let mut reader = FrameReader::new(max);
    let mut out: Vec<Frame> = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain([&wire.len()]) {
        let to = to.clamp(from, wire.len());
        let mut chunk = Bytes::copy_from_slice(&wire[from..to]);
        while let Some(frame) = reader.next(&mut chunk)? {
            if let Frame::Data(piece) = &frame {
                assert!(!piece.is_empty(), "a DATA piece is never empty");
            }
            match (out.last_mut(), frame) {
                (Some(Frame::Data(have)), Frame::Data(more)) => {
                    *have = [&have[..], &more[..]].concat().into();
                }
                (_, frame) => out.push(frame),
            }
        }
        assert!(chunk.is_empty(), "a chunk is read to its end");
        from = to;
    }
    reader.finish()?;
    Ok(out)
}

/// Appends a frame header: `frame_type` and a payload of `length` bytes.
pub(crate) fn put_head(dst: &mut impl BufMut, frame_type: u64, length: u64) {
    varint::put(dst, frame_type);
    varint::put(dst, length);
}

/// Appends a whole frame (the tests' writer; ours write the head and
/// hand the payload over as it is, uncopied).
#[cfg(test)]
pub(crate) fn put_frame(dst: &mut impl BufMut, frame_type: u64, payload: &[u8]) {
    put_head(dst, frame_type, payload.len() as u64);
    dst.put_slice(payload);
}

/// Appends a SETTINGS frame of `pairs`.
pub(crate) fn put_settings(dst: &mut impl BufMut, pairs: &[(u64, u64)]) {
    let length: usize = pairs
        .iter()
        .map(|&(id, v)| varint::len(id) + varint::len(v))
        .sum();
    put_head(dst, kind::SETTINGS, length as u64);
    for &(id, v) in pairs {
        varint::put(dst, id);
        varint::put(dst, v);
    }
}

/// Appends a GOAWAY frame (a client's names a push id, §5.2; we allow
/// no push, so ours would name 0: unsent today, a client may just close).
#[cfg(test)]
pub(crate) fn put_goaway(dst: &mut impl BufMut, id: u64) {
    put_head(dst, kind::GOAWAY, varint::len(id) as u64);
    varint::put(dst, id);
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
