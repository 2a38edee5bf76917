//! The request handling for one connection, whatever its protocol: routes the
//! request, stamps the `x-connection-id` header (and `alt-svc` on TCP when
//! HTTP/3 is on), tracks the request as in flight, and carries out faults in
//! the way the connection's protocol allows. hyper calls it as a `Service`;
//! the HTTP/3 driver calls [`CourierService::handle`] directly.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use std::time::Duration;

use http::header::ALT_SVC;
use http::{HeaderName, Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio::time::Sleep;

use crate::body::ResponseBody;
use crate::endpoints;
use crate::fault::{Fault, RawFault};
use crate::faults::{self, Http2Fault};
use crate::protocol::Protocol;
use crate::replica::Action;
use crate::reply::{self, Outcome};
use crate::request_body::RequestBody;
use crate::state::{ConnState, InFlight};

/// Header naming the server-side connection a response came from.
static X_CONNECTION_ID: HeaderName = HeaderName::from_static("x-connection-id");

/// One per connection. hyper's HTTP/1 server calls it for each request in
/// turn; its HTTP/2 server calls it for each stream and spawns the returned
/// future, which is why [`ResponseFuture`] is `Send + 'static`.
pub(crate) struct CourierService {
    conn: Arc<ConnState>,
    protocol: Protocol,
    /// HTTP/2 with keep-alive off: GOAWAY on the first request.
    goaway_per_request: bool,
}

impl CourierService {
    pub(crate) fn new(conn: Arc<ConnState>, protocol: Protocol) -> Self {
        // HTTP/1.1 closes through `connection: close` in hyper instead.
        let goaway_per_request = protocol != Protocol::Http1 && !conn.ctx().keep_alive;
        Self {
            conn,
            protocol,
            goaway_per_request,
        }
    }

    fn fault(&self, fault: Fault, guard: InFlight) -> ResponseFuture {
        let raise = |raw: RawFault, guard: InFlight| {
            self.conn.raise_fault(raw);
            ResponseFuture::Never { _guard: guard }
        };
        match (self.protocol, fault) {
            (Protocol::Http1, Fault::GoAway) => {
                ResponseFuture::ready(reply::with_connection_close(reply::ok()), guard)
            }
            (Protocol::Http2 | Protocol::Http3, Fault::GoAway) => {
                self.conn.request_goaway();
                ResponseFuture::ready(reply::ok(), guard)
            }
            // HTTP/1.1 has no streams: resetting the connection is the
            // closest thing.
            (Protocol::Http1, Fault::RstStream) => raise(RawFault::Reset, guard),
            (Protocol::Http2 | Protocol::Http3, Fault::RstStream) => ResponseFuture::Reset,
            (Protocol::Http1, Fault::Raw(raw)) => raise(raw, guard),
            // HTTP/3 has streams too: the same table (see `faults.rs`).
            (Protocol::Http2 | Protocol::Http3, Fault::Raw(raw)) => {
                match faults::over_http2(raw, self.conn.id()) {
                    Http2Fault::Connection(raw) => raise(raw, guard),
                    Http2Fault::Respond(response) => ResponseFuture::ready(response, guard),
                    Http2Fault::Hang => ResponseFuture::Never { _guard: guard },
                }
            }
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for CourierService {
    type Response = Response<ResponseBody>;
    type Error = StreamReset;
    type Future = ResponseFuture;

    fn call(&self, req: Request<Incoming>) -> ResponseFuture {
        self.handle(req.map(RequestBody::Hyper))
    }
}

impl CourierService {
    /// Answers one request: what hyper's `call` does, for any protocol.
    pub(crate) fn handle(&self, req: Request<RequestBody>) -> ResponseFuture {
        let guard = InFlight::enter(&self.conn);
        if self.goaway_per_request {
            self.conn.request_goaway();
        }
        if let Some(replica) = &self.conn.ctx().replica {
            return match replica.decide() {
                Action::Ok(after) => ResponseFuture::after(after, StatusCode::OK, guard),
                Action::Unavailable(after) => {
                    ResponseFuture::after(after, StatusCode::SERVICE_UNAVAILABLE, guard)
                }
                Action::Reset => self.fault(Fault::Raw(RawFault::Reset), guard),
                Action::Hang => ResponseFuture::Never { _guard: guard },
            };
        }
        match endpoints::route(req) {
            Outcome::Respond(response) => ResponseFuture::ready(response, guard),
            Outcome::Delay(delay) => ResponseFuture::after(delay, StatusCode::OK, guard),
            Outcome::Fault(fault) => self.fault(fault, guard),
        }
    }
}

/// Adds what every response carries and ties the in-flight guard to the body.
fn finish(mut response: Response<ResponseBody>, guard: InFlight) -> Response<ResponseBody> {
    let conn = guard.conn();
    let headers = response.headers_mut();
    headers.insert(X_CONNECTION_ID.clone(), conn.id_header().clone());
    // Where a client learns of HTTP/3 (RFC 7838); pointless on HTTP/3 itself.
    if let Some(alt_svc) = conn.ctx().alt_svc() {
        if !conn.is_quic() {
            headers.insert(ALT_SVC, alt_svc.clone());
        }
    }
    response.body_mut().attach(guard);
    response
}

/// The service's error: only `/fault/rst-stream` over HTTP/2 or HTTP/3
/// produces it; hyper turns it into RST_STREAM (INTERNAL_ERROR), the HTTP/3
/// driver into a stream reset (H3_INTERNAL_ERROR).
#[derive(Debug)]
pub(crate) struct StreamReset;

impl fmt::Display for StreamReset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stream reset on request (/fault/rst-stream)")
    }
}

impl StdError for StreamReset {}

/// Future of one response. An enum rather than a boxed `async` block so the
/// common, immediately-ready case allocates nothing.
pub(crate) enum ResponseFuture {
    Ready(Option<Response<ResponseBody>>),
    /// `/delay` (and a replica's answer): only a timer entry is pending, so
    /// 100k of them are cheap. The answer is "ok" with `status`.
    Delay {
        sleep: Pin<Box<Sleep>>,
        guard: Option<InFlight>,
        status: StatusCode,
    },
    /// A raw fault (the connection task takes the socket away) or a hanging
    /// HTTP/2 stream: never completes; keeps the request in flight until
    /// dropped.
    Never {
        _guard: InFlight,
    },
    /// `/fault/rst-stream` over HTTP/2.
    Reset,
}

impl ResponseFuture {
    fn ready(response: Response<ResponseBody>, guard: InFlight) -> Self {
        ResponseFuture::Ready(Some(finish(response, guard)))
    }

    /// "ok" with `status` after `delay` (at once for zero).
    fn after(delay: Duration, status: StatusCode, guard: InFlight) -> Self {
        if delay.is_zero() {
            return Self::ready(reply::delay_done(status), guard);
        }
        ResponseFuture::Delay {
            sleep: Box::pin(tokio::time::sleep(delay)),
            guard: Some(guard),
            status,
        }
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<ResponseBody>, StreamReset>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // All variants are Unpin (the timer is boxed).
        match self.get_mut() {
            // `None` only if polled after completion, which hyper never does.
            ResponseFuture::Ready(response) => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
            ResponseFuture::Delay {
                sleep,
                guard,
                status,
            } => {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                match guard.take() {
                    Some(guard) => Poll::Ready(Ok(finish(reply::delay_done(*status), guard))),
                    None => Poll::Pending,
                }
            }
            ResponseFuture::Never { .. } => Poll::Pending,
            ResponseFuture::Reset => Poll::Ready(Err(StreamReset)),
        }
    }
}
