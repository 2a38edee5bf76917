//! Middleware: tower layers around a [`Client`](crate::Client).
//!
//! [`Client`](crate::Client) implements
//! `tower::Service<http::Request<courier::Body>>` with
//! `Response = courier::Response` and `Error = courier::Error`, and every layer
//! here keeps those types, so they stack in any order with each other and with
//! any third-party tower layer that is generic over the response type:
//!
//! | layer | what it does |
//! |---|---|
//! | [`TraceLayer`] / [`TraceAttemptLayer`] | a `tracing` span per request and per attempt (OpenTelemetry field names), W3C `traceparent`, redacted request logs |
//! | [`DecompressionLayer`] | `Accept-Encoding` + streaming gzip / deflate / brotli / zstd decoding with a size limit |
//! | [`ConcurrencyLimitLayer`] | at most N requests in flight (until the end of their bodies) |
//! | [`TimeoutLayer`] | total or per-attempt timeout; [`PropagateDeadlineLayer`] tells the server the time left |
//! | [`FollowRedirectLayer`] | redirects with RFC 9110 method rewriting, credential stripping across origins, no downgrade |
//! | [`RetryLayer`] | exponential backoff with jitter, `Retry-After`, idempotent methods only, a retry budget |
//! | [`HedgeLayer`] | a second attempt after a delay; the first good answer wins, the other is cancelled |
//! | [`CircuitBreakerLayer`] | per origin: opens on a failure ratio, fails fast, half-open probes |
//!
//! A plain [`Client`](crate::Client) already follows redirects and decodes
//! bodies by default, with the same code as [`FollowRedirectLayer`] and
//! [`DecompressionLayer`]; the layers are for a stack that wants other
//! settings, and the requests they send turn the client's own off, so
//! nothing is followed or decoded twice.
//!
//! [`Stack`] assembles them in the right order from plain configuration, which is
//! what [`ClientFactory`](crate::ClientFactory) does for each named client:
//!
//! ```no_run
//! use std::time::Duration;
//! use courier::middleware::{RetryConfig, Stack, TimeoutConfig};
//!
//! # async fn run() -> Result<(), courier::Error> {
//! let stack = Stack::new()
//!     .trace(Default::default())
//!     .timeout(TimeoutConfig::default().total(Duration::from_secs(2)).per_attempt(Duration::from_millis(500)))
//!     .retry(RetryConfig::default());
//! let client = courier::ServiceClient::new(courier::Client::new(), &stack);
//! let res = client.get("http://127.0.0.1:8080/json/64").send().await?;
//! # Ok(()) }
//! ```
//!
//! Or by hand with `tower::ServiceBuilder` (outermost first):
//!
//! ```no_run
//! use tower::{ServiceBuilder, ServiceExt};
//! use courier::middleware::{RetryConfig, RetryLayer, TraceLayer, TraceAttemptLayer};
//!
//! # async fn run() -> Result<(), courier::Error> {
//! let svc = ServiceBuilder::new()
//!     .layer(TraceLayer::default())
//!     .layer(RetryLayer::new(RetryConfig::default()))
//!     .layer(TraceAttemptLayer::default())
//!     .service(courier::Client::new());
//! let req = http::Request::get("http://127.0.0.1:8080/").body(courier::Body::empty()).unwrap();
//! let res = svc.oneshot(req).await?;
//! # Ok(()) }
//! ```
//!
//! A layer that must replay a request (retry, hedging, 307/308 redirects) can
//! do so only with a buffered body; a streaming body is sent once.

/// Chainable setters for a configuration struct, one per field and named
/// after it (`RetryConfig::default().max_attempts(4).budget(None)`), so the
/// structs can be `#[non_exhaustive]` and still be built outside the crate.
/// `@option` fields take `impl Into<Option<T>>` (a value, or `None` to turn
/// the feature off); `@list` fields take any `IntoIterator`.
macro_rules! setters {
    ($config:ident {
        $($field:ident: $ty:ty,)*
        $(@option { $($ofield:ident: $oty:ty,)* })?
        $(@list { $($lfield:ident: $lty:ty,)* })?
    }) => {
        impl $config {
            $(
                #[doc = concat!("Sets the [`", stringify!($field), "`](#structfield.", stringify!($field), ") field.")]
                #[must_use]
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
            $($(
                #[doc = concat!("Sets the [`", stringify!($ofield), "`](#structfield.", stringify!($ofield), ") field: a value, or `None`.")]
                #[must_use]
                pub fn $ofield(mut self, $ofield: impl Into<Option<$oty>>) -> Self {
                    self.$ofield = $ofield.into();
                    self
                }
            )*)?
            $($(
                #[doc = concat!("Sets the [`", stringify!($lfield), "`](#structfield.", stringify!($lfield), ") field.")]
                #[must_use]
                pub fn $lfield(mut self, $lfield: impl IntoIterator<Item = $lty>) -> Self {
                    self.$lfield = $lfield.into_iter().collect();
                    self
                }
            )*)?
        }
    };
}

/// The tower plumbing every layer here but the concurrency limit shares:
/// the layer makes `$service { inner, layer }` (a clone of itself);
/// `poll_ready` is the inner service's, so back-pressure from below (a
/// [`ConcurrencyLimit`]) reaches the layers outside (`buffer`, `load_shed`,
/// `balance`); `call` hands the service `poll_ready` made ready to the layer's
/// own `handle(&self, inner, req)`, leaving a clone in its place (tower's "be
/// careful when cloning inner services": the clone is not ready, the
/// original is).
macro_rules! layer_service {
    ($(#[$doc:meta])* $layer:ident => $service:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $service<S> {
            inner: S,
            layer: $layer,
        }

        impl<S> tower::Layer<S> for $layer {
            type Service = $service<S>;
            fn layer(&self, inner: S) -> $service<S> {
                $service {
                    inner,
                    layer: self.clone(),
                }
            }
        }

        impl<S: $crate::middleware::HttpService> tower::Service<http::Request<$crate::Body>>
            for $service<S>
        {
            type Response = $crate::Response;
            type Error = $crate::Error;
            type Future = $crate::middleware::ResponseFuture;

            fn poll_ready(
                &mut self,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), $crate::Error>> {
                self.inner.poll_ready(cx)
            }

            fn call(&mut self, req: http::Request<$crate::Body>) -> Self::Future {
                let inner = $crate::middleware::take_ready(&mut self.inner);
                self.layer.handle(inner, req)
            }
        }
    };
}

mod budget;
mod circuit;
mod compat;
#[cfg(feature = "cookies")]
mod cookies;
mod decompress;
mod hedge;
mod limit;
mod order;
mod otel;
mod redirect;
mod request_metrics;
mod retry;
mod stack;
mod timeout;
mod trace;

use std::future::Future;
use std::pin::Pin;

use http::{HeaderName, Request};

use crate::body::Body;
pub(crate) use crate::client::is_idempotent;
use crate::client::response::Response;
use crate::error::Error;

pub use budget::BudgetConfig;
pub use circuit::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerLayer, CircuitState};
pub use compat::{
    AsHttp, AsHttpFuture, AsHttpLayer, FromTower, FromTowerFuture, FromTowerLayer, IntoResponse,
    TowerHttpService,
};
#[cfg(feature = "cookies")]
pub use cookies::{CookieJar, CookieLayer, CookieLimits, CookieStats, Cookies};
pub use decompress::{Decompression, DecompressionConfig, DecompressionLayer};
pub use hedge::{Hedge, HedgeConfig, HedgeLayer, HedgeStats};
pub use limit::{ConcurrencyLimit, ConcurrencyLimitLayer};
pub use redirect::{FollowRedirect, FollowRedirectLayer, RedirectConfig, Redirects};
pub use retry::{Retry, RetryConfig, RetryLayer, RetryStats};
pub use stack::{Stack, StackLayers};
pub use timeout::{
    Deadline, PropagateDeadline, PropagateDeadlineLayer, Timeout, TimeoutConfig, TimeoutLayer,
};
pub use trace::{Trace, TraceAttempt, TraceAttemptLayer, TraceConfig, TraceContext, TraceLayer};

#[cfg(test)]
pub(crate) use order::order_table;
pub(crate) use order::{Side, Slot};
pub(crate) use redirect::resolve as resolve_reference;
#[cfg(feature = "metrics")]
pub(crate) use request_metrics::SeriesSnapshot;
pub(crate) use retry::RetryGate;
pub(crate) use timeout::{within_deadline, AttemptDeadline};

/// The future every courier service returns.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response, Error>> + Send>>;

/// A type-erased, cloneable courier service: what [`Stack`] builds.
pub type BoxHttpService = tower::util::BoxCloneSyncService<Request<Body>, Response, Error>;

/// Bounds every layer here needs from the service it wraps.
pub trait HttpService:
    tower::Service<Request<Body>, Response = Response, Error = Error, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> HttpService for S where
    S: tower::Service<Request<Body>, Response = Response, Error = Error, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static
{
}

// Defined beside the request builder that sets it (`idempotent()`).
pub use crate::client::Idempotent;

static IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Whether sending this request twice is known to be harmless.
pub(crate) fn replay_is_safe(req: &Request<Body>, allow_any_method: bool) -> bool {
    allow_any_method
        || is_idempotent(req.method())
        || req.extensions().get::<Idempotent>().is_some()
        || req.headers().contains_key(&IDEMPOTENCY_KEY)
}

/// A copy of the request (extensions included) if its body is buffered.
pub(crate) fn clone_request(req: &Request<Body>) -> Option<Request<Body>> {
    let body = req.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    *copy.extensions_mut() = req.extensions().clone();
    Some(copy)
}

/// Statuses that mean "try again" by default: 408, 429 and the 5xx that are
/// not deterministic (501 Not Implemented and 505 are left out).
pub(crate) fn default_transient_statuses() -> Vec<u16> {
    vec![408, 429, 500, 502, 503, 504]
}

/// Calls `inner` once it is ready: at once for the service `poll_ready`
/// readied, after waiting for a clone made for a further attempt.
pub(crate) async fn call<S: HttpService>(inner: S, req: Request<Body>) -> Result<Response, Error> {
    use tower::ServiceExt;
    inner.oneshot(req).await
}

/// The service `poll_ready` made ready, leaving a clone (not ready yet) in
/// its place for the next request.
pub(crate) fn take_ready<S: Clone>(slot: &mut S) -> S {
    let clone = slot.clone();
    std::mem::replace(slot, clone)
}

/// The inner services for the attempts of one request (retries, hedges,
/// redirect hops): the first is the one `poll_ready` made ready, each later
/// one a clone that [`call`] waits on in turn, so a limit below counts every
/// attempt.
pub(crate) struct Attempts<S> {
    ready: Option<S>,
    spare: S,
}

impl<S: Clone> Attempts<S> {
    pub(crate) fn new(ready: S) -> Self {
        Attempts {
            spare: ready.clone(),
            ready: Some(ready),
        }
    }

    pub(crate) fn next(&mut self) -> S {
        self.ready.take().unwrap_or_else(|| self.spare.clone())
    }
}

#[cfg(test)]
mod backpressure_tests;
