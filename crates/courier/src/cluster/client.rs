//! [`ClusterClient`]: one client for a named service of several replicas,
//! over a courier [`Client`] (each replica one more origin in its pool).
//!
//! This file holds the client's state and its public face; a request's
//! way through it (throttling, ordering, budget, strategy, verdicts) is
//! `send.rs`, through the named client's middleware `front.rs` (around the
//! whole request) and `transport.rs` (around each attempt).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use http::Method;

use super::admission::budget::ReplicaBudget;
use super::admission::throttle::Throttle;
use super::attempt::latency::Latencies;
use super::attempt::transport::Transport;
use super::builder::ClusterClientBuilder;
use super::config::ClusterConfig;
use super::order::ordering;
use super::order::relative::Updater;
use super::order::state::ReplicaState;
use super::order::weighing::Weighing;
use super::replica::metrics::ClusterSnapshot;
use super::replica::Replica;
use super::request::ClusterRequestBuilder;
use super::topology::Topology;
use crate::client::request::IntoUri;
use crate::client::Client;
use crate::middleware::{BoxHttpService, StackLayers};

/// A client for a service of several replicas. Cheap to clone (clones share
/// the replicas' state).
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// use courier::cluster::{ClusterClient, Strategy};
/// let cluster = ClusterClient::builder("billing")
///     .replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
///     .strategy(Strategy::forking(3))
///     .build(courier::Client::new())?;
/// let res = cluster.get("/invoices/42").send().await?; // resolved against the replica chosen
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ClusterClient {
    pub(super) inner: Arc<Inner>,
    /// The request-side middleware around the strategy (`front.rs`), if
    /// any; outside `Inner`, which the innermost service holds.
    pub(super) front: Option<Arc<BoxHttpService>>,
}

pub(super) struct Inner {
    pub(super) name: String,
    pub(super) client: Client,
    /// How attempts are sent: on `client`, or through the attempt-side layers.
    pub(super) transport: Transport,
    /// The middleware's layers (both sides), for their state and statistics.
    pub(super) layers: StackLayers,
    topology: Box<dyn Topology>,
    pub(super) config: ClusterConfig,
    /// What the replicas' state and the ordering read of `config`.
    pub(super) weighing: Weighing,
    members: Mutex<Members>,
    pub(super) rng: Mutex<fastrand::Rng>,
    pub(super) throttle: Option<Throttle>,
    pub(super) budget: Option<Arc<ReplicaBudget>>,
    /// Recent answer times, for [`ForkDelay::Quantile`](super::ForkDelay::Quantile).
    pub(super) latencies: Option<Latencies>,
    /// Relative weights' round keeper (`try_lock`ed on the request path).
    pub(super) relative: Mutex<Updater>,
    /// Held while deciding an ejection (the cap counts the others).
    pub(super) ejecting: Mutex<()>,
    pub(super) counters: Counters,
}

/// The cluster's own counters.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) requests: AtomicU64,
    pub(super) throttled: AtomicU64,
    pub(super) attempts: AtomicU64,
    pub(super) budget_limited: AtomicU64,
    pub(super) panics: AtomicU64,
}

/// The replicas' states for the topology's last list.
struct Members {
    list: Arc<[Replica]>,
    states: Arc<[Arc<ReplicaState>]>,
}

impl std::fmt::Debug for ClusterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterClient")
            .field("name", &self.inner.name)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl ClusterClient {
    pub(super) fn new(
        name: String,
        client: Client,
        topology: Box<dyn Topology>,
        config: ClusterConfig,
        layers: StackLayers,
    ) -> ClusterClient {
        let rng = match config.seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        let transport = match super::layers::attempt(&layers, client.clone()) {
            Some(service) => Transport::Layers(service),
            None => Transport::Client,
        };
        let inner = Arc::new(Inner {
            name,
            client,
            transport,
            layers,
            topology,
            throttle: config.throttle.clone().map(Throttle::new),
            budget: config
                .replica_budget
                .clone()
                .map(|c| Arc::new(ReplicaBudget::new(c))),
            latencies: config.fork_delay.latencies(),
            relative: Mutex::new(Updater::new()),
            ejecting: Mutex::new(()),
            weighing: config.weighing(),
            config,
            members: Mutex::new(Members {
                list: Arc::new([]),
                states: Arc::new([]),
            }),
            rng: Mutex::new(rng),
            counters: Counters::default(),
        });
        let core = super::front::Core(Arc::clone(&inner));
        let front = super::layers::front(&inner.layers, &inner.config.criteria, core).map(Arc::new);
        ClusterClient { inner, front }
    }

    /// Starts building a cluster client for the service `name`.
    pub fn builder(name: impl Into<String>) -> ClusterClientBuilder {
        ClusterClientBuilder::new(name.into())
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The settings.
    pub fn config(&self) -> &ClusterConfig {
        &self.inner.config
    }

    /// The underlying client (its pool holds every replica's connections).
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The middleware's layers (empty without middleware), for their
    /// statistics: [`RetryLayer::stats`](crate::middleware::RetryLayer::stats)
    /// counts whole-request retries.
    pub fn layers(&self) -> &StackLayers {
        &self.inner.layers
    }

    // `get`, `post`, …: each `self.request(Method::X, target)`, where the
    // target is a path (`/invoices/42`) resolved against the replica chosen.
    crate::client::verbs::http_verbs!(target: impl IntoUri => ClusterRequestBuilder);

    /// A request with any method; `target` is a path (`/invoices/42`, or
    /// `invoices/42` under the replicas' path prefix), text or a `Uri`
    /// without scheme and host.
    pub fn request(&self, method: Method, target: impl IntoUri) -> ClusterRequestBuilder {
        super::request::builder(self.clone(), method, target)
    }

    /// Every number the cluster keeps: its own and each current replica's.
    pub fn snapshot(&self) -> ClusterSnapshot {
        let inner = &self.inner;
        let now = tokio::time::Instant::now();
        let c = &inner.counters;
        ClusterSnapshot {
            name: inner.name.clone(),
            requests: c.requests.load(Relaxed),
            throttled: c.throttled.load(Relaxed),
            throttle_probability: inner.throttle.as_ref().map_or(0.0, |t| t.probability()),
            replicas: ordering::snapshots(&inner.members(), &inner.weighing, now),
            attempts: c.attempts.load(Relaxed),
            budget_limited: c.budget_limited.load(Relaxed),
            replica_budget_ratio: inner.budget.as_ref().map_or(0.0, |b| b.ratio()),
            panics: c.panics.load(Relaxed),
        }
    }
}

impl Inner {
    /// The states of the topology's current replicas (kept across lists for
    /// replicas that stay; a removed replica's state lives on only in the
    /// attempts still running on it).
    pub(super) fn members(&self) -> Arc<[Arc<ReplicaState>]> {
        let list = self.topology.replicas();
        let mut members = self.members.lock().unwrap_or_else(|e| e.into_inner());
        if !Arc::ptr_eq(&members.list, &list) {
            let old: HashMap<&Replica, &Arc<ReplicaState>> =
                members.states.iter().map(|s| (&s.replica, s)).collect();
            let states: Arc<[Arc<ReplicaState>]> = list
                .iter()
                .map(|r| match old.get(r) {
                    Some(s) => Arc::clone(s),
                    None => Arc::new(ReplicaState::new(r.clone())),
                })
                .collect();
            *members = Members { list, states };
        }
        Arc::clone(&members.states)
    }
}
