//! The hyper `Service` for one connection: routes the request, stamps the
//! `x-connection-id` header and tracks the request as in flight.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderName, Request, Response};
use hyper::body::Incoming;
use tokio::time::Sleep;

use crate::body::ResponseBody;
use crate::conn::{ConnState, InFlight};
use crate::endpoints::{self, Outcome};

/// Header naming the server-side connection a response came from.
static X_CONNECTION_ID: HeaderName = HeaderName::from_static("x-connection-id");

/// One per connection; cloning is never needed by hyper's HTTP/1 server.
pub(crate) struct CourierService {
    conn: Arc<ConnState>,
}

impl CourierService {
    pub(crate) fn new(conn: Arc<ConnState>) -> Self {
        Self { conn }
    }
}

impl hyper::service::Service<Request<Incoming>> for CourierService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, req: Request<Incoming>) -> ResponseFuture {
        let guard = InFlight::enter(&self.conn);
        match endpoints::route(req) {
            Outcome::Respond(response) => ResponseFuture::Ready(Some(finish(response, guard))),
            Outcome::Delay(delay) => ResponseFuture::Delay {
                sleep: Box::pin(tokio::time::sleep(delay)),
                guard: Some(guard),
            },
            Outcome::Fault(fault) => {
                self.conn.raise_fault(fault);
                ResponseFuture::Never { _guard: guard }
            }
        }
    }
}

/// Adds what every response carries and ties the in-flight guard to the body.
fn finish(mut response: Response<ResponseBody>, guard: InFlight) -> Response<ResponseBody> {
    response
        .headers_mut()
        .insert(X_CONNECTION_ID.clone(), guard.conn().id_header().clone());
    response.body_mut().attach(guard);
    response
}

/// Future of one response. An enum rather than a boxed `async` block so the
/// common, immediately-ready case allocates nothing.
pub(crate) enum ResponseFuture {
    Ready(Option<Response<ResponseBody>>),
    /// `/delay`: only a timer entry is pending, so 100k of them are cheap.
    Delay {
        sleep: Pin<Box<Sleep>>,
        guard: Option<InFlight>,
    },
    /// A raw fault: the connection task takes the socket away, so this never
    /// completes; it keeps the request in flight until dropped.
    Never {
        _guard: InFlight,
    },
}

impl Future for ResponseFuture {
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // All variants are Unpin (the timer is boxed).
        match self.get_mut() {
            // `None` only if polled after completion, which hyper never does.
            ResponseFuture::Ready(response) => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
            ResponseFuture::Delay { sleep, guard } => {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                match guard.take() {
                    Some(guard) => Poll::Ready(Ok(finish(endpoints::delay_done(), guard))),
                    None => Poll::Pending,
                }
            }
            ResponseFuture::Never { .. } => Poll::Pending,
        }
    }
}
