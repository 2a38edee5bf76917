//! One error type for everything a request can run into.
//!
//! Every failure carries an [`ErrorKind`] so callers (and `courier bench`) can
//! classify it without string matching, and the underlying cause is kept as the
//! [`std::error::Error::source`] chain.

use std::borrow::Cow;
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

/// The error returned by every fallible operation in courier.
///
/// Classify it with [`kind`](Self::kind) or reqwest's predicates
/// ([`is_timeout`](Self::is_timeout), [`is_connect`](Self::is_connect),
/// [`is_status`](Self::is_status), [`is_body`](Self::is_body),
/// [`is_decode`](Self::is_decode), [`is_redirect`](Self::is_redirect),
/// [`is_request`](Self::is_request), [`is_builder`](Self::is_builder)),
/// never by its text.
///
/// # Printing
///
/// `Display` (`{}`) says what went wrong, then the URL in parentheses —
/// `connection failed (http://127.0.0.1:1/)` — and not the cause: the cause
/// is the [`source`](std::error::Error::source) chain, which error reporters
/// (anyhow, eyre, `tracing`'s error fields) print after it, so printing it
/// in `Display` too would show it twice. The alternate form (`{:#}`) prints
/// the whole chain on one line, each cause after a colon —
/// `connection failed (http://127.0.0.1:1/): Connection refused (os error 111)`
/// — for logs and messages written without such a reporter.
///
/// The printed URL (both forms, and `Debug`) leaves out the user info
/// (`user:password@`) and the query string, which often carry credentials
/// (API keys, signed URLs): a message may be logged or shown where secrets
/// must not be. [`url`](Self::url) has the whole URL;
/// [`without_url`](Self::without_url) drops it.
///
/// ```
/// # async fn run() {
/// let client = courier::Client::new();
/// match client.get("http://127.0.0.1:1/?key=s3cret").send().await {
///     Ok(_) => {}
///     Err(e) if e.is_timeout() => eprintln!("too slow: {e}"),
///     Err(e) => {
///         assert!(!format!("{e:#}").contains("s3cret"));
///         eprintln!("failed ({}): {e:#}", e.kind());
///     }
/// }
/// # }
/// ```
pub struct Error {
    // Boxed so `Result<Response, Error>` stays small on the hot path.
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    /// The error's own words, printed by `Display` after the kind.
    message: Option<Cow<'static, str>>,
    source: Option<BoxError>,
    /// The URL the error is about: the request's origin, or its whole URL
    /// where it was at hand.
    url: Option<http::Uri>,
    status: Option<http::StatusCode>,
}

impl Error {
    /// An error of `kind` caused by `source`: for a tower layer, a mock
    /// service or a body of the caller's own that must fail as courier
    /// fails, so that the code above classifies it by
    /// [`kind`](Self::kind) and the predicates
    /// ([`is_timeout`](Self::is_timeout), …) as it does courier's own.
    /// `source` is any error, or a message (`&str`, `String`); `Display`
    /// prints the kind, and the source follows in the
    /// [`source`](std::error::Error::source) chain (see [`Error`]).
    ///
    /// Every [`ErrorKind`] can be made; its [`as_str`](ErrorKind::as_str)
    /// names are stable, and new kinds may come (it is `#[non_exhaustive]`).
    ///
    /// ```
    /// use courier::{Error, ErrorKind};
    ///
    /// let err = Error::new(ErrorKind::Timeout, "the quota layer gave up");
    /// assert!(err.is_timeout());
    /// assert_eq!(err.to_string(), "request timed out");
    /// assert_eq!(format!("{err:#}"), "request timed out: the quota layer gave up");
    /// ```
    pub fn new(kind: ErrorKind, source: impl Into<BoxError>) -> Error {
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
                message: Some(Cow::Borrowed(message)),
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
    pub(crate) fn or_url(mut self, url: impl FnOnce() -> http::Uri) -> Error {
        if self.inner.url.is_none() {
            self.inner.url = Some(url());
        }
        self
    }

    /// The URL the error is about: the request's, or its origin's
    /// (`scheme://host:port`) when the failure was the connection's. The
    /// whole URL, query and user info included; `Display` and `Debug` leave
    /// those two out (see [`Error`]).
    ///
    /// ```
    /// # async fn run() {
    /// let err = courier::Client::new()
    ///     .get("http://127.0.0.1:1/search?token=s3cret")
    ///     .send()
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(err.url().map(|u| u.host()), Some(Some("127.0.0.1")));
    /// # }
    /// ```
    pub fn url(&self) -> Option<&http::Uri> {
        self.inner.url.as_ref()
    }

    /// The URL the error is about, to change it (say, to strip a part
    /// `Display` would otherwise print, or to name the URL a caller knows
    /// better); see [`url`](Self::url).
    ///
    /// ```
    /// # fn check(mut err: courier::Error) {
    /// if let Some(url) = err.url_mut() {
    ///     *url = http::Uri::from_static("http://billing.internal/");
    /// }
    /// # }
    /// ```
    pub fn url_mut(&mut self) -> Option<&mut http::Uri> {
        self.inner.url.as_mut()
    }

    /// The error, about `url` instead of the URL it named, if any.
    ///
    /// ```
    /// # fn check(err: courier::Error) {
    /// let err = err.with_url(http::Uri::from_static("http://billing.internal/"));
    /// assert_eq!(err.url().unwrap(), "http://billing.internal/");
    /// # }
    /// ```
    pub fn with_url(mut self, url: http::Uri) -> Error {
        self.inner.url = Some(url);
        self
    }

    /// The error without its URL: for messages that must not name hosts
    /// or paths (an error returned to a third party, a log with a strict
    /// policy). [`url`](Self::url) is `None` afterwards.
    ///
    /// ```
    /// # async fn run() {
    /// let err = courier::Client::new()
    ///     .get("http://127.0.0.1:1/private/path")
    ///     .send()
    ///     .await
    ///     .unwrap_err()
    ///     .without_url();
    /// assert!(err.url().is_none());
    /// assert!(!err.to_string().contains("/private/path"));
    /// # }
    /// ```
    pub fn without_url(mut self) -> Error {
        self.inner.url = None;
        self
    }

    /// The status of an error from
    /// [`Response::error_for_status`](crate::Response::error_for_status)
    /// (an [`ErrorKind::Status`] error); `None` for every other error.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// let res = courier::Client::new()
    ///     .get("http://127.0.0.1:8080/status/404")
    ///     .send()
    ///     .await?;
    /// let err = res.error_for_status().unwrap_err();
    /// assert!(err.is_status());
    /// assert_eq!(err.status(), Some(http::StatusCode::NOT_FOUND));
    /// # Ok(()) }
    /// ```
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

    /// True when the error happened before or while establishing a
    /// connection: DNS, TCP connect, connect timeout, TLS.
    pub fn is_connect(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Dns | ErrorKind::Connect | ErrorKind::ConnectTimeout | ErrorKind::Tls
        )
    }

    /// True for an error from
    /// [`Response::error_for_status`](crate::Response::error_for_status): a
    /// 4xx or 5xx answer, whose code [`status`](Self::status) gives.
    pub fn is_status(&self) -> bool {
        self.inner.kind == ErrorKind::Status
    }

    /// True when reading the response body failed
    /// ([`ErrorKind::Body`]) or the body was over the caller's limit
    /// ([`ErrorKind::BodyTooLarge`]). A body that arrived whole but could
    /// not be decoded is [`is_decode`](Self::is_decode).
    pub fn is_body(&self) -> bool {
        matches!(self.inner.kind, ErrorKind::Body | ErrorKind::BodyTooLarge)
    }

    /// True when a body could not be decoded: invalid UTF-8 or JSON
    /// ([`ErrorKind::Decode`]), or corrupt compressed data
    /// ([`ErrorKind::Decompression`]), as reqwest counts it.
    pub fn is_decode(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Decode | ErrorKind::Decompression
        )
    }

    /// True when a redirect could not be followed, or there were too many.
    pub fn is_redirect(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Redirect | ErrorKind::TooManyRedirects
        )
    }

    /// True when sending the request failed before a response head was in
    /// hand: the connection (every [`is_connect`](Self::is_connect) error),
    /// waiting for one, writing the request or reading the head (closed,
    /// refused, a protocol error, headers too large), a request canceled or
    /// failed fast by an open circuit. A total [`ErrorKind::Timeout`] is
    /// not counted: it may strike during the body too; see
    /// [`is_timeout`](Self::is_timeout).
    pub fn is_request(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Dns
                | ErrorKind::Connect
                | ErrorKind::ConnectTimeout
                | ErrorKind::Tls
                | ErrorKind::PoolQueueTimeout
                | ErrorKind::ConnectionClosed
                | ErrorKind::Protocol
                | ErrorKind::Refused
                | ErrorKind::HeadersTooLarge
                | ErrorKind::Canceled
                | ErrorKind::CircuitOpen
        )
    }

    /// True when the request or the client could not be built: an invalid
    /// URL, header or body ([`ErrorKind::InvalidUrl`],
    /// [`ErrorKind::InvalidRequest`]) or configuration
    /// ([`ErrorKind::Config`]). Nothing was sent.
    ///
    /// ```
    /// # async fn run() {
    /// let err = courier::Client::new()
    ///     .get("http://127.0.0.1:1/")
    ///     .header("x-bad", "line\nbreak")
    ///     .send()
    ///     .await
    ///     .unwrap_err();
    /// assert!(err.is_builder());
    /// assert!(!err.is_request());
    /// # }
    /// ```
    pub fn is_builder(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::InvalidUrl | ErrorKind::InvalidRequest | ErrorKind::Config
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
        let mut source = self.source();
        while let Some(err) = source {
            if err.is::<ClosedAfterGoaway>() {
                return true;
            }
            if let Some(wrapped) = err.downcast_ref::<Error>() {
                return wrapped.is_closed_after_goaway();
            }
            source = err.source();
        }
        false
    }
}

/// The cause under an error whose server closed the connection after its own
/// GOAWAY with the request unfinished (HTTP/2; HTTP/3 has the same GOAWAY):
/// a protocol's error carries it as its source, so
/// [`Error::is_closed_after_goaway`] finds it without naming the protocol.
#[derive(Debug)]
pub(crate) struct ClosedAfterGoaway;

impl fmt::Display for ClosedAfterGoaway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the server closed the connection after its GOAWAY")
    }
}

impl std::error::Error for ClosedAfterGoaway {}

/// A service that cannot fail (`Infallible`, as a `tower::service_fn`
/// mock's): never called.
impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Error {
        match never {}
    }
}

/// An error out of a tower layer, made a courier [`Error`]: a courier
/// `Error` boxed on its way through the layer comes back as it was;
/// `tower::timeout`'s `Elapsed` and tokio's `Elapsed` are
/// [`ErrorKind::Timeout`] (so [`is_timeout`](Error::is_timeout) is true);
/// anything else is [`ErrorKind::Middleware`], with the error as its source.
/// This is what lets a `tower::timeout::Timeout` (whose error is a
/// [`BoxError`]) sit in a [`ServiceClient`](crate::ServiceClient)'s stack.
///
/// ```
/// use courier::{BoxError, Error, ErrorKind};
///
/// let elapsed: BoxError = Box::new(tower::timeout::error::Elapsed::new());
/// assert!(Error::from(elapsed).is_timeout());
///
/// let ours: BoxError = Box::new(Error::new(ErrorKind::Connect, "refused"));
/// assert_eq!(Error::from(ours).kind(), ErrorKind::Connect);
///
/// let theirs: BoxError = "quota exceeded".into();
/// assert_eq!(Error::from(theirs).kind(), ErrorKind::Middleware);
/// ```
impl From<BoxError> for Error {
    fn from(err: BoxError) -> Error {
        Error::from_boxed(err, ErrorKind::Middleware)
    }
}

impl Error {
    /// `err` as a courier error: itself if it is one, a timeout if it is
    /// tower's or tokio's `Elapsed`, else an error of kind `otherwise`.
    pub(crate) fn from_boxed(err: BoxError, otherwise: ErrorKind) -> Error {
        let err = match err.downcast::<Error>() {
            Ok(ours) => return *ours,
            Err(other) => other,
        };
        let kind = if err.is::<tower::timeout::error::Elapsed>()
            || err.is::<tokio::time::error::Elapsed>()
        {
            ErrorKind::Timeout
        } else {
            otherwise
        };
        Error::new(kind, err)
    }
}

/// An [`ErrorKind::Config`] error saying `message` (the factory's, a
/// cluster's middleware): what is wrong and how to fix it, its own words, so
/// `Display` prints it (a cause stringified into it is no source).
pub(crate) fn config_error(message: String) -> Error {
    Error {
        inner: Box::new(Inner {
            kind: ErrorKind::Config,
            message: Some(Cow::Owned(message)),
            source: None,
            url: None,
            status: None,
        }),
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("courier::Error");
        d.field("kind", &self.inner.kind);
        if let Some(m) = &self.inner.message {
            d.field("message", m);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        if let Some(url) = &self.inner.url {
            d.field("url", &format_args!("{}", Redacted(url)));
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
            ErrorKind::Middleware => "middleware error",
            ErrorKind::Upgrade => "upgrade failed",
        };
        f.write_str(what)?;
        if let Some(status) = self.inner.status {
            write!(f, " {status}")?;
        }
        // A message that only repeats the kind's words adds nothing.
        if let Some(m) = self.inner.message.as_deref().filter(|m| *m != what) {
            write!(f, ": {m}")?;
        }
        if let Some(url) = &self.inner.url {
            write!(f, " ({})", Redacted(url))?;
        }
        if f.alternate() {
            // Each cause in its plain form: a courier error among them
            // prints its own line, and the walk goes on to its sources.
            let mut source = self.source();
            while let Some(cause) = source {
                write!(f, ": {cause}")?;
                source = cause.source();
            }
        }
        Ok(())
    }
}

/// A URL as errors print it: without user info and query, which may carry
/// credentials.
struct Redacted<'a>(&'a http::Uri);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.0;
        let userinfo = url.authority().is_some_and(|a| a.as_str().contains('@'));
        if !userinfo && url.query().is_none() {
            return write!(f, "{url}");
        }
        if let Some(scheme) = url.scheme_str() {
            write!(f, "{scheme}://")?;
        }
        if let Some(host) = url.host() {
            f.write_str(host)?;
        }
        if let Some(port) = url.port() {
            write!(f, ":{port}")?;
        }
        f.write_str(url.path())
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
    fn source_is_chained_not_displayed() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = Error::new(ErrorKind::Connect, io);
        assert!(e.source().unwrap().is::<std::io::Error>());
        assert_eq!(e.to_string(), "connection failed");
        assert_eq!(format!("{e:#}"), "connection failed: refused");
        assert!(e.is_connect());
    }

    /// What anyhow's and eyre's reports do: the error's `Display`, then each
    /// source's. Each part of the chain must appear once.
    fn report(e: &Error) -> String {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }

    #[test]
    fn a_reporter_prints_each_cause_once() {
        let url: http::Uri = "http://h.example/x".parse().unwrap();
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let inner = Error::new(ErrorKind::Connect, io).or_url(|| url.clone());
        let outer = Error::new(ErrorKind::Body, inner);
        let want = "error reading response body: connection failed (http://h.example/x): refused";
        assert_eq!(report(&outer), want);
        assert_eq!(report(&outer).matches("refused").count(), 1);
        // The alternate form prints the same chain without a reporter.
        assert_eq!(format!("{outer:#}"), want);
        assert_eq!(outer.to_string(), "error reading response body");
        // A message is the error's own words: printed in both forms.
        let e = Error::msg(ErrorKind::Protocol, "bad status line");
        assert_eq!(e.to_string(), "HTTP protocol error: bad status line");
        assert_eq!(format!("{e:#}"), "HTTP protocol error: bad status line");
        // One that repeats the kind's words is said once.
        let e = Error::msg(
            ErrorKind::ConnectionClosed,
            "connection closed before the response",
        );
        assert_eq!(e.to_string(), "connection closed before the response");
    }

    #[test]
    fn a_config_error_says_what_is_wrong_in_its_display() {
        let e = config_error("clients.a.base_url: no scheme".to_owned());
        assert_eq!(
            e.to_string(),
            "invalid configuration: clients.a.base_url: no scheme"
        );
        assert!(e.source().is_none());
        assert!(e.is_builder());
    }

    #[test]
    fn a_status_error_names_status_and_url() {
        let url: http::Uri = "http://h.example/x?y=1".parse().unwrap();
        let e = Error::from_status(http::StatusCode::SERVICE_UNAVAILABLE, &url);
        assert_eq!(e.kind(), ErrorKind::Status);
        assert!(e.is_status());
        assert_eq!(e.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
        assert_eq!(
            e.to_string(),
            "HTTP status 503 Service Unavailable (http://h.example/x)"
        );
        assert_eq!(e.url(), Some(&url));
        let e = Error::msg(ErrorKind::Connect, "refused").or_url(|| url.clone());
        assert_eq!(e.url(), Some(&url));
        assert!(e.to_string().ends_with("(http://h.example/x)"), "{e}");
        // `or_url` keeps a URL already there.
        let e = e.or_url(|| "http://other/".parse().unwrap());
        assert_eq!(e.url(), Some(&url));
    }

    #[test]
    fn printed_urls_leave_out_user_info_and_query() {
        let cases = [
            (
                "http://user:s3cret@h.example:8080/p/q?key=s3cret",
                "http://h.example:8080/p/q",
            ),
            ("https://s3cret@h.example/?s3cret", "https://h.example/"),
            ("http://[::1]:1/x?token=s3cret", "http://[::1]:1/x"),
            ("http://h.example:81/a", "http://h.example:81/a"),
            ("http://h.example", "http://h.example/"),
            ("/relative?s3cret=1", "/relative"),
        ];
        for (url, shown) in cases {
            let url: http::Uri = url.parse().unwrap();
            let io = std::io::Error::other("s3cret-free cause");
            let e = Error::new(ErrorKind::Connect, io).or_url(|| url.clone());
            for text in [e.to_string(), format!("{e:#}"), format!("{e:?}")] {
                assert!(!text.contains("s3cret@"), "{text}");
                assert!(!text.contains("=s3cret"), "{text}");
                assert!(!text.contains("?s3cret"), "{text}");
                assert!(text.contains(shown), "{text} lacks {shown}");
            }
            assert_eq!(e.url(), Some(&url), "url() keeps it whole");
        }
    }

    #[test]
    fn the_url_can_be_replaced_changed_and_dropped() {
        let e = Error::msg(ErrorKind::Connect, "refused");
        assert!(e.url().is_none());
        let mut e = e.with_url("http://a.example/x".parse().unwrap());
        assert_eq!(e.url().unwrap(), "http://a.example/x");
        let e2 = e.with_url("http://b.example/y".parse().unwrap());
        assert_eq!(e2.url().unwrap(), "http://b.example/y", "with_url replaces");
        e = e2;
        *e.url_mut().unwrap() = "http://c.example/z".parse().unwrap();
        assert!(e.to_string().ends_with("(http://c.example/z)"), "{e}");
        let e = e.without_url();
        assert!(e.url().is_none());
        assert_eq!(e.to_string(), "connection failed: refused");
        assert!(!format!("{e:?}").contains("c.example"));
        let mut e = e;
        assert!(e.url_mut().is_none());
    }

    #[test]
    fn predicates_follow_the_kind() {
        use ErrorKind::*;
        // (kind, timeout, connect, status, body, decode, redirect, request, builder)
        #[rustfmt::skip]
        let table = [
            (InvalidUrl,       [0, 0, 0, 0, 0, 0, 0, 1]),
            (InvalidRequest,   [0, 0, 0, 0, 0, 0, 0, 1]),
            (Dns,              [0, 1, 0, 0, 0, 0, 1, 0]),
            (Connect,          [0, 1, 0, 0, 0, 0, 1, 0]),
            (ConnectTimeout,   [1, 1, 0, 0, 0, 0, 1, 0]),
            (Tls,              [0, 1, 0, 0, 0, 0, 1, 0]),
            (Timeout,          [1, 0, 0, 0, 0, 0, 0, 0]),
            (PoolQueueTimeout, [1, 0, 0, 0, 0, 0, 1, 0]),
            (ConnectionClosed, [0, 0, 0, 0, 0, 0, 1, 0]),
            (Protocol,         [0, 0, 0, 0, 0, 0, 1, 0]),
            (Refused,          [0, 0, 0, 0, 0, 0, 1, 0]),
            (HeadersTooLarge,  [0, 0, 0, 0, 0, 0, 1, 0]),
            (Body,             [0, 0, 0, 1, 0, 0, 0, 0]),
            (BodyTooLarge,     [0, 0, 0, 1, 0, 0, 0, 0]),
            (Decode,           [0, 0, 0, 0, 1, 0, 0, 0]),
            (Canceled,         [0, 0, 0, 0, 0, 0, 1, 0]),
            (TooManyRedirects, [0, 0, 0, 0, 0, 1, 0, 0]),
            (Redirect,         [0, 0, 0, 0, 0, 1, 0, 0]),
            (CircuitOpen,      [0, 0, 0, 0, 0, 0, 1, 0]),
            (Decompression,    [0, 0, 0, 0, 1, 0, 0, 0]),
            (Config,           [0, 0, 0, 0, 0, 0, 0, 1]),
            (Status,           [0, 0, 1, 0, 0, 0, 0, 0]),
            (Middleware,       [0, 0, 0, 0, 0, 0, 0, 0]),
            (Upgrade,          [0, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for (kind, want) in table {
            // A new kind fails to compile here until it is placed in the table.
            match kind {
                InvalidUrl | InvalidRequest | Dns | Connect | ConnectTimeout | Tls | Timeout
                | PoolQueueTimeout | ConnectionClosed | Protocol | Refused | HeadersTooLarge
                | Body | BodyTooLarge | Decode | Canceled | TooManyRedirects | Redirect
                | CircuitOpen | Decompression | Config | Status | Middleware | Upgrade => {}
            }
            let e = Error::msg(kind, "x");
            let got = [
                e.is_timeout(),
                e.is_connect(),
                e.is_status(),
                e.is_body(),
                e.is_decode(),
                e.is_redirect(),
                e.is_request(),
                e.is_builder(),
            ];
            assert_eq!(got, want.map(|b| b == 1), "{kind}");
        }
        assert_eq!(table.len(), 24);
    }

    #[test]
    fn errors_out_of_tower_layers_keep_or_find_their_kind() {
        // Ours, boxed by a layer: the same error back, URL and all.
        let url: http::Uri = "http://h.example/x".parse().unwrap();
        let ours = Error::msg(ErrorKind::Refused, "x").or_url(|| url.clone());
        let back = Error::from(BoxError::from(ours));
        assert_eq!(back.kind(), ErrorKind::Refused);
        assert_eq!(back.url(), Some(&url));
        assert!(back.source().is_none(), "not wrapped in itself");
        // tower's and tokio's timeouts are timeouts.
        let tower: BoxError = Box::new(tower::timeout::error::Elapsed::new());
        let e = Error::from(tower);
        assert!(e.is_timeout());
        assert!(e.source().unwrap().is::<tower::timeout::error::Elapsed>());
        let tokio_elapsed = futures_elapsed();
        assert_eq!(Error::from(tokio_elapsed).kind(), ErrorKind::Timeout);
        // Anything else is the layer's own, kept as the source.
        let io: BoxError = Box::new(std::io::Error::other("quota"));
        let e = Error::from(io);
        assert_eq!(e.kind(), ErrorKind::Middleware);
        assert_eq!(format!("{e:#}"), "middleware error: quota");
        assert!(!e.is_timeout() && !e.is_request() && !e.is_builder());
    }

    /// A real `tokio::time::error::Elapsed` (it has no public constructor).
    fn futures_elapsed() -> BoxError {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let never = std::future::pending::<()>();
        let err = rt
            .block_on(async {
                tokio::time::timeout(std::time::Duration::from_millis(1), never).await
            })
            .unwrap_err();
        Box::new(err)
    }

    #[test]
    fn error_is_small() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }
}
