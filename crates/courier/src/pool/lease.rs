//! A connection (HTTP/1.1) or a stream (HTTP/2) on loan to one request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::Request;
use http_body::Frame;
use pin_project_lite::pin_project;

use super::conn::{Conn, Http1Conn};
use super::origin::OriginPool;
use crate::body::Body;
use crate::error::Error;
use crate::proto::exchange::{Answer, SendError, SendResult};
use crate::proto::h2::request::Http2Send;
use crate::proto::{h1, h2};

/// Exclusive use of an HTTP/1.1 connection, or one reserved HTTP/2 stream, for
/// one request and its response body.
///
/// [`Lease::release`] hands it back (to a waiter or the idle stack). Dropping
/// an HTTP/1.1 lease without releasing it closes the connection: that is the
/// safe default for any path that does not know the response was read to its
/// end (errors, timeouts, cancelled futures). Dropping an HTTP/2 lease frees
/// the pool's count of streams on the connection; the stream itself is reset
/// (if still open) when its handle, in the send future or the body, is dropped.
///
/// An HTTP/1.1 response body is read through the lease, which holds the
/// connection ([`Lease::poll_http1_body`]).
pub(crate) struct Lease {
    conn: Option<Conn>,
    origin: Arc<OriginPool>,
}

impl Lease {
    pub(crate) fn new(conn: Conn, origin: Arc<OriginPool>) -> Lease {
        Lease {
            conn: Some(conn),
            origin,
        }
    }

    pub(crate) fn origin(&self) -> &Arc<OriginPool> {
        &self.origin
    }

    /// The address of the server at the other end.
    pub(crate) fn remote_addr(&self) -> Option<std::net::SocketAddr> {
        match self.conn.as_ref()? {
            Conn::Http1(c) => c.remote,
            Conn::Http2(c) => c.remote,
        }
    }

    pub(crate) fn is_http2(&self) -> bool {
        matches!(self.conn, Some(Conn::Http2(_)))
    }

    /// An HTTP/1.1 connection that served a request or waited in the idle
    /// stack, used or not (and so may have been closed by the server
    /// meanwhile): a request it fails before any response byte earns a retry.
    pub(crate) fn may_be_stale_http1(&self) -> bool {
        matches!(&self.conn, Some(Conn::Http1(c)) if c.may_be_stale())
    }

    /// Checks the connection can take the request: an HTTP/1.1 connection
    /// that was reused or waited idle, and that the server closed meanwhile
    /// (or wrote to unasked), fails. One handed straight from its dial to
    /// this request is not probed: a server that speaks first is answered by
    /// a protocol error on the response, not by dialing again and again.
    pub(crate) fn ready(&mut self) -> bool {
        match self.conn.as_mut() {
            Some(Conn::Http1(c)) => !c.may_be_stale() || c.conn.is_open(),
            Some(Conn::Http2(c)) => !c.signals.is_closed(),
            None => false,
        }
    }

    /// Sends the request on the leased connection. The lease travels with the
    /// future (an HTTP/1.1 connection inside the protocol's future, which
    /// owns it while the request is on the wire) and comes back with the
    /// response head; on failure it is dropped, which closes an HTTP/1.1
    /// connection and frees an HTTP/2 stream. HTTP/2: the stream is opened
    /// before this returns and the future only waits for the response head;
    /// HTTP/1.1: the future writes the request and reads the head.
    pub(crate) fn send(
        mut self,
        req: Request<Body>,
    ) -> Sending<impl Future<Output = (Http1Conn, SendResult)> + Send> {
        let origin = &self.origin;
        let metrics = &origin.shared().metrics;
        let defaults = &origin.shared().config.default_headers;
        let in_flight = match self.conn.take() {
            Some(Conn::Http1(mut c)) => {
                c.fresh = false;
                metrics.requests_http1.inc();
                // The connection goes into the future; what is left of the
                // lease is its origin, to make a lease again with the answer.
                InFlight::Http1 {
                    origin: Some(Arc::clone(origin)),
                    send: h1::Connection::send(c, req, &origin.host_header, defaults),
                }
            }
            Some(Conn::Http2(c)) => {
                metrics.requests_http2.inc();
                let send = h2::request::send(&c.handle, req);
                self.conn = Some(Conn::Http2(c));
                InFlight::Http2 {
                    lease: Some(self),
                    send,
                }
            }
            None => unreachable!("a lease holds its connection until consumed"),
        };
        Sending { in_flight }
    }

    /// The next piece of an HTTP/1.1 response body, or its trailers (`None`
    /// at its end).
    pub(crate) fn poll_http1_body(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        match self.conn.as_mut() {
            Some(Conn::Http1(c)) => c.conn.poll_frame(cx),
            _ => Poll::Ready(None),
        }
    }

    /// The HTTP/1.1 response body has been read to its end.
    pub(crate) fn http1_body_done(&self) -> bool {
        match &self.conn {
            Some(Conn::Http1(c)) => c.conn.body_done(),
            _ => true,
        }
    }

    /// The HTTP/1.1 connection, if it may serve another request; consumes the
    /// lease without returning anything to the pool.
    pub(crate) fn into_reusable(mut self) -> Option<Conn> {
        match self.conn.take() {
            Some(Conn::Http2(c)) => {
                self.origin.stream_done(c.id);
                None
            }
            Some(Conn::Http1(c)) if c.conn.is_reusable() => Some(Conn::Http1(c)),
            _ => None,
        }
    }

    /// The response was read to its end: the connection can serve another request.
    pub(crate) fn release(mut self) {
        match self.conn.take() {
            Some(Conn::Http1(c)) if c.conn.is_reusable() => self.origin.put_back(c),
            Some(Conn::Http2(c)) => self.origin.stream_done(c.id),
            _ => {}
        }
    }
}

pin_project! {
    /// A request on the wire, and the lease it was sent on.
    pub(crate) struct Sending<F> {
        #[pin]
        in_flight: InFlight<F>,
    }
}

pin_project! {
    // Each side is taken when the response head (or the failure) comes.
    #[project = InFlightProj]
    enum InFlight<F> {
        Http1 { origin: Option<Arc<OriginPool>>, #[pin] send: F },
        Http2 { lease: Option<Lease>, send: Http2Send },
    }
}

impl<F: Future<Output = (Http1Conn, SendResult)>> Future for Sending<F> {
    type Output = Result<(Lease, Answer), SendError>;

    // The error hands the request back by value: a failure path, not worth a box.
    #[allow(clippy::result_large_err)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        const DONE: &str = "`Sending` polled after it completed";
        let (lease, result) = match self.project().in_flight.project() {
            InFlightProj::Http1 { origin, send } => {
                let (conn, result) = ready!(send.poll(cx));
                let origin = origin.take().expect(DONE);
                (Lease::new(Conn::Http1(conn), origin), result)
            }
            InFlightProj::Http2 { lease, send } => {
                let origin = &lease.as_ref().expect(DONE).origin;
                let target = h2::request::Target {
                    scheme: origin.scheme(),
                    authority: origin.authority(),
                    defaults: &origin.shared().config.default_headers,
                };
                let result = ready!(send.poll_send(cx, &target));
                (lease.take().expect(DONE), result)
            }
        };
        Poll::Ready(result.map(|answer| (lease, answer)))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // HTTP/1.1: the connection is dropped, which closes it.
        if let Some(Conn::Http2(c)) = self.conn.take() {
            self.origin.stream_done(c.id);
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = match &self.conn {
            Some(Conn::Http1(c)) => Some(c.id),
            Some(Conn::Http2(c)) => Some(c.id),
            None => None,
        };
        f.debug_struct("Lease")
            .field("conn", &id)
            .field("http2", &self.is_http2())
            .finish()
    }
}
