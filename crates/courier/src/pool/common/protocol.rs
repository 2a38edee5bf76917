//! What the pool asks of a connection, and nothing more: the pool is
//! generic over [`Protocol`], so it never builds a request head, picks a
//! body form or reads a protocol's state. The binding of courier's own
//! HTTP/1.1 and HTTP/2 to these traits lives in `client/transport/` (the
//! pool imports no protocol; the client imports both).
//!
//! A connection is one of two kinds, and the pool treats them differently
//! because they are different, not because of which protocol they speak:
//! - [`Exclusive`]: one request at a time (HTTP/1.1). Its lease owns it;
//!   between requests it waits on the origin's LIFO idle stack, and is
//!   probed when taken from there.
//! - [`Shared`]: many requests at once (HTTP/2, HTTP/3 one day), up to the
//!   number of slots its peer allows. The pool counts the slots in use;
//!   each lease holds one.
//!
//! A shared connection takes requests as soon as it is made, before its
//! peer has said how many (HTTP/2: the client may send with its preface, as
//! Go's and Chromium's do, and a round trip is saved): up to what the
//! protocol assumes, or fewer if the origin's last connection declared
//! fewer. What a shared connection learns that the pool must act on at once
//! (its slots declared, more or fewer slots, GOAWAY, a request limit)
//! reaches the pool through a
//! [`Reporter`] the pool hands over when the connection is made: an
//! interface of the pool, so no protocol imports a pool type.
//!
//! The protocol owns everything about reaching an origin: where its
//! connections go (DNS, proxies, sockets, UDP or TCP), what is negotiated
//! on them (TLS, ALPN), and what its requests carry (host, default
//! headers), kept in its [`Protocol::Origin`]. The pool owns when to dial,
//! the connect deadline, the count of attempts and what to do with what an
//! attempt brings; it counts each connection under the metrics
//! [`Label`] the connection reports.
//!
//! Sending is statically dispatched (an exclusive connection's send future
//! is a named-by-inference `impl Future`, a shared one's an associated
//! type): a request costs no allocation here. Making a connection may box,
//! it is rare.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use http::uri::{Authority, Scheme};
use http::Request;
use tokio::time::Instant;

use crate::body::Body;
use crate::error::Error;
pub(crate) use crate::metrics::Label;

pub(crate) use super::budget::Served;

/// The protocols a pool's connections speak, and how an origin's
/// connections are made.
pub(crate) trait Protocol: Sized + Send + Sync + 'static {
    /// A connection that serves one request at a time.
    type Exclusive: Exclusive<Self>;
    /// A connection that serves many requests at once, one per slot.
    type Shared: Shared<Self>;
    /// What a successful send ends in (the response head); passed through
    /// to the caller with the lease.
    type Answer: Send;
    /// What a failed send ends in (the error, and whether the request may
    /// be sent again); passed through to the caller.
    type Failure: Send;
    /// What the protocols share across every origin of one pool (their
    /// settings, the dialer), given to the pool when it is made.
    type Client: Send + Sync + 'static;
    /// What the protocols keep for one origin, made once with it: how its
    /// connections are reached, what its requests carry.
    type Origin: Send + Sync + 'static;

    /// The per-origin part for `scheme://authority`, or why that origin
    /// cannot be reached.
    fn origin(
        client: &Arc<Self::Client>,
        scheme: &Scheme,
        authority: &Authority,
    ) -> Result<Self::Origin, Error>;

    /// The kind of connection this origin's will be, if that is known
    /// before any is made (`None`: negotiation will tell, so the pool dials
    /// one and waits for it rather than one per waiting request).
    fn expect(origin: &Self::Origin) -> Option<Kind>;

    /// Dials, negotiates and makes one connection to `origin`. A shared
    /// connection's changes go to `reporter` from now on, and its driver
    /// must be spawned for anything to happen; it takes requests at once,
    /// before its peer has said how many ([`Shared::declared`]). If the
    /// peer has not shown it speaks the protocol by `deadline` (the pool's
    /// connect timeout), the connection fails, and its requests with it.
    /// The pool also drops this future at `deadline`.
    fn connect(
        origin: &Self::Origin,
        reporter: Reporter,
        deadline: Instant,
    ) -> impl Future<Output = Result<Connected<Self>, Error>> + Send;
}

/// A connection [`Protocol::connect`] made, and where it goes.
pub(crate) struct Connected<P: Protocol> {
    pub(crate) conn: Handshake<P>,
    /// The peer's address (none over an in-memory stream).
    pub(crate) remote: Option<SocketAddr>,
}

/// Exclusive or shared: see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Exclusive,
    Shared,
}

/// A connection just made, before the pool counts it.
pub(crate) enum Handshake<P: Protocol> {
    Exclusive(P::Exclusive),
    Shared {
        conn: P::Shared,
        /// Runs the connection's I/O until it closes; the pool spawns it
        /// and counts the connection closed when it ends.
        driver: Pin<Box<dyn Future<Output = ()> + Send>>,
    },
}

/// The result of a send, as the protocol gives it.
pub(crate) type Sent<P> = Result<<P as Protocol>::Answer, <P as Protocol>::Failure>;

/// A connection that serves one request at a time, written and read by
/// whoever holds it.
pub(crate) trait Exclusive<P: Protocol>: Send + Sync + 'static {
    /// The protocol it speaks, as the metrics name it.
    fn label(&self) -> Label;

    /// Still open after waiting idle: one non-blocking look that must find
    /// nothing (the server closing it, or writing unasked, fails it).
    fn is_open(&mut self) -> bool;

    /// The last exchange ended cleanly and the connection may carry another.
    fn is_reusable(&self) -> bool;

    /// What [`prepare`](Exclusive::prepare) leaves for [`send`](Exclusive::send).
    type Prepared: Send;

    /// The part of sending `req` that needs the origin (HTTP/1.1: encoding
    /// the request head with its `Host` and the default headers).
    fn prepare(&mut self, req: &Request<Body>, origin: &P::Origin) -> Self::Prepared;

    /// Sends the request `prepare` made ready and waits for the answer.
    /// The future owns `conn` (the pool's entry that holds this connection)
    /// and hands it back with the result, so it borrows nothing and sits in
    /// the lease's future. (Split from `prepare` because a future a trait
    /// returns holds every borrow its function was given.)
    fn send<C: AsMut<Self> + Send>(
        conn: C,
        req: Request<Body>,
        prepared: Self::Prepared,
    ) -> impl Future<Output = (C, Sent<P>)> + Send;
}

/// A connection that serves many requests at once.
pub(crate) trait Shared<P: Protocol>: Send + Sync + 'static {
    /// One request on one of its slots, until the answer.
    type Exchange: Send;

    /// The protocol it speaks, as the metrics name it.
    fn label(&self) -> Label;

    /// The slots its peer allows now (0: none for now, wait); until the
    /// peer has [`declared`](Shared::declared) them, what the protocol
    /// assumes it allows.
    fn slots(&self) -> usize;

    /// The slots its peer said it allows when it first said (HTTP/2: the
    /// limit of its first SETTINGS frame, not a lowering under load later),
    /// to plan connections by; `None` until then. Reported through the
    /// [`Reporter`] when it comes.
    fn declared(&self) -> Option<usize>;

    /// May take new requests as far as the protocol goes: open, and not
    /// going away. (Its lifetime is the pool's business.)
    fn accepts_requests(&self) -> bool;

    /// The connection has ended.
    fn is_closed(&self) -> bool;

    /// How many requests the peer serves on one connection, once, when the
    /// connection going away showed it.
    fn take_served(&self) -> Option<Served>;

    /// Starts sending `req` on one of its slots (reserved by the pool);
    /// the request ends at `deadline`, which the connection may keep
    /// ([`Shared::deadline_kept`]).
    fn send(&self, req: Request<Body>, deadline: Option<tokio::time::Instant>) -> Self::Exchange;

    /// The connection keeps the deadline `send` was given, and wakes the
    /// request when it passes: the request needs no timer of its own while
    /// this is so. No protocol must.
    fn deadline_kept(_send: &Self::Exchange) -> bool {
        false
    }

    /// Drives `send` to its answer.
    fn poll_send(
        send: &mut Self::Exchange,
        cx: &mut Context<'_>,
        origin: &P::Origin,
    ) -> Poll<Sent<P>>;
}

/// How a shared connection tells its pool that something the pool acts on
/// changed (its slots, GOAWAY, what it served). Call it with no lock of the
/// connection held: the pool takes its own lock, and holds it while it
/// drops connections, which takes theirs.
#[derive(Clone)]
pub(crate) struct Reporter {
    pool: Weak<dyn Changes>,
    id: u64,
}

impl Reporter {
    pub(in crate::pool) fn new(pool: Weak<dyn Changes>, id: u64) -> Reporter {
        Reporter { pool, id }
    }

    /// Something changed; the pool reads what from the connection.
    pub(crate) fn report(&self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.changed(self.id);
        }
    }
}

/// The pool's side of a [`Reporter`].
pub(in crate::pool) trait Changes: Send + Sync {
    /// Connection `id` reported a change.
    fn changed(self: Arc<Self>, id: u64);
}
