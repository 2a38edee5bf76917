//! The future of one request: the attempt (checkout, send, one retry), under
//! the request's total timeout, with its metrics.
//!
//! Written by hand rather than as nested `async fn`s: every `async` layer keeps
//! its own copy of what it moves into the next one, and a long poll costs, for
//! as long as it waits, mostly the size of this future.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Timeout};

use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;

/// Stands in for "no timeout": tokio clamps far deadlines to its wheel's range.
const NO_DEADLINE: Duration = Duration::from_secs(60 * 60 * 24 * 365);

pin_project_lite::pin_project! {
    /// A request in flight: resolves to the response head or an error.
    pub(crate) struct SendFuture<F> {
        #[pin]
        attempt: Timeout<F>,
        active: Active,
        started: Instant,
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
    F: Future<Output = Result<T, Error>>,
{
    /// `deadline` ends the attempt with [`ErrorKind::Timeout`].
    pub(crate) fn new(
        metrics: Arc<Metrics>,
        started: Instant,
        deadline: Option<Instant>,
        attempt: F,
    ) -> Self {
        metrics.requests_total.inc();
        metrics.requests_active.inc();
        let deadline = deadline.unwrap_or_else(|| started + NO_DEADLINE);
        SendFuture {
            // One timer for the whole request; on expiry the attempt (and with
            // it any lease) is dropped, which closes a half-used connection.
            attempt: tokio::time::timeout_at(deadline, attempt),
            active: Active(metrics),
            started,
        }
    }
}

impl<F, T> Future for SendFuture<F>
where
    F: Future<Output = Result<T, Error>>,
{
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = match this.attempt.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(result)) => result,
            Poll::Ready(Err(_elapsed)) => Err(Error::msg(
                ErrorKind::Timeout,
                "no response within the request timeout",
            )),
        };
        let metrics = &this.active.0;
        match &result {
            Ok(_) => metrics.request_duration.record(this.started.elapsed()),
            Err(_) => metrics.requests_failed.inc(),
        }
        Poll::Ready(result)
    }
}
