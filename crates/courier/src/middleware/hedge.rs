//! Hedged requests: when an attempt has not answered after a delay, send
//! another copy; the first good response wins and the others are cancelled
//! (their futures dropped: an HTTP/1.1 connection in the middle of a request is
//! closed, an HTTP/2 stream is reset with CANCEL).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use http::Request;

use super::budget::{Budget, BudgetConfig};
use super::{call, clone_request, replay_is_safe, Attempts, HttpService, ResponseFuture};
use crate::body::Body;
use crate::client::response::Response;
use crate::error::Error;

/// Hedging settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HedgeConfig {
    /// How long an attempt may go unanswered before another is sent; set it
    /// near the p95 latency of the service. Default: 2 s (.NET's standard
    /// hedging handler).
    pub delay: Duration,
    /// Attempts at most, the first included. Default: 2.
    pub max_attempts: u32,
    /// Also hedge methods that are not idempotent (a request with an
    /// `Idempotency-Key` header or the [`Idempotent`](super::Idempotent)
    /// extension is hedged anyway). Default: off.
    pub hedge_non_idempotent: bool,
    /// Responses with these statuses are not "good": another attempt still
    /// running may win instead. Default: 408, 429, 500, 502, 503, 504.
    pub failure_statuses: Vec<u16>,
    /// Caps the extra attempts at a share of the traffic. Default: 10 %.
    pub budget: Option<BudgetConfig>,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig {
            delay: Duration::from_secs(2),
            max_attempts: 2,
            hedge_non_idempotent: false,
            failure_statuses: super::default_transient_statuses(),
            budget: Some(BudgetConfig::default().ratio(0.1)),
        }
    }
}

setters!(HedgeConfig {
    delay: Duration,
    max_attempts: u32,
    hedge_non_idempotent: bool,
    @option { budget: BudgetConfig, }
    @list { failure_statuses: u16, }
});

/// Counts of what a [`HedgeLayer`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeStats {
    /// Requests that went through the layer.
    pub requests: u64,
    /// Extra attempts sent.
    pub hedges: u64,
    /// Requests answered by an extra attempt rather than the first.
    pub hedges_won: u64,
}

struct Shared {
    config: HedgeConfig,
    budget: Option<Budget>,
    requests: AtomicU64,
    hedges: AtomicU64,
    won: AtomicU64,
}

/// Sends another copy of a slow request; see [`HedgeConfig`]. Only requests
/// that are safe to replay (idempotent or marked, with a buffered body) are
/// hedged. An attempt that fails is not replaced before the delay: the retry
/// layer handles failures, hedging handles slowness.
#[derive(Clone)]
pub struct HedgeLayer {
    shared: Arc<Shared>,
}

impl HedgeLayer {
    /// A layer with its own budget.
    pub fn new(config: HedgeConfig) -> Self {
        HedgeLayer {
            shared: Arc::new(Shared {
                budget: config.budget.as_ref().map(Budget::new),
                config,
                requests: AtomicU64::new(0),
                hedges: AtomicU64::new(0),
                won: AtomicU64::new(0),
            }),
        }
    }

    /// What the layer has done so far.
    pub fn stats(&self) -> HedgeStats {
        HedgeStats {
            requests: self.shared.requests.load(Relaxed),
            hedges: self.shared.hedges.load(Relaxed),
            hedges_won: self.shared.won.load(Relaxed),
        }
    }
}

impl std::fmt::Debug for HedgeLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HedgeLayer")
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish()
    }
}

layer_service!(
    /// The service made by [`HedgeLayer`].
    HedgeLayer => Hedge
);

type Attempt = Pin<Box<dyn Future<Output = Result<Response, Error>> + Send>>;

// The big variant is the common one; boxing it would allocate per request.
#[allow(clippy::large_enum_variant)]
enum Event {
    Done(usize, Result<Response, Error>),
    Launch,
}

impl Shared {
    fn good(&self, result: &Result<Response, Error>) -> bool {
        matches!(result, Ok(res) if !self.config.failure_statuses.contains(&res.status().as_u16()))
    }
}

impl HedgeLayer {
    fn handle<S: HttpService>(&self, inner: S, req: Request<Body>) -> ResponseFuture {
        let shared = Arc::clone(&self.shared);
        shared.requests.fetch_add(1, Relaxed);
        let template = if shared.config.max_attempts >= 2
            && replay_is_safe(&req, shared.config.hedge_non_idempotent)
        {
            clone_request(&req)
        } else {
            None
        };
        let Some(template) = template else {
            return Box::pin(call(inner, req));
        };
        if let Some(budget) = &shared.budget {
            budget.deposit();
        }
        let mut inner = Attempts::new(inner);
        Box::pin(async move {
            let config = &shared.config;
            // Index in `running` -> attempt number, to know who won.
            let mut running: Vec<(u32, Attempt)> = vec![(0, Box::pin(call(inner.next(), req)))];
            let mut launched = 1u32;
            let mut fallback: Option<Result<Response, Error>> = None;
            let mut timer = Box::pin(tokio::time::sleep(config.delay));
            loop {
                let event = std::future::poll_fn(|cx| {
                    for (i, (_, attempt)) in running.iter_mut().enumerate() {
                        if let Poll::Ready(result) = attempt.as_mut().poll(cx) {
                            return Poll::Ready(Event::Done(i, result));
                        }
                    }
                    if launched < config.max_attempts && timer.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Event::Launch);
                    }
                    Poll::Pending
                })
                .await;
                match event {
                    Event::Done(i, result) => {
                        let (n, _) = running.swap_remove(i);
                        if shared.good(&result) {
                            if n > 0 {
                                shared.won.fetch_add(1, Relaxed);
                            }
                            if !running.is_empty() {
                                tracing::debug!(
                                    attempt = n,
                                    "hedged attempt won; cancelling the others"
                                );
                            }
                            // Dropping `running` cancels the losers.
                            return result;
                        }
                        // Keep a response over an error (it may carry Retry-After).
                        fallback = match (fallback, result) {
                            (Some(Ok(kept)), Err(_)) => Some(Ok(kept)),
                            (_, newer) => Some(newer),
                        };
                        if running.is_empty() {
                            return fallback.expect("just set");
                        }
                    }
                    Event::Launch => {
                        if shared.budget.as_ref().is_some_and(|b| !b.withdraw()) {
                            tracing::debug!("hedging budget exhausted");
                            launched = config.max_attempts;
                            continue;
                        }
                        let Some(copy) = clone_request(&template) else {
                            launched = config.max_attempts;
                            continue;
                        };
                        shared.hedges.fetch_add(1, Relaxed);
                        tracing::debug!(attempt = launched, delay = ?config.delay, "sending hedged attempt");
                        running.push((launched, Box::pin(call(inner.next(), copy))));
                        launched += 1;
                        timer
                            .as_mut()
                            .reset(tokio::time::Instant::now() + config.delay);
                    }
                }
            }
        })
    }
}
