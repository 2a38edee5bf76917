//! One request's way through the pool: checkout, send, and the retries a
//! failed attempt may earn: one, on a new connection, when a reused HTTP/1.1
//! connection turned out dead; up to `http2_max_refused_retries`, on a
//! connection that still takes streams, when an HTTP/2 server refused the
//! stream unprocessed (nginx closing a connection after `keepalive_requests`
//! refuses every stream past the last it serves; a server closing idle
//! connections refuses the stream that raced its GOAWAY, and the next
//! connection may be closing too). Each resend waits for nothing the first
//! time, then backs off a little, and none starts past the deadline.
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
use std::time::Duration;

use http::Request;
use pin_project_lite::pin_project;
use tokio::time::Instant;
use tokio_util::either::Either;

use crate::body::Body;
use crate::client::response::Response;

/// The response, and what its request handed back (for a redirect).
pub(crate) type Answered = (Response, Sent);
use crate::client::transport::Lease;
use crate::client::transport::Source;
use crate::client::{is_idempotent, ClientInner, Idempotent};
use crate::error::Error;
use crate::proto::exchange::{Answer, HandedBack, SendError, Sent};

type OriginPool = crate::pool::OriginPool<crate::client::transport::Transport>;

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
        // When the request was made: its duration is recorded here, where
        // the answer is looked at before it is taken apart (see `poll_attempt`).
        started: Instant,
        deadline: Option<Instant>,
        // Retries so far (a counter, not a bool: the same byte).
        retries: u8,
        // An HTTP/2 request whose connection died before any answer was
        // sent again (once at most, like the HTTP/1.1 stale retry).
        resent_unanswered: bool,
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
        // Backing off before a refused request is sent again.
        Backoff {
            request: Option<Request<Body>>,
            sleep: Pin<Box<tokio::time::Sleep>>,
        },
        Sending {
            // An HTTP/1.1 connection that waited in the pool, first try: a dead one earns a retry.
            stale_retry: bool,
            // The connection keeps the request's deadline (HTTP/1.1).
            deadline_kept: bool,
            idempotent: bool,
            #[pin]
            send: F,
        },
    }
}

impl<S, F> Attempt<S, F>
where
    S: Fn(Lease, Request<Body>, Option<Instant>) -> F,
    F: Future<Output = Result<(Lease, Answer<Source>), SendError>>,
{
    /// Starts the attempt: takes a connection or stream if one is at hand
    /// (and then the request is on its way before this returns), else joins
    /// the line.
    pub(crate) fn start(
        inner: Arc<ClientInner>,
        request: Request<Body>,
        started: Instant,
        deadline: Option<Instant>,
        send: S,
    ) -> Either<Self, Refused> {
        // Refused before a connection is even checked out: nothing of a
        // request whose framing disagrees with its body may reach the wire.
        if let Err(e) = crate::validate::request(&request) {
            let e = e.or_url(|| request.uri().clone());
            return Either::Right(Refused(Some(e)));
        }
        let origin = match inner.pool.origin(request.uri()) {
            Ok(origin) => origin,
            Err(e) => {
                let e = e.or_url(|| request.uri().clone());
                return Either::Right(Refused(Some(e)));
            }
        };
        let first = Try {
            fresh_only: false,
            retries: 0,
            now: started,
        };
        let stage = begin(&inner, &origin, &send, request, first, deadline);
        Either::Left(Attempt {
            inner,
            origin,
            started,
            deadline,
            retries: 0,
            resent_unanswered: false,
            send,
            stage,
        })
    }
}

/// A send future whose connection may keep the request's deadline.
pub(crate) trait KeepsDeadline {
    /// The connection keeps it now, and wakes the request when it passes.
    fn deadline_kept(&self) -> bool;
}

impl<P: crate::pool::Protocol, F> KeepsDeadline for crate::pool::Sending<P, F> {
    fn deadline_kept(&self) -> bool {
        crate::pool::Sending::deadline_kept(self)
    }
}

impl<S, F: KeepsDeadline> Attempt<S, F> {
    /// The request is on a connection that keeps its deadline: an HTTP/1.1
    /// connection (its exchange ends at the deadline on the connection's
    /// own timer), or an HTTP/2 stream once open (the connection wakes it).
    pub(crate) fn deadline_kept(&self) -> bool {
        match &self.stage {
            Stage::Sending {
                deadline_kept: true,
                ..
            } => true,
            Stage::Sending { send, .. } => send.deadline_kept(),
            _ => false,
        }
    }
}

impl<S, F: KeepsDeadline> crate::client::send::DeadlineKept for Either<Attempt<S, F>, Refused> {
    fn deadline_kept(&self) -> bool {
        match self {
            Either::Left(attempt) => attempt.deadline_kept(),
            Either::Right(_) => false,
        }
    }

    fn deadline(&self) -> Option<Instant> {
        match self {
            Either::Left(attempt) => attempt.deadline,
            Either::Right(_) => None,
        }
    }
}

/// A request refused before it was sent. Holds only the error: a
/// `Ready<Result<Answered, _>>` in its place would make every request
/// future as large as a response and what its request hands back.
pub(crate) struct Refused(Option<Error>);

impl Future for Refused {
    type Output = Result<Answered, Error>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Err(self
            .0
            .take()
            .expect("`Refused` polled after it completed")))
    }
}

/// Which try of a request this is: whether only a new connection will do
/// (`fresh_only`: not a pooled HTTP/1.1 connection), how many went before,
/// and the clock reading its checkout judges pooled connections by (the
/// first try's is the request's start: one clock read fewer a request).
#[derive(Clone, Copy)]
struct Try {
    fresh_only: bool,
    retries: u8,
    now: Instant,
}

impl Try {
    /// A retry, starting now.
    fn again(fresh_only: bool, retries: u8) -> Self {
        Try {
            fresh_only,
            retries,
            now: Instant::now(),
        }
    }
}

/// Checks out and sends, or queues the request when nothing is at hand.
fn begin<S, F>(
    inner: &ClientInner,
    origin: &Arc<OriginPool>,
    send: &S,
    request: Request<Body>,
    this_try: Try,
    deadline: Option<Instant>,
) -> Stage<F>
where
    S: Fn(Lease, Request<Body>, Option<Instant>) -> F,
{
    match checkout(inner, origin, this_try.fresh_only, this_try.now) {
        Ok(lease) => sending(inner, send, lease, request, this_try.retries, deadline),
        Err(lease) => Stage::Queued {
            request: Some(request),
            lease,
        },
    }
}

/// A connection or stream at hand, else the wait for one. Not generic, and
/// so compiled once, here: the pool is generic over its protocols, and
/// called from the attempt's generic code its checkout, and everything a
/// checkout may start (dialing, handshakes), would be compiled again in
/// every crate that polls a request.
fn checkout(
    inner: &ClientInner,
    origin: &Arc<OriginPool>,
    fresh_only: bool,
    now: Instant,
) -> Result<Lease, Queued> {
    origin.try_checkout(fresh_only, now).map_err(|slot| {
        let queue_timeout = inner.pool.config().pool_queue_timeout;
        Box::pin(Arc::clone(origin).checkout_queued(slot, fresh_only, queue_timeout)) as Queued
    })
}

fn sending<S, F>(
    inner: &ClientInner,
    send: &S,
    mut lease: Lease,
    request: Request<Body>,
    retries: u8,
    deadline: Option<Instant>,
) -> Stage<F>
where
    S: Fn(Lease, Request<Body>, Option<Instant>) -> F,
{
    let config = inner.pool.config();
    // An HTTP/1.1 connection keeps the deadline on a timer it reuses from
    // one request to the next (see `h1::Connection::keep_deadline`).
    let deadline_kept = match (deadline, lease.exclusive_mut()) {
        (Some(deadline), Some(conn)) => {
            conn.keep_deadline(deadline);
            true
        }
        _ => false,
    };
    Stage::Sending {
        stale_retry: retries == 0 && config.retry_stale_connections && lease.may_be_stale(),
        deadline_kept,
        // `RequestBuilder::idempotent` marks a POST as safe to replay here
        // too, as it does for retries, hedging and a cluster's replicas.
        idempotent: is_idempotent(request.method())
            || request.extensions().get::<Idempotent>().is_some(),
        send: send(lease, request, deadline),
    }
}

impl<S, F> Future for Attempt<S, F>
where
    S: Fn(Lease, Request<Body>, Option<Instant>) -> F,
    F: Future<Output = Result<(Lease, Answer<Source>), SendError>>,
{
    type Output = Result<Answered, Error>;

    // Inlined, as `poll_attempt`, into the one poll that calls it: a poll
    // of its own wrote the answer into its frame, and its caller copied it
    // out (~400 B).
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Passed on as it comes: a response is large, and a match here
        // would copy it once more. (Each failure says which origin it is
        // about where it is returned; only a failure pays for that.)
        self.poll_attempt(cx)
    }
}

impl<S, F> Attempt<S, F>
where
    S: Fn(Lease, Request<Body>, Option<Instant>) -> F,
    F: Future<Output = Result<(Lease, Answer<Source>), SendError>>,
{
    #[inline(always)]
    fn poll_attempt(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Answered, Error>> {
        loop {
            let mut this = self.as_mut().project();
            let next = match this.stage.as_mut().project() {
                StageProj::Queued { request, lease } => {
                    let lease = match ready!(lease.as_mut().poll(cx)) {
                        Ok(lease) => lease,
                        Err(e) => return Poll::Ready(Err(e.or_url(|| this.origin.url()))),
                    };
                    let request = request.take().expect("`Attempt` polled after it completed");
                    sending(
                        this.inner,
                        this.send,
                        lease,
                        request,
                        *this.retries,
                        *this.deadline,
                    )
                }
                StageProj::Backoff { request, sleep } => {
                    ready!(sleep.as_mut().poll(cx));
                    let request = request.take().expect("`Attempt` polled after it completed");
                    begin(
                        this.inner,
                        this.origin,
                        this.send,
                        request,
                        Try::again(false, *this.retries),
                        *this.deadline,
                    )
                }
                StageProj::Sending {
                    stale_retry,
                    idempotent,
                    send,
                    ..
                } => {
                    // Matched where the send put it (`ready!` would move
                    // the answer into a local first: a copy of ~400 B).
                    let poll = send.poll(cx);
                    // The answer looked at by reference, before it is taken
                    // apart: HTTP/3 offered by the origin that answered (not
                    // the first hop's, after a redirect), and the request's
                    // duration. A call between binding the answer and
                    // building the response (which may unwind, and then
                    // drops it) copied it (~400 B) aside.
                    if let Poll::Ready(Ok((lease, answer))) = &poll {
                        #[cfg(feature = "http3")]
                        lease.origin().protocol().learn_alt_svc(answer.headers());
                        #[cfg(not(feature = "http3"))]
                        let _ = (lease, answer);
                        let metrics = &this.inner.metrics;
                        metrics.request_duration.record(this.started.elapsed());
                    }
                    let SendError { error, handed_back } = match poll {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok((lease, answer))) => {
                            let config = this.inner.pool.config();
                            return Poll::Ready(Ok(Response::new(
                                answer,
                                lease,
                                *this.deadline,
                                this.inner.drain.clone(),
                                config.max_response_body_size,
                            )));
                        }
                        Poll::Ready(Err(e)) => e,
                    };
                    // A request that was written may only be replayed when
                    // replaying cannot change the outcome: the server did not
                    // process it (refused), or the method is idempotent (no
                    // answer came); and the body is whole (buffered, or a
                    // stream all of whose sent part was kept: the protocol
                    // hands back only such a request).
                    let config = this.inner.pool.config();
                    let retry = match handed_back {
                        Some(HandedBack::Refused(request))
                            if *this.retries < config.http2.max_refused_retries =>
                        {
                            Some((Resend::Refused, request))
                        }
                        Some(HandedBack::Unsent(request)) if *stale_retry => {
                            Some((Resend::Stale, request))
                        }
                        Some(HandedBack::Unanswered(request)) if *stale_retry && *idempotent => {
                            Some((Resend::Stale, request))
                        }
                        Some(HandedBack::Lost {
                            request,
                            after_goaway: true,
                        }) if *idempotent && *this.retries < config.http2.max_refused_retries => {
                            Some((Resend::Refused, request))
                        }
                        Some(HandedBack::Lost {
                            request,
                            after_goaway: false,
                        }) if *idempotent && !*this.resent_unanswered => {
                            *this.resent_unanswered = true;
                            Some((Resend::Unanswered, request))
                        }
                        _ => None,
                    };
                    let Some((why, request)) = retry else {
                        let sends = this.retries.saturating_add(1);
                        return Poll::Ready(Err(error.or_url(|| this.origin.url()).sent(sends)));
                    };
                    let metrics = &this.inner.metrics;
                    *this.retries += 1;
                    match why {
                        Resend::Stale | Resend::Unanswered => {
                            tracing::debug!(error = %format_args!("{error:#}"), "connection died before any answer; resending on another");
                            metrics.stale_retries.inc();
                            // HTTP/1.1: only a new connection will do; HTTP/2:
                            // any connection that still takes streams.
                            let fresh_only = why == Resend::Stale;
                            begin(
                                this.inner,
                                this.origin,
                                this.send,
                                request,
                                Try::again(fresh_only, *this.retries),
                                *this.deadline,
                            )
                        }
                        Resend::Refused => {
                            let delay = refused_backoff(*this.retries);
                            if this.deadline.is_some_and(|d| Instant::now() + delay >= d) {
                                tracing::debug!(error = %format_args!("{error:#}"), "HTTP/2 stream refused; no time left to retry");
                                // `retries` counts the resend that will not be.
                                let sends = *this.retries;
                                return Poll::Ready(Err(error
                                    .or_url(|| this.origin.url())
                                    .sent(sends)));
                            }
                            tracing::debug!(error = %format_args!("{error:#}"), retry = *this.retries, ?delay, "HTTP/2 stream refused unprocessed; retrying");
                            metrics.refused_stream_retries.inc();
                            if delay.is_zero() {
                                begin(
                                    this.inner,
                                    this.origin,
                                    this.send,
                                    request,
                                    Try::again(false, *this.retries),
                                    *this.deadline,
                                )
                            } else {
                                Stage::Backoff {
                                    request: Some(request),
                                    sleep: Box::pin(tokio::time::sleep(delay)),
                                }
                            }
                        }
                    }
                }
            };
            this.stage.set(next);
        }
    }
}

/// Why a failed attempt's request is sent again.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resend {
    /// HTTP/1.1: a connection that waited in the pool was dead.
    Stale,
    /// HTTP/2: the server refused the stream unprocessed, or (idempotent
    /// requests) dropped it unanswered as it closed after a GOAWAY.
    Refused,
    /// HTTP/2: the connection closed before any answer (idempotent only, once).
    Unanswered,
}

/// The wait before resend number `retry` of a refused stream: none for the
/// first (the usual refusal, a GOAWAY, is over once another connection
/// takes the stream), then 10 ms doubling up to 250 ms, with jitter, for a
/// server that keeps refusing.
fn refused_backoff(retry: u8) -> Duration {
    if retry <= 1 {
        return Duration::ZERO;
    }
    let base = Duration::from_millis(10 << (retry - 2).min(5)).min(Duration::from_millis(250));
    base / 2 + base.mul_f64(fastrand::f64() / 2.0)
}

#[cfg(test)]
mod tests {
    use crate::{Body, Client};

    /// With a million long polls in flight, every byte of a request's future
    /// counts a million times. It was 896 B as an `async` block holding the
    /// request twice, then 648 B with the deadline kept by three layers
    /// (now by the attempt alone), then 616 B with a timer inline (112 B:
    /// now boxed, and made only when no connection keeps the deadline) and
    /// room for the first hop and a redirect chain side by side (now one or
    /// the other), then 496 B with a 48 B body (a stream's state inline, now
    /// boxed); this catches a regression to any of them.
    #[tokio::test]
    async fn a_request_in_flight_holds_its_request_and_deadline_once() {
        let client = Client::new();
        let request = http::Request::get("http://127.0.0.1:9/")
            .body(Body::empty())
            .unwrap();
        let request_size = std::mem::size_of_val(&request);
        let future = client.execute(request);
        let size = std::mem::size_of_val(&future);
        eprintln!("request future {size} B, request {request_size} B");
        assert!(
            size < 3 * request_size,
            "request future {size} B for a {request_size} B request"
        );
        assert!(size <= 480, "request future {size} B (496 B before)");
    }

    /// The request future is one type for HTTP/1.1 and HTTP/2: what the pool
    /// keeps beside an exclusive connection, held inline in the lease and in
    /// the HTTP/1.1 send future, was paid by every HTTP/2 long poll too.
    #[test]
    fn a_lease_is_a_connection_pointer_and_its_origin() {
        let size = std::mem::size_of::<crate::client::transport::Lease>();
        assert!(size <= 24, "a lease is {size} B");
    }
}
