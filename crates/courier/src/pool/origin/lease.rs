//! An exclusive connection, or one reserved slot of a shared connection, on
//! loan to one request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Request;
use pin_project_lite::pin_project;

use super::conn::{Conn, ExclusiveConn};
use super::OriginPool;
use crate::body::Body;
use crate::pool::common::protocol::{Exclusive as _, Protocol, Sent, Shared as _};

/// Exclusive use of a connection, or one reserved slot of a shared one, for
/// one request and its response body.
///
/// [`Lease::release`] hands it back (to a waiter or the idle stack). Dropping
/// an exclusive lease without releasing it closes the connection: that is
/// the safe default for any path that does not know the response was read to
/// its end (errors, timeouts, cancelled futures). Dropping a shared lease
/// frees the pool's count of slots on the connection; the request itself is
/// cancelled (HTTP/2: its stream reset, if still open) by the protocol when
/// its handle, in the send future or the body, is dropped.
///
/// An exclusive connection's response body is read through the lease, which
/// holds the connection ([`Lease::exclusive_mut`]).
pub(crate) struct Lease<P: Protocol> {
    conn: Option<Conn<P>>,
    origin: Arc<OriginPool<P>>,
}

impl<P: Protocol> Lease<P> {
    pub(crate) fn new(conn: Conn<P>, origin: Arc<OriginPool<P>>) -> Lease<P> {
        Lease {
            conn: Some(conn),
            origin,
        }
    }

    pub(crate) fn origin(&self) -> &Arc<OriginPool<P>> {
        &self.origin
    }

    /// The address of the server at the other end.
    pub(crate) fn remote_addr(&self) -> Option<std::net::SocketAddr> {
        match self.conn.as_ref()? {
            Conn::Exclusive(c) => c.remote,
            Conn::Shared(c) => c.remote,
        }
    }

    /// A slot of a shared connection (its body is the protocol's, not read
    /// through the lease).
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.conn, Some(Conn::Shared(_)))
    }

    /// An exclusive connection that served a request or waited in the idle
    /// stack, used or not (and so may have been closed by the server
    /// meanwhile): a request it fails before any response byte earns a retry.
    pub(crate) fn may_be_stale(&self) -> bool {
        matches!(&self.conn, Some(Conn::Exclusive(c)) if c.may_be_stale())
    }

    /// The exclusive connection, to read its response body.
    pub(crate) fn exclusive_mut(&mut self) -> Option<&mut P::Exclusive> {
        match self.conn.as_mut() {
            Some(Conn::Exclusive(c)) => Some(&mut c.conn),
            _ => None,
        }
    }

    /// The exclusive connection, to ask where its response body stands.
    pub(crate) fn exclusive(&self) -> Option<&P::Exclusive> {
        match self.conn.as_ref() {
            Some(Conn::Exclusive(c)) => Some(&c.conn),
            _ => None,
        }
    }

    /// Checks the connection can take the request: an exclusive connection
    /// that was reused or waited idle, and that the server closed meanwhile
    /// (or wrote to unasked), fails. One handed straight from its dial to
    /// this request is not probed: a server that speaks first is answered by
    /// a protocol error on the response, not by dialing again and again.
    pub(crate) fn ready(&mut self) -> bool {
        match self.conn.as_mut() {
            Some(Conn::Exclusive(c)) => !c.may_be_stale() || c.conn.is_open(),
            Some(Conn::Shared(c)) => !c.conn.is_closed(),
            None => false,
        }
    }

    /// Sends the request on the leased connection. The lease travels with the
    /// future (an exclusive connection inside the protocol's future, which
    /// owns it while the request is on the wire) and comes back with the
    /// answer; on failure it is dropped, which closes an exclusive
    /// connection and frees a shared one's slot. Shared: the protocol's
    /// request starts here, and the future drives it to the answer;
    /// exclusive: the future writes the request and reads the answer.
    /// `deadline` is for a shared connection to keep (an exclusive one is
    /// given it before, `Exclusive::prepare`'s caller's business).
    pub(crate) fn send(
        mut self,
        req: Request<Body>,
        deadline: Option<tokio::time::Instant>,
    ) -> Sending<P, impl Future<Output = (ExclusiveConn<P>, Sent<P>)> + Send> {
        let origin = &self.origin;
        let metrics = &origin.shared().metrics;
        let in_flight = match self.conn.take() {
            Some(Conn::Exclusive(mut c)) => {
                c.fresh = false;
                metrics.protocol(c.label).requests.inc();
                // The connection goes into the future; what is left of the
                // lease is its origin, to make a lease again with the answer.
                let prepared = c.conn.prepare(&req, origin.protocol());
                InFlight::Exclusive {
                    origin: Some(Arc::clone(origin)),
                    send: P::Exclusive::send(c, req, prepared),
                }
            }
            Some(Conn::Shared(c)) => {
                metrics.protocol(c.label).requests.inc();
                let send = c.conn.send(req, deadline);
                self.conn = Some(Conn::Shared(c));
                InFlight::Shared {
                    lease: Some(self),
                    send,
                }
            }
            None => unreachable!("a lease holds its connection until consumed"),
        };
        Sending { in_flight }
    }

    /// The exclusive connection, if it may serve another request; consumes
    /// the lease without returning anything to the pool.
    pub(crate) fn into_reusable(mut self) -> Option<Conn<P>> {
        match self.conn.take() {
            Some(Conn::Shared(c)) => {
                self.origin.stream_done(c.id);
                None
            }
            Some(Conn::Exclusive(c)) if c.conn.is_reusable() => Some(Conn::Exclusive(c)),
            _ => None,
        }
    }

    /// The response was read to its end: the connection can serve another request.
    pub(crate) fn release(mut self) {
        match self.conn.take() {
            Some(Conn::Exclusive(c)) if c.conn.is_reusable() => self.origin.put_back(c),
            Some(Conn::Shared(c)) => self.origin.stream_done(c.id),
            _ => {}
        }
    }
}

pin_project! {
    /// A request on the wire, and the lease it was sent on.
    pub(crate) struct Sending<P: Protocol, F> {
        #[pin]
        in_flight: InFlight<P, F>,
    }
}

pin_project! {
    // Each side is taken when the answer (or the failure) comes.
    #[project = InFlightProj]
    enum InFlight<P: Protocol, F> {
        Exclusive { origin: Option<Arc<OriginPool<P>>>, #[pin] send: F },
        Shared { lease: Option<Lease<P>>, send: <P::Shared as crate::pool::common::protocol::Shared<P>>::Exchange },
    }
}

impl<P: Protocol, F> Sending<P, F> {
    /// A shared connection keeps the request's deadline now
    /// ([`Shared::deadline_kept`](crate::pool::common::protocol::Shared::deadline_kept)).
    pub(crate) fn deadline_kept(&self) -> bool {
        match &self.in_flight {
            InFlight::Shared { send, .. } => P::Shared::deadline_kept(send),
            InFlight::Exclusive { .. } => false,
        }
    }
}

impl<P: Protocol, F: Future<Output = (ExclusiveConn<P>, Sent<P>)>> Future for Sending<P, F> {
    type Output = Result<(Lease<P>, P::Answer), P::Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        const DONE: &str = "`Sending` polled after it completed";
        // Each arm matches the answer where the protocol put it and moves
        // it once, into this poll's result: a `(lease, result)` pair built
        // first and then mapped copied the answer (~400 B) twice more.
        match self.project().in_flight.project() {
            // Each side's lease (or origin) is taken before the answer
            // comes, and put back if it has not: taken after it (an
            // `expect` that may panic), it made the answer be copied aside
            // first, to be dropped on unwinding.
            InFlightProj::Exclusive { origin, send } => {
                let taken = origin.take().expect(DONE);
                match send.poll(cx) {
                    Poll::Pending => {
                        *origin = Some(taken);
                        Poll::Pending
                    }
                    Poll::Ready((conn, Ok(answer))) => {
                        Poll::Ready(Ok((Lease::new(Conn::Exclusive(conn), taken), answer)))
                    }
                    Poll::Ready((conn, Err(failure))) => {
                        // The lease is dropped, which closes the connection.
                        drop(Lease::new(Conn::Exclusive(conn), taken));
                        Poll::Ready(Err(failure))
                    }
                }
            }
            InFlightProj::Shared { lease, send } => {
                let taken = lease.take().expect(DONE);
                match P::Shared::poll_send(send, cx, taken.origin.protocol()) {
                    Poll::Pending => {
                        *lease = Some(taken);
                        Poll::Pending
                    }
                    Poll::Ready(Ok(answer)) => Poll::Ready(Ok((taken, answer))),
                    // The lease is dropped.
                    Poll::Ready(Err(failure)) => Poll::Ready(Err(failure)),
                }
            }
        }
    }
}

impl<P: Protocol> Drop for Lease<P> {
    fn drop(&mut self) {
        // Exclusive: the connection is dropped, which closes it.
        if let Some(Conn::Shared(c)) = self.conn.take() {
            self.origin.stream_done(c.id);
        }
    }
}

impl<P: Protocol> std::fmt::Debug for Lease<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = match &self.conn {
            Some(Conn::Exclusive(c)) => Some(c.id),
            Some(Conn::Shared(c)) => Some(c.id),
            None => None,
        };
        f.debug_struct("Lease")
            .field("conn", &id)
            .field("shared", &self.is_shared())
            .finish()
    }
}
