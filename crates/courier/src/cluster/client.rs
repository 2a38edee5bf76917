//! [`ClusterClient`]: one client for a named service of several replicas,
//! over a courier [`Client`] (each replica one more origin in its pool).
//!
//! A request goes: adaptive throttling (maybe refused locally) → the
//! topology's current replicas → an order (health or peak EWMA) → the
//! strategy, attempt by attempt, each judged by the response criteria,
//! which feed health, latency and the throttle's accept count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Request};

use super::builder::ClusterClientBuilder;
use super::config::ClusterConfig;
use super::criteria::Verdict;
use super::metrics::{ClusterSnapshot, ReplicaState};
use super::refusal;
use super::replica::Replica;
use super::request::ClusterRequestBuilder;
use super::strategy::{self, AttemptFuture};
use super::throttle::Throttle;
use super::topology::Topology;
use crate::body::Body;
use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::response::Response;

/// The budget when neither the request, the cluster nor the client sets one.
const FALLBACK_BUDGET: Duration = Duration::from_secs(30);

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
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    client: Client,
    topology: Box<dyn Topology>,
    config: ClusterConfig,
    members: Mutex<Members>,
    rng: Mutex<fastrand::Rng>,
    throttle: Option<Throttle>,
    requests: AtomicU64,
    throttled: AtomicU64,
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
    ) -> ClusterClient {
        let rng = match config.seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        ClusterClient {
            inner: Arc::new(Inner {
                name,
                client,
                topology,
                throttle: config.throttle.clone().map(Throttle::new),
                config,
                members: Mutex::new(Members {
                    list: Arc::new([]),
                    states: Arc::new([]),
                }),
                rng: Mutex::new(rng),
                requests: AtomicU64::new(0),
                throttled: AtomicU64::new(0),
            }),
        }
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

    /// A GET of `target` (a path, `/invoices/42`, resolved against the replica chosen).
    pub fn get(&self, target: &str) -> ClusterRequestBuilder {
        self.request(Method::GET, target)
    }

    /// A POST of `target`.
    pub fn post(&self, target: &str) -> ClusterRequestBuilder {
        self.request(Method::POST, target)
    }

    /// A PUT of `target`.
    pub fn put(&self, target: &str) -> ClusterRequestBuilder {
        self.request(Method::PUT, target)
    }

    /// A PATCH of `target`.
    pub fn patch(&self, target: &str) -> ClusterRequestBuilder {
        self.request(Method::PATCH, target)
    }

    /// A DELETE of `target`.
    pub fn delete(&self, target: &str) -> ClusterRequestBuilder {
        self.request(Method::DELETE, target)
    }

    /// A HEAD of `target`.
    pub fn head(&self, target: &str) -> ClusterRequestBuilder {
        self.request(Method::HEAD, target)
    }

    /// A request with any method.
    pub fn request(&self, method: Method, target: &str) -> ClusterRequestBuilder {
        ClusterRequestBuilder::new(self.clone(), method, target)
    }

    /// Sends an `http::Request` whose URI is a path (`/invoices/42?x=1`):
    /// a URI with a scheme or host fails with [`ErrorKind::InvalidUrl`].
    pub async fn execute(&self, request: Request<Body>) -> Result<Response, Error> {
        if request.uri().authority().is_some() {
            return Err(Error::msg(
                ErrorKind::InvalidUrl,
                "a cluster request names a path; the replica gives the origin",
            ));
        }
        let target = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        self.send(request, target, None).await
    }

    /// Every number the cluster keeps: its own and each current replica's.
    pub fn snapshot(&self) -> ClusterSnapshot {
        let inner = &self.inner;
        ClusterSnapshot {
            name: inner.name.clone(),
            requests: inner.requests.load(Relaxed),
            throttled: inner.throttled.load(Relaxed),
            throttle_probability: inner.throttle.as_ref().map_or(0.0, |t| t.probability()),
            replicas: self.members().iter().map(|s| s.snapshot()).collect(),
        }
    }

    /// The states of the topology's current replicas (kept across lists for
    /// replicas that stay; a removed replica's state lives on only in the
    /// attempts still running on it).
    fn members(&self) -> Arc<[Arc<ReplicaState>]> {
        let list = self.inner.topology.replicas();
        let mut members = self.inner.members.lock().unwrap_or_else(|e| e.into_inner());
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

    pub(crate) async fn send(
        &self,
        request: Request<Body>,
        target: String,
        timeout: Option<Duration>,
    ) -> Result<Response, Error> {
        let inner = &self.inner;
        inner.requests.fetch_add(1, Relaxed);
        if let Some(throttle) = &inner.throttle {
            let admitted = throttle.admit(&mut inner.rng.lock().unwrap_or_else(|e| e.into_inner()));
            if !admitted {
                inner.throttled.fetch_add(1, Relaxed);
                return Err(refusal::throttled(&inner.name, throttle.probability()));
            }
        }
        let budget = timeout
            .or(inner.config.timeout)
            .or(inner.client.default_timeout())
            .unwrap_or(FALLBACK_BUDGET);
        let states = self.members();
        if states.is_empty() {
            return Err(refusal::no_replicas(&inner.name));
        }
        let replayable = request.body().try_clone().is_some()
            && crate::middleware::replay_is_safe(&request, inner.config.replay_non_idempotent);
        let max = if replayable {
            inner.config.strategy.max_replicas()
        } else {
            1
        };
        let order = {
            let mut rng = inner.rng.lock().unwrap_or_else(|e| e.into_inner());
            inner.config.ordering.order(&states, &mut rng, max)
        };
        let deadline = std::time::Instant::now() + budget;
        let mut original = Some(request);
        let start = |i: usize, head_timeout: Duration| -> AttemptFuture {
            let state: Arc<ReplicaState> = Arc::clone(&order[i]);
            let request = match original.as_ref().and_then(crate::middleware::clone_request) {
                Some(copy) if i + 1 < order.len() => Ok(copy),
                _ => original.take().ok_or(()),
            };
            let uri = state.replica.resolve(&target);
            let inner = Arc::clone(inner);
            Box::pin(async move {
                let request = match (request, uri) {
                    (Ok(mut r), Ok(uri)) => {
                        *r.uri_mut() = uri;
                        r
                    }
                    (_, Err(e)) => return (Verdict::Accept, Err(e)),
                    (Err(()), _) => {
                        let e =
                            Error::msg(ErrorKind::InvalidRequest, "the body cannot be replayed");
                        return (Verdict::Accept, Err(e));
                    }
                };
                let _in_flight = state.start();
                let started = tokio::time::Instant::now();
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let call = inner.client.clone().send(request, Some(left));
                let answer = match tokio::time::timeout(head_timeout, call).await {
                    Ok(answer) => answer,
                    Err(_) => Err(Error::msg(
                        ErrorKind::Timeout,
                        "no response from the replica within its share of the budget",
                    )),
                };
                let verdict = inner.config.criteria.judge(&answer);
                state.judged(verdict, started.elapsed());
                (verdict, answer)
            })
        };
        let (verdict, answer) =
            strategy::run(inner.config.strategy, order.len(), budget, start).await;
        if verdict == Verdict::Accept {
            if let Some(throttle) = &inner.throttle {
                throttle.accepted();
            }
        }
        answer
    }
}
