//! Per-replica state and what the cluster shows of it: requests, failures,
//! in flight, latency (peak EWMA) and health weight, read through
//! [`ClusterClient::snapshot`](super::ClusterClient::snapshot).
//!
//! Why in one place: the numbers that order the replicas are the numbers an
//! operator needs to see why a replica gets the traffic it gets.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::criteria::Verdict;
use super::ewma::{PeakEwma, DEFAULT_DECAY, DEFAULT_RTT};
use super::health;
use super::replica::Replica;

/// What the cluster knows of one replica.
#[derive(Debug)]
pub(crate) struct ReplicaState {
    pub(crate) replica: Replica,
    requests: AtomicU64,
    failures: AtomicU64,
    in_flight: AtomicU64,
    adaptive: Mutex<Adaptive>,
}

#[derive(Debug)]
struct Adaptive {
    health: f64,
    latency: PeakEwma,
}

impl ReplicaState {
    pub(crate) fn new(replica: Replica) -> ReplicaState {
        ReplicaState {
            replica,
            requests: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            adaptive: Mutex::new(Adaptive {
                health: health::MAX,
                latency: PeakEwma::new(DEFAULT_RTT, DEFAULT_DECAY),
            }),
        }
    }

    fn adaptive(&self) -> std::sync::MutexGuard<'_, Adaptive> {
        self.adaptive.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn health(&self) -> f64 {
        self.adaptive().health
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Relaxed)
    }

    /// Peak EWMA latency × (requests in flight + 1): P2C's load estimate.
    pub(crate) fn cost(&self) -> f64 {
        let latency = self.adaptive().latency.estimate().as_secs_f64();
        latency * (self.in_flight() + 1) as f64
    }

    /// An attempt starts; it is in flight until the guard is dropped (an
    /// attempt cancelled by a strategy counts as neither success nor failure).
    pub(crate) fn start(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(1, Relaxed);
        self.in_flight.fetch_add(1, Relaxed);
        InFlight(Arc::clone(self))
    }

    /// The verdict on an attempt that took `rtt`.
    pub(crate) fn judged(&self, verdict: Verdict, rtt: Duration) {
        if verdict == Verdict::Reject {
            self.failures.fetch_add(1, Relaxed);
        }
        let mut a = self.adaptive();
        a.health = match verdict {
            Verdict::Accept => health::up(a.health),
            Verdict::Reject => health::down(a.health),
        };
        a.latency.observe(rtt);
    }

    pub(crate) fn snapshot(&self) -> ReplicaSnapshot {
        let mut a = self.adaptive();
        ReplicaSnapshot {
            replica: self.replica.clone(),
            requests: self.requests.load(Relaxed),
            failures: self.failures.load(Relaxed),
            in_flight: self.in_flight(),
            latency_ewma: a.latency.estimate(),
            health: a.health,
        }
    }
}

/// An attempt in flight on a replica.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<ReplicaState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

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
    /// Adaptive health weight, in [0.001, 1].
    pub health: f64,
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
}
