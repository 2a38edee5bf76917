//! A cluster's settings, apart from its replicas.

use std::time::Duration;

use super::criteria::ResponseCriteria;
use super::ordering::ReplicaOrdering;
use super::strategy::Strategy;
use super::throttle::ThrottleConfig;

/// How a [`ClusterClient`](super::ClusterClient) sends requests.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Default: [`Strategy::forking`]`(3)`.
    pub strategy: Strategy,
    /// Default: [`ReplicaOrdering::WeightedHealth`].
    pub ordering: ReplicaOrdering,
    /// Which answers reject a replica. Default: Vostok's (see [`ResponseCriteria`]).
    pub criteria: ResponseCriteria,
    /// Adaptive throttling; `None` turns it off. Default: on, K = 2.
    pub throttle: Option<ThrottleConfig>,
    /// A request's whole budget (all its replicas) when the request sets no
    /// timeout of its own. Default: `None`, which is the client's timeout,
    /// or 30 s if the client has none (the strategies need a budget to share).
    pub timeout: Option<Duration>,
    /// Seed of the random choices (ordering, throttling), for reproducible
    /// tests. Default: `None`, seeded from the system.
    pub seed: Option<u64>,
    /// Send requests whose method is not idempotent (POST, PATCH) to more
    /// than one replica. A request with an `Idempotency-Key` header or the
    /// [`Idempotent`](crate::middleware::Idempotent) extension is sent to
    /// several anyway. Default: off (Vostok's idempotency control).
    pub replay_non_idempotent: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            strategy: Strategy::default(),
            ordering: ReplicaOrdering::default(),
            criteria: ResponseCriteria::default(),
            throttle: Some(ThrottleConfig::default()),
            timeout: None,
            seed: None,
            replay_non_idempotent: false,
        }
    }
}

impl ClusterConfig {
    /// Sets the strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }
    /// Sets the ordering.
    pub fn ordering(mut self, ordering: ReplicaOrdering) -> Self {
        self.ordering = ordering;
        self
    }
    /// Sets the response criteria.
    pub fn criteria(mut self, criteria: ResponseCriteria) -> Self {
        self.criteria = criteria;
        self
    }
    /// Sets (or, with `None`, turns off) adaptive throttling.
    pub fn throttle(mut self, throttle: Option<ThrottleConfig>) -> Self {
        self.throttle = throttle;
        self
    }
    /// Sets the default budget of a request.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Seeds the random choices.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Allows non-idempotent requests on more than one replica.
    pub fn replay_non_idempotent(mut self, yes: bool) -> Self {
        self.replay_non_idempotent = yes;
        self
    }
}
