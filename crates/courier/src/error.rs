//! One error type for everything a request can run into.
//!
//! Every failure carries an [`ErrorKind`] so callers (and `courier bench`) can
//! classify it without string matching, and the underlying cause is kept as the
//! [`std::error::Error::source`] chain.

use std::error::Error as StdError;
use std::fmt;

/// A boxed error, the currency of sources and streaming bodies.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

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
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error returned by every fallible operation in courier.
///
/// ```
/// # async fn run() {
/// let client = courier::Client::new();
/// match client.get("http://127.0.0.1:1/").send().await {
///     Ok(_) => {}
///     Err(e) if e.is_timeout() => eprintln!("too slow: {e}"),
///     Err(e) => eprintln!("failed ({}): {e}", e.kind()),
/// }
/// # }
/// ```
pub struct Error {
    // Boxed so `Result<Response, Error>` stays small on the hot path.
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    message: Option<&'static str>,
    source: Option<BoxError>,
    /// The URL the error is about: the request's origin, or its whole URL
    /// where it was at hand.
    url: Option<http::Uri>,
    status: Option<http::StatusCode>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, source: impl Into<BoxError>) -> Error {
        Error {
            inner: Box::new(Inner {
                kind,
                message: None,
                source: Some(source.into()),
                url: None,
                status: None,
            }),
        }
    }

    pub(crate) fn msg(kind: ErrorKind, message: &'static str) -> Error {
        Error {
            inner: Box::new(Inner {
                kind,
                message: Some(message),
                source: None,
                url: None,
                status: None,
            }),
        }
    }

    /// A 4xx or 5xx answer to `url` (see `Response::error_for_status`).
    pub(crate) fn from_status(status: http::StatusCode, url: &http::Uri) -> Error {
        Error {
            inner: Box::new(Inner {
                kind: ErrorKind::Status,
                message: None,
                source: None,
                url: Some(url.clone()),
                status: Some(status),
            }),
        }
    }

    /// Says which URL the error is about, unless it says so already.
    pub(crate) fn with_url(mut self, url: impl FnOnce() -> http::Uri) -> Error {
        if self.inner.url.is_none() {
            self.inner.url = Some(url());
        }
        self
    }

    /// The URL the error is about: the request's, or its origin's
    /// (`scheme://host:port`) when the failure was the connection's.
    pub fn url(&self) -> Option<&http::Uri> {
        self.inner.url.as_ref()
    }

    /// The status of a [`ErrorKind::Status`] error.
    pub fn status(&self) -> Option<http::StatusCode> {
        self.inner.status
    }

    /// The category of this error.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// True for every kind of timeout: request, connect and pool queue.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Timeout | ErrorKind::ConnectTimeout | ErrorKind::PoolQueueTimeout
        )
    }

    /// True when the error happened before or while establishing a connection.
    pub fn is_connect(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Dns | ErrorKind::Connect | ErrorKind::ConnectTimeout | ErrorKind::Tls
        )
    }

    /// True when an HTTP/2 server closed the connection after its own
    /// GOAWAY while this request was unfinished: the server dropped a
    /// response it had begun, or a request its GOAWAY kept (RFC 9113 §6.8
    /// asks it to finish those; python-h2, hypercorn's HTTP/2, cannot send
    /// anything after its GOAWAY). False when courier closed the connection
    /// itself (a server silent after its GOAWAY and deaf to the PING that
    /// followed it), for a close with no GOAWAY, and for a reset. The kind
    /// says where it struck: [`ErrorKind::Body`] once the head was read,
    /// [`ErrorKind::ConnectionClosed`] before.
    pub fn is_closed_after_goaway(&self) -> bool {
        use crate::proto::h2::error::StreamError;
        let mut source = self.source();
        while let Some(err) = source {
            if let Some(stream) = err.downcast_ref::<StreamError>() {
                return matches!(stream, StreamError::ClosedAfterGoaway);
            }
            if let Some(wrapped) = err.downcast_ref::<Error>() {
                return wrapped.is_closed_after_goaway();
            }
            source = err.source();
        }
        false
    }

    /// Classifies an HTTP/2 stream failure: an oversized header list, a
    /// request the server did not process (refused, or never written), a
    /// connection whose server never sent its SETTINGS (a connect timeout),
    /// the connection lost, or a protocol error (a reset or GOAWAY from the
    /// server after it took the request, a malformed response, a frame
    /// courier would not accept).
    pub(crate) fn from_http2(err: crate::proto::h2::error::StreamError) -> Error {
        use crate::proto::h2::error::StreamError;
        let kind = match &err {
            StreamError::HeadersTooLarge => ErrorKind::HeadersTooLarge,
            StreamError::InvalidRequest(_) => ErrorKind::InvalidRequest,
            StreamError::NoSettings => ErrorKind::ConnectTimeout,
            e if e.is_unprocessed() => ErrorKind::Refused,
            e if e.is_connection_lost() => ErrorKind::ConnectionClosed,
            _ => ErrorKind::Protocol,
        };
        Error::new(kind, err)
    }
}

/// The source of a [`ErrorKind::Config`] error: what is wrong, and how to fix it.
#[derive(Debug)]
struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for ConfigError {}

/// An [`ErrorKind::Config`] error saying `message` (the factory's, a
/// cluster's middleware).
pub(crate) fn config_error(message: String) -> Error {
    Error::new(ErrorKind::Config, ConfigError(message))
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("courier::Error");
        d.field("kind", &self.inner.kind);
        if let Some(m) = self.inner.message {
            d.field("message", &m);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        if let Some(url) = &self.inner.url {
            d.field("url", url);
        }
        if let Some(status) = &self.inner.status {
            d.field("status", status);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.inner.kind {
            ErrorKind::InvalidUrl => "invalid URL",
            ErrorKind::InvalidRequest => "invalid request",
            ErrorKind::Dns => "DNS resolution failed",
            ErrorKind::Connect => "connection failed",
            ErrorKind::ConnectTimeout => "connect timed out",
            ErrorKind::Tls => "TLS handshake failed",
            ErrorKind::Timeout => "request timed out",
            ErrorKind::PoolQueueTimeout => "timed out waiting for a pooled connection",
            ErrorKind::ConnectionClosed => "connection closed before the response",
            ErrorKind::Protocol => "HTTP protocol error",
            ErrorKind::Refused => "request refused unprocessed by the server",
            ErrorKind::HeadersTooLarge => "response headers too large",
            ErrorKind::Body => "error reading response body",
            ErrorKind::BodyTooLarge => "response body too large",
            ErrorKind::Decode => "error decoding response body",
            ErrorKind::Canceled => "request canceled",
            ErrorKind::TooManyRedirects => "too many redirects",
            ErrorKind::Redirect => "redirect not followed",
            ErrorKind::CircuitOpen => "circuit breaker open",
            ErrorKind::Decompression => "error decompressing response body",
            ErrorKind::Config => "invalid configuration",
            ErrorKind::Status => "HTTP status",
        };
        f.write_str(what)?;
        if let Some(status) = self.inner.status {
            write!(f, " {status}")?;
        }
        if let Some(m) = self.inner.message {
            write!(f, ": {m}")?;
        }
        if let Some(s) = &self.inner.source {
            write!(f, ": {s}")?;
        }
        if let Some(url) = &self.inner.url {
            write!(f, " ({url})")?;
        }
        Ok(())
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|s| &**s as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_timeouts() {
        assert!(Error::msg(ErrorKind::Timeout, "x").is_timeout());
        assert!(Error::msg(ErrorKind::PoolQueueTimeout, "x").is_timeout());
        assert!(Error::msg(ErrorKind::ConnectTimeout, "x").is_timeout());
        assert!(!Error::msg(ErrorKind::Connect, "x").is_timeout());
    }

    #[test]
    fn source_is_chained_and_displayed() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = Error::new(ErrorKind::Connect, io);
        assert!(e.source().unwrap().is::<std::io::Error>());
        assert_eq!(e.to_string(), "connection failed: refused");
        assert!(e.is_connect());
    }

    #[test]
    fn a_status_error_names_status_and_url() {
        let url: http::Uri = "http://h.example/x?y=1".parse().unwrap();
        let e = Error::from_status(http::StatusCode::SERVICE_UNAVAILABLE, &url);
        assert_eq!(e.kind(), ErrorKind::Status);
        assert_eq!(e.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
        assert_eq!(
            e.to_string(),
            "HTTP status 503 Service Unavailable (http://h.example/x?y=1)"
        );
        let e = Error::msg(ErrorKind::Connect, "refused").with_url(|| url.clone());
        assert_eq!(e.url(), Some(&url));
        assert!(e.to_string().ends_with("(http://h.example/x?y=1)"));
    }

    #[test]
    fn only_the_servers_close_after_its_goaway_is_closed_after_goaway() {
        use crate::proto::h2::error::StreamError;
        let cut = Error::new(ErrorKind::Body, StreamError::ClosedAfterGoaway);
        assert!(cut.is_closed_after_goaway());
        assert_eq!(
            cut.to_string(),
            "error reading response body: HTTP/2 connection closed: the server closed the connection after its GOAWAY"
        );
        // Wrapped by a layer that keeps the source (a middleware's error).
        assert!(Error::new(ErrorKind::Body, cut).is_closed_after_goaway());
        // courier's own close, whose message also says "after its GOAWAY".
        let silent = StreamError::Closed("the server went silent after its GOAWAY");
        assert!(!Error::new(ErrorKind::Body, silent).is_closed_after_goaway());
        let closed = StreamError::Closed("the server closed the connection");
        assert!(!Error::new(ErrorKind::Body, closed).is_closed_after_goaway());
        assert!(!Error::msg(ErrorKind::Body, "x").is_closed_after_goaway());
    }

    #[test]
    fn error_is_small() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }
}
