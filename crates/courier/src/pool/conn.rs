//! Pooled connections: an exclusive HTTP/1.1 connection, or a shared HTTP/2
//! connection whose streams are counted by the pool.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use http::Request;

use super::origin::OpenHttp1;
use super::signals::Signals;
use crate::body::Body;
use crate::error::Error;
use crate::h1;

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
    pub(crate) body: Option<crate::http2::stream::RecvBody>,
    /// The request's URI, moved out of the request once it is answered.
    pub(crate) uri: http::Uri,
}

/// The result of sending: the response head, or why not.
pub(crate) type SendResult = Result<Answer, SendError>;

/// An HTTP/1.1 connection: one request at a time, owned by its lease.
pub(crate) struct Http1Conn {
    pub(crate) id: u64,
    // Boxed: a lease and every idle-stack entry move only a pointer.
    pub(crate) conn: Box<h1::Connection>,
    /// When this connection must stop taking requests (lifetime + jitter).
    pub(crate) expires_at: Option<Instant>,
    /// Handed straight from its dial to a request, and not used yet. Once it
    /// has carried a request or waited in the idle stack, the server may have
    /// closed it unseen (a keep-alive timeout, or a timer for connections
    /// that sent nothing: h2o, hypercorn, Apache and nginx all have one), so
    /// it is probed at checkout and a request it fails unanswered is retried.
    pub(crate) fresh: bool,
    /// The server's address (none over an in-memory stream).
    pub(crate) remote: Option<SocketAddr>,
    /// Counts the connection as open until it is dropped, which closes it.
    pub(crate) _open: OpenHttp1,
}

/// What an HTTP/1.1 send future owns while the request is on the wire.
impl AsMut<h1::Connection> for Http1Conn {
    fn as_mut(&mut self) -> &mut h1::Connection {
        &mut self.conn
    }
}

impl Http1Conn {
    pub(crate) fn is_expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// The server may have closed it while it waited: see [`Http1Conn::fresh`].
    pub(crate) fn may_be_stale(&self) -> bool {
        !self.fresh
    }
}

/// An HTTP/2 connection, shared by every request that holds one of its streams.
pub(crate) struct Http2Conn {
    pub(crate) id: u64,
    /// The server's address (none over an in-memory stream).
    pub(crate) remote: Option<SocketAddr>,
    pub(crate) handle: crate::http2::driver::Handle,
    pub(crate) expires_at: Option<Instant>,
    pub(crate) signals: Arc<Signals>,
}

impl Http2Conn {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, as of the last frame read.
    pub(crate) fn max_streams(&self) -> usize {
        self.signals.max_streams()
    }

    /// May take new streams: open, not expired, no GOAWAY received.
    pub(crate) fn accepts_streams(&self, now: Instant) -> bool {
        !self.signals.is_closed()
            && !self.signals.goaway_received()
            && self.expires_at.is_none_or(|at| at > now)
    }
}

/// What a checkout hands out.
pub(crate) enum Conn {
    Http1(Http1Conn),
    /// A reserved stream on a shared connection.
    Http2(Arc<Http2Conn>),
}
