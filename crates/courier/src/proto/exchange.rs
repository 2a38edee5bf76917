//! What a protocol tells whoever sends a request on it: the response head
//! (and for HTTP/2 its body), or why not and whether the request may be sent
//! again. Both protocols hand back the same [`SendError`], so the retry
//! decision (`attempt.rs`) reads one representation, made where the facts
//! are known: in the protocol, from how far the request got.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::Request;

use crate::body::Body;
use crate::error::Error;

/// The future that runs a connection's I/O until it closes; spawned once per connection.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Why a send failed, and whether the request can be tried again.
pub(crate) struct SendError {
    pub(crate) error: Error,
    /// The request, when it may be sent again.
    pub(crate) handed_back: Option<HandedBack>,
}

/// A request a failed send hands back, and how far it got: the protocol
/// says what happened, the retry decision (`client/attempt.rs`) what to do
/// about it, without asking which protocol it was.
pub(crate) enum HandedBack {
    /// Nothing of it reached the connection. Safe to send again whatever
    /// the method; worth it when the connection may have been stale.
    Unsent(Request<Body>),
    /// The server refused it unprocessed (HTTP/2: GOAWAY past its stream,
    /// REFUSED_STREAM). Safe to send again whatever the method, on another
    /// connection, within a bound on attempts.
    Refused(Request<Body>),
    /// Written with a body it still has whole (buffered, or streamed and
    /// all that went out kept: `body::replay`), then the connection closed
    /// before a byte of response came back on a connection that served one
    /// request at a time (HTTP/1.1: a stale connection, most likely). Safe
    /// to send again if the method is idempotent.
    Unanswered(Request<Body>),
    /// Written on a connection shared by other requests (HTTP/2), which was
    /// lost before the response head. Safe to send again if the method is
    /// idempotent.
    Lost {
        request: Request<Body>,
        /// The server had sent GOAWAY: it closed on reaching a request
        /// limit under load, and the streams it claimed in flight went with
        /// the connection (resent like a refused stream). Otherwise the
        /// connection broke, and the request is resent once.
        after_goaway: bool,
    },
}

/// A response head, and the protocol's handle on its body: `B` is the
/// protocol's own (HTTP/2: the stream's receive half; HTTP/1.1: nothing,
/// the body is read through the lease, which holds the connection).
pub(crate) struct Answer<B = ()> {
    pub(crate) head: http::response::Parts,
    pub(crate) body: B,
    /// The request's URI, moved out of the request once it is answered.
    pub(crate) uri: http::Uri,
    /// The rest of the request, handed back (moved, not copied) for a
    /// redirect to follow: the protocol held it until the answer anyway.
    pub(crate) sent: Sent,
    /// The Content-Length as the response reads it (its first value, if
    /// that is a number), when the protocol read it already; `None`: read
    /// it from `head` (the response's constructor does).
    pub(crate) length: Option<Option<u64>>,
    /// The head's headers when they are the connection's last ones, shared
    /// rather than copied (HTTP/1.1: see `proto/h1/names.rs`; HTTP/2:
    /// `proto/h2/head.rs`); `head.headers`
    /// is empty then. `None`: `head.headers` are the headers.
    pub(crate) shared: Option<Arc<http::HeaderMap>>,
}

/// What an answered request handed back besides its URI: what following a
/// redirect needs (`client/follow.rs`). `body` is the request's body when
/// it was buffered, `None` when it was a stream (read once, gone).
pub(crate) struct Sent {
    pub(crate) method: http::Method,
    pub(crate) version: http::Version,
    pub(crate) headers: http::HeaderMap,
    pub(crate) extensions: http::Extensions,
    pub(crate) body: Option<Body>,
}

impl Sent {
    /// The parts of an answered request; `streamed`: its body was a stream.
    pub(crate) fn answered(request: Request<Body>, streamed: bool) -> (http::Uri, Sent) {
        let (parts, body) = request.into_parts();
        Sent::from_parts(parts, body, streamed)
    }

    /// As [`Sent::answered`], from a request already in parts.
    pub(crate) fn from_parts(
        parts: http::request::Parts,
        body: Body,
        streamed: bool,
    ) -> (http::Uri, Sent) {
        let sent = Sent {
            method: parts.method,
            version: parts.version,
            headers: parts.headers,
            extensions: parts.extensions,
            body: (!streamed).then_some(body),
        };
        (parts.uri, sent)
    }
}

impl<B> Answer<B> {
    /// The same answer with its body handle made into another type (the
    /// client's binding makes each protocol's its own enum).
    pub(crate) fn map_body<C>(self, f: impl FnOnce(B) -> C) -> Answer<C> {
        Answer {
            head: self.head,
            body: f(self.body),
            uri: self.uri,
            sent: self.sent,
            length: self.length,
            shared: self.shared,
        }
    }

    /// The head's headers, wherever they are kept.
    #[cfg(feature = "http3")]
    pub(crate) fn headers(&self) -> &http::HeaderMap {
        self.shared.as_deref().unwrap_or(&self.head.headers)
    }
}

/// The result of sending: the response head, or why not.
pub(crate) type SendResult<B = ()> = Result<Answer<B>, SendError>;

/// Marks a response head after which the connection (HTTP/1.1) or the
/// stream (HTTP/2) switched protocols: a `101` to an `Upgrade` request, a
/// 2xx to a CONNECT or an extended CONNECT. The response's body is then no
/// HTTP body, and the client hands the connection or stream to
/// `Response::upgrade` instead of the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Switched;

/// The protocol of an HTTP/2 extended CONNECT (RFC 8441): put it in a
/// CONNECT request's extensions to send it as the `:protocol`
/// pseudo-header (`websocket` for a WebSocket over HTTP/2). The server must
/// have enabled extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL), or the
/// request fails with [`ErrorKind::Upgrade`](crate::ErrorKind::Upgrade);
/// over HTTP/1.1, or on another method, it is an invalid request.
///
/// ```
/// let mut req = courier::http::Request::connect("https://127.0.0.1:8443/chat")
///     .body(courier::Body::empty())
///     .unwrap();
/// req.extensions_mut().insert(courier::Protocol::from_static("websocket"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol(&'static str);

impl Protocol {
    /// A protocol name: a token (RFC 9110 §5.6.2).
    ///
    /// # Panics
    /// If `name` is empty or not a token.
    pub fn from_static(name: &'static str) -> Protocol {
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        assert!(
            !name.is_empty() && name.bytes().all(tchar),
            "an extended CONNECT protocol is a token: {name:?}"
        );
        Protocol(name)
    }

    /// The protocol's name.
    pub fn as_str(&self) -> &'static str {
        self.0
    }
}
