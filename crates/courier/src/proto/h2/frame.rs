//! HTTP/2 frames (RFC 9113 §4 and §6) as the client reads and writes them.
//!
//! Decoding takes one frame the connection's reader has already cut out of its
//! read buffer (header parsed, payload exactly as long as the header says) and
//! checks everything a frame can be checked for on its own: stream 0 where it
//! is required or forbidden, fixed lengths, padding, SETTINGS values. What
//! needs connection state (which stream may carry what, CONTINUATION
//! sequencing, flow-control windows, the frame size limit) is the connection's.
//! Payloads stay slices of the read buffer: decoding copies and allocates
//! nothing.
//!
//! Encoding appends to the connection's write buffer, again without
//! allocating beyond that buffer's growth.

use std::fmt;
use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

/// The client connection preface (RFC 9113 §3.4), sent before any frame.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Every frame starts with a header of this many bytes (RFC 9113 §4.1).
pub(crate) const HEADER_LEN: usize = 9;
/// The largest payload a peer must accept before its SETTINGS say otherwise.
pub(crate) const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE allowed: the 24-bit length field's limit.
pub(crate) const MAX_MAX_FRAME_SIZE: u32 = 16_777_215;
/// Initial flow-control window of the connection and of every stream.
pub(crate) const DEFAULT_WINDOW: u32 = 65_535;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub(crate) const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Stream identifiers and window increments are 31 bits behind a reserved bit
/// that receivers ignore and senders leave unset.
const U31_MASK: u32 = (1 << 31) - 1;
/// A SETTINGS entry: 16-bit identifier, 32-bit value.
const SETTING_LEN: usize = 6;
/// Exclusive bit, stream dependency and weight, on HEADERS with PRIORITY.
const PRIORITY_LEN: usize = 5;
/// The promised stream identifier of PUSH_PROMISE.
const PROMISED_ID_LEN: usize = 4;

/// Frame type codes (RFC 9113 §6).
pub(crate) mod kind {
    pub(crate) const DATA: u8 = 0x0;
    pub(crate) const HEADERS: u8 = 0x1;
    pub(crate) const PRIORITY: u8 = 0x2;
    pub(crate) const RST_STREAM: u8 = 0x3;
    pub(crate) const SETTINGS: u8 = 0x4;
    pub(crate) const PUSH_PROMISE: u8 = 0x5;
    pub(crate) const PING: u8 = 0x6;
    pub(crate) const GOAWAY: u8 = 0x7;
    pub(crate) const WINDOW_UPDATE: u8 = 0x8;
    pub(crate) const CONTINUATION: u8 = 0x9;
}

/// DATA, HEADERS: the last frame the sender sends on the stream.
pub(crate) const END_STREAM: u8 = 0x1;
/// SETTINGS, PING: an acknowledgement.
pub(crate) const ACK: u8 = 0x1;
/// HEADERS, PUSH_PROMISE, CONTINUATION: the header block ends in this frame.
pub(crate) const END_HEADERS: u8 = 0x4;
/// DATA, HEADERS, PUSH_PROMISE: a Pad Length byte leads, padding trails.
pub(crate) const PADDED: u8 = 0x8;
/// HEADERS: priority fields (deprecated by RFC 9113 §5.3.2) precede the block.
pub(crate) const PRIORITY: u8 = 0x20;

/// Setting identifiers (RFC 9113 §6.5.2).
pub(crate) mod setting {
    pub(crate) const HEADER_TABLE_SIZE: u16 = 0x1;
    pub(crate) const ENABLE_PUSH: u16 = 0x2;
    pub(crate) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub(crate) const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub(crate) const MAX_FRAME_SIZE: u16 = 0x5;
    pub(crate) const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// An HTTP/2 error code (RFC 9113 §7), as carried by RST_STREAM and GOAWAY.
/// Any value can arrive: unknown codes are kept, not rejected (§7).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Reason(pub(crate) u32);

impl Reason {
    pub(crate) const NO_ERROR: Reason = Reason(0x0);
    pub(crate) const PROTOCOL_ERROR: Reason = Reason(0x1);
    pub(crate) const INTERNAL_ERROR: Reason = Reason(0x2);
    pub(crate) const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    pub(crate) const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    pub(crate) const STREAM_CLOSED: Reason = Reason(0x5);
    pub(crate) const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    pub(crate) const REFUSED_STREAM: Reason = Reason(0x7);
    pub(crate) const CANCEL: Reason = Reason(0x8);
    pub(crate) const COMPRESSION_ERROR: Reason = Reason(0x9);
    pub(crate) const CONNECT_ERROR: Reason = Reason(0xa);
    pub(crate) const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    pub(crate) const INADEQUATE_SECURITY: Reason = Reason(0xc);
    pub(crate) const HTTP_1_1_REQUIRED: Reason = Reason(0xd);

    /// The RFC's name for the code, when it has one.
    fn name(self) -> Option<&'static str> {
        Some(match self {
            Reason::NO_ERROR => "NO_ERROR",
            Reason::PROTOCOL_ERROR => "PROTOCOL_ERROR",
            Reason::INTERNAL_ERROR => "INTERNAL_ERROR",
            Reason::FLOW_CONTROL_ERROR => "FLOW_CONTROL_ERROR",
            Reason::SETTINGS_TIMEOUT => "SETTINGS_TIMEOUT",
            Reason::STREAM_CLOSED => "STREAM_CLOSED",
            Reason::FRAME_SIZE_ERROR => "FRAME_SIZE_ERROR",
            Reason::REFUSED_STREAM => "REFUSED_STREAM",
            Reason::CANCEL => "CANCEL",
            Reason::COMPRESSION_ERROR => "COMPRESSION_ERROR",
            Reason::CONNECT_ERROR => "CONNECT_ERROR",
            Reason::ENHANCE_YOUR_CALM => "ENHANCE_YOUR_CALM",
            Reason::INADEQUATE_SECURITY => "INADEQUATE_SECURITY",
            Reason::HTTP_1_1_REQUIRED => "HTTP_1_1_REQUIRED",
            _ => return None,
        })
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown error code {:#x}", self.0),
        }
    }
}

/// The fixed 9-byte frame header (RFC 9113 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// Payload length: 24 bits, so at most [`MAX_MAX_FRAME_SIZE`].
    pub(crate) len: u32,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    /// The stream identifier, reserved bit cleared.
    pub(crate) stream: u32,
}

impl Head {
    /// Reads a header; every 9 bytes are one, so this cannot fail.
    pub(crate) fn parse(bytes: &[u8; HEADER_LEN]) -> Head {
        let [l0, l1, l2, kind, flags, s0, s1, s2, s3] = *bytes;
        Head {
            len: u32::from_be_bytes([0, l0, l1, l2]),
            kind,
            flags,
            stream: u32::from_be_bytes([s0, s1, s2, s3]) & U31_MASK,
        }
    }
}

/// A frame as the client receives it. Payloads are zero-copy slices of the
/// read buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// `data` has padding removed; `flow_len` is the whole payload length
    /// (padding included), which counts against flow control (§6.9).
    Data {
        stream: u32,
        end_stream: bool,
        data: Bytes,
        flow_len: u32,
    },
    /// A header block fragment (padding and priority fields removed).
    Headers {
        stream: u32,
        end_stream: bool,
        end_headers: bool,
        fragment: Bytes,
    },
    Continuation {
        stream: u32,
        end_headers: bool,
        fragment: Bytes,
    },
    RstStream {
        stream: u32,
        reason: Reason,
    },
    /// Settings in the order received; empty when `ack`.
    Settings {
        ack: bool,
        settings: SettingsList,
    },
    /// The client disables push (SETTINGS_ENABLE_PUSH 0), so the caller only
    /// needs to know one arrived (RFC 9113 §6.5.2, §8.4): the promised stream
    /// and header block are checked for size but not kept.
    PushPromise {
        stream: u32,
    },
    Ping {
        ack: bool,
        payload: [u8; 8],
    },
    GoAway {
        last_stream: u32,
        reason: Reason,
        debug: Bytes,
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    /// PRIORITY frames and unknown frame types: ignored by the caller
    /// (RFC 9113 §4.1, §5.3.2, §5.5).
    Ignored,
}

/// The settings of one SETTINGS frame: its payload, validated by [`decode`],
/// read in place instead of copied into a `Vec` (one allocation per frame
/// saved, and the list is read once).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct SettingsList(Bytes);

impl SettingsList {
    /// `(identifier, value)` pairs in the order received, unknown identifiers
    /// included (the caller ignores them, RFC 9113 §6.5.2). The order matters:
    /// a later value for an identifier replaces an earlier one (§6.5.3).
    pub(crate) fn iter(&self) -> SettingsIter<'_> {
        SettingsIter(self.0.chunks_exact(SETTING_LEN))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len() / SETTING_LEN
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SettingsList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a SettingsList {
    type Item = (u16, u32);
    type IntoIter = SettingsIter<'a>;

    fn into_iter(self) -> SettingsIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`SettingsList`].
#[derive(Clone, Debug)]
pub(crate) struct SettingsIter<'a>(std::slice::ChunksExact<'a, u8>);

impl Iterator for SettingsIter<'_> {
    type Item = (u16, u32);

    fn next(&mut self) -> Option<(u16, u32)> {
        self.0.next().map(read_setting)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for SettingsIter<'_> {}

/// One 6-byte SETTINGS entry (`chunks_exact` guarantees the length).
fn read_setting(entry: &[u8]) -> (u16, u32) {
    match *entry {
        [i0, i1, v0, v1, v2, v3] => (
            u16::from_be_bytes([i0, i1]),
            u32::from_be_bytes([v0, v1, v2, v3]),
        ),
        _ => (0, 0),
    }
}

/// A frame the client cannot accept: a connection error (GOAWAY with
/// `reason`) unless `stream` is `Some`, in which case a stream error
/// (RST_STREAM on that stream). RFC 9113 §5.4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameError {
    pub(crate) reason: Reason,
    pub(crate) stream: Option<u32>,
    pub(crate) what: &'static str,
}

impl FrameError {
    /// A connection error.
    pub(crate) fn conn(reason: Reason, what: &'static str) -> FrameError {
        FrameError {
            reason,
            stream: None,
            what,
        }
    }

    /// A stream error on `stream`.
    pub(crate) fn on_stream(stream: u32, reason: Reason, what: &'static str) -> FrameError {
        FrameError {
            reason,
            stream: Some(stream),
            what,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stream {
            None => write!(f, "{} ({})", self.what, self.reason),
            Some(stream) => write!(f, "{} ({} on stream {stream})", self.what, self.reason),
        }
    }
}

impl std::error::Error for FrameError {}

/// Decodes one frame whose header is `head` and whose payload is `payload`
/// (exactly `head.len` bytes).
///
/// Does not check `head.len` against the frame size limit: the reader does,
/// before it buffers the payload. Flags a frame type does not define are
/// ignored (RFC 9113 §4.1).
pub(crate) fn decode(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    debug_assert_eq!(
        head.len as usize,
        payload.len(),
        "the reader cuts exactly the payload the header announces"
    );
    match head.kind {
        kind::DATA => decode_data(head, payload),
        kind::HEADERS => decode_headers(head, payload),
        kind::PRIORITY => decode_priority(head, &payload),
        kind::RST_STREAM => decode_rst_stream(head, &payload),
        kind::SETTINGS => decode_settings(head, payload),
        kind::PUSH_PROMISE => decode_push_promise(head, &payload),
        kind::PING => decode_ping(head, &payload),
        kind::GOAWAY => decode_goaway(head, payload),
        kind::WINDOW_UPDATE => decode_window_update(head, &payload),
        kind::CONTINUATION => decode_continuation(head, payload),
        // Unknown frame types are ignored (§4.1, §5.5).
        _ => Ok(Frame::Ignored),
    }
}

/// RFC 9113 §6.1.
fn decode_data(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "DATA on stream 0")?;
    let data = unpadded(head.flags, &payload, 0)?;
    Ok(Frame::Data {
        stream,
        end_stream: head.flags & END_STREAM != 0,
        data: payload.slice(data),
        flow_len: head.len,
    })
}

/// RFC 9113 §6.2. The priority fields are skipped unread (§5.3.2 deprecates
/// them). RFC 7540's stream error for a stream depending on itself is left
/// out on purpose: the fragment must reach HPACK regardless, or the
/// connection's decoding context would go out of step.
fn decode_headers(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "HEADERS on stream 0")?;
    let priority = if head.flags & PRIORITY != 0 {
        PRIORITY_LEN
    } else {
        0
    };
    let fragment = unpadded(head.flags, &payload, priority)?;
    Ok(Frame::Headers {
        stream,
        end_stream: head.flags & END_STREAM != 0,
        end_headers: head.flags & END_HEADERS != 0,
        fragment: payload.slice(fragment),
    })
}

/// RFC 9113 §6.3: checked, then ignored.
fn decode_priority(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "PRIORITY on stream 0")?;
    if payload.len() != PRIORITY_LEN {
        return Err(FrameError::on_stream(
            stream,
            Reason::FRAME_SIZE_ERROR,
            "PRIORITY not 5 bytes long",
        ));
    }
    Ok(Frame::Ignored)
}

/// RFC 9113 §6.4.
fn decode_rst_stream(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "RST_STREAM on stream 0")?;
    let Ok(code) = <[u8; 4]>::try_from(payload) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "RST_STREAM not 4 bytes long",
        ));
    };
    Ok(Frame::RstStream {
        stream,
        reason: Reason(u32::from_be_bytes(code)),
    })
}

/// RFC 9113 §6.5: every value the RFC bounds is checked here, so the caller
/// can apply the list as it iterates.
fn decode_settings(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    on_stream_0(head, "SETTINGS on a stream")?;
    if head.flags & ACK != 0 {
        if !payload.is_empty() {
            return Err(FrameError::conn(
                Reason::FRAME_SIZE_ERROR,
                "SETTINGS acknowledgement with a payload",
            ));
        }
        return Ok(Frame::Settings {
            ack: true,
            settings: SettingsList::default(),
        });
    }
    if payload.len() % SETTING_LEN != 0 {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "SETTINGS length not a multiple of 6",
        ));
    }
    let settings = SettingsList(payload);
    for (id, value) in &settings {
        check_setting(id, value)?;
    }
    Ok(Frame::Settings {
        ack: false,
        settings,
    })
}

/// RFC 9113 §6.5.2, for a server's settings.
fn check_setting(id: u16, value: u32) -> Result<(), FrameError> {
    match id {
        // Besides any value but 0 or 1, a server must not send 1, and a
        // client must treat it as a connection error.
        setting::ENABLE_PUSH if value != 0 => Err(FrameError::conn(
            Reason::PROTOCOL_ERROR,
            "server sent SETTINGS_ENABLE_PUSH other than 0",
        )),
        setting::INITIAL_WINDOW_SIZE if value > MAX_WINDOW => Err(FrameError::conn(
            Reason::FLOW_CONTROL_ERROR,
            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
        )),
        setting::MAX_FRAME_SIZE
            if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) =>
        {
            Err(FrameError::conn(
                Reason::PROTOCOL_ERROR,
                "SETTINGS_MAX_FRAME_SIZE outside 16384..=16777215",
            ))
        }
        _ => Ok(()),
    }
}

/// RFC 9113 §6.6: checked so a malformed frame gets the right error code;
/// the caller rejects a well-formed one anyway.
fn decode_push_promise(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "PUSH_PROMISE on stream 0")?;
    unpadded(head.flags, payload, PROMISED_ID_LEN)?;
    Ok(Frame::PushPromise { stream })
}

/// RFC 9113 §6.7.
fn decode_ping(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    on_stream_0(head, "PING on a stream")?;
    let Ok(payload) = <[u8; 8]>::try_from(payload) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "PING not 8 bytes long",
        ));
    };
    Ok(Frame::Ping {
        ack: head.flags & ACK != 0,
        payload,
    })
}

/// RFC 9113 §6.8.
fn decode_goaway(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    on_stream_0(head, "GOAWAY on a stream")?;
    let Some(&[l0, l1, l2, l3, c0, c1, c2, c3]) = payload.first_chunk::<8>() else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "GOAWAY shorter than 8 bytes",
        ));
    };
    Ok(Frame::GoAway {
        last_stream: u32::from_be_bytes([l0, l1, l2, l3]) & U31_MASK,
        reason: Reason(u32::from_be_bytes([c0, c1, c2, c3])),
        debug: payload.slice(8..),
    })
}

/// RFC 9113 §6.9: a zero increment is an error where it was meant, on the
/// stream or on the connection.
fn decode_window_update(head: Head, payload: &[u8]) -> Result<Frame, FrameError> {
    let Ok(increment) = <[u8; 4]>::try_from(payload) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "WINDOW_UPDATE not 4 bytes long",
        ));
    };
    let increment = u32::from_be_bytes(increment) & U31_MASK;
    if increment == 0 {
        let what = "WINDOW_UPDATE with a zero increment";
        return Err(match head.stream {
            0 => FrameError::conn(Reason::PROTOCOL_ERROR, what),
            stream => FrameError::on_stream(stream, Reason::PROTOCOL_ERROR, what),
        });
    }
    Ok(Frame::WindowUpdate {
        stream: head.stream,
        increment,
    })
}

/// RFC 9113 §6.10.
fn decode_continuation(head: Head, payload: Bytes) -> Result<Frame, FrameError> {
    let stream = on_a_stream(head, "CONTINUATION on stream 0")?;
    Ok(Frame::Continuation {
        stream,
        end_headers: head.flags & END_HEADERS != 0,
        fragment: payload,
    })
}

/// The stream of a frame that must have one (a connection error otherwise).
fn on_a_stream(head: Head, what: &'static str) -> Result<u32, FrameError> {
    match head.stream {
        0 => Err(FrameError::conn(Reason::PROTOCOL_ERROR, what)),
        stream => Ok(stream),
    }
}

/// Checks that a connection-level frame came on stream 0.
fn on_stream_0(head: Head, what: &'static str) -> Result<(), FrameError> {
    match head.stream {
        0 => Ok(()),
        _ => Err(FrameError::conn(Reason::PROTOCOL_ERROR, what)),
    }
}

/// The range of `payload` after the Pad Length byte (when PADDED) and `fixed`
/// bytes of fields, and before the padding.
///
/// A payload too short for its fields is a FRAME_SIZE_ERROR (§4.2); padding
/// longer than what remains after them is a PROTOCOL_ERROR (§6.1, §6.2, §6.6).
/// Both are connection errors.
fn unpadded(flags: u8, payload: &[u8], fixed: usize) -> Result<Range<usize>, FrameError> {
    let (start, padding) = if flags & PADDED == 0 {
        (0, 0)
    } else {
        match payload.first() {
            Some(&padding) => (1, usize::from(padding)),
            None => {
                return Err(FrameError::conn(
                    Reason::FRAME_SIZE_ERROR,
                    "PADDED frame without a Pad Length",
                ))
            }
        }
    };
    let Some(rest) = (payload.len() - start).checked_sub(fixed) else {
        return Err(FrameError::conn(
            Reason::FRAME_SIZE_ERROR,
            "frame too short for its fields",
        ));
    };
    if padding > rest {
        return Err(FrameError::conn(
            Reason::PROTOCOL_ERROR,
            "padding longer than the frame",
        ));
    }
    Ok(start + fixed..payload.len() - padding)
}

/// Appends a frame header.
pub(crate) fn encode_head(dst: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    dst.extend_from_slice(&head_bytes(len, kind, flags, stream));
}

/// A frame header's bytes; `len` must fit the 24-bit length field.
fn head_bytes(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; HEADER_LEN] {
    debug_assert!(
        len <= MAX_MAX_FRAME_SIZE as usize,
        "frame payload of {len} bytes"
    );
    let [_, l0, l1, l2] = (len as u32).to_be_bytes();
    let [s0, s1, s2, s3] = (stream & U31_MASK).to_be_bytes();
    [l0, l1, l2, kind, flags, s0, s1, s2, s3]
}

/// HEADERS then as many CONTINUATION frames as `max_frame_size` requires,
/// END_HEADERS on the last; END_STREAM on the HEADERS frame when `end_stream`.
/// (The client encodes in place with [`start_headers`]; this is the tests'.)
#[cfg(test)]
pub(crate) fn encode_headers(
    dst: &mut BytesMut,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let frames = frame_count(block.len(), frame_size(max_frame_size));
    dst.reserve(frames * HEADER_LEN + block.len());
    let start = start_headers(dst);
    dst.extend_from_slice(block);
    finish_headers(dst, start, stream, end_stream, max_frame_size);
}

/// Leaves room for a HEADERS frame header, so the caller can HPACK-encode the
/// block straight into `dst` behind it; returns where the header goes, for
/// [`finish_headers`].
pub(crate) fn start_headers(dst: &mut BytesMut) -> usize {
    let start = dst.len();
    dst.extend_from_slice(&[0; HEADER_LEN]);
    start
}

/// Frames the block appended since [`start_headers`] returned `start`: fills
/// in the HEADERS header, and when the block is larger than `max_frame_size`
/// splits it into HEADERS + CONTINUATION in place, moving each later piece
/// up to make room for its header. The whole block is the rest of `dst`.
///
/// Panics if `start` did not come from `start_headers` on this buffer (a
/// caller bug, not something the network can cause).
pub(crate) fn finish_headers(
    dst: &mut BytesMut,
    start: usize,
    stream: u32,
    end_stream: bool,
    max_frame_size: u32,
) {
    let max = frame_size(max_frame_size);
    let body = start + HEADER_LEN;
    let block_len = dst.len() - body;
    let frames = frame_count(block_len, max);
    if frames > 1 {
        dst.resize(dst.len() + (frames - 1) * HEADER_LEN, 0);
        // Piece i moves up by i headers. Last piece first, so none is
        // overwritten before it has moved.
        for i in (1..frames).rev() {
            let from = body + i * max;
            let to = (from + max).min(body + block_len);
            dst.copy_within(from..to, from + i * HEADER_LEN);
        }
    }
    for i in 0..frames {
        let last = i + 1 == frames;
        let len = if last { block_len - i * max } else { max };
        let (kind, mut flags) = match i {
            0 if end_stream => (kind::HEADERS, END_STREAM),
            0 => (kind::HEADERS, 0),
            _ => (kind::CONTINUATION, 0),
        };
        if last {
            flags |= END_HEADERS;
        }
        let at = start + i * (HEADER_LEN + max);
        dst[at..at + HEADER_LEN].copy_from_slice(&head_bytes(len, kind, flags, stream));
    }
}

/// The peer's SETTINGS_MAX_FRAME_SIZE as a piece size. `decode` has checked
/// the peer's value; the clamp only keeps a caller's 0 from looping forever.
fn frame_size(max_frame_size: u32) -> usize {
    max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE) as usize
}

/// How many frames a header block of `len` bytes takes: at least one, even
/// when empty.
fn frame_count(len: usize, max: usize) -> usize {
    len.div_ceil(max).max(1)
}

/// Appends one unpadded DATA frame; the caller keeps `data` within the peer's
/// frame size and flow-control windows.
pub(crate) fn encode_data(dst: &mut BytesMut, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { END_STREAM } else { 0 };
    dst.reserve(HEADER_LEN + data.len());
    encode_head(dst, data.len(), kind::DATA, flags, stream);
    dst.extend_from_slice(data);
}

/// Appends a SETTINGS frame carrying `settings` in order.
pub(crate) fn encode_settings(dst: &mut BytesMut, settings: &[(u16, u32)]) {
    let len = settings.len() * SETTING_LEN;
    dst.reserve(HEADER_LEN + len);
    encode_head(dst, len, kind::SETTINGS, 0, 0);
    for &(id, value) in settings {
        dst.put_u16(id);
        dst.put_u32(value);
    }
}

/// Appends the acknowledgement of the peer's SETTINGS.
pub(crate) fn encode_settings_ack(dst: &mut BytesMut) {
    encode_head(dst, 0, kind::SETTINGS, ACK, 0);
}

/// Appends a PING, or with `ack` the answer to the peer's PING.
pub(crate) fn encode_ping(dst: &mut BytesMut, ack: bool, payload: [u8; 8]) {
    let flags = if ack { ACK } else { 0 };
    dst.reserve(HEADER_LEN + payload.len());
    encode_head(dst, payload.len(), kind::PING, flags, 0);
    dst.extend_from_slice(&payload);
}

/// Appends a WINDOW_UPDATE for `stream` (0: the connection); `increment` must
/// be 1..=MAX_WINDOW.
pub(crate) fn encode_window_update(dst: &mut BytesMut, stream: u32, increment: u32) {
    debug_assert!(
        (1..=MAX_WINDOW).contains(&increment),
        "window increment {increment}"
    );
    dst.reserve(HEADER_LEN + 4);
    encode_head(dst, 4, kind::WINDOW_UPDATE, 0, stream);
    dst.put_u32(increment & U31_MASK);
}

/// Appends an RST_STREAM.
pub(crate) fn encode_rst_stream(dst: &mut BytesMut, stream: u32, reason: Reason) {
    dst.reserve(HEADER_LEN + 4);
    encode_head(dst, 4, kind::RST_STREAM, 0, stream);
    dst.put_u32(reason.0);
}

/// Appends a GOAWAY; `debug` is opaque diagnostic data for the peer.
pub(crate) fn encode_goaway(dst: &mut BytesMut, last_stream: u32, reason: Reason, debug: &[u8]) {
    dst.reserve(HEADER_LEN + 8 + debug.len());
    encode_head(dst, 8 + debug.len(), kind::GOAWAY, 0, 0);
    dst.put_u32(last_stream & U31_MASK);
    dst.put_u32(reason.0);
    dst.extend_from_slice(debug);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes one whole frame given as bytes (header included).
    fn decode_bytes(bytes: &[u8]) -> Result<Frame, FrameError> {
        let (header, payload) = bytes.split_first_chunk::<HEADER_LEN>().expect("a header");
        let head = Head::parse(header);
        assert_eq!(head.len as usize, payload.len(), "test frame length");
        decode(head, Bytes::copy_from_slice(payload))
    }

    fn ok(bytes: &[u8]) -> Frame {
        decode_bytes(bytes).expect("a valid frame")
    }

    /// A frame's bytes, built by hand from RFC 9113 §4.1's layout.
    fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn settings_of(frame: &Frame) -> Vec<(u16, u32)> {
        match frame {
            Frame::Settings { settings, .. } => settings.iter().collect(),
            other => panic!("not SETTINGS: {other:?}"),
        }
    }

    /// Cuts `data` into frames as the connection's reader does and decodes
    /// each; every frame the client can itself send must come back unchanged
    /// from encoding and decoding again. Returns how many frames decoded.
    /// (The fuzz entry point proposed for `fuzzing.rs` does the same.)
    fn decode_stream(data: &[u8]) -> usize {
        let mut data = Bytes::copy_from_slice(data);
        let mut decoded = 0;
        while let Some(header) = data.first_chunk::<HEADER_LEN>() {
            let head = Head::parse(header);
            let end = HEADER_LEN + head.len as usize;
            if data.len() < end {
                break;
            }
            let payload = data.slice(HEADER_LEN..end);
            data = data.slice(end..);
            let Ok(frame) = decode(head, payload) else {
                continue;
            };
            decoded += 1;
            if let Some((again, expected)) = reencode(frame) {
                assert_eq!(decode_bytes(&again), Ok(expected));
            }
        }
        decoded
    }

    /// Encodes `frame` again where the client has an encoder for it: the bytes
    /// and the frame they must decode to (padding, dropped, no longer counts).
    fn reencode(frame: Frame) -> Option<(BytesMut, Frame)> {
        let mut dst = BytesMut::new();
        let expected = match frame {
            Frame::Data {
                stream,
                end_stream,
                data,
                ..
            } => {
                encode_data(&mut dst, stream, &data, end_stream);
                let flow_len = data.len() as u32;
                Frame::Data {
                    stream,
                    end_stream,
                    data,
                    flow_len,
                }
            }
            Frame::Headers {
                stream,
                end_stream,
                end_headers: true,
                ref fragment,
            } if fragment.len() <= DEFAULT_MAX_FRAME_SIZE as usize => {
                encode_headers(&mut dst, stream, fragment, end_stream, 0);
                frame
            }
            Frame::Settings { ack: true, .. } => {
                encode_settings_ack(&mut dst);
                frame
            }
            Frame::Settings { ref settings, .. } => {
                encode_settings(&mut dst, &settings.iter().collect::<Vec<_>>());
                frame
            }
            Frame::RstStream { stream, reason } => {
                encode_rst_stream(&mut dst, stream, reason);
                frame
            }
            Frame::Ping { ack, payload } => {
                encode_ping(&mut dst, ack, payload);
                frame
            }
            Frame::GoAway {
                last_stream,
                reason,
                ref debug,
            } => {
                encode_goaway(&mut dst, last_stream, reason, debug);
                frame
            }
            Frame::WindowUpdate { stream, increment } => {
                encode_window_update(&mut dst, stream, increment);
                frame
            }
            _ => return None,
        };
        Some((dst, expected))
    }

    #[test]
    fn constants() {
        assert_eq!(PREFACE.len(), 24);
        assert_eq!(MAX_WINDOW, 2_147_483_647);
        assert_eq!(MAX_MAX_FRAME_SIZE, (1 << 24) - 1);
    }

    #[test]
    fn reasons_print_their_names() {
        assert_eq!(Reason::NO_ERROR.to_string(), "NO_ERROR");
        assert_eq!(Reason::REFUSED_STREAM.to_string(), "REFUSED_STREAM");
        assert_eq!(Reason::HTTP_1_1_REQUIRED.to_string(), "HTTP_1_1_REQUIRED");
        assert_eq!(Reason(0xe).to_string(), "unknown error code 0xe");
        assert_eq!(Reason(0x1f).to_string(), "unknown error code 0x1f");
        let err = FrameError::on_stream(3, Reason::PROTOCOL_ERROR, "oops");
        assert_eq!(err.to_string(), "oops (PROTOCOL_ERROR on stream 3)");
        let err = FrameError::conn(Reason::FRAME_SIZE_ERROR, "oops");
        assert_eq!(err.to_string(), "oops (FRAME_SIZE_ERROR)");
    }

    #[test]
    fn head_parses_rfc_layout() {
        let head = Head::parse(&[0x01, 0x02, 0x03, 0x01, 0x25, 0x80, 0x00, 0x01, 0x03]);
        assert_eq!(
            head,
            Head {
                len: 0x01_0203,
                kind: kind::HEADERS,
                flags: 0x25,
                stream: 0x103, // reserved bit ignored
            }
        );
        let max = Head::parse(&[0xff; HEADER_LEN]);
        assert_eq!(max.len, MAX_MAX_FRAME_SIZE);
        assert_eq!(max.stream, (1 << 31) - 1);
    }

    #[test]
    fn data_decodes_with_and_without_padding() {
        let plain = [0, 0, 3, 0x0, 0x1, 0, 0, 0, 1, b'a', b'b', b'c'];
        assert_eq!(
            ok(&plain),
            Frame::Data {
                stream: 1,
                end_stream: true,
                data: Bytes::from_static(b"abc"),
                flow_len: 3,
            }
        );
        // Pad Length 2, "ab", two bytes of padding; PADDED only.
        let padded = [0, 0, 5, 0x0, 0x8, 0, 0, 0, 3, 2, b'a', b'b', 0, 0];
        assert_eq!(
            ok(&padded),
            Frame::Data {
                stream: 3,
                end_stream: false,
                data: Bytes::from_static(b"ab"),
                flow_len: 5,
            }
        );
        // All padding: legal, and still counted for flow control.
        let all_padding = [0, 0, 3, 0x0, 0x9, 0, 0, 0, 5, 2, 0, 0];
        assert_eq!(
            ok(&all_padding),
            Frame::Data {
                stream: 5,
                end_stream: true,
                data: Bytes::new(),
                flow_len: 3,
            }
        );
        let empty = [0, 0, 0, 0x0, 0x0, 0, 0, 0, 7];
        assert!(matches!(ok(&empty), Frame::Data { ref data, flow_len: 0, .. } if data.is_empty()));
    }

    #[test]
    fn headers_decode_with_padding_and_priority() {
        let plain = [0, 0, 2, 0x1, 0x5, 0, 0, 0, 1, 0x82, 0x84];
        assert_eq!(
            ok(&plain),
            Frame::Headers {
                stream: 1,
                end_stream: true,
                end_headers: true,
                fragment: Bytes::from_static(&[0x82, 0x84]),
            }
        );
        let padded = [0, 0, 4, 0x1, 0x8, 0, 0, 0, 1, 1, 0x82, 0x84, 0];
        assert_eq!(
            ok(&padded),
            Frame::Headers {
                stream: 1,
                end_stream: false,
                end_headers: false,
                fragment: Bytes::from_static(&[0x82, 0x84]),
            }
        );
        // E + dependency 3, weight 15, then the block.
        let priority = [
            0, 0, 7, 0x1, 0x24, 0, 0, 0, 5, 0x80, 0, 0, 3, 15, 0x82, 0x84,
        ];
        assert_eq!(
            ok(&priority),
            Frame::Headers {
                stream: 5,
                end_stream: false,
                end_headers: true,
                fragment: Bytes::from_static(&[0x82, 0x84]),
            }
        );
        let both = [
            0, 0, 10, 0x1, 0x2d, 0, 0, 0, 7, 2, 0, 0, 0, 1, 200, 0x82, 0x84, 0, 0,
        ];
        assert_eq!(
            ok(&both),
            Frame::Headers {
                stream: 7,
                end_stream: true,
                end_headers: true,
                fragment: Bytes::from_static(&[0x82, 0x84]),
            }
        );
        // A stream depending on itself is not this module's concern.
        let self_dependent = [0, 0, 5, 0x1, 0x24, 0, 0, 0, 9, 0, 0, 0, 9, 0];
        assert!(
            matches!(ok(&self_dependent), Frame::Headers { ref fragment, .. } if fragment.is_empty())
        );
    }

    #[test]
    fn other_frames_decode() {
        assert_eq!(
            ok(&[0, 0, 3, 0x9, 0x4, 0, 0, 0, 1, 1, 2, 3]),
            Frame::Continuation {
                stream: 1,
                end_headers: true,
                fragment: Bytes::from_static(&[1, 2, 3]),
            }
        );
        assert_eq!(
            ok(&[0, 0, 0, 0x9, 0x0, 0, 0, 0, 1]),
            Frame::Continuation {
                stream: 1,
                end_headers: false,
                fragment: Bytes::new(),
            }
        );
        assert_eq!(
            ok(&[0, 0, 4, 0x3, 0x0, 0, 0, 0, 3, 0, 0, 0, 8]),
            Frame::RstStream {
                stream: 3,
                reason: Reason::CANCEL,
            }
        );
        assert_eq!(
            ok(&[0, 0, 4, 0x3, 0x0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef]),
            Frame::RstStream {
                stream: 3,
                reason: Reason(0xdead_beef),
            }
        );
        let ping = [0, 0, 8, 0x6, 0x0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(
            ok(&ping),
            Frame::Ping {
                ack: false,
                payload: [1, 2, 3, 4, 5, 6, 7, 8],
            }
        );
        let pong = [0, 0, 8, 0x6, 0x1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert!(matches!(ok(&pong), Frame::Ping { ack: true, .. }));
        let goaway = [
            0, 0, 10, 0x7, 0x0, 0, 0, 0, 0, 0x80, 0, 0, 7, 0, 0, 0, 0xb, b'h', b'i',
        ];
        assert_eq!(
            ok(&goaway),
            Frame::GoAway {
                last_stream: 7,
                reason: Reason::ENHANCE_YOUR_CALM,
                debug: Bytes::from_static(b"hi"),
            }
        );
        let goaway = [0, 0, 8, 0x7, 0x0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(
            matches!(ok(&goaway), Frame::GoAway { last_stream: 0, reason: Reason::NO_ERROR, ref debug } if debug.is_empty())
        );
        // Reserved bit of the increment ignored.
        let window = [0, 0, 4, 0x8, 0x0, 0, 0, 0, 0, 0x80, 0x01, 0, 0];
        assert_eq!(
            ok(&window),
            Frame::WindowUpdate {
                stream: 0,
                increment: 0x1_0000,
            }
        );
        let window = [0, 0, 4, 0x8, 0x0, 0, 0, 0, 9, 0x7f, 0xff, 0xff, 0xff];
        assert_eq!(
            ok(&window),
            Frame::WindowUpdate {
                stream: 9,
                increment: MAX_WINDOW,
            }
        );
        // Promised stream 2, padded, with a block: only the stream is kept.
        let push = [0, 0, 8, 0x5, 0xc, 0, 0, 0, 1, 1, 0, 0, 0, 2, 0x82, 0x84, 0];
        assert_eq!(ok(&push), Frame::PushPromise { stream: 1 });
        let priority = [0, 0, 5, 0x2, 0x0, 0, 0, 0, 3, 0, 0, 0, 1, 16];
        assert_eq!(ok(&priority), Frame::Ignored);
        for unknown in [0xa, 0xc, 0x10, 0xff] {
            assert_eq!(ok(&raw(unknown, 0xff, 0, b"whatever")), Frame::Ignored);
            assert_eq!(ok(&raw(unknown, 0, 3, b"")), Frame::Ignored);
        }
    }

    #[test]
    fn settings_decode_in_order_with_unknown_ids() {
        let frame = [
            0, 0, 24, 0x4, 0x0, 0, 0, 0, 0, //
            0, 3, 0, 0, 0, 100, //
            0, 0x42, 0xff, 0xff, 0xff, 0xff, // unknown: passed through
            0, 4, 0x7f, 0xff, 0xff, 0xff, //
            0, 3, 0, 0, 0, 0, // a later value replaces an earlier one
        ];
        let frame = ok(&frame);
        assert!(
            matches!(frame, Frame::Settings { ack: false, ref settings } if settings.len() == 4)
        );
        assert_eq!(
            settings_of(&frame),
            [
                (setting::MAX_CONCURRENT_STREAMS, 100),
                (0x42, u32::MAX),
                (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
                (setting::MAX_CONCURRENT_STREAMS, 0),
            ]
        );
        assert_eq!(
            format!("{frame:?}"),
            "Settings { ack: false, settings: [(3, 100), (66, 4294967295), (4, 2147483647), (3, 0)] }"
        );
        let empty = ok(&[0, 0, 0, 0x4, 0x0, 0, 0, 0, 0]);
        assert!(
            matches!(empty, Frame::Settings { ack: false, ref settings } if settings.is_empty())
        );
        let ack = ok(&[0, 0, 0, 0x4, 0x1, 0, 0, 0, 0]);
        assert!(matches!(ack, Frame::Settings { ack: true, ref settings } if settings.is_empty()));
        // The bounds themselves are legal.
        for (id, value) in [
            (setting::ENABLE_PUSH, 0),
            (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
            (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE),
            (setting::MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE),
            (setting::HEADER_TABLE_SIZE, u32::MAX),
            (setting::MAX_HEADER_LIST_SIZE, 0),
        ] {
            let mut payload = id.to_be_bytes().to_vec();
            payload.extend_from_slice(&value.to_be_bytes());
            assert_eq!(
                settings_of(&ok(&raw(kind::SETTINGS, 0, 0, &payload))),
                [(id, value)]
            );
        }
    }

    /// Every rule `decode` checks, with the error it must give.
    #[test]
    fn invalid_frames_give_the_right_error() {
        const CONN: Option<u32> = None;
        let setting = |id: u16, value: u32| {
            let mut payload = id.to_be_bytes().to_vec();
            payload.extend_from_slice(&value.to_be_bytes());
            raw(kind::SETTINGS, 0, 0, &payload)
        };
        let protocol = Reason::PROTOCOL_ERROR;
        let size = Reason::FRAME_SIZE_ERROR;
        let cases: Vec<(Vec<u8>, Reason, Option<u32>)> = vec![
            // Stream 0 where a stream is required.
            (raw(kind::DATA, 0, 0, b"x"), protocol, CONN),
            (raw(kind::HEADERS, 0x4, 0, b"x"), protocol, CONN),
            (raw(kind::CONTINUATION, 0x4, 0, b"x"), protocol, CONN),
            (raw(kind::RST_STREAM, 0, 0, &[0, 0, 0, 8]), protocol, CONN),
            (raw(kind::PUSH_PROMISE, 0, 0, &[0, 0, 0, 2]), protocol, CONN),
            (raw(kind::PRIORITY, 0, 0, &[0, 0, 0, 1, 16]), protocol, CONN),
            // A stream where stream 0 is required.
            (raw(kind::SETTINGS, 0, 1, b""), protocol, CONN),
            (raw(kind::SETTINGS, ACK, 1, b""), protocol, CONN),
            (raw(kind::PING, 0, 1, &[0; 8]), protocol, CONN),
            (raw(kind::GOAWAY, 0, 1, &[0; 8]), protocol, CONN),
            // Fixed lengths.
            (raw(kind::RST_STREAM, 0, 1, &[0; 3]), size, CONN),
            (raw(kind::RST_STREAM, 0, 1, &[0; 5]), size, CONN),
            (raw(kind::PING, 0, 0, &[0; 7]), size, CONN),
            (raw(kind::PING, ACK, 0, &[0; 9]), size, CONN),
            (raw(kind::WINDOW_UPDATE, 0, 0, &[0, 0, 1]), size, CONN),
            (raw(kind::WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1, 0]), size, CONN),
            (raw(kind::PRIORITY, 0, 3, &[0; 4]), size, Some(3)),
            (raw(kind::PRIORITY, 0, 3, &[0; 6]), size, Some(3)),
            (raw(kind::SETTINGS, 0, 0, &[0; 5]), size, CONN),
            (raw(kind::SETTINGS, 0, 0, &[0; 7]), size, CONN),
            (raw(kind::SETTINGS, ACK, 0, &[0; 6]), size, CONN),
            (raw(kind::GOAWAY, 0, 0, &[0; 7]), size, CONN),
            (raw(kind::GOAWAY, 0, 0, b""), size, CONN),
            // Padding.
            (raw(kind::DATA, PADDED, 1, &[3, b'a', b'b']), protocol, CONN),
            (raw(kind::DATA, PADDED, 1, &[255]), protocol, CONN),
            (raw(kind::DATA, PADDED, 1, b""), size, CONN),
            (raw(kind::HEADERS, PADDED, 1, &[2, 0x82]), protocol, CONN),
            (raw(kind::HEADERS, PADDED, 1, b""), size, CONN),
            (raw(kind::HEADERS, PRIORITY, 1, &[0; 4]), size, CONN),
            (
                raw(kind::HEADERS, PADDED | PRIORITY, 1, &[0; 5]),
                size,
                CONN,
            ),
            (
                raw(
                    kind::HEADERS,
                    PADDED | PRIORITY,
                    1,
                    &[3, 0, 0, 0, 0, 0, 0x82, 0],
                ),
                protocol,
                CONN,
            ),
            (raw(kind::PUSH_PROMISE, 0, 1, &[0, 0, 2]), size, CONN),
            (
                raw(kind::PUSH_PROMISE, PADDED, 1, &[1, 0, 0, 0, 2]),
                protocol,
                CONN,
            ),
            (raw(kind::PUSH_PROMISE, PADDED, 1, b""), size, CONN),
            // SETTINGS values.
            (setting(setting::ENABLE_PUSH, 1), protocol, CONN),
            (setting(setting::ENABLE_PUSH, 2), protocol, CONN),
            (
                setting(setting::INITIAL_WINDOW_SIZE, MAX_WINDOW + 1),
                Reason::FLOW_CONTROL_ERROR,
                CONN,
            ),
            (
                setting(setting::INITIAL_WINDOW_SIZE, u32::MAX),
                Reason::FLOW_CONTROL_ERROR,
                CONN,
            ),
            (setting(setting::MAX_FRAME_SIZE, 0), protocol, CONN),
            (setting(setting::MAX_FRAME_SIZE, 16_383), protocol, CONN),
            (setting(setting::MAX_FRAME_SIZE, 16_777_216), protocol, CONN),
            // A zero increment: on the stream it was meant for.
            (raw(kind::WINDOW_UPDATE, 0, 0, &[0; 4]), protocol, CONN),
            (raw(kind::WINDOW_UPDATE, 0, 5, &[0; 4]), protocol, Some(5)),
            (
                raw(kind::WINDOW_UPDATE, 0, 5, &[0x80, 0, 0, 0]),
                protocol,
                Some(5),
            ),
        ];
        for (bytes, reason, stream) in cases {
            let err = decode_bytes(&bytes).expect_err(&format!("{bytes:?} is invalid"));
            assert_eq!(
                (err.reason, err.stream),
                (reason, stream),
                "{bytes:?}: {err}"
            );
            assert!(!err.what.is_empty());
        }
        // A bad value after good ones still fails the frame.
        let mut two = raw(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1, 0, 5, 0, 0, 0, 1]);
        two[2] = 12;
        assert_eq!(decode_bytes(&two).unwrap_err().reason, protocol);
    }

    #[test]
    fn encoders_write_rfc_layout() {
        let mut dst = BytesMut::new();
        encode_head(&mut dst, 0x01_0203, kind::HEADERS, 0x25, 0x8000_0103);
        assert_eq!(&dst[..], [1, 2, 3, 1, 0x25, 0, 0, 1, 3]);

        let mut dst = BytesMut::new();
        encode_data(&mut dst, 1, b"abc", true);
        encode_data(&mut dst, 3, b"", false);
        assert_eq!(
            &dst[..],
            [0, 0, 3, 0, 1, 0, 0, 0, 1, b'a', b'b', b'c', 0, 0, 0, 0, 0, 0, 0, 0, 3]
        );

        let mut dst = BytesMut::new();
        encode_settings(
            &mut dst,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, 1 << 20),
            ],
        );
        assert_eq!(
            &dst[..],
            [0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0]
        );

        let mut dst = BytesMut::new();
        encode_settings(&mut dst, &[]);
        encode_settings_ack(&mut dst);
        assert_eq!(
            &dst[..],
            [0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0]
        );

        let mut dst = BytesMut::new();
        encode_ping(&mut dst, false, [1, 2, 3, 4, 5, 6, 7, 8]);
        encode_ping(&mut dst, true, [8; 8]);
        assert_eq!(
            &dst[..],
            [
                0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, //
                0, 0, 8, 6, 1, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8,
            ]
        );

        let mut dst = BytesMut::new();
        encode_window_update(&mut dst, 0, MAX_WINDOW);
        encode_window_update(&mut dst, 7, 1);
        assert_eq!(
            &dst[..],
            [
                0, 0, 4, 8, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, //
                0, 0, 4, 8, 0, 0, 0, 0, 7, 0, 0, 0, 1,
            ]
        );

        let mut dst = BytesMut::new();
        encode_rst_stream(&mut dst, 5, Reason::REFUSED_STREAM);
        assert_eq!(&dst[..], [0, 0, 4, 3, 0, 0, 0, 0, 5, 0, 0, 0, 7]);

        let mut dst = BytesMut::new();
        encode_goaway(&mut dst, 9, Reason::PROTOCOL_ERROR, b"bye");
        assert_eq!(
            &dst[..],
            [0, 0, 11, 7, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, b'b', b'y', b'e']
        );

        let mut dst = BytesMut::new();
        encode_headers(&mut dst, 1, &[0x82, 0x84], true, DEFAULT_MAX_FRAME_SIZE);
        encode_headers(&mut dst, 3, &[], false, DEFAULT_MAX_FRAME_SIZE);
        assert_eq!(
            &dst[..],
            [
                0, 0, 2, 1, 0x5, 0, 0, 0, 1, 0x82, 0x84, //
                0, 0, 0, 1, 0x4, 0, 0, 0, 3,
            ]
        );
    }

    #[test]
    fn encoded_frames_decode_to_themselves() {
        let mut dst = BytesMut::new();
        encode_data(&mut dst, 1, b"hello", true);
        encode_headers(&mut dst, 3, b"block", false, DEFAULT_MAX_FRAME_SIZE);
        encode_settings(&mut dst, &[(setting::MAX_FRAME_SIZE, 1 << 20), (0x99, 7)]);
        encode_settings_ack(&mut dst);
        encode_ping(&mut dst, true, *b"12345678");
        encode_window_update(&mut dst, 0, 1_000);
        encode_rst_stream(&mut dst, 3, Reason::CANCEL);
        encode_goaway(&mut dst, 3, Reason::NO_ERROR, b"");
        assert_eq!(decode_stream(&dst), 8);
    }

    /// Reads back what `finish_headers` wrote: the frames' heads and the
    /// fragments joined.
    fn read_block(mut bytes: &[u8]) -> (Vec<Head>, Vec<u8>) {
        let mut heads = Vec::new();
        let mut block = Vec::new();
        while let Some(header) = bytes.first_chunk::<HEADER_LEN>() {
            let head = Head::parse(header);
            heads.push(head);
            let frame = &bytes[..HEADER_LEN + head.len as usize];
            match decode_bytes(frame).expect("valid") {
                Frame::Headers { fragment, .. } | Frame::Continuation { fragment, .. } => {
                    block.extend_from_slice(&fragment)
                }
                other => panic!("not a header block frame: {other:?}"),
            }
            bytes = &bytes[frame.len()..];
        }
        assert!(bytes.is_empty(), "whole frames");
        (heads, block)
    }

    #[test]
    fn header_blocks_split_at_the_frame_size() {
        let block: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let max = DEFAULT_MAX_FRAME_SIZE;
        let cases = [
            (0, max, vec![0]),
            (100, max, vec![100]),
            (16_384, max, vec![16_384]),
            (16_385, max, vec![16_384, 1]),
            (32_768, max, vec![16_384, 16_384]),
            (40_000, max, vec![16_384, 16_384, 7_232]),
            (40_000, 20_000, vec![20_000, 20_000]),
            (40_000, MAX_MAX_FRAME_SIZE, vec![40_000]),
            // Below the legal minimum: treated as the minimum.
            (40_000, 0, vec![16_384, 16_384, 7_232]),
        ];
        for (len, max, sizes) in cases {
            let block = &block[..len];
            for end_stream in [false, true] {
                // Something before it in the buffer, as in a real write buffer.
                let mut dst = BytesMut::new();
                encode_ping(&mut dst, false, [0; 8]);
                let before = dst.len();
                let start = start_headers(&mut dst);
                assert_eq!(start, before);
                dst.extend_from_slice(block);
                finish_headers(&mut dst, start, 5, end_stream, max);

                let (heads, joined) = read_block(&dst[before..]);
                assert_eq!(joined, block, "{len} bytes in frames of {max}");
                let lens: Vec<usize> = heads.iter().map(|h| h.len as usize).collect();
                assert_eq!(lens, sizes);
                for (i, head) in heads.iter().enumerate() {
                    let last = i + 1 == heads.len();
                    let (kind, mut flags) = match i {
                        0 => (kind::HEADERS, if end_stream { END_STREAM } else { 0 }),
                        _ => (kind::CONTINUATION, 0),
                    };
                    if last {
                        flags |= END_HEADERS;
                    }
                    assert_eq!((head.kind, head.flags, head.stream), (kind, flags, 5));
                }

                let mut direct = BytesMut::new();
                encode_ping(&mut direct, false, [0; 8]);
                encode_headers(&mut direct, 5, block, end_stream, max);
                assert_eq!(direct, dst, "encode_headers writes the same frames");
            }
        }
    }

    /// Valid frames of every type, for the robustness tests.
    fn samples() -> Vec<Vec<u8>> {
        vec![
            raw(kind::DATA, PADDED | END_STREAM, 1, &[2, b'a', b'b', 0, 0]),
            raw(kind::DATA, 0, 1, b"abc"),
            raw(
                kind::HEADERS,
                PADDED | PRIORITY | END_HEADERS,
                3,
                &[1, 0, 0, 0, 1, 9, 0x82, 0],
            ),
            raw(
                kind::HEADERS,
                END_HEADERS | END_STREAM,
                3,
                &[0x82, 0x84, 0x87],
            ),
            raw(kind::CONTINUATION, END_HEADERS, 3, &[0x82]),
            raw(kind::PRIORITY, 0, 3, &[0, 0, 0, 1, 16]),
            raw(kind::RST_STREAM, 0, 3, &[0, 0, 0, 8]),
            raw(
                kind::SETTINGS,
                0,
                0,
                &[0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 0x40, 0, 0, 2, 0, 0, 0, 0],
            ),
            raw(kind::SETTINGS, ACK, 0, b""),
            raw(
                kind::PUSH_PROMISE,
                PADDED | END_HEADERS,
                1,
                &[1, 0, 0, 0, 2, 0x82, 0],
            ),
            raw(kind::PING, ACK, 0, &[1, 2, 3, 4, 5, 6, 7, 8]),
            raw(kind::GOAWAY, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0, b'x']),
            raw(kind::WINDOW_UPDATE, 0, 0, &[0, 0, 1, 0]),
            raw(kind::WINDOW_UPDATE, 0, 1, &[0, 0, 1, 0]),
            raw(0xee, 0xff, 1, b"extension"),
        ]
    }

    #[test]
    fn every_truncation_and_byte_flip_decodes_without_panicking() {
        let samples = samples();
        for sample in &samples {
            assert!(decode_bytes(sample).is_ok(), "sample {sample:?} is valid");
            // Every shorter payload, with a header that says so.
            for cut in HEADER_LEN..=sample.len() {
                let mut frame = sample[..cut].to_vec();
                let len = (cut - HEADER_LEN) as u32;
                frame[..3].copy_from_slice(&len.to_be_bytes()[1..]);
                let _ = decode_bytes(&frame);
            }
            // Every value of every byte, header included, read as a stream.
            for at in 0..sample.len() {
                for value in 0..=u8::MAX {
                    let mut frame = sample.clone();
                    frame[at] = value;
                    decode_stream(&frame);
                }
            }
        }
        // The whole lot as one stream, cut at every point.
        let stream: Vec<u8> = samples.concat();
        assert_eq!(decode_stream(&stream), samples.len());
        for cut in 0..stream.len() {
            decode_stream(&stream[..cut]);
            decode_stream(&stream[cut..]);
        }
    }

    #[test]
    fn random_bytes_decode_without_panicking() {
        // xorshift: deterministic, no dependency.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let kind = (next() % 12) as u8;
            let flags = next() as u8;
            let stream = (next() % 3) as u32;
            let len = (next() % 24) as usize;
            let payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            decode_stream(&raw(kind, flags, stream, &payload));
        }
    }
}
