//! [`ClusterClientBuilder`]: a cluster's name, replicas and settings.

use std::time::Duration;

use super::admission::budget::ReplicaBudgetConfig;
use super::admission::criteria::ResponseCriteria;
use super::admission::outlier::OutlierConfig;
use super::admission::throttle::ThrottleConfig;
use super::attempt::fork_delay::ForkDelay;
use super::attempt::strategy::Strategy;
use super::client::ClusterClient;
use super::config::ClusterConfig;
use super::order::health::HealthConfig;
use super::order::ordering::ReplicaOrdering;
use super::order::recent::RecentLatencyConfig;
use super::order::relative::RelativeWeightConfig;
use super::replica::Replica;
use super::topology::{StaticTopology, Topology};
use crate::client::request::IntoUri;
use crate::client::Client;
use crate::error::Error;
use crate::middleware::{Stack, StackLayers};

/// Builds a [`ClusterClient`].
#[must_use]
pub struct ClusterClientBuilder {
    name: String,
    replicas: Result<Vec<Replica>, Error>,
    topology: Option<Box<dyn Topology>>,
    config: ClusterConfig,
    layers: StackLayers,
}

impl std::fmt::Debug for ClusterClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterClientBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ClusterClientBuilder {
    pub(super) fn new(name: String) -> ClusterClientBuilder {
        ClusterClientBuilder {
            name,
            replicas: Ok(Vec::new()),
            topology: None,
            config: ClusterConfig::default(),
            layers: StackLayers::default(),
        }
    }

    /// A fixed list of replicas (base URLs); an invalid one fails `build`.
    pub fn replicas<U: IntoUri>(mut self, urls: impl IntoIterator<Item = U>) -> Self {
        self.replicas = urls.into_iter().map(Replica::new).collect();
        self
    }

    /// Replicas from a topology (replaces [`replicas`](Self::replicas)).
    pub fn topology(mut self, topology: impl Topology) -> Self {
        self.topology = Some(Box::new(topology));
        self
    }

    /// All settings at once.
    pub fn config(mut self, config: ClusterConfig) -> Self {
        self.config = config;
        self
    }

    /// See [`ClusterConfig::strategy`].
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.config.strategy = strategy;
        self
    }

    /// See [`ClusterConfig::fork_delay`].
    pub fn fork_delay(mut self, delay: ForkDelay) -> Self {
        self.config.fork_delay = delay;
        self
    }

    /// See [`ClusterConfig::ordering`].
    pub fn ordering(mut self, ordering: ReplicaOrdering) -> Self {
        self.config.ordering = ordering;
        self
    }

    /// See [`ClusterConfig::active_request_bias`].
    pub fn active_request_bias(mut self, bias: f64) -> Self {
        self.config.active_request_bias = bias.max(0.0);
        self
    }

    /// See [`ClusterConfig::criteria`].
    pub fn criteria(mut self, criteria: ResponseCriteria) -> Self {
        self.config.criteria = criteria;
        self
    }

    /// See [`ClusterConfig::throttle`].
    pub fn throttle(mut self, throttle: Option<ThrottleConfig>) -> Self {
        self.config.throttle = throttle;
        self
    }

    /// See [`ClusterConfig::timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = Some(timeout);
        self
    }

    /// See [`ClusterConfig::seed`].
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = Some(seed);
        self
    }

    /// See [`ClusterConfig::health`].
    pub fn health(mut self, health: HealthConfig) -> Self {
        self.config.health = health;
        self
    }

    /// See [`ClusterConfig::relative_weights`].
    pub fn relative_weights(mut self, relative: Option<RelativeWeightConfig>) -> Self {
        self.config.relative_weights = relative;
        self
    }

    /// See [`ClusterConfig::recent_latency`].
    pub fn recent_latency(mut self, recent: Option<RecentLatencyConfig>) -> Self {
        self.config.recent_latency = recent;
        self
    }

    /// See [`ClusterConfig::gray_period`]: turns the gray list on.
    pub fn gray_list(mut self, period: Duration) -> Self {
        self.config.gray_period = Some(period);
        self
    }

    /// See [`ClusterConfig::outlier`].
    pub fn outlier(mut self, outlier: Option<OutlierConfig>) -> Self {
        self.config.outlier = outlier;
        self
    }

    /// See [`ClusterConfig::replica_budget`].
    pub fn replica_budget(mut self, budget: Option<ReplicaBudgetConfig>) -> Self {
        self.config.replica_budget = budget;
        self
    }

    /// Middleware, as for a [`ServiceClient`](crate::ServiceClient), split
    /// between the whole request and each replica attempt: trace, total
    /// timeout, concurrency limit and retry (the whole cluster request again
    /// when no replica's answer was accepted) around the request;
    /// decompression, redirects, cookies, circuit breaker, the attempt span,
    /// per-attempt timeout and deadline header around each attempt. Hedging
    /// is refused (the strategy forks). See the module docs.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), courier::Error> {
    /// use std::time::Duration;
    /// use courier::middleware::{DecompressionConfig, Stack, TimeoutConfig};
    /// let cluster = courier::cluster::ClusterClient::builder("billing")
    ///     .replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
    ///     .middleware(
    ///         Stack::new()
    ///             .trace(Default::default())
    ///             .decompression(DecompressionConfig::default())
    ///             .timeout(TimeoutConfig::default().total(Duration::from_secs(3))),
    ///     )
    ///     .build(courier::Client::new())?;
    /// # Ok(()) }
    /// ```
    pub fn middleware(self, stack: Stack) -> Self {
        self.middleware_layers(stack.layers())
    }

    /// As [`middleware`](Self::middleware), with layers already made, whose
    /// state (concurrency limit, retry budget, circuits, cookie jar, request
    /// metrics) is shared with whatever else uses them, such as a
    /// [`ServiceClient`](crate::ServiceClient)'s
    /// ([`ServiceClient::layers`](crate::ServiceClient::layers)).
    pub fn middleware_layers(mut self, layers: StackLayers) -> Self {
        self.layers = layers;
        self
    }

    /// The cluster over `client`. Fails with [`ErrorKind::InvalidUrl`](crate::ErrorKind::InvalidUrl) for an
    /// invalid replica URL, and with [`ErrorKind::Config`](crate::ErrorKind::Config) for hedging in the
    /// middleware.
    pub fn build(self, client: Client) -> Result<ClusterClient, Error> {
        super::layers::check(&self.name, &self.layers)?;
        let topology = match self.topology {
            Some(t) => t,
            None => Box::new(StaticTopology::new(self.replicas?)),
        };
        Ok(ClusterClient::new(
            self.name,
            client,
            topology,
            self.config,
            self.layers,
        ))
    }
}
