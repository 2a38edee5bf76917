//! A cluster's numbers ([`ClusterClient::snapshot`]) through the `metrics`
//! facade: per replica (labels `client`, `replica`) the gauges that decide
//! where requests go and the counters of what the replica did with them;
//! per cluster (label `client`) its requests, attempts and local refusals.
//!
//! Why a file of its own: the pool's export reads one flat snapshot, a
//! cluster's is a list whose members come and go with its topology, so its
//! deltas are kept per replica, and a replica that left has its gauges
//! zeroed once (a series cannot be removed through the facade) rather than
//! showing its last weight forever. The cluster keeps its counters in
//! atomics and its adaptive figures behind the short per-replica lock
//! requests take anyway; the exporter reads them once per export, so
//! nothing is added to the request path.

use std::collections::HashMap;

use metrics::{counter, gauge, Label, Unit};

use super::describe::Description;
use super::describe::Kind::{Counter, Gauge};

use crate::cluster::{ClusterSnapshot, Replica, ReplicaSnapshot};

const WEIGHT: &str = "courier.cluster.replica.weight";
const HEALTH: &str = "courier.cluster.replica.health";
const RELATIVE_WEIGHT: &str = "courier.cluster.replica.relative_weight";
const LATENCY: &str = "courier.cluster.replica.latency_ewma";
const RECENT_LATENCY: &str = "courier.cluster.replica.recent_latency";
const RECENT_WEIGHT: &str = "courier.cluster.replica.recent_weight";
const IN_FLIGHT: &str = "courier.cluster.replica.in_flight";
const EJECTED: &str = "courier.cluster.replica.ejected";
const GRAY: &str = "courier.cluster.replica.gray_listed";
const VERDICTS: &str = "courier.cluster.replica.verdicts_total";
const CANCELLED: &str = "courier.cluster.replica.cancelled_total";
const EJECTIONS: &str = "courier.cluster.replica.ejections_total";
const REQUESTS: &str = "courier.cluster.requests_total";
const ATTEMPTS: &str = "courier.cluster.attempts_total";
const THROTTLED: &str = "courier.cluster.throttled_total";
const BUDGET_LIMITED: &str = "courier.cluster.replica_budget.limited_total";
const PANICS: &str = "courier.cluster.panics_total";
const THROTTLE_PROBABILITY: &str = "courier.cluster.throttle.probability";
const BUDGET_RATIO: &str = "courier.cluster.replica_budget.ratio";

/// What the previous export of a cluster saw, for deltas.
#[derive(Debug, Default)]
pub(super) struct Last {
    cluster: [u64; 5],
    replicas: HashMap<Replica, [u64; 4]>,
}

fn cluster_counts(s: &ClusterSnapshot) -> [u64; 5] {
    [
        s.requests,
        s.attempts,
        s.throttled,
        s.budget_limited,
        s.panics,
    ]
}

fn replica_counts(r: &ReplicaSnapshot) -> [u64; 4] {
    [r.accepted, r.failures, r.cancelled, r.ejections]
}

/// `now − before`, or `now` if the counter started again (a replica that
/// left the topology and came back has a fresh state).
fn delta(now: u64, before: u64) -> u64 {
    now.checked_sub(before).unwrap_or(now)
}

/// Records `now` (gauges, and counters as deltas since `last`); returns
/// what the next export compares with.
pub(super) fn record(client: &str, now: &ClusterSnapshot, last: Option<&Last>) -> Last {
    let empty = Last::default();
    let last = last.unwrap_or(&empty);
    let counts = cluster_counts(now);
    for (i, metric) in [REQUESTS, ATTEMPTS, THROTTLED, BUDGET_LIMITED, PANICS]
        .into_iter()
        .enumerate()
    {
        counter!(metric, "client" => client.to_owned())
            .increment(delta(counts[i], last.cluster[i]));
    }
    gauge!(THROTTLE_PROBABILITY, "client" => client.to_owned()).set(now.throttle_probability);
    gauge!(BUDGET_RATIO, "client" => client.to_owned()).set(now.replica_budget_ratio);

    let mut replicas = HashMap::with_capacity(now.replicas.len());
    for r in &now.replicas {
        let labels = labels(client, &r.replica);
        let g = |metric: &'static str, value: f64| gauge!(metric, labels.clone()).set(value);
        g(WEIGHT, r.weight);
        g(HEALTH, r.health);
        g(RELATIVE_WEIGHT, r.relative_weight);
        g(LATENCY, r.latency_ewma.as_secs_f64());
        g(RECENT_LATENCY, r.recent_latency.as_secs_f64());
        g(RECENT_WEIGHT, r.recent_weight);
        g(IN_FLIGHT, r.in_flight as f64);
        g(EJECTED, f64::from(u8::from(r.ejected)));
        g(GRAY, f64::from(u8::from(r.gray_listed)));
        let counts = replica_counts(r);
        let before = last.replicas.get(&r.replica).copied().unwrap_or_default();
        let c = |metric: &'static str, verdict: Option<&'static str>, i: usize| {
            let n = delta(counts[i], before[i]);
            let mut labels = labels.clone();
            if let Some(v) = verdict {
                labels.push(Label::new("verdict", v));
            }
            counter!(metric, labels).increment(n);
        };
        c(VERDICTS, Some("accepted"), 0);
        c(VERDICTS, Some("rejected"), 1);
        c(CANCELLED, None, 2);
        c(EJECTIONS, None, 3);
        replicas.insert(r.replica.clone(), counts);
    }
    // Replicas that left: nothing goes to them any more.
    for gone in last.replicas.keys().filter(|r| !replicas.contains_key(*r)) {
        for metric in [WEIGHT, IN_FLIGHT] {
            gauge!(metric, labels(client, gone)).set(0.0);
        }
    }
    Last {
        cluster: counts,
        replicas,
    }
}

fn labels(client: &str, replica: &Replica) -> Vec<Label> {
    vec![
        Label::new("client", client.to_owned()),
        Label::new("replica", replica.to_string()),
    ]
}

/// A cluster's metrics, described once per exporter that has a cluster.
pub(super) const DESCRIPTIONS: &[Description] = &[
    (WEIGHT, Gauge, Unit::Count, "The replica's weight in the ordering: health x recent weight (x relative weight), 0 when ejected or gray-listed"),
    (HEALTH, Gauge, Unit::Count, "The replica's adaptive health, 0.001 to 1"),
    (RELATIVE_WEIGHT, Gauge, Unit::Count, "The replica's relative (latency) weight, 0 to 1"),
    (LATENCY, Gauge, Unit::Seconds, "Peak EWMA of the replica's response times"),
    (RECENT_LATENCY, Gauge, Unit::Seconds, "The replica's answer times over about the last second, or how long its attempts in flight have gone unanswered"),
    (RECENT_WEIGHT, Gauge, Unit::Count, "The factor recent latency puts on the replica's weight, 0.0001 to 1"),
    (IN_FLIGHT, Gauge, Unit::Count, "Attempts in flight on the replica"),
    (EJECTED, Gauge, Unit::Count, "1 while the replica is ejected"),
    (GRAY, Gauge, Unit::Count, "1 while the replica is on the gray list"),
    (VERDICTS, Counter, Unit::Count, "Attempts judged, by verdict"),
    (CANCELLED, Counter, Unit::Count, "Attempts cancelled before a verdict (forking and parallel losers)"),
    (EJECTIONS, Counter, Unit::Count, "Times the replica was ejected"),
    (REQUESTS, Counter, Unit::Count, "Requests made of the cluster"),
    (ATTEMPTS, Counter, Unit::Count, "Replica attempts, all replicas"),
    (THROTTLED, Counter, Unit::Count, "Requests refused locally by adaptive throttling"),
    (BUDGET_LIMITED, Counter, Unit::Count, "Requests held to one replica by the replica budget"),
    (PANICS, Counter, Unit::Count, "Requests ordered in panic"),
    (THROTTLE_PROBABILITY, Gauge, Unit::Count, "The probability that the next request is refused locally"),
    (BUDGET_RATIO, Gauge, Unit::Count, "Attempts per request over the replica budget's window"),
];
