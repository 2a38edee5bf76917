//! Timeouts: a total deadline for the whole logical request (retries,
//! redirects, body included) and a per-attempt limit to the response head; the
//! time left is told to the server in a header so it can stop working on a
//! request nobody waits for any more.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Request};
use tokio::time::Instant;

use super::{call, HttpService, ResponseFuture};
use crate::body::Body;
use crate::error::{Error, ErrorKind};

/// The instant by which the whole request, body included, must be done.
///
/// Set as a request extension by the total [`TimeoutLayer`] (from the
/// request's [`RequestTimeout`](crate::RequestTimeout) when it has one, which
/// [`RequestBuilder::timeout`](crate::RequestBuilder::timeout) sets);
/// [`Client`](crate::Client)'s `tower::Service` implementation uses it as the
/// request timeout, so reading the response body is bounded by it too, and
/// [`RetryLayer`](super::RetryLayer) does not start a retry it cannot finish.
///
/// It is kept on tokio's clock (`tokio::time::Instant`), like the timers that
/// enforce it, so that it follows paused time in tests; the public API takes
/// and gives `std::time::Instant`, which is the same instant outside paused
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(Instant);

impl Deadline {
    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Deadline {
        let now = Instant::now();
        Deadline(now.checked_add(timeout).unwrap_or(now + FAR))
    }

    /// At `instant`.
    pub fn at(instant: std::time::Instant) -> Deadline {
        Deadline(Instant::from_std(instant))
    }

    /// The instant.
    pub fn instant(self) -> std::time::Instant {
        self.0.into_std()
    }

    /// At `instant` on tokio's clock (the cluster's deadline for its attempts).
    pub(crate) fn from_tokio(instant: Instant) -> Deadline {
        Deadline(instant)
    }

    /// The instant on tokio's clock, for the timers and the comparisons
    /// with `tokio::time::Instant::now()` inside the crate.
    pub(crate) fn tokio_instant(self) -> Instant {
        self.0
    }

    /// Time left (zero once passed).
    pub fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    /// Inserts `self` into the request unless an earlier deadline is already there.
    pub(crate) fn tighten(self, req: &mut Request<Body>) -> Deadline {
        let effective = match req.extensions().get::<Deadline>() {
            Some(existing) if *existing <= self => *existing,
            _ => self,
        };
        req.extensions_mut().insert(effective);
        effective
    }
}

const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Awaits `fut`, giving up at `deadline` (when there is one) with an
/// [`ErrorKind::Timeout`] error saying `what`. For the waits the total deadline
/// bounds outside an attempt (a concurrency slot, a whole `ServiceClient`
/// call), so they all fail the same way.
pub(crate) async fn within_deadline<F: Future>(
    deadline: Option<Deadline>,
    what: &'static str,
    fut: F,
) -> Result<F::Output, Error> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d.tokio_instant(), fut)
            .await
            .map_err(|_| Error::msg(ErrorKind::Timeout, what)),
        None => Ok(fut.await),
    }
}

/// The deadline of the current attempt (per-attempt timeout), internal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptDeadline(pub(crate) Instant);

/// Timeout settings for [`Stack`](super::Stack).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeoutConfig {
    /// For the whole request: every attempt, redirect and backoff, and the
    /// response body. Default: none (the client's own `timeout` still applies).
    /// A request's own timeout ([`RequestBuilder::timeout`](crate::RequestBuilder::timeout))
    /// replaces it.
    pub total: Option<Duration>,
    /// For one attempt, to its response head. Default: none.
    pub per_attempt: Option<Duration>,
    /// Header that tells the server the time left, in whole milliseconds, on
    /// every attempt that has a deadline. `None` sends nothing.
    /// Default: `x-request-timeout-ms`.
    pub header: Option<HeaderName>,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        TimeoutConfig {
            total: None,
            per_attempt: None,
            header: Some(HeaderName::from_static("x-request-timeout-ms")),
        }
    }
}

setters!(TimeoutConfig {
    @option {
        total: Duration,
        per_attempt: Duration,
        header: HeaderName,
    }
});

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Total,
    Attempt,
}

/// Fails a request with [`ErrorKind::Timeout`] when it takes longer than a
/// limit: [`TimeoutLayer::total`] (placed outside retries; also bounds the
/// body through the [`Deadline`] extension) or [`TimeoutLayer::per_attempt`]
/// (placed inside retries; bounds each attempt to its response head, and
/// never beyond the total deadline).
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Duration,
    scope: Scope,
}

impl TimeoutLayer {
    /// A deadline for the whole request.
    pub fn total(timeout: Duration) -> Self {
        TimeoutLayer {
            timeout,
            scope: Scope::Total,
        }
    }

    /// A limit for each attempt, to its response head.
    pub fn per_attempt(timeout: Duration) -> Self {
        TimeoutLayer {
            timeout,
            scope: Scope::Attempt,
        }
    }

    /// The deadline of a request that starts now, if this is a total timeout.
    pub(crate) fn deadline(&self) -> Option<Deadline> {
        (self.scope == Scope::Total).then(|| Deadline::after(self.timeout))
    }
}

layer_service!(
    /// The service made by [`TimeoutLayer`].
    TimeoutLayer => Timeout
);

/// The source of a middleware timeout error.
#[derive(Debug)]
struct Elapsed {
    scope: Scope,
    timeout: Duration,
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope {
            Scope::Total => write!(f, "total timeout of {:?} elapsed", self.timeout),
            Scope::Attempt => write!(
                f,
                "attempt timed out (per-attempt timeout {:?})",
                self.timeout
            ),
        }
    }
}

impl std::error::Error for Elapsed {}

impl TimeoutLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        let TimeoutLayer { mut timeout, scope } = *self;
        if scope == Scope::Total {
            // The request's own timeout replaces the total (as it does the
            // client's `timeout`).
            timeout = crate::client::RequestTimeout::of(&req).unwrap_or(timeout);
        }
        let own = Deadline::after(timeout);
        let at = match scope {
            Scope::Total => own.tighten(&mut req).tokio_instant(),
            Scope::Attempt => {
                let at = match req.extensions().get::<Deadline>() {
                    Some(total) => total.tokio_instant().min(own.tokio_instant()),
                    None => own.tokio_instant(),
                };
                req.extensions_mut().insert(AttemptDeadline(at));
                at
            }
        };
        Box::pin(async move {
            match tokio::time::timeout_at(at, call(inner, req)).await {
                Ok(result) => result,
                Err(_) => Err(Error::new(ErrorKind::Timeout, Elapsed { scope, timeout })),
            }
        })
    }
}

/// Sets a header (for example `x-request-timeout-ms`) to the milliseconds left
/// before the request's deadline (the earlier of the total [`Deadline`] and the
/// attempt's), so the server can give up when the client has. A request whose
/// deadline has passed fails with [`ErrorKind::Timeout`] without being sent.
/// Without a deadline the request is left alone.
#[derive(Debug, Clone)]
pub struct PropagateDeadlineLayer {
    header: HeaderName,
}

impl PropagateDeadlineLayer {
    /// Propagates in `header`.
    pub fn new(header: HeaderName) -> Self {
        PropagateDeadlineLayer { header }
    }
}

layer_service!(
    /// The service made by [`PropagateDeadlineLayer`].
    PropagateDeadlineLayer => PropagateDeadline
);

impl PropagateDeadlineLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        let total = req
            .extensions()
            .get::<Deadline>()
            .map(|d| d.tokio_instant());
        let attempt = req.extensions().get::<AttemptDeadline>().map(|d| d.0);
        let at = match (total, attempt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = at {
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Box::pin(async {
                    Err(Error::msg(
                        ErrorKind::Timeout,
                        "deadline passed before the request was sent",
                    ))
                });
            }
            // Round up so a server never sees 0 for a live request.
            let ms = left.as_micros().div_ceil(1000);
            req.headers_mut()
                .insert(self.header.clone(), HeaderValue::from(ms as u64));
        }
        Box::pin(call(inner, req))
    }
}
