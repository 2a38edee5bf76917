//! Retries with exponential backoff, jitter, `Retry-After`, and a budget.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{Request, StatusCode};
use tokio::time::Instant;

use super::budget::{Budget, BudgetConfig};
use super::timeout::Deadline;
use super::{call, clone_request, replay_is_safe, Attempts, HttpService, ResponseFuture};
use crate::body::Body;
use crate::client::response::Response;
use crate::error::{Error, ErrorKind};

/// Retry settings. Defaults follow common production practice (Polly /
/// .NET standard resilience, Envoy, gRPC): 3 attempts, backoff from 100 ms
/// doubling to 5 s with jitter, `Retry-After` honoured up to 30 s, only
/// idempotent methods, and a 20 % retry budget.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Attempts in total, the first included (1: no retries). Default: 3.
    pub max_attempts: u32,
    /// Backoff before the first retry; doubles for each further one. Default: 100 ms.
    pub base_delay: Duration,
    /// Longest backoff. Default: 5 s.
    pub max_delay: Duration,
    /// Randomise each backoff between half and all of its value ("equal
    /// jitter"), so clients that failed together do not retry together. Default: on.
    pub jitter: bool,
    /// Wait as long as a 429/503 response's `Retry-After` asks (seconds or an
    /// HTTP date) instead of the backoff. Default: on.
    pub honor_retry_after: bool,
    /// A `Retry-After` longer than this is not waited for: the response is
    /// returned as it is. Default: 30 s.
    pub max_retry_after: Duration,
    /// Also retry methods that are not idempotent (POST, PATCH) after the
    /// request may have reached the server. Off by default; a request with an
    /// `Idempotency-Key` header or the [`Idempotent`](super::Idempotent)
    /// extension is retried anyway. Connection failures (nothing was sent) and
    /// refusals ([`ErrorKind::Refused`]: the server did not process it) are
    /// retried for every method.
    pub retry_non_idempotent: bool,
    /// Response statuses that are retried. Default: 408, 429, 500, 502, 503, 504.
    pub statuses: Vec<u16>,
    /// Caps retries at a share of the traffic. `None`: no cap (not
    /// recommended: retries then multiply the load of an outage). Default: 20 %.
    pub budget: Option<BudgetConfig>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            jitter: true,
            honor_retry_after: true,
            max_retry_after: Duration::from_secs(30),
            retry_non_idempotent: false,
            statuses: super::default_transient_statuses(),
            budget: Some(BudgetConfig::default()),
        }
    }
}

setters!(RetryConfig {
    max_attempts: u32,
    base_delay: Duration,
    max_delay: Duration,
    jitter: bool,
    honor_retry_after: bool,
    max_retry_after: Duration,
    retry_non_idempotent: bool,
    @option { budget: BudgetConfig, }
    @list { statuses: u16, }
});

impl RetryConfig {
    /// The backoff before retry number `retry` (1 for the first retry).
    fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(
                1u32.checked_shl(retry.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max_delay);
        if self.jitter {
            exp / 2 + exp.mul_f64(fastrand::f64() / 2.0)
        } else {
            exp
        }
    }
}

/// Counts of what a [`RetryLayer`] did (shared by all its services).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryStats {
    /// Requests that went through the layer.
    pub requests: u64,
    /// Retries sent.
    pub retries: u64,
    /// Retries not sent because the budget was spent.
    pub budget_exhausted: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    retries: AtomicU64,
    budget_exhausted: AtomicU64,
}

/// Retries failed attempts; see [`RetryConfig`].
///
/// What is retried: errors where nothing reached the server (DNS, connect,
/// connect timeout) or the server refused the request unprocessed
/// ([`ErrorKind::Refused`]: courier's own resends of it ran out) for every
/// method; for idempotent (or marked) requests
/// also a connection that closed before the response, an attempt timeout, and
/// the configured statuses. Only buffered bodies can be replayed. A retry is
/// not started when the request's [`Deadline`] would pass during the backoff,
/// nor when the budget is spent: then the last response (or error) is
/// returned as it is. Clones of the layer (and of the services it makes)
/// share one budget.
#[derive(Clone)]
pub struct RetryLayer {
    shared: Arc<Shared>,
    gate: Option<RetryGate>,
}

/// A say from the service below on whether an answer may be retried at all,
/// asked after the layer's own rules said yes: a cluster lets through only
/// the answers none of its replicas gave acceptably (see `cluster/layers.rs`).
pub(crate) type RetryGate = Arc<dyn Fn(&Result<Response, Error>) -> bool + Send + Sync>;

struct Shared {
    config: RetryConfig,
    budget: Option<Budget>,
    counters: Counters,
}

impl RetryLayer {
    /// A layer with its own budget.
    pub fn new(config: RetryConfig) -> Self {
        RetryLayer {
            shared: Arc::new(Shared {
                budget: config.budget.as_ref().map(Budget::new),
                config,
                counters: Counters::default(),
            }),
            gate: None,
        }
    }

    /// The same layer (budget and counts shared) retrying only what `gate`
    /// also allows.
    pub(crate) fn gated(&self, gate: RetryGate) -> RetryLayer {
        RetryLayer {
            shared: Arc::clone(&self.shared),
            gate: Some(gate),
        }
    }

    /// What the layer has done so far.
    pub fn stats(&self) -> RetryStats {
        let c = &self.shared.counters;
        RetryStats {
            requests: c.requests.load(Relaxed),
            retries: c.retries.load(Relaxed),
            budget_exhausted: c.budget_exhausted.load(Relaxed),
        }
    }
}

impl std::fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryLayer")
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish()
    }
}

layer_service!(
    /// The service made by [`RetryLayer`].
    RetryLayer => Retry
);

/// Why a result may be retried.
enum Verdict {
    Done,
    Retry { after: Option<Duration> },
}

/// Nothing reached the server, or the server says it did not act on the
/// request ([`ErrorKind::Refused`]): safe to send again whatever the method.
fn is_unsent(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Dns | ErrorKind::Connect | ErrorKind::ConnectTimeout | ErrorKind::Refused
    )
}

fn is_transient(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::ConnectionClosed | ErrorKind::Timeout)
}

/// `Retry-After`: delta-seconds or an HTTP date (RFC 9110 §10.2.3).
pub(crate) fn retry_after(res: &Response) -> Option<Duration> {
    let value = res
        .headers()
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?;
    let value = value.trim();
    // delay-seconds is `1*DIGIT` (`u64`'s parser would take `+5`); past
    // `u64`, longer than any wait taken.
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

impl Shared {
    fn verdict(&self, result: &Result<Response, Error>, replay_safe: bool) -> Verdict {
        match result {
            Err(e) if is_unsent(e) || (replay_safe && is_transient(e)) => {
                Verdict::Retry { after: None }
            }
            Err(_) => Verdict::Done,
            Ok(res) if replay_safe && self.config.statuses.contains(&res.status().as_u16()) => {
                let after = match res.status() {
                    StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
                        if self.config.honor_retry_after =>
                    {
                        retry_after(res)
                    }
                    _ => None,
                };
                Verdict::Retry { after }
            }
            Ok(_) => Verdict::Done,
        }
    }
}

impl RetryLayer {
    fn handle<S: HttpService>(&self, inner: S, req: Request<Body>) -> ResponseFuture {
        let mut inner = Attempts::new(inner);
        let shared = Arc::clone(&self.shared);
        let gate = self.gate.clone();
        Box::pin(async move {
            let config = &shared.config;
            shared.counters.requests.fetch_add(1, Relaxed);
            if let Some(budget) = &shared.budget {
                budget.deposit();
            }
            let replay_safe = replay_is_safe(&req, config.retry_non_idempotent);
            let deadline = req.extensions().get::<Deadline>().copied();
            let mut req = req;
            let mut attempt = 1;
            loop {
                let next = if attempt < config.max_attempts {
                    clone_request(&req)
                } else {
                    None
                };
                let result = call(inner.next(), req).await;
                let Some(next) = next else {
                    return result;
                };
                let after = match shared.verdict(&result, replay_safe) {
                    Verdict::Retry { after } if gate.as_ref().is_none_or(|g| g(&result)) => after,
                    _ => return result,
                };
                if after.is_some_and(|a| a > config.max_retry_after) {
                    tracing::debug!(retry_after = ?after, "Retry-After too long; not retrying");
                    return result;
                }
                let delay = after.unwrap_or_else(|| config.backoff(attempt));
                if deadline.is_some_and(|d| Instant::now() + delay >= d.tokio_instant()) {
                    tracing::debug!(?delay, "no time left for a retry");
                    return result;
                }
                if let Some(budget) = &shared.budget {
                    if !budget.withdraw() {
                        shared.counters.budget_exhausted.fetch_add(1, Relaxed);
                        tracing::debug!("retry budget exhausted; not retrying");
                        return result;
                    }
                }
                shared.counters.retries.fetch_add(1, Relaxed);
                match &result {
                    Ok(res) => {
                        tracing::debug!(attempt, status = res.status().as_u16(), ?delay, "retrying")
                    }
                    Err(e) => {
                        tracing::debug!(attempt, error = %format_args!("{e:#}"), ?delay, "retrying")
                    }
                }
                // Release the connection (drain) before waiting.
                drop(result);
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                req = next;
                attempt += 1;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let c = RetryConfig {
            jitter: false,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryConfig::default()
        };
        assert_eq!(c.backoff(1), Duration::from_millis(100));
        assert_eq!(c.backoff(2), Duration::from_millis(200));
        assert_eq!(c.backoff(3), Duration::from_millis(350));
        assert_eq!(c.backoff(40), Duration::from_millis(350));
    }

    /// delay-seconds is `1*DIGIT`: a signed or padded number is neither
    /// it nor a date, so no wait is taken from it.
    #[test]
    fn retry_after_is_digits_or_a_date() {
        let after = |value: &str| {
            let res = http::Response::builder()
                .status(503)
                .header("retry-after", value)
                .body(crate::client::response::ResponseBody::empty())
                .unwrap();
            retry_after(&Response::from(res))
        };
        assert_eq!(after("5"), Some(Duration::from_secs(5)));
        assert_eq!(after("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Duration::ZERO));
        for bad in ["+5", "-5", "5s", "5, 5", ""] {
            assert_eq!(after(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn jitter_stays_within_half_to_full() {
        let c = RetryConfig::default();
        for _ in 0..100 {
            let d = c.backoff(2);
            assert!(d >= Duration::from_millis(100) && d <= Duration::from_millis(200));
        }
    }
}
