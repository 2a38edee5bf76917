//! [`Protocol`]: the HTTP version a connection speaks.
//!
//! Why a leaf of its own: the preface detection, the TLS handshake, the
//! service and every protocol driver name it, and none of them should have
//! to import the code that settles it (`negotiate.rs`) to do so.

/// The HTTP version spoken on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Http1,
    Http2,
    /// Never negotiated here: QUIC connections come from `http3.rs`.
    Http3,
}

/// RFC 8470's request header: the request came in early data (0-RTT).
pub(crate) const EARLY_DATA: http::HeaderName = http::HeaderName::from_static("early-data");
