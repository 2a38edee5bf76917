//! [`Stack`]: every middleware as plain configuration, assembled in the
//! right order.

use tower::Layer;

use super::{
    BoxHttpService, CircuitBreakerConfig, CircuitBreakerLayer, ConcurrencyLimitLayer,
    DecompressionConfig, DecompressionLayer, FollowRedirectLayer, FromTower, HedgeConfig,
    HedgeLayer, HttpService, PropagateDeadlineLayer, RedirectConfig, RetryConfig, RetryLayer,
    TimeoutConfig, TimeoutLayer, TowerHttpService, TraceAttemptLayer, TraceConfig, TraceLayer,
};

/// Which middleware a client gets, and how each is configured; `None` leaves
/// one out. [`ClientFactory`](crate::ClientFactory) keeps one per named client
/// (from code and from its configuration file).
///
/// The order, outermost first, is fixed so the pieces compose correctly:
///
/// 1. trace (the request span; logs)
/// 2. decompression (one `Accept-Encoding`; decodes only the final response)
/// 3. total timeout (sets the [`Deadline`](super::Deadline) every layer below honours)
/// 4. concurrency limit (logical requests in flight; waiting counts against the deadline)
/// 5. redirects (each hop is retried, hedged and traced on its own)
/// 6. cookies (with the `cookies` feature: each hop stores what it set; a
///    stack with a jar and no redirect settings follows with the default
///    ones, so no hop bypasses the jar)
/// 7. retry
/// 8. hedging
/// 9. circuit breaker (sees every attempt; a fast failure is not retried)
/// 10. attempt span and `traceparent`
/// 11. per-attempt timeout
/// 12. deadline header (`x-request-timeout-ms`)
/// 13. the client
///
/// ```
/// use std::time::Duration;
/// use courier::middleware::{RedirectConfig, RetryConfig, Stack, TimeoutConfig};
///
/// let stack = Stack::new()
///     .retry(RetryConfig::default().max_attempts(4))
///     .redirect(RedirectConfig::default())
///     .timeout(TimeoutConfig::default().total(Duration::from_secs(3)));
/// let client = courier::ServiceClient::new(courier::Client::new(), &stack);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Stack {
    /// Spans, `traceparent`, request logs.
    pub trace: Option<TraceConfig>,
    /// Response decompression.
    pub decompression: Option<DecompressionConfig>,
    /// Most requests in flight at once.
    pub concurrency_limit: Option<usize>,
    /// Total and per-attempt timeouts, and the deadline header.
    pub timeout: Option<TimeoutConfig>,
    /// Redirect following.
    pub redirect: Option<RedirectConfig>,
    /// Retries.
    pub retry: Option<RetryConfig>,
    /// Hedged attempts.
    pub hedging: Option<HedgeConfig>,
    /// Circuit breaker per origin.
    pub circuit_breaker: Option<CircuitBreakerConfig>,
    /// A cookie jar (the `cookies` feature).
    #[cfg(feature = "cookies")]
    pub cookies: Option<std::sync::Arc<super::CookieJar>>,
}

impl Stack {
    /// No middleware.
    pub fn new() -> Stack {
        Stack::default()
    }

    /// Adds tracing.
    pub fn trace(mut self, config: TraceConfig) -> Self {
        self.trace = Some(config);
        self
    }

    /// Adds decompression.
    pub fn decompression(mut self, config: DecompressionConfig) -> Self {
        self.decompression = Some(config);
        self
    }

    /// Adds a concurrency limit.
    pub fn concurrency_limit(mut self, max: usize) -> Self {
        self.concurrency_limit = Some(max);
        self
    }

    /// Adds timeouts.
    pub fn timeout(mut self, config: TimeoutConfig) -> Self {
        self.timeout = Some(config);
        self
    }

    /// Adds redirect following.
    pub fn redirect(mut self, config: RedirectConfig) -> Self {
        self.redirect = Some(config);
        self
    }

    /// Adds retries.
    pub fn retry(mut self, config: RetryConfig) -> Self {
        self.retry = Some(config);
        self
    }

    /// Adds hedging.
    pub fn hedging(mut self, config: HedgeConfig) -> Self {
        self.hedging = Some(config);
        self
    }

    /// Adds a circuit breaker.
    pub fn circuit_breaker(mut self, config: CircuitBreakerConfig) -> Self {
        self.circuit_breaker = Some(config);
        self
    }

    /// Keeps cookies in `jar` (shared with whoever else holds it).
    #[cfg(feature = "cookies")]
    pub fn cookies(mut self, jar: std::sync::Arc<super::CookieJar>) -> Self {
        self.cookies = Some(jar);
        self
    }

    /// Creates the layers, with fresh state (budgets, circuits, limit).
    pub fn layers(&self) -> StackLayers {
        let timeout = self.timeout.as_ref();
        let has_deadline = timeout.is_some_and(|t| t.total.is_some() || t.per_attempt.is_some());
        StackLayers {
            trace: self.trace.clone().map(TraceLayer::new),
            decompression: self.decompression.clone().map(DecompressionLayer::new),
            concurrency_limit: self.concurrency_limit.map(ConcurrencyLimitLayer::new),
            total_timeout: timeout.and_then(|t| t.total).map(TimeoutLayer::total),
            redirect: self
                .redirect
                .clone()
                .map(FollowRedirectLayer::new)
                .or_else(|| {
                    // A jar must see every hop (what a redirect sets, what the
                    // next hop sends): with one, the stack follows, not the
                    // client below it, which would hop past the jar.
                    #[cfg(feature = "cookies")]
                    if self.cookies.is_some() {
                        return Some(FollowRedirectLayer::default());
                    }
                    None
                }),
            #[cfg(feature = "cookies")]
            cookies: self.cookies.clone().map(super::CookieLayer::new),
            retry: self.retry.clone().map(RetryLayer::new),
            hedge: self.hedging.clone().map(HedgeLayer::new),
            circuit_breaker: self.circuit_breaker.clone().map(CircuitBreakerLayer::new),
            trace_attempt: self.trace.clone().map(TraceAttemptLayer::new),
            attempt_timeout: timeout
                .and_then(|t| t.per_attempt)
                .map(TimeoutLayer::per_attempt),
            propagate_deadline: timeout
                .and_then(|t| t.header.clone())
                .filter(|_| has_deadline)
                .map(PropagateDeadlineLayer::new),
        }
    }

    /// Wraps `inner` in the configured middleware (fresh state). `inner`
    /// is any [`TowerHttpService`]: a [`Client`](crate::Client), a courier stack, or a
    /// tower or tower-http service around one (`tower::timeout::Timeout`,
    /// whose error is a `BoxError`).
    pub fn service<S: TowerHttpService>(&self, inner: S) -> BoxHttpService {
        self.layers().service(inner)
    }
}

impl<S: TowerHttpService> Layer<S> for Stack {
    type Service = BoxHttpService;
    fn layer(&self, inner: S) -> BoxHttpService {
        self.service(inner)
    }
}

/// The layers of a [`Stack`], created once so that every service built from
/// them shares their state, and so their statistics can be read.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StackLayers {
    /// The request span.
    pub trace: Option<TraceLayer>,
    /// Decompression.
    pub decompression: Option<DecompressionLayer>,
    /// The concurrency limit.
    pub concurrency_limit: Option<ConcurrencyLimitLayer>,
    /// The total timeout.
    pub total_timeout: Option<TimeoutLayer>,
    /// Redirects.
    pub redirect: Option<FollowRedirectLayer>,
    /// Cookies.
    #[cfg(feature = "cookies")]
    pub cookies: Option<super::CookieLayer>,
    /// Retries (see [`RetryLayer::stats`]).
    pub retry: Option<RetryLayer>,
    /// Hedging (see [`HedgeLayer::stats`]).
    pub hedge: Option<HedgeLayer>,
    /// The circuit breaker (see [`CircuitBreakerLayer::state`]).
    pub circuit_breaker: Option<CircuitBreakerLayer>,
    /// The attempt span and `traceparent`.
    pub trace_attempt: Option<TraceAttemptLayer>,
    /// The per-attempt timeout.
    pub attempt_timeout: Option<TimeoutLayer>,
    /// The deadline header.
    pub propagate_deadline: Option<PropagateDeadlineLayer>,
}

impl StackLayers {
    /// Wraps `inner` in these layers, outermost first as listed on [`Stack`]
    /// (the order is middleware/order.rs's table);
    /// `inner` as for [`Stack::service`].
    pub fn service<S: TowerHttpService>(&self, inner: S) -> BoxHttpService {
        self.service_exact(FromTower::new(inner))
    }

    /// As [`service`](Self::service) for a courier service, with nothing
    /// between it and the layers (a client's requests pay for no adapter).
    pub(crate) fn service_exact<S: HttpService>(&self, inner: S) -> BoxHttpService {
        self.compose(|_| true, inner)
    }
}
