//! Pooled connections: an exclusive one (one request at a time, owned by
//! its lease) or a shared one whose slots are counted by the pool, with
//! what the pool keeps beside each (its id, lifetime, remote address).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::time::Instant;

use super::OpenExclusive;
use crate::metrics::Label;
use crate::pool::common::protocol::{Protocol, Shared as _};

/// An exclusive connection: one request at a time, owned by its lease.
///
/// One pointer: a lease, every idle-stack entry and an HTTP/1.1 request's
/// future move and hold only that. The request futures of both kinds of
/// connection are one type, as large as the larger, so the 120 B of what the
/// pool keeps beside an exclusive connection, held inline, were paid by every
/// HTTP/2 request in flight too (a long poll, twice: in the lease and in the
/// HTTP/1.1 branch of the send future).
pub(crate) struct ExclusiveConn<P: Protocol>(pub(crate) Box<ExclusiveParts<P>>);

impl<P: Protocol> std::ops::Deref for ExclusiveConn<P> {
    type Target = ExclusiveParts<P>;

    fn deref(&self) -> &ExclusiveParts<P> {
        &self.0
    }
}

impl<P: Protocol> std::ops::DerefMut for ExclusiveConn<P> {
    fn deref_mut(&mut self) -> &mut ExclusiveParts<P> {
        &mut self.0
    }
}

/// An exclusive connection and what the pool keeps beside it.
pub(crate) struct ExclusiveParts<P: Protocol> {
    pub(crate) id: u64,
    pub(crate) conn: P::Exclusive,
    /// The protocol it speaks, as the metrics name it.
    pub(crate) label: Label,
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
    pub(crate) _open: OpenExclusive<P>,
}

/// What an exclusive send future owns while the request is on the wire.
impl<P: Protocol> AsMut<P::Exclusive> for ExclusiveConn<P> {
    fn as_mut(&mut self) -> &mut P::Exclusive {
        &mut self.0.conn
    }
}

impl<P: Protocol> ExclusiveParts<P> {
    pub(crate) fn is_expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// [`is_expired`](Self::is_expired) now; the clock is read only for a
    /// connection with a lifetime (a request's return path reads it enough).
    pub(crate) fn is_expired_now(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= Instant::now())
    }

    /// The server may have closed it while it waited: see [`ExclusiveConn::fresh`].
    pub(crate) fn may_be_stale(&self) -> bool {
        !self.fresh
    }
}

/// A shared connection, held by every request that holds one of its slots.
pub(crate) struct SharedConn<P: Protocol> {
    pub(crate) id: u64,
    /// The server's address (none over an in-memory stream).
    pub(crate) remote: Option<SocketAddr>,
    pub(crate) conn: P::Shared,
    /// The protocol it speaks, as the metrics name it.
    pub(crate) label: Label,
    pub(crate) expires_at: Option<Instant>,
}

impl<P: Protocol> SharedConn<P> {
    /// The slots the peer allows now (HTTP/2: its
    /// SETTINGS_MAX_CONCURRENT_STREAMS, as of the last frame read).
    pub(crate) fn max_streams(&self) -> usize {
        self.conn.slots()
    }

    /// May take new requests: open, not expired, not going away.
    pub(crate) fn accepts_streams(&self, now: Instant) -> bool {
        self.conn.accepts_requests() && self.expires_at.is_none_or(|at| at > now)
    }
}

/// What a checkout hands out.
pub(crate) enum Conn<P: Protocol> {
    Exclusive(ExclusiveConn<P>),
    /// A reserved slot on a shared connection.
    Shared(Arc<SharedConn<P>>),
}
