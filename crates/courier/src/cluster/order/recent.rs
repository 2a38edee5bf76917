//! Recent latency: how the weighted ordering learns, within a fraction of a
//! second, that a replica is slow.
//!
//! Per replica: an exponentially weighted average of its answer times over
//! about a second (`time_constant`), and how long it has had attempts in
//! flight without finishing any (a stuck replica gives no answers at all).
//! A replica whose recent latency, the larger of the two, is above a limit,
//! `threshold` (2) × the median of the replicas' averages + `slack` (5 ms),
//! is weighted × (limit ÷ its latency)^`sensitivity` (8): 0.04 at 1.5 × the
//! limit, 0.0001 (the floor) from 3.2 ×. The floor is low because every
//! request it still sends a stuck replica waits for a fork interval, and in
//! Finagle's test (a replica stuck for 30 s) a floor of 0.001 sent more than
//! p99.99 allows.
//!
//! Why: Vostok's relative weights learn once per 10 s round. Until then a
//! replica 10× slower kept a share (what the active request bias left it),
//! and each request that drew it first waited the fork interval (budget ÷
//! 3), which made the p99 of the first 10 s of the cluster bench. And they
//! herd (see [`RelativeWeightConfig`](crate::cluster::RelativeWeightConfig)). This is
//! Finagle's idea, latency known from the last answers, with two guards
//! against the feedback loops that collapsed earlier versions: the
//! reference is the median, so when every replica slows down together
//! (overload) nothing moves; and up to the limit nothing moves either, so a
//! replica's ordinary ups and downs under load are left to the active
//! request bias, which follows them within a service time. The slack keeps
//! fast services (a millisecond or less) from counting a new connection's
//! handshake, and the first samples are a plain mean, not weighted by time,
//! for the same reason. Measured: the README's cluster bench section.
//!
//! How long without an answer: while a replica has attempts in flight, the
//! time since it last finished one (answered, or cancelled), or since the
//! first of them started if it had none, is a lower bound of how long its
//! oldest attempt has waited (no attempt in flight then has finished since).
//! It costs a timestamp, not a list of attempts.
//!
//! Without samples the average fades towards zero over `fade` (10 s), so a
//! replica that was slow and gets no more traffic is tried again (within
//! about 20 s if it was 20× the median): one answer then sets the average
//! again, slow or fast, since after a pause a sample weighs nearly all.
//! Cancelled and rejected attempts count only when they ran longer than the
//! average: a lower bound, not an answer time.
//!
//! A cluster whose requests differ widely in cost (a report that takes
//! seconds beside lookups that take milliseconds) should raise `threshold`
//! (or `slack`) or turn this off: a replica that served a few costly
//! requests looks slow for about a second.

use std::time::Duration;

use tokio::time::Instant;

/// Recent-latency settings (see [`ClusterConfig::recent_latency`](crate::cluster::ClusterConfig::recent_latency)).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RecentLatencyConfig {
    /// The average's time constant. Default: 1 s.
    pub time_constant: Duration,
    /// The time constant over which the average fades towards zero without
    /// samples. Default: 10 s.
    pub fade: Duration,
    /// A replica up to this many times the cluster's median latency, plus
    /// `slack`, keeps its weight. Default: 2.
    pub threshold: f64,
    /// Added to the threshold: differences smaller than this are noise (a
    /// new connection's handshake). Default: 5 ms.
    pub slack: Duration,
    /// The exponent on (limit ÷ latency), the limit being threshold × median
    /// + slack. Default: 8.
    pub sensitivity: f64,
    /// The lowest factor. Default: 0.0001 (a replica at the floor is tried
    /// again when its average has faded, not by the trickle the floor sends).
    pub min_weight: f64,
}

impl Default for RecentLatencyConfig {
    fn default() -> Self {
        RecentLatencyConfig {
            time_constant: Duration::from_secs(1),
            fade: Duration::from_secs(10),
            threshold: 2.0,
            slack: Duration::from_millis(5),
            sensitivity: 8.0,
            min_weight: 0.0001,
        }
    }
}

impl RecentLatencyConfig {
    /// Sets the time constant (at least 1 ms).
    pub fn time_constant(mut self, constant: Duration) -> Self {
        self.time_constant = constant.max(Duration::from_millis(1));
        self
    }
    /// Sets the fading time constant (at least 1 ms).
    pub fn fade(mut self, constant: Duration) -> Self {
        self.fade = constant.max(Duration::from_millis(1));
        self
    }
    /// Sets the threshold (at least 1).
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold.max(1.0);
        self
    }
    /// Sets the slack.
    pub fn slack(mut self, slack: Duration) -> Self {
        self.slack = slack;
        self
    }
    /// Sets the sensitivity (at least 0; 0 turns the factor off).
    pub fn sensitivity(mut self, sensitivity: f64) -> Self {
        self.sensitivity = sensitivity.max(0.0);
        self
    }
    /// Sets the lowest factor (clamped to [0, 1]).
    pub fn min_weight(mut self, min: f64) -> Self {
        self.min_weight = min.clamp(0.0, 1.0);
        self
    }

    /// The factor on a replica whose recent latency is `latency`, in a
    /// cluster whose median is `median` (seconds).
    pub(crate) fn weight(&self, latency: f64, median: f64) -> f64 {
        let limit = self.threshold * median + self.slack.as_secs_f64();
        if latency <= limit || limit <= 0.0 {
            return 1.0;
        }
        (limit / latency)
            .powf(self.sensitivity)
            .clamp(self.min_weight, 1.0)
    }
}

/// One replica's recent latency.
#[derive(Debug)]
pub(crate) struct Recent {
    /// The average (seconds) and its last sample's time.
    average: Option<(f64, Instant)>,
    /// Samples in the average (up to `u32::MAX`).
    samples: u32,
    /// When the replica last finished an attempt, or started one with none in flight.
    progress: Instant,
}

impl Recent {
    pub(crate) fn new() -> Recent {
        Recent {
            average: None,
            samples: 0,
            progress: Instant::now(),
        }
    }

    /// An attempt starts; `idle` when none was in flight.
    pub(crate) fn started(&mut self, idle: bool, now: Instant) {
        if idle {
            self.progress = now;
        }
    }

    /// An attempt ended after `took`: answered (`sample`), or cancelled or
    /// failed, when `took` is only a lower bound and counts if it is above
    /// the average.
    pub(crate) fn ended(
        &mut self,
        took: Duration,
        sample: bool,
        c: &RecentLatencyConfig,
        now: Instant,
    ) {
        self.progress = now;
        let took = took.as_secs_f64();
        self.average = match self.average {
            None => Some((took, now)),
            Some((avg, at)) => {
                let since = now.saturating_duration_since(at).as_secs_f64();
                let faded = avg * (-since / c.fade.as_secs_f64()).exp();
                if !sample && took <= faded {
                    return;
                }
                // The first samples are a plain mean: by time alone, the
                // first (a new connection's, often) would weigh everything
                // for a time constant.
                let keep = (-since / c.time_constant.as_secs_f64())
                    .exp()
                    .min(1.0 - 1.0 / (f64::from(self.samples) + 1.0));
                Some((faded * keep + took * (1.0 - keep), now))
            }
        };
        self.samples = self.samples.saturating_add(1);
    }

    /// The average as of its last sample (for the cluster's median: a
    /// replica that gets no traffic must not pull the median down).
    pub(crate) fn typical(&self) -> Option<f64> {
        self.average.map(|(avg, _)| avg)
    }

    /// What the factor reads at `now`: the average faded since its last
    /// sample, or how long the replica has gone without finishing any of
    /// its `in_flight` attempts, whichever is larger.
    pub(crate) fn latency(&self, in_flight: u64, c: &RecentLatencyConfig, now: Instant) -> f64 {
        let average = self.average.map_or(0.0, |(avg, at)| {
            let idle = now.saturating_duration_since(at).as_secs_f64();
            avg * (-idle / c.fade.as_secs_f64()).exp()
        });
        let waiting = if in_flight > 0 {
            now.saturating_duration_since(self.progress).as_secs_f64()
        } else {
            0.0
        };
        average.max(waiting)
    }
}

/// The lower median of `values` (the faster of the two middle ones, so that
/// in a cluster of two the slower stands out); `None` without any.
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mid = (values.len() - 1) / 2;
    let (_, m, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_factor_is_one_up_to_the_limit_and_steep_past_it() {
        let c = RecentLatencyConfig::default();
        // The limit: 2 × 10 ms + 5 ms.
        assert_eq!(c.weight(0.024, 0.010), 1.0);
        assert_eq!(c.weight(0.025, 0.010), 1.0);
        assert!((c.weight(0.050, 0.010) - 1.0 / 256.0).abs() < 1e-12);
        assert_eq!(c.weight(1.0, 0.010), 0.0001, "the floor");
        // A fast service: a few milliseconds more are no news.
        assert_eq!(c.weight(0.005, 0.0002), 1.0);
        let no_slack = c.slack(Duration::ZERO);
        assert_eq!(no_slack.weight(1.0, 0.0), 1.0, "no median, no factor");
        assert!(no_slack.weight(0.005, 0.0002) < 0.01);
        assert_eq!(c.sensitivity(0.0).weight(1.0, 0.01), 1.0);
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0]), Some(1.0));
        assert_eq!(median(&mut [5.0, 1.0, 9.0, 2.0, 7.0]), Some(5.0));
    }

    #[tokio::test(start_paused = true)]
    async fn averages_over_the_time_constant_and_fades_without_samples() {
        let c = RecentLatencyConfig::default();
        let mut r = Recent::new();
        let now = Instant::now;
        assert_eq!(r.latency(0, &c, now()), 0.0);
        r.ended(ms(10), true, &c, now());
        assert_eq!(r.typical(), Some(0.010), "the first sample is taken whole");
        // The second sample weighs half (a mean of two).
        r.ended(ms(30), true, &c, now());
        assert!((r.typical().unwrap() - 0.020).abs() < 1e-9);
        for _ in 0..20 {
            r.ended(ms(20), true, &c, now());
        }
        // 100 ms later a 110 ms answer weighs 1 - e^-0.1 (the time constant
        // is 1 s), against what is left of the average faded over 100 ms
        // (the fading constant is 10 s).
        tokio::time::advance(ms(100)).await;
        r.ended(ms(110), true, &c, now());
        let keep = (-0.1f64).exp();
        let expected = 0.020 * (-0.01f64).exp() * keep + 0.110 * (1.0 - keep);
        assert!((r.typical().unwrap() - expected).abs() < 1e-9);
        // A cancelled attempt shorter than the average teaches nothing.
        r.ended(ms(1), false, &c, now());
        assert!((r.typical().unwrap() - expected).abs() < 1e-9);
        // Unused for 30 s it fades to e^-3 of itself; the median keeps it whole.
        tokio::time::advance(Duration::from_secs(30)).await;
        let faded = r.latency(0, &c, now());
        assert!((faded - expected * (-3.0f64).exp()).abs() < 1e-9, "{faded}");
        assert!((r.typical().unwrap() - expected).abs() < 1e-9);
        // After such a pause, one answer is nearly all of the average.
        r.ended(ms(40), true, &c, now());
        assert!((r.typical().unwrap() - 0.040).abs() < 1e-6);
    }

    #[tokio::test(start_paused = true)]
    async fn a_replica_with_billions_of_samples_still_averages() {
        let c = RecentLatencyConfig::default();
        let mut r = Recent::new();
        r.ended(ms(10), true, &c, Instant::now());
        r.samples = u32::MAX;
        tokio::time::advance(ms(100)).await;
        r.ended(ms(20), true, &c, Instant::now());
        let average = r.typical().unwrap();
        assert!(average > 0.010 && average < 0.012, "{average}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_samples_are_a_mean_not_the_first_one_for_a_second() {
        let c = RecentLatencyConfig::default();
        let mut r = Recent::new();
        // A new connection's first answer, then nine quick ones 1 ms apart.
        r.ended(ms(20), true, &c, Instant::now());
        for _ in 0..9 {
            tokio::time::advance(ms(1)).await;
            r.ended(ms(2), true, &c, Instant::now());
        }
        let average = r.typical().unwrap();
        assert!((average - 0.0038).abs() < 0.0002, "{average}");
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_in_flight_without_an_answer_count_as_latency() {
        let c = RecentLatencyConfig::default();
        let mut r = Recent::new();
        r.ended(ms(5), true, &c, Instant::now());
        tokio::time::advance(ms(1000)).await;
        r.started(true, Instant::now());
        tokio::time::advance(ms(300)).await;
        r.started(false, Instant::now());
        tokio::time::advance(ms(200)).await;
        let waiting = r.latency(2, &c, Instant::now());
        assert!(
            (waiting - 0.5).abs() < 1e-9,
            "since the first started: {waiting}"
        );
        let faded = 0.005 * (-0.15f64).exp();
        assert!(
            (r.latency(0, &c, Instant::now()) - faded).abs() < 1e-9,
            "nothing in flight"
        );
        // One of them is cancelled: the other may have started since, and
        // the time the cancelled one ran is news (longer than the average).
        r.ended(ms(500), false, &c, Instant::now());
        tokio::time::advance(ms(50)).await;
        let average = r.typical().unwrap();
        let keep = (-1.5f64).exp();
        assert!(
            (average - (faded * keep + 0.5 * (1.0 - keep))).abs() < 1e-9,
            "{average}"
        );
        let waiting = r.latency(1, &c, Instant::now());
        assert!(
            (waiting - average * (-0.005f64).exp()).abs() < 1e-9,
            "{waiting}"
        );
    }
}
