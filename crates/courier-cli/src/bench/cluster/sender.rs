//! How one run of the scenario sends a request: through `courier::ClusterClient` with a
//! strategy and an ordering, or round robin with a plain `Client`.
//!
//! Why round robin lives here: the library has no round-robin ordering (it orders by health
//! or by P2C), and the baseline is meant to be the naive balancer anyway: the bench picks the
//! next replica in turn and sends one attempt, no retries, no throttling.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use courier::cluster::{ClusterClient, ClusterSnapshot, ForkDelay, ReplicaOrdering, Strategy};
use courier::Client;

use super::args::strategy_name;
use super::tally::{Failure, Outcome};

/// Which balancer a run uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Balancer {
    /// `ClusterClient` with these settings.
    Cluster {
        strategy: Strategy,
        fork_delay: ForkDelay,
        ordering: ReplicaOrdering,
        throttle: bool,
    },
    /// The bench's own round robin, one attempt.
    RoundRobin,
}

impl Balancer {
    /// P2C peak EWMA, one attempt, no throttling: the second baseline.
    pub fn p2c_no_retries() -> Balancer {
        Balancer::Cluster {
            strategy: Strategy::single_replica(),
            fork_delay: ForkDelay::Equal,
            ordering: ReplicaOrdering::PeakEwma,
            throttle: false,
        }
    }

    /// How the report names it.
    pub fn name(&self) -> String {
        match *self {
            Balancer::RoundRobin => "round robin, no retries".to_owned(),
            Balancer::Cluster {
                strategy,
                fork_delay,
                ordering,
                throttle,
            } => {
                let ordering = match ordering {
                    ReplicaOrdering::PeakEwma => "p2c peak EWMA",
                    _ => "weighted health",
                };
                let strategy = match (strategy, fork_delay) {
                    (Strategy::SingleReplica, _) => "no retries".to_owned(),
                    (s @ Strategy::Forking { .. }, ForkDelay::Quantile { .. }) => {
                        format!("{} after {fork_delay}", strategy_name(s))
                    }
                    (s, _) => strategy_name(s),
                };
                let throttle = if throttle { "" } else { ", no throttling" };
                format!("{ordering}, {strategy}{throttle}")
            }
        }
    }
}

/// Sends the run's requests.
#[derive(Clone)]
pub enum Sender {
    Cluster {
        cluster: ClusterClient,
        budget: Duration,
    },
    RoundRobin {
        client: Client,
        urls: Arc<[String]>,
        next: Arc<AtomicUsize>,
        budget: Duration,
    },
}

impl Sender {
    /// A sender over `urls` (each replica's base URL) through `client`.
    pub fn new(
        balancer: Balancer,
        client: Client,
        urls: &[String],
        budget: Duration,
    ) -> Result<Sender, courier::Error> {
        Ok(match balancer {
            Balancer::RoundRobin => Sender::RoundRobin {
                client,
                urls: urls.iter().map(|u| format!("{u}/")).collect(),
                next: Arc::new(AtomicUsize::new(0)),
                budget,
            },
            Balancer::Cluster {
                strategy,
                fork_delay,
                ordering,
                throttle,
            } => {
                let mut builder = ClusterClient::builder("bench")
                    .replicas(urls.iter().map(String::as_str))
                    .strategy(strategy)
                    .fork_delay(fork_delay)
                    .ordering(ordering)
                    .timeout(budget);
                if !throttle {
                    builder = builder.throttle(None);
                }
                Sender::Cluster {
                    cluster: builder.build(client)?,
                    budget,
                }
            }
        })
    }

    /// Sends one GET, reads the body, says how it ended.
    pub async fn send(&self) -> Outcome {
        let answer = match self {
            Sender::Cluster { cluster, budget } => cluster.get("/").timeout(*budget).send().await,
            Sender::RoundRobin {
                client,
                urls,
                next,
                budget,
            } => {
                let i = next.fetch_add(1, Ordering::Relaxed) % urls.len();
                client.get(urls[i].as_str()).timeout(*budget).send().await
            }
        };
        let response = match answer {
            Ok(response) => response,
            Err(e) if courier::cluster::is_throttled(&e) => return Outcome::Throttled,
            Err(e) => return Outcome::Failed(Failure::Error(e.kind().as_str())),
        };
        let status = response.status().as_u16();
        match response.bytes().await {
            Ok(_) if (200..300).contains(&status) => Outcome::Success,
            Ok(_) => Outcome::Failed(Failure::Status(status)),
            Err(e) => Outcome::Failed(Failure::Body(e.kind().as_str())),
        }
    }

    /// The cluster's numbers (none for round robin).
    pub fn snapshot(&self) -> Option<ClusterSnapshot> {
        match self {
            Sender::Cluster { cluster, .. } => Some(cluster.snapshot()),
            Sender::RoundRobin { .. } => None,
        }
    }
}
