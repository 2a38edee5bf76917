//! Relative weights, after Vostok's `RelativeWeightModifier`,
//! `RelativeWeightCalculator`, `WeightsNormalizer` and `Weights`
//! (vostok/clusterclient.core, `Ordering/Weighed/Relative/`, at ff60b02).
//!
//! Every `update_period` (10 s) the cluster takes the period's statistics of
//! each replica that was tried (`relative_stats.rs`) and gives it a weight:
//! the probability that it answers at or below the cluster's mean latency,
//! to the power `sensitivity` (4) — or, when the cluster made at most 1
//! request per second in the period, that its error fraction is at or below
//! the cluster's. The new weight is clamped to [`min_weight`, 1] and
//! smoothed with the previous one (rising with a 1-minute time constant,
//! falling with a 1-second one), then all weights of the round are divided
//! by the largest, so the best replica weighs 1. A replica not tried in a
//! round keeps its weight, which regenerates by 0.05 per minute after a
//! minute's lag; a weight older than 10 minutes is forgotten (back to 1).
//! The ordering multiplies it with the adaptive health.
//!
//! Why: health sees failures, not slowness. A replica 10× slower than the
//! others answers, is accepted, and keeps its health at 1; relative to the
//! cluster it is far from the mean and loses its traffic within a period.
//! Why slow to rise and quick to fall: a replica that got slow should lose
//! traffic at once, one that got fast again should win it back gradually.
//!
//! Keep `down_smoothing` well under `update_period` (as the defaults, 1 s
//! against 10 s): a weight that falls only a little per round is mostly
//! restored by the division by the largest, as all weights fall together.
//!
//! Off by default in courier (`ClusterConfig::relative_weights`): where a
//! replica's latency is mostly its queue, latency follows the load a
//! replica got, and a round that weighs the replicas that got more load
//! down to a fraction (^4, falling within the round) moves their load to
//! the others, which the next round weighs down in turn. The swings grow
//! round by round, the more so the more alike the replicas (the z-test
//! divides by the cluster's spread): in the queued simulation
//! (`simulation/convergence.rs`) some replicas end up overloaded and
//! requests fail, and the cluster bench's p99 grew over a minute (the
//! README's cluster bench section). With the default active request bias,
//! 2, the swings are damped, but the weights then add nothing over recent
//! latency (`recent.rs`), which finds slow replicas without that loop.
//!
//! Differences from Vostok: the statistics are per cluster client, not per
//! process; the update runs on the request path, as Vostok's, but under a
//! `try_lock` (one request does it, the others go on with the old weights);
//! regeneration is computed from the weight's age and not compounded on
//! every round.

use std::time::Duration;

use tokio::time::Instant;

use super::relative_stats::{self as stats, Aggregated, Bucket};

/// Relative weight settings (Vostok's `RelativeWeightSettings` defaults).
///
/// Off unless set ([`ClusterConfig::relative_weights`](crate::cluster::ClusterConfig::relative_weights)):
/// where a replica's latency is mostly its queue they herd, load swinging
/// from the replicas weighed down in one round to the others, more each
/// round (measured in the README's cluster bench section).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RelativeWeightConfig {
    /// How often weights are recomputed. Default: 10 s.
    pub update_period: Duration,
    /// The exponent on the probability; 0 turns weighting off. Default: 4.
    pub sensitivity: f64,
    /// The lowest weight. Default: 0.001.
    pub min_weight: f64,
    /// A rejected attempt counts as its latency + the cluster's mean + this
    /// many standard deviations. Default: 100.
    pub penalty_multiplier: f64,
    /// Cluster requests per second at or below which weights follow error
    /// fractions instead of latency. Default: 1.
    pub by_statuses_below_rps: f64,
    /// Time constant of a rising weight. Default: 1 minute.
    pub raise_smoothing: Duration,
    /// Time constant of a falling weight. Default: 1 s.
    pub down_smoothing: Duration,
    /// Time constant of the statistics' smoothing. Default: 1 s.
    pub statistic_smoothing: Duration,
    /// How much a weight not updated regains per minute. Default: 0.05.
    pub regeneration_per_minute: f64,
    /// How long a weight not updated waits before regaining. Default: 1 minute.
    pub regeneration_lag: Duration,
    /// A weight not updated for this long is forgotten. Default: 10 minutes.
    pub weight_ttl: Duration,
}

impl Default for RelativeWeightConfig {
    fn default() -> Self {
        RelativeWeightConfig {
            update_period: Duration::from_secs(10),
            sensitivity: 4.0,
            min_weight: 0.001,
            penalty_multiplier: 100.0,
            by_statuses_below_rps: 1.0,
            raise_smoothing: Duration::from_secs(60),
            down_smoothing: Duration::from_secs(1),
            statistic_smoothing: Duration::from_secs(1),
            regeneration_per_minute: 0.05,
            regeneration_lag: Duration::from_secs(60),
            weight_ttl: Duration::from_secs(600),
        }
    }
}

impl RelativeWeightConfig {
    /// Sets the update period (at least 1 ms).
    pub fn update_period(mut self, period: Duration) -> Self {
        self.update_period = period.max(Duration::from_millis(1));
        self
    }
    /// Sets the sensitivity.
    pub fn sensitivity(mut self, sensitivity: f64) -> Self {
        self.sensitivity = sensitivity.max(0.0);
        self
    }
    /// Sets the lowest weight (clamped to [0, 1]).
    pub fn min_weight(mut self, min: f64) -> Self {
        self.min_weight = min.clamp(0.0, 1.0);
        self
    }
    /// Sets the penalty multiplier.
    pub fn penalty_multiplier(mut self, multiplier: f64) -> Self {
        self.penalty_multiplier = multiplier.max(0.0);
        self
    }
    /// Sets the rate at or below which error fractions decide.
    pub fn by_statuses_below_rps(mut self, rps: f64) -> Self {
        self.by_statuses_below_rps = rps;
        self
    }
    /// Sets the time constants of rising and falling weights.
    pub fn smoothing(mut self, raise: Duration, down: Duration) -> Self {
        self.raise_smoothing = raise;
        self.down_smoothing = down;
        self
    }
    /// Sets the time constant of the statistics' smoothing.
    pub fn statistic_smoothing(mut self, constant: Duration) -> Self {
        self.statistic_smoothing = constant;
        self
    }
    /// Sets the regeneration of weights not updated.
    pub fn regeneration(mut self, per_minute: f64, lag: Duration) -> Self {
        self.regeneration_per_minute = per_minute.max(0.0);
        self.regeneration_lag = lag;
        self
    }
}

/// One replica's part: this period's statistics, the last aggregate, the weight.
#[derive(Debug, Default)]
pub(crate) struct Relative {
    period: Bucket,
    last: Option<Aggregated>,
    weight: Option<(f64, Instant)>,
}

impl Relative {
    pub(crate) fn report(&mut self, rejected: bool, latency: Duration) {
        self.period.report(rejected, latency);
    }

    /// The weight at `now` (1 before any, or once forgotten).
    pub(crate) fn weight(&self, config: &RelativeWeightConfig, now: Instant) -> f64 {
        match self.weight {
            Some((value, at)) => {
                let age = now.saturating_duration_since(at);
                if age > config.weight_ttl {
                    return 1.0;
                }
                let minutes = age.saturating_sub(config.regeneration_lag).as_secs_f64() / 60.0;
                (value + minutes * config.regeneration_per_minute).min(1.0)
            }
            None => 1.0,
        }
    }

    /// Hands this period's statistics over and starts a new period.
    pub(crate) fn take_period(&mut self) -> Bucket {
        std::mem::take(&mut self.period)
    }
}

/// The cluster's part: when weights were last updated, the last aggregate.
#[derive(Debug)]
pub(crate) struct Updater {
    last_update: Instant,
    cluster: Option<Aggregated>,
}

impl Updater {
    pub(crate) fn new() -> Updater {
        Updater {
            last_update: Instant::now(),
            cluster: None,
        }
    }

    pub(crate) fn due(&self, config: &RelativeWeightConfig, now: Instant) -> bool {
        now.saturating_duration_since(self.last_update) > config.update_period
    }

    /// One round over every replica's `Relative` (each given by `with`, which
    /// locks it for the call).
    pub(crate) fn update<R>(
        &mut self,
        config: &RelativeWeightConfig,
        now: Instant,
        replicas: &[R],
        with: impl Fn(&R, &mut dyn FnMut(&mut Relative)),
    ) {
        self.last_update = now;
        let mut periods: Vec<Bucket> = Vec::with_capacity(replicas.len());
        for r in replicas {
            with(r, &mut |rel| periods.push(rel.take_period()));
        }
        let mut all = Bucket::default();
        periods.iter().for_each(|b| all.add(b));
        let raw = all.aggregate(now);
        let penalty = raw.mean + raw.std_dev * config.penalty_multiplier;
        let cluster = all
            .penalize(penalty)
            .aggregate(now)
            .smooth(self.cluster, config.statistic_smoothing);
        self.cluster = Some(cluster);
        let by_statuses =
            cluster.total / config.update_period.as_secs_f64() <= config.by_statuses_below_rps;

        let mut new: Vec<Option<f64>> = vec![None; replicas.len()];
        for (i, r) in replicas.iter().enumerate() {
            if periods[i].count == 0 {
                continue;
            }
            with(r, &mut |rel| {
                let agg = periods[i]
                    .penalize(penalty)
                    .aggregate(now)
                    .smooth(rel.last, config.statistic_smoothing);
                rel.last = Some(agg);
                let raw = if by_statuses {
                    stats::by_statuses(&agg, &cluster, config.sensitivity)
                } else {
                    stats::by_latency(&agg, &cluster, config.sensitivity)
                };
                let target = raw.clamp(config.min_weight, 1.0);
                let (before, at) = match rel.weight {
                    Some((_, at)) if now.saturating_duration_since(at) <= config.weight_ttl => {
                        (rel.weight(config, now), at)
                    }
                    _ => (1.0, now.checked_sub(config.update_period).unwrap_or(now)),
                };
                let constant = if target > before {
                    config.raise_smoothing
                } else {
                    config.down_smoothing
                };
                new[i] = Some(stats::smooth(target, before, now, at, constant));
            });
        }
        let max = new.iter().flatten().fold(0.0f64, |m, &w| m.max(w));
        if max <= 0.0 {
            return;
        }
        for (i, r) in replicas.iter().enumerate() {
            if let Some(w) = new[i] {
                with(r, &mut |rel| rel.weight = Some((w / max, now)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn round(u: &mut Updater, c: &RelativeWeightConfig, rs: &[RefCell<Relative>]) {
        u.update(c, Instant::now(), rs, |r, f| f(&mut r.borrow_mut()));
    }

    fn feed(r: &RefCell<Relative>, n: usize, ms: u64) {
        for _ in 0..n {
            r.borrow_mut().report(false, Duration::from_millis(ms));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_replica_falls_at_once_and_rises_back() {
        let c = RelativeWeightConfig::default();
        let rs: Vec<RefCell<Relative>> = (0..3).map(|_| RefCell::default()).collect();
        let mut u = Updater::new();
        let now = Instant::now;
        let weights = |rs: &[RefCell<Relative>]| -> Vec<f64> {
            rs.iter().map(|r| r.borrow().weight(&c, now())).collect()
        };
        assert!(!u.due(&c, now()));
        feed(&rs[0], 100, 5);
        feed(&rs[1], 100, 5);
        feed(&rs[2], 100, 50);
        tokio::time::advance(Duration::from_millis(10_001)).await;
        assert!(u.due(&c, now()));
        round(&mut u, &c, &rs);
        let w = weights(&rs);
        assert_eq!((w[0], w[1]), (1.0, 1.0), "the best weigh 1");
        assert!(w[2] < 0.01, "{w:?}");

        // Fast again: the weight climbs back over a few rounds.
        let mut last = w[2];
        for _ in 0..3 {
            feed(&rs[0], 100, 5);
            feed(&rs[1], 100, 6);
            feed(&rs[2], 100, 5);
            tokio::time::advance(Duration::from_millis(10_001)).await;
            round(&mut u, &c, &rs);
            let w = weights(&rs)[2];
            assert!(w > last, "{w} after {last}");
            last = w;
        }
        assert!(last > 0.5, "{last}");
    }

    #[tokio::test(start_paused = true)]
    async fn untried_weights_regenerate_after_the_lag_and_expire() {
        let c = RelativeWeightConfig::default();
        let rs: Vec<RefCell<Relative>> = (0..2).map(|_| RefCell::default()).collect();
        let mut u = Updater::new();
        feed(&rs[0], 50, 5);
        feed(&rs[1], 50, 80);
        tokio::time::advance(Duration::from_secs(11)).await;
        round(&mut u, &c, &rs);
        let w = |r: &RefCell<Relative>| r.borrow().weight(&c, Instant::now());
        let start = w(&rs[1]);
        assert!(start < 0.01);
        // Rounds without a request to it change nothing for a minute.
        for _ in 0..6 {
            feed(&rs[0], 50, 5);
            tokio::time::advance(Duration::from_secs(10)).await;
            round(&mut u, &c, &rs);
        }
        assert!((w(&rs[1]) - start).abs() < 1e-9, "{} {start}", w(&rs[1]));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!((w(&rs[1]) - (start + 0.05)).abs() < 1e-3, "{}", w(&rs[1]));
        tokio::time::advance(Duration::from_secs(600)).await;
        assert_eq!(w(&rs[1]), 1.0, "forgotten after ten minutes");
    }
}
