//! [`ErrorKind`]: what went wrong, in terms a caller can act on, and its
//! short name (metrics labels, `courier bench`'s report).

use std::fmt;

/// What went wrong, in terms a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The URL could not be parsed, or has no host, or an unsupported scheme.
    InvalidUrl,
    /// A header name or value, or another part of the request, was invalid.
    InvalidRequest,
    /// Name resolution failed or returned no address.
    Dns,
    /// Every resolved address refused or failed the TCP connect.
    Connect,
    /// Establishing the connection took longer than `connect_timeout`.
    ConnectTimeout,
    /// The TLS handshake failed: untrusted or expired certificate, wrong host
    /// name, no common protocol, or bad TLS configuration.
    Tls,
    /// The request did not complete within its total timeout.
    Timeout,
    /// The request waited longer than `pool_queue_timeout` for a connection.
    PoolQueueTimeout,
    /// The connection was closed or reset before a complete response head arrived.
    ConnectionClosed,
    /// The peer violated HTTP (malformed status line or headers, bad framing).
    Protocol,
    /// The server refused the request unprocessed: an HTTP/2 stream reset
    /// with REFUSED_STREAM or past a GOAWAY's last stream id, or a request
    /// never written to a connection that closed. The server did not act on
    /// it, so it is safe to send again whatever its method; courier already
    /// did, up to its bound ([`ClientBuilder::http2_max_refused_retries`](crate::ClientBuilder::http2_max_refused_retries)).
    Refused,
    /// The response head was larger than `max_response_headers_size`.
    HeadersTooLarge,
    /// Reading the response body failed (closed mid-body, bad chunking, reset).
    Body,
    /// The response body was larger than the limit the caller asked for.
    BodyTooLarge,
    /// The body could not be decoded (invalid UTF-8, invalid JSON).
    Decode,
    /// The client was dropped, or the request's connection went away with no better explanation.
    Canceled,
    /// A redirect chain was longer than the redirect middleware's limit (or looped).
    TooManyRedirects,
    /// A redirect could not be followed: invalid or missing `Location`, an
    /// unsupported scheme, or an HTTPS to HTTP downgrade that was not allowed.
    Redirect,
    /// The circuit breaker for the request's origin is open: the request was
    /// failed fast, without being sent.
    CircuitOpen,
    /// A compressed response body (gzip, deflate, brotli, zstd) was corrupt.
    /// A decompressed body over its limit is [`ErrorKind::BodyTooLarge`].
    Decompression,
    /// A configuration (a `ClientFactory` file or setting, a builder's
    /// certificate or key) was invalid.
    Config,
    /// The server answered with a client or server error status (4xx, 5xx):
    /// only from [`Response::error_for_status`](crate::Response::error_for_status).
    Status,
    /// A middleware layer that is not courier's (a tower or tower-http
    /// layer, or the caller's own) failed the request with an error courier
    /// knows nothing about; it is the [`source`](std::error::Error::source).
    /// `Error::from(BoxError)` makes one of an error out of a tower layer.
    Middleware,
    /// The response cannot become an upgraded stream
    /// ([`Response::upgrade`](crate::Response::upgrade)): the server did not
    /// switch protocols (no `101` to an `Upgrade` request, no 2xx to a
    /// `CONNECT`), or, over HTTP/2, did not enable extended CONNECT.
    Upgrade,
}

impl ErrorKind {
    /// A stable, snake_case name for reports and metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidUrl => "invalid_url",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Dns => "dns",
            ErrorKind::Connect => "connect",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Tls => "tls",
            ErrorKind::Timeout => "timeout",
            ErrorKind::PoolQueueTimeout => "pool_queue_timeout",
            ErrorKind::ConnectionClosed => "connection_closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Refused => "refused",
            ErrorKind::HeadersTooLarge => "headers_too_large",
            ErrorKind::Body => "body",
            ErrorKind::BodyTooLarge => "body_too_large",
            ErrorKind::Decode => "decode",
            ErrorKind::Canceled => "canceled",
            ErrorKind::TooManyRedirects => "too_many_redirects",
            ErrorKind::Redirect => "redirect",
            ErrorKind::CircuitOpen => "circuit_open",
            ErrorKind::Decompression => "decompression",
            ErrorKind::Config => "config",
            ErrorKind::Status => "status",
            ErrorKind::Middleware => "middleware",
            ErrorKind::Upgrade => "upgrade",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
