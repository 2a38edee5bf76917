//! Pooled connections: an exclusive HTTP/1.1 connection, or a shared HTTP/2
//! connection whose streams are counted by the pool.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use super::origin::OpenHttp1;
use crate::proto::h1;
use crate::proto::h2::signals::Signals;

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
    pub(crate) handle: crate::proto::h2::driver::Handle,
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
