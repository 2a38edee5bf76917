//! A circuit breaker per origin: when too large a share of recent requests to
//! an origin failed, fail the next ones fast (without sending them) for a
//! while, then let a few probes through and close again if they succeed.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

// tokio's clock (the system's, unless a test pauses it), so the window
// and the break can be tested on paused time.
use tokio::time::Instant;

use http::uri::{Authority, Scheme};
use http::{Request, Uri};

use super::{call, HttpService, ResponseFuture};
use crate::body::Body;
use crate::client::response::Response;
use crate::error::{Error, ErrorKind};

/// Circuit breaker settings. Defaults are those of .NET's standard resilience
/// handler (Polly): 10 % failures over 30 s with at least 100 requests opens
/// the circuit for 5 s.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CircuitBreakerConfig {
    /// Share of failed requests in the window that opens the circuit (0..=1). Default: 0.1.
    pub failure_ratio: f64,
    /// Fewest requests in the window before the ratio is trusted. Default: 100.
    pub minimum_throughput: u32,
    /// The sliding window the ratio is measured over. Default: 30 s.
    pub sampling_window: Duration,
    /// How long the circuit stays open before probing. Default: 5 s.
    pub break_duration: Duration,
    /// Requests let through at once while half-open; one success closes the
    /// circuit, one failure opens it again. Default: 1.
    pub half_open_probes: u32,
    /// Response statuses that count as failures. Errors count too, except
    /// those that say nothing about the origin (invalid request, cancelled).
    /// Default: 408, 429, 500, 502, 503, 504.
    pub failure_statuses: Vec<u16>,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            failure_ratio: 0.1,
            minimum_throughput: 100,
            sampling_window: Duration::from_secs(30),
            break_duration: Duration::from_secs(5),
            half_open_probes: 1,
            failure_statuses: super::default_transient_statuses(),
        }
    }
}

setters!(CircuitBreakerConfig {
    failure_ratio: f64,
    minimum_throughput: u32,
    sampling_window: Duration,
    break_duration: Duration,
    half_open_probes: u32,
    @list { failure_statuses: u16, }
});

/// The state of one origin's circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Requests flow; outcomes are counted.
    Closed,
    /// Requests fail fast with [`ErrorKind::CircuitOpen`].
    Open,
    /// The break is over: probes are let through.
    HalfOpen,
}

#[derive(Clone, PartialEq, Eq)]
struct OriginKey {
    scheme: Option<Scheme>,
    authority: Option<Authority>,
}

impl Hash for OriginKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.scheme.as_ref().map(|s| s.as_str()).hash(state);
        self.authority.hash(state);
    }
}

impl OriginKey {
    fn of(uri: &Uri) -> OriginKey {
        OriginKey {
            scheme: uri.scheme().cloned(),
            authority: uri.authority().cloned(),
        }
    }
}

impl fmt::Display for OriginKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.scheme.as_ref().map_or("", |s| s.as_str());
        let authority = self.authority.as_ref().map_or("", |a| a.as_str());
        write!(f, "{scheme}://{authority}")
    }
}

const BUCKETS: usize = 10;

#[derive(Clone, Copy, Default)]
struct Bucket {
    period: u64,
    successes: u32,
    failures: u32,
}

enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen { probes: u32 },
}

struct Breaker {
    state: Mutex<BreakerState>,
}

struct BreakerState {
    phase: Phase,
    buckets: [Bucket; BUCKETS],
}

struct Shared {
    config: CircuitBreakerConfig,
    start: Instant,
    bucket_len: Duration,
    breakers: RwLock<HashMap<OriginKey, Arc<Breaker>>>,
}

/// Opens a per-origin circuit when the failure ratio over the sampling window
/// reaches [`CircuitBreakerConfig::failure_ratio`](CircuitBreakerConfig#structfield.failure_ratio); see the module docs.
/// Clones share the circuits.
#[derive(Clone)]
pub struct CircuitBreakerLayer {
    shared: Arc<Shared>,
}

impl fmt::Debug for CircuitBreakerLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl CircuitBreakerLayer {
    /// A layer with its own circuits.
    pub fn new(config: CircuitBreakerConfig) -> Self {
        let bucket_len = (config.sampling_window / BUCKETS as u32).max(Duration::from_millis(1));
        CircuitBreakerLayer {
            shared: Arc::new(Shared {
                config,
                start: Instant::now(),
                bucket_len,
                breakers: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The state of the circuit for `uri`'s origin (closed when never used).
    pub fn state(&self, uri: &Uri) -> CircuitState {
        let Some(breaker) = self.shared.get(&OriginKey::of(uri)) else {
            return CircuitState::Closed;
        };
        let state = lock(&breaker.state);
        match state.phase {
            Phase::Closed => CircuitState::Closed,
            Phase::Open { until } if until > Instant::now() => CircuitState::Open,
            Phase::Open { .. } | Phase::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn get(&self, key: &OriginKey) -> Option<Arc<Breaker>> {
        self.breakers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    fn breaker(&self, key: OriginKey) -> Arc<Breaker> {
        if let Some(b) = self.get(&key) {
            return b;
        }
        let mut map = self.breakers.write().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry(key).or_insert_with(|| {
            Arc::new(Breaker {
                state: Mutex::new(BreakerState {
                    phase: Phase::Closed,
                    buckets: [Bucket::default(); BUCKETS],
                }),
            })
        }))
    }

    fn period(&self, now: Instant) -> u64 {
        (now.duration_since(self.start).as_nanos() / self.bucket_len.as_nanos().max(1)) as u64
    }

    /// Lets a request through (and says as what), or refuses it.
    fn admit(&self, breaker: &Breaker) -> Result<Ticket, Duration> {
        let now = Instant::now();
        let mut state = lock(&breaker.state);
        match state.phase {
            Phase::Closed => Ok(Ticket::Normal),
            Phase::Open { until } if until > now => Err(until - now),
            Phase::Open { .. } => {
                state.phase = Phase::HalfOpen { probes: 1 };
                tracing::debug!("circuit half-open: probing");
                Ok(Ticket::Probe)
            }
            Phase::HalfOpen { ref mut probes } if *probes < self.config.half_open_probes => {
                *probes += 1;
                Ok(Ticket::Probe)
            }
            Phase::HalfOpen { .. } => Err(Duration::ZERO),
        }
    }

    fn record(&self, breaker: &Breaker, ticket: Ticket, outcome: Outcome) {
        let now = Instant::now();
        let mut state = lock(&breaker.state);
        let period = self.period(now);
        if ticket == Ticket::Probe {
            if let Phase::HalfOpen { probes } = &mut state.phase {
                *probes = probes.saturating_sub(1);
                match outcome {
                    Outcome::Success => {
                        tracing::debug!("circuit closed after a good probe");
                        state.phase = Phase::Closed;
                        state.buckets = [Bucket::default(); BUCKETS];
                    }
                    Outcome::Failure => {
                        tracing::debug!("probe failed: circuit open again");
                        state.phase = Phase::Open {
                            until: now + self.config.break_duration,
                        };
                    }
                    Outcome::Ignored => {}
                }
            }
            return;
        }
        if !matches!(state.phase, Phase::Closed) || outcome == Outcome::Ignored {
            return;
        }
        let slot = &mut state.buckets[(period % BUCKETS as u64) as usize];
        if slot.period != period {
            *slot = Bucket {
                period,
                ..Bucket::default()
            };
        }
        match outcome {
            Outcome::Success => slot.successes += 1,
            Outcome::Failure => slot.failures += 1,
            Outcome::Ignored => {}
        }
        let oldest = period.saturating_sub(BUCKETS as u64 - 1);
        let (mut ok, mut failed) = (0u64, 0u64);
        for b in state.buckets.iter().filter(|b| b.period >= oldest) {
            ok += u64::from(b.successes);
            failed += u64::from(b.failures);
        }
        let total = ok + failed;
        if outcome == Outcome::Failure
            && total >= u64::from(self.config.minimum_throughput.max(1))
            && failed as f64 >= self.config.failure_ratio * total as f64
        {
            tracing::warn!(failed, total, "circuit opened");
            state.phase = Phase::Open {
                until: now + self.config.break_duration,
            };
            state.buckets = [Bucket::default(); BUCKETS];
        }
    }

    fn outcome(&self, result: &Result<Response, Error>) -> Outcome {
        match result {
            Ok(res)
                if self
                    .config
                    .failure_statuses
                    .contains(&res.status().as_u16()) =>
            {
                Outcome::Failure
            }
            Ok(_) => Outcome::Success,
            Err(e) => match e.kind() {
                ErrorKind::InvalidUrl
                | ErrorKind::InvalidRequest
                | ErrorKind::Canceled
                | ErrorKind::CircuitOpen => Outcome::Ignored,
                _ => Outcome::Failure,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ticket {
    Normal,
    Probe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Success,
    Failure,
    Ignored,
}

/// Records "ignored" if the request is dropped before its outcome, so a
/// cancelled probe does not hold the half-open slot forever.
struct Guard {
    shared: Arc<Shared>,
    breaker: Arc<Breaker>,
    ticket: Ticket,
    done: bool,
}

impl Guard {
    fn finish(mut self, outcome: Outcome) {
        self.done = true;
        self.shared.record(&self.breaker, self.ticket, outcome);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.done {
            self.shared
                .record(&self.breaker, self.ticket, Outcome::Ignored);
        }
    }
}

/// Why a request was failed fast.
#[derive(Debug)]
struct Open {
    origin: String,
    retry_in: Duration,
}

impl fmt::Display for Open {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.retry_in.is_zero() {
            write!(
                f,
                "{} is half-open and its probes are in flight",
                self.origin
            )
        } else {
            write!(
                f,
                "{} failed too often; next probe in {:?}",
                self.origin, self.retry_in
            )
        }
    }
}

impl std::error::Error for Open {}

layer_service!(
    /// The service made by [`CircuitBreakerLayer`].
    CircuitBreakerLayer => CircuitBreaker
);

impl CircuitBreakerLayer {
    fn handle<S: HttpService>(&self, inner: S, req: Request<Body>) -> ResponseFuture {
        let shared = Arc::clone(&self.shared);
        let key = OriginKey::of(req.uri());
        let breaker = shared.breaker(key.clone());
        let ticket = match shared.admit(&breaker) {
            Ok(ticket) => ticket,
            Err(retry_in) => {
                let err = Error::new(
                    ErrorKind::CircuitOpen,
                    Open {
                        origin: key.to_string(),
                        retry_in,
                    },
                );
                return Box::pin(async move { Err(err) });
            }
        };
        let guard = Guard {
            shared,
            breaker,
            ticket,
            done: false,
        };
        Box::pin(async move {
            let result = call(inner, req).await;
            let outcome = guard.shared.outcome(&result);
            guard.finish(outcome);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer() -> CircuitBreakerLayer {
        CircuitBreakerLayer::new(
            CircuitBreakerConfig::default()
                .failure_ratio(0.5)
                .minimum_throughput(4)
                .sampling_window(Duration::from_secs(10))
                .break_duration(Duration::from_secs(30)),
        )
    }

    fn send(shared: &Shared, breaker: &Breaker, outcome: Outcome) -> Result<Ticket, Duration> {
        let ticket = shared.admit(breaker)?;
        shared.record(breaker, ticket, outcome);
        Ok(ticket)
    }

    /// Failures older than the sampling window are forgotten: two failures
    /// and two more a window later are not four in a window.
    #[tokio::test(start_paused = true)]
    async fn the_window_forgets_what_is_older_than_it() {
        let l = layer();
        let uri: Uri = "http://svc".parse().unwrap();
        let b = l.shared.breaker(OriginKey::of(&uri));
        for _ in 0..2 {
            send(&l.shared, &b, Outcome::Failure).unwrap();
        }
        tokio::time::advance(Duration::from_secs(11)).await;
        for _ in 0..2 {
            send(&l.shared, &b, Outcome::Failure).unwrap();
        }
        assert_eq!(l.state(&uri), CircuitState::Closed);
        // Within one window, the fourth failure opens it.
        send(&l.shared, &b, Outcome::Failure).unwrap();
        send(&l.shared, &b, Outcome::Failure).unwrap();
        assert_eq!(l.state(&uri), CircuitState::Open);
    }

    /// Open for the break, then one probe: a failed one opens it for
    /// another break, a good one closes it.
    #[tokio::test(start_paused = true)]
    async fn the_break_ends_in_one_probe_that_decides() {
        let l = layer();
        let uri: Uri = "http://svc".parse().unwrap();
        let b = l.shared.breaker(OriginKey::of(&uri));
        for _ in 0..4 {
            send(&l.shared, &b, Outcome::Failure).unwrap();
        }
        assert_eq!(l.state(&uri), CircuitState::Open);
        let left = send(&l.shared, &b, Outcome::Success).unwrap_err();
        assert_eq!(left, Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(send(&l.shared, &b, Outcome::Success).is_err(), "still open");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(l.state(&uri), CircuitState::HalfOpen);
        let probe = l.shared.admit(&b).unwrap();
        assert_eq!(probe, Ticket::Probe);
        assert!(l.shared.admit(&b).is_err(), "one probe at a time");
        l.shared.record(&b, probe, Outcome::Failure);
        assert_eq!(l.state(&uri), CircuitState::Open);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(send(&l.shared, &b, Outcome::Success), Ok(Ticket::Probe));
        assert_eq!(l.state(&uri), CircuitState::Closed);
    }
}
