//! The statistics behind relative weights, after Vostok's `StatisticBucket`,
//! `AggregatedStatistic`, `WeighingHelper` and `SmoothingHelper`
//! (vostok/clusterclient.core, `Ordering/Weighed/Relative/`): per period,
//! each replica's count, rejects and latency sums; rejected attempts
//! penalised (their latency + the cluster's mean + 100 standard deviations);
//! aggregated into mean, standard deviation and error fraction; smoothed
//! over time; turned into "the probability that this replica answers at or
//! below the cluster's mean", raised to the sensitivity.
//!
//! Why a separate file: this is arithmetic on plain numbers, tested here on
//! its own; `relative.rs` decides when it runs and what it feeds.

use std::time::Duration;

use tokio::time::Instant;

/// One period's raw statistics of a replica (or, summed, of the cluster).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Bucket {
    pub(crate) count: u64,
    pub(crate) rejects: u64,
    accept_sum: f64,
    accept_sq: f64,
    reject_sum: f64,
    reject_sq: f64,
}

impl Bucket {
    /// An attempt's verdict and latency.
    pub(crate) fn report(&mut self, rejected: bool, latency: Duration) {
        let s = latency.as_secs_f64();
        self.count += 1;
        if rejected {
            self.rejects += 1;
            self.reject_sum += s;
            self.reject_sq += s * s;
        } else {
            self.accept_sum += s;
            self.accept_sq += s * s;
        }
    }

    pub(crate) fn add(&mut self, other: &Bucket) {
        self.count += other.count;
        self.rejects += other.rejects;
        self.accept_sum += other.accept_sum;
        self.accept_sq += other.accept_sq;
        self.reject_sum += other.reject_sum;
        self.reject_sq += other.reject_sq;
    }

    /// Every rejected attempt as if it took `penalty` longer.
    pub(crate) fn penalize(mut self, penalty: f64) -> Bucket {
        let n = self.rejects as f64;
        self.reject_sq += 2.0 * penalty * self.reject_sum + penalty * penalty * n;
        self.reject_sum += n * penalty;
        self
    }

    pub(crate) fn aggregate(&self, at: Instant) -> Aggregated {
        let total = self.count.max(1) as f64;
        let mean = (self.accept_sum + self.reject_sum) / total;
        let squares = (self.accept_sq + self.reject_sq) / total;
        Aggregated {
            total,
            error_fraction: self.rejects as f64 / total,
            std_dev: (squares - mean * mean).max(0.0).sqrt(),
            mean,
            at,
        }
    }
}

/// A period's statistics, aggregated (latencies in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Aggregated {
    pub(crate) total: f64,
    pub(crate) error_fraction: f64,
    pub(crate) std_dev: f64,
    pub(crate) mean: f64,
    pub(crate) at: Instant,
}

impl Aggregated {
    /// Blended with the previous period's, by the time between them.
    pub(crate) fn smooth(self, previous: Option<Aggregated>, constant: Duration) -> Aggregated {
        let Some(p) = previous else { return self };
        let s = |now: f64, before: f64| smooth(now, before, self.at, p.at, constant);
        Aggregated {
            total: s(self.total, p.total),
            error_fraction: s(self.error_fraction, p.error_fraction),
            std_dev: s(self.std_dev, p.std_dev),
            mean: s(self.mean, p.mean),
            at: self.at,
        }
    }
}

/// Exponential smoothing by elapsed time: α = 1 − e^(−Δt / constant).
pub(crate) fn smooth(now: f64, before: f64, at: Instant, then: Instant, constant: Duration) -> f64 {
    let dt = at.saturating_duration_since(then).as_secs_f64();
    let alpha = 1.0 - (-dt / constant.as_secs_f64().max(1e-9)).exp();
    alpha * now + (1.0 - alpha) * before
}

/// The normal CDF at `x` for (`mean`, `std_dev`), by Vostok's logistic
/// approximation; a step when the deviation is zero.
pub(crate) fn cdf(x: f64, mean: f64, std_dev: f64) -> f64 {
    if std_dev <= f64::EPSILON {
        return if mean > x {
            0.0
        } else if mean < x {
            1.0
        } else {
            0.5
        };
    }
    let y = (x - mean) / std_dev;
    1.0 / (1.0 + (-y * (1.5976 + 0.070566 * y * y)).exp())
}

fn sensitize(weight: f64, sensitivity: f64) -> f64 {
    if sensitivity < f64::EPSILON {
        1.0
    } else {
        weight.powf(sensitivity)
    }
}

/// P(replica latency ≤ cluster mean) (a z-test of the two means), ^ sensitivity.
pub(crate) fn by_latency(replica: &Aggregated, cluster: &Aggregated, sensitivity: f64) -> f64 {
    let sd = (replica.std_dev.powi(2) + cluster.std_dev.powi(2)).sqrt();
    sensitize(cdf(cluster.mean, replica.mean, sd), sensitivity)
}

/// P(replica error fraction ≤ cluster's) (a two-proportion z-test), ^ sensitivity.
pub(crate) fn by_statuses(replica: &Aggregated, cluster: &Aggregated, sensitivity: f64) -> f64 {
    let round = |v: f64| (v * 1e5).round() / 1e5;
    let (p1, n1) = (round(cluster.error_fraction), cluster.total);
    let (p2, n2) = (round(replica.error_fraction), replica.total);
    let phat = (n1 * p1 + n2 * p2) / (n1 + n2);
    let sd = (phat * (1.0 - phat) * (1.0 / n1 + 1.0 / n2))
        .max(0.0)
        .sqrt();
    sensitize(cdf(p1, p2, sd), sensitivity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(latencies_ms: &[(u64, bool)]) -> Bucket {
        let mut b = Bucket::default();
        for &(ms, rejected) in latencies_ms {
            b.report(rejected, Duration::from_millis(ms));
        }
        b
    }

    #[tokio::test(start_paused = true)]
    async fn aggregates_and_penalizes_as_vostok() {
        let now = Instant::now();
        let a = bucket(&[(10, false), (30, false)]).aggregate(now);
        assert!((a.mean - 0.020).abs() < 1e-12 && (a.std_dev - 0.010).abs() < 1e-12);
        assert_eq!(a.error_fraction, 0.0);
        // A reject of 10 ms with a 1 s penalty counts as 1.01 s.
        let p = bucket(&[(10, true), (30, false)])
            .penalize(1.0)
            .aggregate(now);
        assert!((p.mean - 0.52).abs() < 1e-12, "{p:?}");
        assert!((p.std_dev - 0.49).abs() < 1e-9, "{p:?}");
        assert_eq!(p.error_fraction, 0.5);
    }

    #[tokio::test(start_paused = true)]
    async fn slower_than_the_mean_weighs_little() {
        let now = Instant::now();
        let fast = bucket(&[(5, false), (6, false), (4, false)]).aggregate(now);
        let slow = bucket(&[(50, false), (55, false), (45, false)]).aggregate(now);
        let mut all = bucket(&[(5, false), (6, false), (4, false)]);
        all.add(&bucket(&[(50, false), (55, false), (45, false)]));
        let cluster = all.aggregate(now);
        let (wf, ws) = (
            by_latency(&fast, &cluster, 4.0),
            by_latency(&slow, &cluster, 4.0),
        );
        assert!(wf > 0.4 && ws < 0.01, "{wf} {ws}");
        assert_eq!(cdf(1.0, 1.0, 0.0), 0.5);
        assert!((cdf(0.0, 0.0, 1.0) - 0.5).abs() < 1e-12);
        // By statuses: all errors against a cluster with a third of them.
        let bad = bucket(&[(1, true); 10]).aggregate(now);
        let mut c = bucket(&[(1, true); 10]);
        c.add(&bucket(&[(1, false); 20]));
        let w = by_statuses(&bad, &c.aggregate(now), 4.0);
        assert!(w < 1e-3, "{w}");
    }

    #[tokio::test(start_paused = true)]
    async fn smoothing_follows_elapsed_time() {
        let t0 = Instant::now();
        tokio::time::advance(Duration::from_secs(60)).await;
        let v = smooth(1.0, 0.0, Instant::now(), t0, Duration::from_secs(60));
        assert!((v - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
    }
}
