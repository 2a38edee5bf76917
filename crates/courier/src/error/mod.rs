//! One error type for everything a request can run into.
//!
//! Every failure carries an [`ErrorKind`] so callers (and `courier bench`) can
//! classify it without string matching, and the underlying cause is kept as the
//! [`std::error::Error::source`] chain.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

mod display;
mod kind;

pub use kind::ErrorKind;

/// A boxed error, the currency of sources and streaming bodies.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

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
    /// How many times the request went out, when the client resent it (a
    /// stale connection's, a refused or a lost one) and it failed still:
    /// `Display` says so. 0 when it was not counted.
    sends: u8,
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
                sends: 0,
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
                sends: 0,
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
                sends: 0,
            }),
        }
    }

    /// The request this error ended went out `sends` times.
    pub(crate) fn sent(mut self, sends: u8) -> Error {
        self.inner.sends = sends;
        self
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
            sends: 0,
        }),
    }
}

#[cfg(test)]
mod tests;
