//! Frame bounds on the server's streams, applied as the bytes pass to h3.
//!
//! h3 buffers every frame other than DATA whole before it looks at it,
//! unknown frame types included, and its read loop does not yield while
//! bytes keep coming. So a HEADERS (or trailers, or SETTINGS) frame that
//! declares 24 MiB and sends them was held whole in memory, past the
//! response-head limit, and the task reading it (with the request's
//! deadline) starved until the last byte (the hostile HTTP/3 corpus:
//! `field-section-bomb`, `trailers-bomb`, `settings-oversized`). The guard
//! reads each frame's type and length as they pass:
//!
//! - a frame other than DATA whose declared length is over the bound (the
//!   largest field section the client accepts) fails the stream at its
//!   header, before a byte of it is kept ([`FrameTooLarge`]);
//! - an unknown frame type (RFC 9114 §9: to be ignored, as h3 would) is
//!   dropped here as it passes, whatever its length, so ignoring it costs
//!   no memory;
//! - DATA and everything else pass untouched (zero-copy when a chunk holds
//!   nothing to drop).

use bytes::{Bytes, BytesMut};

/// Frame types h3 knows (RFC 9114 §7.2; 2, 6, 8, 9 are HTTP/2's, which h3
/// rejects, so they pass to it under the same bound).
const DATA: u64 = 0x00;
const KNOWN: [u64; 11] = [
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0d, DATA,
];
/// WebTransport's bidirectional stream type: no length follows; the rest
/// of the stream is h3's.
const WEBTRANSPORT_BI: u64 = 0x41;
/// The control stream's type on a unidirectional stream.
const CONTROL_STREAM: u64 = 0x00;

/// A frame over the bound: the stream fails with this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameTooLarge {
    pub(crate) frame_type: u64,
    pub(crate) length: u64,
    pub(crate) max: u64,
}

impl FrameTooLarge {
    /// A HEADERS frame (a response head or trailers).
    pub(crate) fn is_headers(&self) -> bool {
        self.frame_type == 0x01
    }
}

impl std::fmt::Display for FrameTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HTTP/3 frame of type {:#x} declares {} bytes, over the bound of {}",
            self.frame_type, self.length, self.max
        )
    }
}

impl std::error::Error for FrameTooLarge {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A unidirectional stream's type.
    StreamType,
    FrameType,
    FrameLength,
    /// A frame's payload: passed on, or dropped.
    Payload {
        pass: bool,
    },
    /// Nothing more is framed (not a control stream, WebTransport).
    Off,
}

/// Watches one stream's frames (see the module doc).
#[derive(Debug)]
pub(crate) struct FrameGuard {
    state: State,
    /// The varint being read, its bytes as they came (at most 8).
    partial: [u8; 8],
    have: usize,
    /// The current frame's header bytes (type and length), held until the
    /// frame is known to pass.
    header: [u8; 16],
    header_len: usize,
    frame_type: u64,
    remaining: u64,
    max: u64,
    /// What followed a unidirectional stream's type in its chunk, held back
    /// so h3 reads the type alone ([`FrameGuard::take_rest`]).
    rest: Option<Bytes>,
}

impl FrameGuard {
    /// For a request stream: frames from the first byte.
    pub(crate) fn request(max: u64) -> FrameGuard {
        FrameGuard::new(State::FrameType, max)
    }

    /// For a unidirectional stream: framed only if it is the control stream.
    pub(crate) fn unidirectional(max: u64) -> FrameGuard {
        FrameGuard::new(State::StreamType, max)
    }

    fn new(state: State, max: u64) -> FrameGuard {
        FrameGuard {
            state,
            partial: [0; 8],
            have: 0,
            header: [0; 16],
            header_len: 0,
            frame_type: 0,
            remaining: 0,
            max,
            rest: None,
        }
    }

    /// Feeds one byte of a varint; its value once complete.
    fn varint(&mut self, b: u8) -> Option<u64> {
        self.partial[self.have] = b;
        self.have += 1;
        let need = 1usize << (self.partial[0] >> 6);
        if self.have < need {
            return None;
        }
        let mut value = u64::from(self.partial[0] & 0x3f);
        for &b in &self.partial[1..need] {
            value = value << 8 | u64::from(b);
        }
        self.have = 0;
        Some(value)
    }

    /// The bytes of `chunk` h3 is to see (possibly empty), or the error
    /// that fails the stream.
    pub(crate) fn filter(&mut self, chunk: Bytes) -> Result<Bytes, FrameTooLarge> {
        let mut out = Out::default();
        let mut pos = 0;
        // Where the current frame header began in this chunk (`None`: in
        // an earlier one, so its bytes are held).
        let mut header_start = None;
        while pos < chunk.len() {
            match self.state {
                State::Off => {
                    out.pass(&chunk, pos, chunk.len());
                    pos = chunk.len();
                }
                State::Payload { pass } => {
                    let left = chunk.len() - pos;
                    let n = usize::try_from(self.remaining).map_or(left, |r| r.min(left));
                    if pass {
                        out.pass(&chunk, pos, pos + n);
                    }
                    pos += n;
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        self.state = State::FrameType;
                    }
                }
                State::StreamType => {
                    // Passed on at once: h3 reads the type itself.
                    out.pass(&chunk, pos, pos + 1);
                    let b = chunk[pos];
                    pos += 1;
                    if let Some(ty) = self.varint(b) {
                        self.state = if ty == CONTROL_STREAM {
                            State::FrameType
                        } else {
                            State::Off
                        };
                        // h3 takes a failure in the chunk that carries the
                        // type for the stream ending before it, and forgets
                        // the stream: the type goes alone, the rest after.
                        if pos < chunk.len() {
                            self.rest = Some(chunk.slice(pos..));
                        }
                        return Ok(out.finish(&chunk));
                    }
                }
                State::FrameType | State::FrameLength => {
                    if self.header_len == 0 {
                        header_start = Some(pos);
                    }
                    let b = chunk[pos];
                    pos += 1;
                    self.header[self.header_len] = b;
                    self.header_len += 1;
                    let Some(value) = self.varint(b) else {
                        continue;
                    };
                    if self.state == State::FrameType {
                        self.frame_type = value;
                        if value == WEBTRANSPORT_BI {
                            self.emit_header(&mut out, &chunk, header_start, pos);
                            self.header_len = 0;
                            self.state = State::Off;
                        } else {
                            self.state = State::FrameLength;
                        }
                        continue;
                    }
                    self.remaining = value;
                    let known = KNOWN.contains(&self.frame_type);
                    if known && self.frame_type != DATA && value > self.max {
                        return Err(FrameTooLarge {
                            frame_type: self.frame_type,
                            length: value,
                            max: self.max,
                        });
                    }
                    if known {
                        self.emit_header(&mut out, &chunk, header_start, pos);
                    }
                    self.header_len = 0;
                    self.state = if value == 0 {
                        State::FrameType
                    } else {
                        State::Payload { pass: known }
                    };
                }
            }
        }
        Ok(out.finish(&chunk))
    }

    /// Bytes held back from the last chunk, to be filtered before reading on.
    pub(crate) fn take_rest(&mut self) -> Option<Bytes> {
        self.rest.take()
    }

    /// Passes the header just read (ending at `pos`).
    fn emit_header(&self, out: &mut Out, chunk: &Bytes, start: Option<usize>, pos: usize) {
        match start {
            Some(start) => out.pass(chunk, start, pos),
            None => out.held(chunk, &self.header[..self.header_len]),
        }
    }
}

/// What passes of one chunk: a range of it while that is all (no copy),
/// else the bytes copied together.
#[derive(Default)]
struct Out {
    range: Option<(usize, usize)>,
    copied: Option<BytesMut>,
}

impl Out {
    fn pass(&mut self, chunk: &Bytes, from: usize, to: usize) {
        if let Some(buf) = self.copied.as_mut() {
            buf.extend_from_slice(&chunk[from..to]);
            return;
        }
        match self.range {
            None => self.range = Some((from, to)),
            Some((a, b)) if b == from => self.range = Some((a, to)),
            Some((a, b)) => {
                let mut buf = BytesMut::from(&chunk[a..b]);
                buf.extend_from_slice(&chunk[from..to]);
                self.copied = Some(buf);
            }
        }
    }

    /// Bytes not (all) in this chunk: a frame header begun in an earlier one.
    fn held(&mut self, chunk: &Bytes, bytes: &[u8]) {
        let mut buf = match (self.copied.take(), self.range.take()) {
            (Some(buf), _) => buf,
            (None, Some((a, b))) => BytesMut::from(&chunk[a..b]),
            (None, None) => BytesMut::new(),
        };
        buf.extend_from_slice(bytes);
        self.copied = Some(buf);
    }

    fn finish(self, chunk: &Bytes) -> Bytes {
        match (self.copied, self.range) {
            (Some(buf), _) => buf.freeze(),
            (None, Some((a, b))) => chunk.slice(a..b),
            (None, None) => Bytes::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        match v {
            0..=0x3f => vec![v as u8],
            0x40..=0x3fff => (v as u16 | 0x4000).to_be_bytes().to_vec(),
            0x4000..=0x3fff_ffff => (v as u32 | 0x8000_0000).to_be_bytes().to_vec(),
            _ => (v | 0xc000_0000_0000_0000).to_be_bytes().to_vec(),
        }
    }

    fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
        [varint(ty), varint(payload.len() as u64), payload.to_vec()].concat()
    }

    /// `wire` through a guard in chunks cut at `cuts`.
    fn run(mut guard: FrameGuard, wire: &[u8], cuts: &[usize]) -> Result<Vec<u8>, FrameTooLarge> {
        let mut out = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain([&wire.len()]) {
            let to = to.clamp(from, wire.len());
            out.extend_from_slice(&guard.filter(Bytes::copy_from_slice(&wire[from..to]))?);
            while let Some(rest) = guard.take_rest() {
                out.extend_from_slice(&guard.filter(rest)?);
            }
            from = to;
        }
        Ok(out)
    }

    #[test]
    fn unknown_frames_are_dropped_however_cut() {
        let headers = frame(0x01, b"\x00\x00\xd9");
        let data = frame(0x00, &[b'd'; 100]);
        // Grease types, one with a 2-byte type and a 2-byte length.
        let unknown = frame(0x21, b"ignored");
        let big_unknown = frame(0x1f * 40 + 0x21, &[b'u'; 300]);
        let wire = [
            unknown.clone(),
            headers.clone(),
            big_unknown.clone(),
            data.clone(),
            unknown.clone(),
        ]
        .concat();
        let want = [headers, data].concat();
        for a in 0..wire.len() {
            for b in [a, a + 1, a + 7, a + 150] {
                let got = run(FrameGuard::request(1024), &wire, &[a, b]).expect("passes");
                assert_eq!(got, want, "cut at {a}, {b}");
            }
        }
    }

    #[test]
    fn a_frame_over_the_bound_fails_at_its_header() {
        // HEADERS declaring 1 MiB: failed before its payload comes.
        let wire = [varint(0x01), varint(1 << 20)].concat();
        let err = run(FrameGuard::request(64 * 1024), &wire, &[1]).expect_err("too large");
        assert!(err.is_headers());
        assert_eq!(err.length, 1 << 20);
        // DATA of any length passes; an unknown frame of any length is
        // dropped, not failed.
        let data_head = [varint(0x00), varint(1 << 40)].concat();
        let got = run(FrameGuard::request(16), &data_head, &[3]).expect("DATA passes");
        assert_eq!(got, data_head);
        let unknown = [varint(0x21), varint(1 << 40), vec![0; 64]].concat();
        assert_eq!(
            run(FrameGuard::request(16), &unknown, &[3]).expect("dropped"),
            b""
        );
    }

    #[test]
    fn only_the_control_stream_is_framed() {
        // A control stream: a SETTINGS over the bound fails it, but not
        // in the chunk that carries the stream's type (h3 would take that
        // for a stream that ended before its type, and forget it).
        let wire = [vec![0x00], varint(0x04), varint(100_000)].concat();
        let mut guard = FrameGuard::unidirectional(1024);
        let first = guard.filter(Bytes::from(wire)).expect("the type passes");
        assert_eq!(first, [0x00][..]);
        let rest = guard.take_rest().expect("the rest held back");
        assert!(guard.filter(rest).is_err());
        // A QPACK encoder stream passes as it is, whatever it holds.
        let wire = [vec![0x02], varint(0x04), varint(100_000), vec![7; 10]].concat();
        assert_eq!(
            run(FrameGuard::unidirectional(1024), &wire, &[1, 2]).expect("passes"),
            wire
        );
    }

    #[test]
    fn whole_chunks_of_data_are_not_copied() {
        let mut guard = FrameGuard::request(1024);
        let head = Bytes::from([varint(0x00), varint(10_000)].concat());
        assert_eq!(guard.filter(head.clone()).expect("passes"), head);
        let chunk = Bytes::from(vec![b'd'; 5000]);
        let out = guard.filter(chunk.clone()).expect("passes");
        assert_eq!(out.as_ptr(), chunk.as_ptr(), "a slice of the same buffer");
    }
}
