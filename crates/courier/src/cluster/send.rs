//! A cluster request's way: adaptive throttling (maybe refused locally) →
//! the topology's current replicas → relative weights brought up to date if
//! a period is over → the candidates (ejected replicas out, or all of them
//! in panic) → an order → the replica budget (one replica only when over
//! it) → the strategy, attempt by attempt, each judged by the response
//! criteria, which feed health, latency, relative weights, gray list,
//! ejection and the throttle's accept count.
//!
//! Tracing: the request runs in a `cluster.request` span (fields `cluster`,
//! `strategy`, and once known `replica` — the one whose answer is returned —
//! `attempts` and `verdict`), each attempt in a `cluster.attempt` child
//! (`replica`, `attempt`, `verdict`), so a trace shows which replicas a
//! request went to and why it ended where it did.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use tracing::field::Empty;
use tracing::Instrument;

use super::admission::budget::NoRoom;
use super::admission::criteria::Verdict;
use super::admission::refusal;
use super::attempt::latency::Latencies;
use super::attempt::strategy::{self, Start};
use super::client::Inner;
use super::order::ordering;
use super::order::state::ReplicaState;
use crate::body::Body;
use crate::client::response::Response;
use crate::client::RequestTimeout;
use crate::error::{Error, ErrorKind};
use crate::middleware::Deadline;

/// The budget when neither the request, the cluster nor the client sets one.
const FALLBACK_BUDGET: Duration = Duration::from_secs(30);

/// Sends `request` to the replicas at `target` (a path, resolved against
/// each), within its [`RequestTimeout`] (else the cluster's, else the
/// client's) and a [`Deadline`] extension if it has one.
pub(super) async fn send(
    inner: &Arc<Inner>,
    request: Request<Body>,
    target: String,
) -> Result<Response, Error> {
    let span = tracing::info_span!(
        "cluster.request",
        cluster = %inner.name,
        strategy = %inner.config.strategy,
        replica = Empty,
        attempts = Empty,
        verdict = Empty,
    );
    run(inner, request, target, span.clone())
        .instrument(span)
        .await
}

async fn run(
    inner: &Arc<Inner>,
    request: Request<Body>,
    target: String,
    span: tracing::Span,
) -> Result<Response, Error> {
    let counters = &inner.counters;
    counters.requests.fetch_add(1, Relaxed);
    let admitted = match &inner.throttle {
        Some(throttle) => {
            let mut rng = inner.rng.lock().unwrap_or_else(|e| e.into_inner());
            let Some(admitted) = throttle.admit(&mut rng) else {
                counters.throttled.fetch_add(1, Relaxed);
                return Err(refusal::throttled(&inner.name, throttle.probability()));
            };
            Some(admitted)
        }
        None => None,
    };
    let mut budget = RequestTimeout::of(&request)
        .or(inner.config.timeout)
        .or(inner.client.default_timeout())
        .unwrap_or(FALLBACK_BUDGET);
    // A total timeout around the cluster (or the caller's deadline) leaves this much.
    if let Some(deadline) = request.extensions().get::<Deadline>() {
        budget = budget.min(deadline.remaining());
    }
    let states = inner.members();
    if states.is_empty() {
        return Err(refusal::no_replicas(&inner.name));
    }
    let now = tokio::time::Instant::now();
    update_relative_weights(inner, &states, now);
    let replayable = request.body().try_clone().is_some()
        && crate::middleware::replay_is_safe(&request, inner.config.replay_non_idempotent);
    let mut max = if replayable {
        inner.config.strategy.max_replicas()
    } else {
        1
    };
    // Over the ratio now: the one attempt gets the whole budget. Under it,
    // each attempt past the first asks again when it would start.
    if max > 1 && inner.budget.as_ref().is_some_and(|b| b.over_ratio()) {
        counters.budget_limited.fetch_add(1, Relaxed);
        max = 1;
    }
    let _request_in_flight = inner.budget.as_ref().map(|b| b.begin());
    let order = {
        let (candidates, panic) = ordering::candidates(&states, &inner.weighing, now);
        if panic {
            counters.panics.fetch_add(1, Relaxed);
        }
        let mut rng = inner.rng.lock().unwrap_or_else(|e| e.into_inner());
        inner.config.ordering.order(&candidates, &mut rng, max)
    };
    // On tokio's clock, as the strategies' timers (paused time moves both).
    let deadline = tokio::time::Instant::now() + budget;
    let attempts = AtomicU64::new(0);
    let mut original = Some(request);
    let start = |i: usize, head_timeout: Duration| -> Start {
        let extra = match &inner.budget {
            Some(budget) if i > 0 => match budget.try_extra() {
                Ok(extra) => Some(extra),
                // Room comes back as an extra attempt ends: asked again.
                Err(NoRoom::InFlight) => return Start::Busy,
                Err(NoRoom::Ratio) => {
                    // Counted once: a refusal ends the request's attempts.
                    counters.budget_limited.fetch_add(1, Relaxed);
                    return Start::Refused;
                }
            },
            _ => None,
        };
        attempts.fetch_add(1, Relaxed);
        let request = match original.as_ref().and_then(crate::middleware::clone_request) {
            Some(copy) if i + 1 < order.len() => Ok(copy),
            _ => original.take().ok_or(()),
        };
        let state = Arc::clone(&order[i]);
        let attempt_span = tracing::info_span!(
            parent: &span,
            "cluster.attempt",
            replica = %state.replica,
            attempt = i as u64,
            verdict = Empty,
        );
        // Resolved here, so the attempt's future holds a URI, not a copy
        // of the target.
        let uri = state.replica.resolve(&target);
        let attempt = attempt(
            Arc::clone(inner),
            state,
            request,
            uri,
            deadline,
            head_timeout,
            span.clone(),
        );
        // The extra attempt's place in the budget is held as long as the
        // attempt runs, or until it is cancelled.
        let attempt = async move {
            let _extra = extra;
            attempt.await
        };
        Start::Attempt(Box::pin(attempt.instrument(attempt_span)))
    };
    let fork_after = inner
        .config
        .fork_delay
        .after(budget, order.len(), inner.latencies.as_ref());
    let (verdict, answer) = strategy::run(
        inner.config.strategy,
        order.len(),
        budget,
        fork_after,
        start,
    )
    .await;
    let attempts = attempts.load(Relaxed);
    counters.attempts.fetch_add(attempts, Relaxed);
    span.record("attempts", attempts);
    span.record("verdict", verdict_name(verdict));
    if let (Verdict::Accept, Some(admitted)) = (verdict, admitted) {
        admitted.accepted();
    }
    answer
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Accept => "accept",
        Verdict::Reject => "reject",
    }
}

/// One attempt on one replica, judged.
async fn attempt(
    inner: Arc<Inner>,
    state: Arc<ReplicaState>,
    request: Result<Request<Body>, ()>,
    uri: Result<http::Uri, Error>,
    deadline: tokio::time::Instant,
    head_timeout: Duration,
    request_span: tracing::Span,
) -> (Verdict, Result<Response, Error>) {
    let request = match (request, uri) {
        (Ok(mut r), Ok(uri)) => {
            *r.uri_mut() = uri;
            r
        }
        (_, Err(e)) => return (Verdict::Accept, Err(e)),
        (Err(()), _) => {
            let e = Error::msg(ErrorKind::InvalidRequest, "the body cannot be replayed");
            return (Verdict::Accept, Err(e));
        }
    };
    let mut in_flight = state.start(&inner.weighing);
    let mut timing = AnswerTime {
        latencies: inner.latencies.as_ref(),
        started: tokio::time::Instant::now(),
    };
    let started = timing.started;
    let call = inner
        .transport
        .send(&inner.client, request, deadline, head_timeout);
    let answer = match tokio::time::timeout(head_timeout, call).await {
        Ok(answer) => answer,
        Err(_) => Err(Error::msg(
            ErrorKind::Timeout,
            "no response from the replica within its share of the budget",
        )),
    };
    let verdict = inner.config.criteria.judge(&answer);
    let took = started.elapsed();
    timing.answered(verdict, took);
    let due = in_flight.judged(verdict, took, &inner.weighing);
    if due {
        maybe_eject(&inner, &state);
    }
    tracing::Span::current().record("verdict", verdict_name(verdict));
    request_span.record("replica", tracing::field::display(&state.replica));
    (verdict, answer)
}

/// Records an attempt's time in the cluster's answer times (for
/// [`ForkDelay::Quantile`](super::ForkDelay::Quantile)): an accepted answer's,
/// or, for an attempt cancelled because another answered first, the time it
/// ran, a lower bound. Without the cancelled ones only the forks that won
/// were recorded, the quantile fell, and ever more requests forked until the
/// replica budget stopped them: a fork delay at p95 forked 19 % of requests
/// against healthy replicas in the cluster bench.
struct AnswerTime<'a> {
    /// `None` once recorded or judged (or with no quantile to keep).
    latencies: Option<&'a Latencies>,
    started: tokio::time::Instant,
}

impl AnswerTime<'_> {
    fn answered(&mut self, verdict: Verdict, took: Duration) {
        if let (Verdict::Accept, Some(l)) = (verdict, self.latencies.take()) {
            l.record(took);
        }
        // A rejected answer (a fast 503) says nothing of when answers come.
        self.latencies = None;
    }
}

impl Drop for AnswerTime<'_> {
    fn drop(&mut self) {
        if let Some(l) = self.latencies {
            l.record(self.started.elapsed());
        }
    }
}

/// Ejects `state` unless the cap (a share of the current replicas) is reached.
fn maybe_eject(inner: &Inner, state: &ReplicaState) {
    let Some(config) = &inner.config.outlier else {
        return;
    };
    let _one_at_a_time = inner.ejecting.lock().unwrap_or_else(|e| e.into_inner());
    let members = inner.members();
    let now = tokio::time::Instant::now();
    let ejected = members.iter().filter(|s| s.is_ejected(now)).count();
    if ejected < config.max_ejected(members.len()) {
        if let Some(period) = state.eject(&inner.weighing) {
            tracing::debug!(cluster = %inner.name, replica = %state.replica, ?period, "cluster: replica ejected");
        }
    }
}

/// Starts a relative-weight round if the period is over (one request does
/// it; the others go on with the weights they find).
fn update_relative_weights(inner: &Inner, states: &[Arc<ReplicaState>], now: tokio::time::Instant) {
    let Some(config) = &inner.config.relative_weights else {
        return;
    };
    if !inner.config.ordering.reads_weights() {
        return;
    }
    let Ok(mut updater) = inner.relative.try_lock() else {
        return;
    };
    if updater.due(config, now) {
        updater.update(config, now, states, |s, f| s.with_relative(f));
    }
}
