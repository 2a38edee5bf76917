//! What the cluster shows of itself, through
//! [`ClusterClient::snapshot`](crate::cluster::ClusterClient::snapshot): its own
//! counters and, per replica, the numbers that order it.
//!
//! Why these: the numbers that decide where a request goes (weight, health,
//! relative weight, latency, load, gray list, ejection) are the numbers an
//! operator needs to see why a replica gets the traffic it gets; the verdict
//! counts say what it did with it.

use std::time::Duration;

use crate::cluster::replica::Replica;

/// One replica's numbers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplicaSnapshot {
    /// The replica.
    pub replica: Replica,
    /// Attempts sent to it.
    pub requests: u64,
    /// Attempts rejected (an error, or a response the criteria reject).
    pub failures: u64,
    /// Attempts in flight now.
    pub in_flight: u64,
    /// Peak EWMA of its response times (30 ms before any).
    pub latency_ewma: Duration,
    /// Recent latency: the average of its answer times over about the last
    /// second, or how long its attempts in flight have gone unanswered,
    /// whichever is larger (zero when turned off or nothing is known).
    pub recent_latency: Duration,
    /// The factor recent latency puts on its weight, in [0.0001, 1] (1 up to
    /// twice the cluster's median + 5 ms, or when turned off).
    pub recent_weight: f64,
    /// Adaptive health, in [0.001, 1], with its recovery over time.
    pub health: f64,
    /// Attempts accepted.
    pub accepted: u64,
    /// Attempts cancelled before a verdict (the losers of forking and
    /// parallel requests, requests dropped by their caller).
    pub cancelled: u64,
    /// Relative weight, in [0, 1] (1 when turned off or not yet computed).
    pub relative_weight: f64,
    /// The weight the ordering gives it now, before the requests in flight:
    /// health × relative weight × recent weight, 0 when gray-listed or ejected.
    pub weight: f64,
    /// On the gray list now.
    pub gray_listed: bool,
    /// Ejected now.
    pub ejected: bool,
    /// Times ejected.
    pub ejections: u64,
    /// Rejected answers in a row.
    pub consecutive_rejects: u32,
}

/// A cluster's numbers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClusterSnapshot {
    /// The cluster's name.
    pub name: String,
    /// Requests made of the cluster (each counted once, however many replicas it went to).
    pub requests: u64,
    /// Requests refused locally by adaptive throttling.
    pub throttled: u64,
    /// The probability that the next request is refused locally.
    pub throttle_probability: f64,
    /// The current replicas, in topology order.
    pub replicas: Vec<ReplicaSnapshot>,
    /// Replica attempts made (all requests, all replicas).
    pub attempts: u64,
    /// Requests the replica budget held to fewer replicas than their
    /// strategy allows (refused at the start, or when an extra attempt was due).
    pub budget_limited: u64,
    /// Attempts ÷ requests over the replica budget's window.
    pub replica_budget_ratio: f64,
    /// Requests ordered in panic (fewer healthy replicas than the panic threshold).
    pub panics: u64,
}
