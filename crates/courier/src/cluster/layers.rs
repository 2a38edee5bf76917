//! The named client's middleware around a cluster: which layer wraps the
//! whole cluster request and which each replica attempt.
//!
//! Why a split, and this one: Vostok's ClusterClient runs a request through
//! *modules* around the whole cluster request (logging, request transforms,
//! timeout validation, whole-request retry, adaptive throttling, replica
//! budgeting) and sends each replica attempt on a *transport* (the HTTP
//! client); Finagle splits its client stack the same way (a stack above the
//! load balancer, an endpoint stack per replica), and Envoy too (HTTP
//! filters, then the router's retries over upstream hosts, with per-host
//! outlier detection). A layer goes where what it does is about the
//! logical request, or about one replica's answer:
//!
//! | layer | side | why |
//! |---|---|---|
//! | trace (`HTTP request` span) | request | one logical request; its span holds `cluster.request` |
//! | total timeout | request | bounds the whole request: every replica, the body; the cluster's budget is what is left of it |
//! | concurrency limit | request | logical requests in flight, not attempts |
//! | retry | request | the whole cluster request again, only when no replica's answer was accepted (Vostok's `RequestRetryModule`); see below |
//! | hedging | refused | the strategy forks (`forkingN`, `fork_delay = pNN` is hedging at a quantile); a hedge around it would fork forks |
//! | decompression | attempt | a replica's answer is decoded as it comes (replicas of different versions may encode differently) |
//! | redirects | attempt | a `Location` is the replica's answer: a relative one stays on that replica, within its attempt |
//! | cookies | attempt | the jar matches the replica's URL (a cluster request names a path only) |
//! | circuit breaker | attempt | per origin, so per replica: an open circuit fails the attempt at once, the criteria reject it, the next replica is tried; outlier ejection (which also keeps the replica out of the ordering) is the cluster's own breaker |
//! | trace (`HTTP attempt` span, `traceparent`) | attempt | one span per replica attempt, `http.request.resend_count` the attempt's number |
//! | per-attempt timeout, deadline header | attempt | each replica's attempt; the header says the earlier of the replica's share and the whole budget |
//!
//! Retry with a cluster is Vostok's whole-request retry: after the strategy
//! ends with no accepted answer (every replica tried rejected it, or there
//! was none), and only then, the retry layer sends the whole cluster request
//! again after its backoff, within the total deadline and its budget. A
//! request the cluster refused locally (adaptive throttling) is not retried,
//! nor an answer the criteria accepted (a 503 with the `dont-retry` header).
//! Load: at most `max_attempts` × the strategy's replicas per request, held
//! in practice by the retry budget (20 %) on top of the replica budget (1.2
//! attempts per cluster request); Vostok keeps it for small clusters that
//! can be wholly unavailable for a moment (leader ensembles), and so should
//! its users: `retry = false` for a large cluster.

use std::sync::Arc;

use super::admission::criteria::{ResponseCriteria, Verdict};
use super::admission::refusal::is_throttled;
use crate::client::response::Response;
use crate::client::Client;
use crate::error::Error;
use crate::middleware::{BoxHttpService, HttpService, RetryGate, Side, Slot, StackLayers};

/// Fails with [`ErrorKind::Config`](crate::ErrorKind::Config) for a layer
/// the order table refuses around a cluster (hedging).
pub(crate) fn check(name: &str, layers: &StackLayers) -> Result<(), Error> {
    match layers
        .slots()
        .into_iter()
        .find(|s| s.side() == Side::Refused)
    {
        Some(slot) => Err(crate::error::config_error(refused(name, slot))),
        None => Ok(()),
    }
}

/// Why `slot` has no place around a cluster, and what to do instead.
fn refused(name: &str, slot: Slot) -> String {
    match slot {
        Slot::Hedge => format!(
            "client {name:?}: hedging with a cluster: the cluster's strategy already sends the \
             request to another replica when one is slow (strategy = \"forkingN\"; fork_delay = \
             \"p95\" forks at a quantile of recent answers, as a hedge would); remove hedging \
             (hedging = false for this client)"
        ),
        other => format!(
            "client {name:?}: {} has no place around a cluster",
            other.name()
        ),
    }
}

/// The request side around `core` (trace, total timeout, concurrency limit,
/// whole-request retry: the order table's `Side::Request`), outermost first;
/// `None` when there is none.
pub(super) fn front<S: HttpService>(
    layers: &StackLayers,
    criteria: &ResponseCriteria,
    core: S,
) -> Option<BoxHttpService> {
    if !layers.has(Side::Request) {
        return None;
    }
    let criteria = criteria.clone();
    let gate: RetryGate = Arc::new(move |answer| may_retry(&criteria, answer));
    let mut layers = layers.clone();
    layers.retry = layers.retry.map(|r| r.gated(Arc::clone(&gate)));
    Some(layers.compose(|side| side == Side::Request, core))
}

/// Whether the whole cluster request may be sent again after `answer`: only
/// when no replica's answer was accepted, and not when the cluster refused
/// it locally (throttling sheds load; a retry would bring it back).
fn may_retry(criteria: &ResponseCriteria, answer: &Result<Response, Error>) -> bool {
    !matches!(answer, Err(e) if is_throttled(e)) && criteria.judge(answer) == Verdict::Reject
}

/// The attempt side over `client` (decompression, redirects, cookies,
/// circuit breaker, attempt span, per-attempt timeout, deadline header: the
/// order table's `Side::Attempt`), outermost first; `None` when there is none.
pub(super) fn attempt(layers: &StackLayers, client: Client) -> Option<BoxHttpService> {
    if !layers.has(Side::Attempt) {
        return None;
    }
    Some(layers.compose(
        |side| side == Side::Attempt,
        super::attempt::transport::AttemptSend(client),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::admission::refusal;
    use crate::error::ErrorKind;

    #[test]
    fn only_answers_no_replica_accepted_are_retried_and_never_a_local_refusal() {
        let c = ResponseCriteria::default();
        assert!(!may_retry(&c, &Err(refusal::throttled("svc", 0.5))));
        assert!(may_retry(&c, &Err(refusal::no_replicas("svc"))));
        assert!(may_retry(
            &c,
            &Err(Error::msg(ErrorKind::Timeout, "budget"))
        ));
        let own = Error::msg(ErrorKind::InvalidRequest, "the request's own fault");
        assert!(!may_retry(&c, &Err(own)));
    }
}
