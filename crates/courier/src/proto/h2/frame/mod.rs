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

use bytes::Bytes;

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
    /// RFC 8441 §3: the server accepts extended CONNECT (`:protocol`).
    pub(crate) const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
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

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub(crate) use decode::decode;
pub(crate) use encode::*;
