//! What a protocol tells whoever sends a request on it: the response head
//! (and for HTTP/2 its body), or why not and whether the request may be sent
//! again. Both protocols hand back the same [`SendError`], so the retry
//! decision (`attempt.rs`) reads one representation, made where the facts
//! are known: in the protocol, from how far the request got.

use std::future::Future;
use std::pin::Pin;

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

/// A request a failed send hands back, and how far it got.
pub(crate) enum HandedBack {
    /// The server cannot have processed it: nothing of it reached the
    /// connection, or (HTTP/2) the server refused the stream unprocessed
    /// (GOAWAY past it, REFUSED_STREAM). Safe to send again whatever the method.
    Unsent(Request<Body>),
    /// Written with a buffered body, then the connection closed before a
    /// byte of response came back (HTTP/1.1: a stale connection, most
    /// likely; HTTP/2: a server that closed without answering the streams
    /// its GOAWAY claimed). Safe to send again if the method is idempotent.
    Unanswered(Request<Body>),
    /// HTTP/2: written, then the server sent GOAWAY and closed the
    /// connection before answering it (a request limit reached under load:
    /// the streams it claimed in flight go with the connection). Safe to
    /// send again if the method is idempotent, like a refused stream.
    Abandoned(Request<Body>),
}

/// A response head, and for HTTP/2 its body (an HTTP/1.1 body is read
/// through the lease, which holds the connection).
pub(crate) struct Answer {
    pub(crate) head: http::response::Parts,
    pub(crate) body: Option<crate::proto::h2::stream::RecvBody>,
    /// The request's URI, moved out of the request once it is answered.
    pub(crate) uri: http::Uri,
}

/// The result of sending: the response head, or why not.
pub(crate) type SendResult = Result<Answer, SendError>;
