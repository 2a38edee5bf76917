//! A client for a service of several replicas: replica selection, retries on
//! other replicas, forking and parallel requests, outlier ejection, adaptive
//! throttling and a replica budget (issue 18).
//!
//! Why: a service is many replicas, and a caller with one URL has no answer
//! when that replica is slow, failing or gone. After Kontur's Vostok
//! ClusterClient, a [`ClusterClient`] sends each request to one replica
//! after another ([`Strategy`]: single, sequential, forking, parallel), in an
//! order ([`ReplicaOrdering`]) that follows each replica's adaptive health
//! ([`HealthConfig`], recovering over time) × relative latency weight
//! ([`RelativeWeightConfig`]), or peak EWMA latency; judges each answer
//! ([`ResponseCriteria`]: network errors, 429, 500, 502, 503 and 504 reject
//! a replica); takes replicas that keep failing out for a while
//! ([`OutlierConfig`], Envoy's outlier ejection and panic threshold; and an
//! optional gray list); keeps retries to 1.2 attempts per request
//! ([`ReplicaBudgetConfig`]); and refuses requests locally when the service
//! accepts too few ([`ThrottleConfig`], the SRE book's adaptive throttling).
//! The replicas come from a [`Topology`] (a static list, [`DnsTopology`],
//! SRV records, [`FileTopology`], or anything), all share one courier
//! [`Client`](crate::Client) and its pool. [`ClusterClient::snapshot`]
//! shows every figure per replica; each request runs in a `cluster.request`
//! tracing span with its strategy and the replica that answered.
//!
//! Middleware: [`ClusterClientBuilder::middleware`] takes the
//! [`Stack`](crate::middleware::Stack) a [`ServiceClient`](crate::ServiceClient)
//! would (the factory passes the named client's), split as Vostok splits
//! request modules from its transport: trace, total timeout, concurrency
//! limit and retry (the whole cluster request again, only when no replica's
//! answer was accepted) around the whole request; decompression, redirects,
//! cookies, circuit breaker (per replica), the attempt span with its
//! `traceparent`, per-attempt timeout and deadline header around each replica
//! attempt; hedging is refused (the strategy forks). `layers.rs` says why
//! for each. A [`ClusterClient`] is also a `tower::Service` (its requests
//! name a path), so any tower layer can go around it.
//!
//! DNS SRV records (RFC 2782: priority groups, the record's port) are
//! `SrvTopology`, behind the `dns-srv` feature (hickory-resolver: the
//! system resolver, `getaddrinfo`, has no SRV lookup).
//!
//! ```no_run
//! # async fn run() -> Result<(), courier::Error> {
//! use courier::cluster::{ClusterClient, Strategy};
//! let cluster = ClusterClient::builder("billing")
//!     .replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
//!     .strategy(Strategy::forking(3))
//!     .build(courier::Client::new())?;
//! let res = cluster.get("/invoices/42").send().await?;
//! for r in cluster.snapshot().replicas {
//!     println!("{}: health {:.3}, {:?}", r.replica, r.health, r.latency_ewma);
//! }
//! # Ok(()) }
//! ```
//!
//! Errors: a request refused by throttling is [`ErrorKind::Refused`](crate::ErrorKind::Refused)
//! with a [`Throttled`] source ([`is_throttled`]); a cluster without replicas,
//! [`ErrorKind::Connect`](crate::ErrorKind::Connect) with a [`NoReplicas`] source.

mod admission;
mod attempt;
mod builder;
mod client;
mod config;
mod front;
mod layers;
mod order;
mod replica;
mod request;
mod send;
#[cfg(test)]
mod simulation;
mod topology;

pub(crate) use layers::check as check_middleware;

pub use admission::budget::ReplicaBudgetConfig;
pub use admission::criteria::{ResponseCriteria, Verdict};
pub use admission::outlier::OutlierConfig;
pub use admission::refusal::{is_throttled, NoReplicas, Throttled};
pub use admission::throttle::ThrottleConfig;
pub use attempt::fork_delay::ForkDelay;
pub use attempt::strategy::Strategy;
pub use builder::ClusterClientBuilder;
pub use client::ClusterClient;
pub use config::ClusterConfig;
pub use order::gray::DEFAULT_GRAY_PERIOD;
pub use order::health::HealthConfig;
pub use order::load::Load;
pub use order::ordering::ReplicaOrdering;
pub use order::recent::RecentLatencyConfig;
pub use order::relative::RelativeWeightConfig;
pub use replica::metrics::{ClusterSnapshot, ReplicaSnapshot};
pub use replica::Replica;
pub use request::ClusterRequestBuilder;
pub use topology::dns::DnsTopology;
pub use topology::file::FileTopology;
#[cfg(feature = "dns-srv")]
pub use topology::srv::{SrvTopology, SrvTopologyBuilder};
pub use topology::{SharedTopology, StaticTopology, Topology};
