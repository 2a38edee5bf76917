//! One request's way through the pool: checkout, send, and the one retry a
//! failed attempt may earn (on a new connection when a reused HTTP/1.1
//! connection turned out dead, or on any other connection when an HTTP/2
//! server refused the stream unprocessed).
//!
//! Written by hand rather than as an `async` block: a block keeps the
//! request it is given in its state for as long as it runs, next to the send
//! future that holds the same request while it is on the wire. Every request
//! in flight paid for both (264 B of the 760 B the block took). Here the
//! request is in one place at a time: in the attempt while it waits in line
//! for a connection, in the send future once it is on the wire.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use http::Request;
use pin_project_lite::pin_project;
use tokio_util::either::Either;

use crate::body::Body;
use crate::client::{is_idempotent, ClientInner};
use crate::error::Error;
use crate::pool::{Answer, HandedBack, Lease, OriginPool, SendError};
use crate::response::Response;

/// Waiting in line for a connection or stream (the pool's slow path: a new
/// connection, or the per-host cap reached). Boxed: rarely needed, and a
/// request in flight should not carry its size.
type Queued = Pin<Box<dyn Future<Output = Result<Lease, Error>> + Send>>;

pin_project! {
    /// The attempt future. `send` is [`Lease::send`]: a parameter only so
    /// that the type of its future (an HTTP/1.1 `async` block) can be named.
    pub(crate) struct Attempt<S, F> {
        inner: Arc<ClientInner>,
        origin: Arc<OriginPool>,
        deadline: Option<Instant>,
        retried: bool,
        send: S,
        #[pin]
        stage: Stage<F>,
    }
}

pin_project! {
    #[project = StageProj]
    enum Stage<F> {
        Queued {
            // Taken when the lease arrives.
            request: Option<Request<Body>>,
            lease: Queued,
        },
        Sending {
            h2: bool,
            // A reused HTTP/1.1 connection, first try: a dead one earns a retry.
            stale_retry: bool,
            idempotent: bool,
            #[pin]
            send: F,
        },
    }
}

impl<S, F> Attempt<S, F>
where
    S: Fn(Lease, Request<Body>) -> F,
    F: Future<Output = Result<(Lease, Answer), SendError>>,
{
    /// Starts the attempt: takes a connection or stream if one is at hand
    /// (and then the request is on its way before this returns), else joins
    /// the line.
    pub(crate) fn start(
        inner: Arc<ClientInner>,
        request: Request<Body>,
        deadline: Option<Instant>,
        send: S,
    ) -> Either<Self, std::future::Ready<Result<Response, Error>>> {
        let origin = match inner.pool.origin(request.uri()) {
            Ok(origin) => origin,
            Err(e) => return Either::Right(std::future::ready(Err(e))),
        };
        let stage = begin(&inner, &origin, &send, request, false, false);
        Either::Left(Attempt {
            inner,
            origin,
            deadline,
            retried: false,
            send,
            stage,
        })
    }
}

/// Checks out (`fresh_only`: not a pooled HTTP/1.1 connection) and sends, or
/// queues the request when nothing is at hand.
fn begin<S, F>(
    inner: &ClientInner,
    origin: &Arc<OriginPool>,
    send: &S,
    request: Request<Body>,
    fresh_only: bool,
    retried: bool,
) -> Stage<F>
where
    S: Fn(Lease, Request<Body>) -> F,
{
    match origin.try_checkout(fresh_only) {
        Ok(lease) => sending(inner, send, lease, request, retried),
        Err(slot) => {
            let queue_timeout = inner.pool.config().pool_queue_timeout;
            Stage::Queued {
                request: Some(request),
                lease: Box::pin(Arc::clone(origin).checkout_queued(
                    slot,
                    fresh_only,
                    queue_timeout,
                )),
            }
        }
    }
}

fn sending<S, F>(
    inner: &ClientInner,
    send: &S,
    lease: Lease,
    request: Request<Body>,
    retried: bool,
) -> Stage<F>
where
    S: Fn(Lease, Request<Body>) -> F,
{
    let config = inner.pool.config();
    Stage::Sending {
        h2: lease.is_http2(),
        stale_retry: !retried && config.retry_stale_connections && lease.may_be_stale_http1(),
        idempotent: is_idempotent(request.method()),
        send: send(lease, request),
    }
}

impl<S, F> Future for Attempt<S, F>
where
    S: Fn(Lease, Request<Body>) -> F,
    F: Future<Output = Result<(Lease, Answer), SendError>>,
{
    type Output = Result<Response, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let mut this = self.as_mut().project();
            let next = match this.stage.as_mut().project() {
                StageProj::Queued { request, lease } => {
                    let lease = ready!(lease.as_mut().poll(cx))?;
                    let request = request.take().expect("`Attempt` polled after it completed");
                    sending(this.inner, this.send, lease, request, *this.retried)
                }
                StageProj::Sending {
                    h2,
                    stale_retry,
                    idempotent,
                    send,
                } => {
                    let SendError { error, handed_back } = match ready!(send.poll(cx)) {
                        Ok((lease, answer)) => {
                            let config = this.inner.pool.config();
                            return Poll::Ready(Ok(Response::new(
                                answer,
                                lease,
                                *this.deadline,
                                this.inner.drain.clone(),
                                config.max_response_body_size,
                            )));
                        }
                        Err(e) => e,
                    };
                    // A request that was written may only be replayed when
                    // replaying cannot change the outcome: the server did not
                    // process it (HTTP/2 refusal: the stream hands back a
                    // copy), or the method is idempotent (HTTP/1.1 hands the
                    // request back when no answer came); and the body is
                    // buffered.
                    let retry = match handed_back {
                        _ if *this.retried => None,
                        // HTTP/2 hands a request back only when refused unprocessed.
                        Some(HandedBack::Unsent(request)) if *h2 || *stale_retry => Some(request),
                        Some(HandedBack::Unanswered(request)) if *stale_retry && *idempotent => {
                            Some(request)
                        }
                        _ => None,
                    };
                    let Some(request) = retry else {
                        return Poll::Ready(Err(error));
                    };
                    let metrics = &this.inner.metrics;
                    if *h2 {
                        tracing::debug!(%error, "HTTP/2 stream refused unprocessed; retrying");
                        metrics.refused_stream_retries.inc();
                    } else {
                        tracing::debug!(%error, "reused connection was stale; retrying on a new one");
                        metrics.stale_retries.inc();
                    }
                    *this.retried = true;
                    let fresh_only = !*h2;
                    begin(
                        this.inner,
                        this.origin,
                        this.send,
                        request,
                        fresh_only,
                        true,
                    )
                }
            };
            this.stage.set(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Body, Client};

    /// With a million long polls in flight, every byte of a request's future
    /// counts a million times. It was 896 B as an `async` block holding the
    /// request twice; this catches a regression to that.
    #[tokio::test]
    async fn a_request_in_flight_holds_its_request_once() {
        let client = Client::new();
        let request = http::Request::get("http://127.0.0.1:9/")
            .body(Body::empty())
            .unwrap();
        let request_size = std::mem::size_of_val(&request);
        let future = client.execute(request);
        let size = std::mem::size_of_val(&future);
        assert!(
            size < 3 * request_size,
            "request future {size} B for a {request_size} B request"
        );
    }
}
