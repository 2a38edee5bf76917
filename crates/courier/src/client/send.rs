//! The future of one request: the attempt (checkout, send, one retry), under
//! the request's total timeout, with its metrics.
//!
//! Written by hand rather than as nested `async fn`s: every `async` layer keeps
//! its own copy of what it moves into the next one, and a long poll costs, for
//! as long as it waits, mostly the size of this future.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::time::{Instant, Sleep};

use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;
use crate::proto::{h1, h2};

/// A request future whose deadline the connection it is on may keep.
pub(crate) trait DeadlineKept {
    /// The deadline is kept (and the task woken at it) by the connection
    /// the request is on now: no timer of the request's own is needed.
    fn deadline_kept(&self) -> bool;

    /// The request's deadline, if it has one. Kept by the attempt alone:
    /// every layer's copy of it was 16 B more per request in flight.
    fn deadline(&self) -> Option<Instant>;
}

pin_project_lite::pin_project! {
    /// A request in flight: resolves to the response head or an error.
    pub(crate) struct SendFuture<F> {
        #[pin]
        attempt: F,
        // The request's own timer, made only when it waits with no
        // connection keeping its deadline (in line for a connection,
        // HTTP/2): one timer for the whole request; on expiry the attempt
        // (and with it any lease) is dropped, which closes a half-used
        // connection. A request with no deadline has none.
        // Boxed: a request on a connection that keeps its deadline (the
        // usual case, HTTP/1.1 and HTTP/2 alike) has none, and a long poll
        // should not carry its 112 B.
        timer: Option<Pin<Box<Sleep>>>,
        active: Active,
    }
}

/// Counts the request as active from creation until the future is dropped.
struct Active(Arc<Metrics>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.requests_active.dec();
    }
}

impl<F, T> SendFuture<F>
where
    F: Future<Output = Result<T, Error>> + DeadlineKept,
{
    /// The attempt's [`deadline`](DeadlineKept::deadline) ends it with
    /// [`ErrorKind::Timeout`]. The attempt records the request's duration
    /// when it is answered.
    // Inlined: the attempt (~600 B) is moved into place, not through a call.
    #[inline]
    pub(crate) fn new(metrics: Arc<Metrics>, attempt: F) -> Self {
        metrics.requests_total.inc();
        metrics.requests_active.inc();
        SendFuture {
            attempt,
            timer: None,
            active: Active(metrics),
        }
    }
}

fn timed_out() -> Error {
    Error::msg(ErrorKind::Timeout, "no response within the request timeout")
}

impl<F, T> Future for SendFuture<F>
where
    F: Future<Output = Result<T, Error>> + DeadlineKept,
{
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        // Looked at by reference where the attempt put it: a result that
        // is returned is returned whole, not taken apart and built again
        // (each a copy of its ~600 B). The attempt records the duration,
        // where it looks at the answer already.
        let poll = this.attempt.as_mut().poll(cx);
        let error = match &poll {
            Poll::Ready(Ok(_)) => return poll,
            // The connection's timer fired: the same error as the request's own.
            Poll::Ready(Err(e)) if h1::deadline::is_passed(e) || h2::deadline::is_passed(e) => {
                timed_out()
            }
            Poll::Ready(Err(_)) => {
                this.active.0.requests_failed.inc();
                return poll;
            }
            Poll::Pending if this.attempt.as_ref().get_ref().deadline_kept() => {
                return Poll::Pending
            }
            Poll::Pending => {
                if this.timer.is_none() {
                    let Some(deadline) = this.attempt.as_ref().get_ref().deadline() else {
                        return Poll::Pending;
                    };
                    *this.timer = Some(Box::pin(tokio::time::sleep_until(deadline)));
                }
                if let Some(timer) = this.timer.as_mut() {
                    ready!(timer.as_mut().poll(cx));
                }
                timed_out()
            }
        };
        this.active.0.requests_failed.inc();
        Poll::Ready(Err(error))
    }
}

impl<F: DeadlineKept> DeadlineKept for SendFuture<F> {
    fn deadline_kept(&self) -> bool {
        self.attempt.deadline_kept()
    }

    fn deadline(&self) -> Option<Instant> {
        self.attempt.deadline()
    }
}
