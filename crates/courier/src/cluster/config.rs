//! A cluster's settings, apart from its replicas, and the text forms of
//! the strategy and the ordering (`forking3`, `p2c`) that a configuration
//! file and a command line spell them in.

use std::time::Duration;

use super::admission::budget::ReplicaBudgetConfig;
use super::admission::criteria::ResponseCriteria;
use super::admission::outlier::OutlierConfig;
use super::admission::throttle::ThrottleConfig;
use super::attempt::fork_delay::ForkDelay;
use super::attempt::strategy::Strategy;
use super::order::health::HealthConfig;
use super::order::ordering::ReplicaOrdering;
use super::order::recent::RecentLatencyConfig;
use super::order::relative::RelativeWeightConfig;
use super::order::weighing::Weighing;

/// How a [`ClusterClient`](super::ClusterClient) sends requests.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Default: [`Strategy::forking`]`(3)`.
    pub strategy: Strategy,
    /// When forking starts the next replica. Default: [`ForkDelay::Equal`]
    /// (budget ÷ n, Vostok's).
    pub fork_delay: ForkDelay,
    /// Default: [`ReplicaOrdering::WeightedHealth`].
    pub ordering: ReplicaOrdering,
    /// With [`ReplicaOrdering::WeightedHealth`], each weight is divided by
    /// (the replica's attempts in flight + 1) to this power (Envoy's
    /// `active_request_bias`); 0 turns it off (Vostok's ordering). Default: 2
    /// (Envoy's is 1; 2 follows the replicas' queues more closely, and the
    /// cluster bench's p99 is lower with it, healthy replicas or not).
    pub active_request_bias: f64,
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
    /// Adaptive health: factors, floor, recovery over time. Default: see [`HealthConfig`].
    pub health: HealthConfig,
    /// Vostok's relative weights (with [`ReplicaOrdering::WeightedHealth`]),
    /// recomputed every 10 s. Default: `None` (off): under load, when a
    /// replica's latency is mostly its queue, they herd (see
    /// [`RelativeWeightConfig`]); recent latency does their work without
    /// it. With them on and `recent_latency` and `active_request_bias` off,
    /// the ordering is Vostok's.
    pub relative_weights: Option<RelativeWeightConfig>,
    /// Recent latency (with [`ReplicaOrdering::WeightedHealth`]): a replica
    /// whose answers over about the last second, or whose attempts in flight
    /// unanswered, take more than twice the cluster's median + 5 ms loses
    /// weight at once (see [`RecentLatencyConfig`]); `None` turns it off.
    /// Default: on.
    pub recent_latency: Option<RecentLatencyConfig>,
    /// The gray list: a replica that gives a rejected answer comes last in
    /// the ordering for this long. Default: `None` (off, as in Vostok's
    /// default ordering); [`DEFAULT_GRAY_PERIOD`](super::DEFAULT_GRAY_PERIOD) is 5 minutes.
    pub gray_period: Option<Duration>,
    /// Outlier ejection and the panic threshold; `None` turns both off.
    /// Default: on, Envoy's settings.
    pub outlier: Option<OutlierConfig>,
    /// The replica budget; `None` turns it off. Default: on, at most 1.2
    /// attempts per request over 2 minutes.
    pub replica_budget: Option<ReplicaBudgetConfig>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            strategy: Strategy::default(),
            fork_delay: ForkDelay::default(),
            ordering: ReplicaOrdering::default(),
            active_request_bias: 2.0,
            criteria: ResponseCriteria::default(),
            throttle: Some(ThrottleConfig::default()),
            timeout: None,
            seed: None,
            replay_non_idempotent: false,
            health: HealthConfig::default(),
            relative_weights: None,
            recent_latency: Some(RecentLatencyConfig::default()),
            gray_period: None,
            outlier: Some(OutlierConfig::default()),
            replica_budget: Some(ReplicaBudgetConfig::default()),
        }
    }
}

impl ClusterConfig {
    /// What the per-replica state and the orderings read of these settings.
    pub(crate) fn weighing(&self) -> Weighing {
        Weighing {
            active_request_bias: self.active_request_bias,
            health: self.health,
            relative_weights: self.relative_weights.clone(),
            recent_latency: self.recent_latency,
            gray_period: self.gray_period,
            outlier: self.outlier.clone(),
        }
    }

    /// Sets the strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }
    /// Sets when forking starts the next replica.
    pub fn fork_delay(mut self, delay: ForkDelay) -> Self {
        self.fork_delay = delay;
        self
    }
    /// Sets the ordering.
    pub fn ordering(mut self, ordering: ReplicaOrdering) -> Self {
        self.ordering = ordering;
        self
    }
    /// Sets the active request bias (at least 0).
    pub fn active_request_bias(mut self, bias: f64) -> Self {
        self.active_request_bias = bias.max(0.0);
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
    /// Sets the adaptive health settings.
    pub fn health(mut self, health: HealthConfig) -> Self {
        self.health = health;
        self
    }
    /// Sets (or, with `None`, turns off) relative weights.
    pub fn relative_weights(mut self, relative: Option<RelativeWeightConfig>) -> Self {
        self.relative_weights = relative;
        self
    }
    /// Sets (or, with `None`, turns off) the recent-latency factor.
    pub fn recent_latency(mut self, recent: Option<RecentLatencyConfig>) -> Self {
        self.recent_latency = recent;
        self
    }
    /// Turns the gray list on with `period`.
    pub fn gray_list(mut self, period: Duration) -> Self {
        self.gray_period = Some(period);
        self
    }
    /// Sets (or, with `None`, turns off) outlier ejection and the panic threshold.
    pub fn outlier(mut self, outlier: Option<OutlierConfig>) -> Self {
        self.outlier = outlier;
        self
    }
    /// Sets (or, with `None`, turns off) the replica budget.
    pub fn replica_budget(mut self, budget: Option<ReplicaBudgetConfig>) -> Self {
        self.replica_budget = budget;
        self
    }
}

/// `single`, `sequentialN`, `forkingN`, `parallelN` (N from 1 to 100): the
/// spelling of `courier bench --cluster-strategy` and of a factory file's
/// `[clients.NAME.cluster] strategy`.
impl std::str::FromStr for Strategy {
    type Err = String;

    fn from_str(text: &str) -> Result<Strategy, String> {
        let count = |n: &str| match n.parse::<usize>() {
            Ok(n @ 1..=100) => Ok(n),
            _ => Err(format!(
                "{text:?}: the replica count must be 1 to 100, e.g. forking3"
            )),
        };
        if text == "single" {
            Ok(Strategy::single_replica())
        } else if let Some(n) = text.strip_prefix("forking") {
            Ok(Strategy::forking(count(n)?))
        } else if let Some(n) = text.strip_prefix("sequential") {
            Ok(Strategy::sequential(count(n)?))
        } else if let Some(n) = text.strip_prefix("parallel") {
            Ok(Strategy::parallel(count(n)?))
        } else {
            Err(format!(
                "{text:?} is not a strategy: forkingN, sequentialN, parallelN or single (e.g. forking3)"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_and_orderings_parse_as_the_cli_spells_them() {
        assert_eq!("single".parse(), Ok(Strategy::single_replica()));
        assert_eq!("sequential3".parse(), Ok(Strategy::sequential(3)));
        assert_eq!("parallel2".parse(), Ok(Strategy::parallel(2)));
        assert_eq!("forking3".parse(), Ok(Strategy::forking(3)));
        for bad in ["forking", "forking0", "forking101", "hedging3", "Single"] {
            assert!(bad.parse::<Strategy>().is_err(), "{bad}");
        }
        assert_eq!("weighted".parse(), Ok(ReplicaOrdering::WeightedHealth));
        assert_eq!("p2c".parse(), Ok(ReplicaOrdering::PeakEwma));
        assert_eq!(
            "p2c-pending".parse(),
            Ok(ReplicaOrdering::p2c(crate::cluster::Load::PendingRequests))
        );
        for bad in ["round-robin", "P2C", "peak-ewma"] {
            let err = bad.parse::<ReplicaOrdering>().unwrap_err();
            assert!(err.contains("weighted, p2c, p2c-pending"), "{err}");
        }
    }

    #[test]
    fn names_shown_are_the_names_read() {
        for o in ReplicaOrdering::all() {
            assert_eq!(o.to_string().parse(), Ok(o));
        }
        for s in [
            Strategy::single_replica(),
            Strategy::sequential(3),
            Strategy::forking(1),
            Strategy::parallel(100),
        ] {
            assert_eq!(s.to_string().parse(), Ok(s));
        }
    }
}
