//! HTTP/3 (RFC 9114) client connections over QUIC: our own framing and
//! QPACK on quinn's streams (`connect/quic.rs` dials), as HTTP/1.1 and
//! HTTP/2 are ours on their byte streams.
//!
//! Why our own and not the `h3` crate (which courier used until issue 31
//! measured it, and which courier-server still uses as the test target):
//! h3's QPACK alone cost more instructions per request than a whole TLS
//! HTTP/2 request (its Huffman coder goes bit by bit, with a `Vec` per
//! string), its API cannot take a head encoded once and sent many times,
//! it buffers every frame but DATA whole before looking at it (so it had
//! to be bounded from outside), and it keeps private what the pool needs
//! (the GOAWAY id, the server's SETTINGS, whether a stream open waited).
//! Figures: docs/src/http3.md.
//!
//! What quinn keeps private, and how it is observed: the peer's
//! MAX_STREAMS (quinn exposes neither the value nor a callback; `open_bi`
//! just waits): [`request`] sees every stream open that had to wait, and
//! the most request streams ever open at once is then the peer's limit
//! ([`signals`]).
//!
//! Layout: [`varint`] and [`frame`] the codec (every length the peer
//! controls bounded there), [`qpack`] field sections with no dynamic table,
//! [`reader`] a stream's frames, [`head`] message heads, [`conn`] a
//! connection's handle and setup, [`control`] its driver (the server's
//! control and QPACK streams), [`deadline`] the requests' deadlines kept on
//! the driver's one timer, [`request`] one request from head to
//! response head ([`send_head`] its head's write), [`body`] the request
//! body sent and the response body read
//! (limits, trailers, STOP_SENDING on drop), [`signals`] what the
//! connection tells the pool, [`closed`] QUIC's close seen without
//! quinn's lock.

pub(crate) mod body;
pub(crate) mod closed;
pub(crate) mod conn;
pub(crate) mod control;
pub(crate) mod deadline;
pub(crate) mod early;
pub(crate) mod frame;
pub(crate) mod head;
pub(crate) mod qpack;
pub(crate) mod reader;
pub(crate) mod request;
pub(crate) mod send_head;
pub(crate) mod signals;
pub(crate) mod template;
pub(crate) mod varint;

/// HTTP/3 error codes (RFC 9114 §8.1) courier sends or reads.
#[allow(dead_code)] // the full set of RFC 9114 §8.1 codes we name
pub(crate) mod code {
    /// Closing with nothing wrong.
    pub(crate) const NO_ERROR: u32 = 0x100;
    /// The server did not process the request: safe to send again.
    pub(crate) const REQUEST_REJECTED: u64 = 0x10b;
    /// A general protocol error.
    pub(crate) const GENERAL_PROTOCOL_ERROR: u64 = 0x101;
    /// A stream type the peer may not open (a second control stream...).
    pub(crate) const STREAM_CREATION_ERROR: u64 = 0x103;
    /// A critical stream (control, QPACK) closed.
    pub(crate) const CLOSED_CRITICAL_STREAM: u64 = 0x104;
    /// A frame not allowed where it came.
    pub(crate) const FRAME_UNEXPECTED: u64 = 0x105;
    /// A frame malformed, or cut short by its stream's end.
    pub(crate) const FRAME_ERROR: u64 = 0x106;
    /// More than we are willing to handle.
    pub(crate) const EXCESSIVE_LOAD: u64 = 0x107;
    /// A stream or push id used wrongly (a GOAWAY id that rises).
    pub(crate) const ID_ERROR: u64 = 0x108;
    /// SETTINGS broken.
    pub(crate) const SETTINGS_ERROR: u64 = 0x109;
    /// No SETTINGS first on the control stream.
    pub(crate) const MISSING_SETTINGS: u64 = 0x10a;
    /// The request was cancelled (a response body dropped).
    pub(crate) const REQUEST_CANCELLED: u64 = 0x10c;
    /// A malformed message (a field section that is not one).
    pub(crate) const MESSAGE_ERROR: u64 = 0x10e;
    /// QPACK could not decode a field section (RFC 9204 §6).
    pub(crate) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
    /// QPACK: the peer's encoder stream broke the rules.
    pub(crate) const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
    /// QPACK: the peer's decoder stream broke the rules.
    pub(crate) const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;
}
