//! Replica ordering: in which order a request's attempts visit the replicas.
//!
//! Why two: weighted random by adaptive health × recent latency (after
//! Vostok's `WeighedReplicaOrdering`, with its relative weights as an
//! option) spreads load evenly and steers it away from failing and slow
//! replicas; power of two choices on peak EWMA latency × load (Finagle,
//! linkerd) steers it away from slow and busy ones at once. In both,
//! ejected replicas are left out and gray-listed ones come last (as Vostok
//! orders zero weights: last, shuffled), unless the cluster panics (fewer
//! healthy replicas than the panic threshold, see `outlier.rs`): then every
//! replica is a candidate with the same weight.
//!
//! Weights are divided by (attempts in flight + 1)^bias (Envoy's
//! `active_request_bias`; 2 by default, as Envoy's 1 balanced the
//! replicas' queues less well): health and relative weights learn
//! over seconds, and under load they herd. Measured in the cluster bench
//! (8 healthy replicas at 87.5 % of their capacity): timeouts halved the
//! health of the busiest replicas, the weighted draw sent their share to
//! the few still at health 1, those overloaded in turn (one replica's
//! share went from 3 % to 29 % within two seconds), and 12 % of requests
//! failed. A replica that gets more than it serves builds a queue, so
//! requests in flight see the herd within one service time. Recent latency
//! (`recent.rs`) is measured against the median of the replicas, so it
//! weighs nothing down when all slow down together.

use std::sync::Arc;

use tokio::time::Instant;

use super::choose::Chooser;
use super::load::Load;
use super::recent;
use super::state::{ReplicaState, Standing};
use super::weighing::Weighing;
use crate::cluster::replica::metrics::ReplicaSnapshot;

/// How replicas are ordered for a request: a chooser (weighted random, or
/// the power of two choices) over a figure of each replica (its weight, or
/// a [`Load`]). Parsed from and shown as `weighted`, `p2c` and
/// `p2c-pending` ([`FromStr`](std::str::FromStr), [`Display`](std::fmt::Display)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplicaOrdering {
    chooser: Chooser,
}

// Named as the enum variants they replace, so code written against the
// enum (`ReplicaOrdering::PeakEwma`, in expressions and patterns) compiles.
#[allow(non_upper_case_globals)]
impl ReplicaOrdering {
    /// Weighted random sampling without replacement, each replica weighted
    /// by its adaptive health × its [recent latency](crate::cluster::ClusterConfig::recent_latency)
    /// factor (× its [relative weight](crate::cluster::ClusterConfig::relative_weights), if
    /// on) ÷ (attempts in flight + 1)^[bias](crate::cluster::ClusterConfig::active_request_bias):
    /// healthy, fast replicas first, replicas that keep failing (health down
    /// to 0.001) or are much slower than the cluster (down to 0.0001) rarely.
    /// The default; `weighted`.
    pub const WeightedHealth: ReplicaOrdering = ReplicaOrdering {
        chooser: Chooser::WeightedRandom,
    };

    /// Power of two choices on [`Load::PeakEwma`]: of two replicas drawn at
    /// random, the one with the lower peak EWMA latency × (attempts in flight
    /// + 1) goes first; repeated for the rest. `p2c`.
    pub const PeakEwma: ReplicaOrdering = ReplicaOrdering::p2c(Load::PeakEwma);

    /// Power of two choices on `load`: of two replicas drawn at random, the
    /// one with the lower load goes first; repeated for the rest.
    pub const fn p2c(load: Load) -> ReplicaOrdering {
        ReplicaOrdering {
            chooser: Chooser::PowerOfTwo(load),
        }
    }

    /// The load this ordering compares, if it is a power-of-two-choices one.
    pub fn load(self) -> Option<Load> {
        match self.chooser {
            Chooser::PowerOfTwo(load) => Some(load),
            Chooser::WeightedRandom => None,
        }
    }

    /// Every ordering, as [`FromStr`](std::str::FromStr) names them.
    pub fn all() -> impl Iterator<Item = ReplicaOrdering> {
        std::iter::once(ReplicaOrdering::WeightedHealth)
            .chain(Load::ALL.iter().copied().map(ReplicaOrdering::p2c))
    }

    /// Whether the weights are read (relative weights are updated only then).
    pub(crate) fn reads_weights(self) -> bool {
        self.chooser.reads_weights()
    }

    /// The first `max` of `candidates` in this ordering.
    pub(crate) fn order(
        self,
        candidates: &[(Arc<ReplicaState>, Standing)],
        rng: &mut fastrand::Rng,
        max: usize,
    ) -> Vec<Arc<ReplicaState>> {
        self.chooser.order(candidates, rng, max)
    }
}

impl Default for ReplicaOrdering {
    /// [`ReplicaOrdering::WeightedHealth`].
    fn default() -> Self {
        ReplicaOrdering::WeightedHealth
    }
}

impl std::fmt::Display for ReplicaOrdering {
    /// `weighted`, `p2c` (peak EWMA) or `p2c-pending` (requests in flight).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.chooser {
            Chooser::WeightedRandom => "weighted",
            Chooser::PowerOfTwo(Load::PeakEwma) => "p2c",
            Chooser::PowerOfTwo(Load::PendingRequests) => "p2c-pending",
        })
    }
}

/// The names [`Display`](std::fmt::Display) gives, as `courier bench
/// --cluster-ordering` and the factory's TOML spell them; the bench's
/// `round-robin` is the bench's own, not an ordering of the library, and is
/// refused with a word saying so.
impl std::str::FromStr for ReplicaOrdering {
    type Err = String;

    fn from_str(text: &str) -> Result<ReplicaOrdering, String> {
        if let Some(o) = ReplicaOrdering::all().find(|o| o.to_string() == text) {
            return Ok(o);
        }
        let names: Vec<String> = ReplicaOrdering::all().map(|o| o.to_string()).collect();
        let names = names.join(", ");
        Err(match text {
            "round-robin" => {
                format!(
                    "\"round-robin\" is a courier bench baseline, not a cluster ordering: {names}"
                )
            }
            other => format!("{other:?} is not an ordering: {names}"),
        })
    }
}

/// The replicas a request may go to now, each with its standing (its
/// weight made: health × relative × recent ÷ in flight^bias), and whether
/// the cluster panics.
pub(crate) fn candidates(
    states: &[Arc<ReplicaState>],
    config: &Weighing,
    now: Instant,
) -> (Vec<(Arc<ReplicaState>, Standing)>, bool) {
    let all: Vec<(Arc<ReplicaState>, Standing)> = states
        .iter()
        .map(|s| (Arc::clone(s), s.standing(config, now)))
        .collect();
    let in_rotation = all.iter().filter(|(_, st)| st.in_rotation()).count();
    let panic = config
        .outlier
        .as_ref()
        .is_some_and(|o| o.panics(in_rotation, all.len()));
    if panic {
        let even = |(s, st): (Arc<ReplicaState>, Standing)| {
            let st = Standing {
                weight: 1.0,
                gray: false,
                ejected: false,
                ..st
            };
            (s, st)
        };
        return (all.into_iter().map(even).collect(), true);
    }
    let median = recent_median(&all, config);
    let bias = config.active_request_bias;
    let by_speed_and_load = |(s, mut st): (Arc<ReplicaState>, Standing)| {
        st.weight *= recent_weight(&st, config, median);
        if bias > 0.0 {
            st.weight /= (s.in_flight() as f64 + 1.0).powf(bias);
        }
        (s, st)
    };
    (
        all.into_iter()
            .filter(|(_, st)| !st.ejected)
            .map(by_speed_and_load)
            .collect(),
        false,
    )
}

/// The median of the recent latencies of the replicas not ejected (see
/// `recent.rs`); `None` when recent latency is off or nothing is known.
fn recent_median(all: &[(Arc<ReplicaState>, Standing)], config: &Weighing) -> Option<f64> {
    config.recent_latency?;
    let mut typical: Vec<f64> = all
        .iter()
        .filter(|(_, st)| !st.ejected)
        .filter_map(|(_, st)| st.typical)
        .collect();
    recent::median(&mut typical)
}

/// The recent-latency factor of a replica's weight (1 when off).
fn recent_weight(st: &Standing, config: &Weighing, median: Option<f64>) -> f64 {
    match (&config.recent_latency, median) {
        (Some(c), Some(m)) => c.weight(st.recent, m),
        _ => 1.0,
    }
}

/// Every replica's snapshot, its weight as the ordering computes it (but
/// for the requests in flight).
pub(crate) fn snapshots(
    states: &[Arc<ReplicaState>],
    config: &Weighing,
    now: Instant,
) -> Vec<ReplicaSnapshot> {
    let all: Vec<(Arc<ReplicaState>, Standing)> = states
        .iter()
        .map(|s| (Arc::clone(s), s.standing(config, now)))
        .collect();
    let median = recent_median(&all, config);
    all.iter()
        .map(|(s, st)| s.snapshot(config, st, recent_weight(st, config, median)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::admission::criteria::Verdict;
    use crate::cluster::admission::outlier::OutlierConfig;
    use crate::cluster::replica::Replica;
    use crate::cluster::ClusterConfig;
    use std::time::Duration;

    fn states(n: usize) -> Vec<Arc<ReplicaState>> {
        (0..n)
            .map(|i| {
                let url = format!("http://10.0.0.{i}:80");
                Arc::new(ReplicaState::new(Replica::new(url.as_str()).unwrap()))
            })
            .collect()
    }

    fn config() -> Weighing {
        Weighing::default()
    }

    fn firsts(ordering: ReplicaOrdering, s: &[Arc<ReplicaState>], seed: u64) -> Vec<usize> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut counts = vec![0; s.len()];
        let (c, _) = candidates(s, &config(), Instant::now());
        for _ in 0..1000 {
            let first = &ordering.order(&c, &mut rng, 3)[0];
            counts[s.iter().position(|r| Arc::ptr_eq(r, first)).unwrap()] += 1;
        }
        counts
    }

    fn reject(s: &ReplicaState, config: &Weighing, n: usize) {
        for _ in 0..n {
            if s.judged(Verdict::Reject, Duration::ZERO, config) {
                s.eject(config);
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn every_replica_once_and_no_more_than_asked() {
        let s = states(5);
        let mut rng = fastrand::Rng::with_seed(7);
        let (c, _) = candidates(&s, &config(), Instant::now());
        for ordering in [ReplicaOrdering::WeightedHealth, ReplicaOrdering::PeakEwma] {
            let all = ordering.order(&c, &mut rng, 10);
            assert_eq!(all.len(), 5);
            for r in &s {
                assert_eq!(all.iter().filter(|x| Arc::ptr_eq(x, r)).count(), 1);
            }
            assert_eq!(ordering.order(&c, &mut rng, 2).len(), 2);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn unhealthy_replicas_come_first_rarely() {
        let s = states(3);
        let even = firsts(ReplicaOrdering::WeightedHealth, &s, 1);
        assert!(even.iter().all(|&c| (250..420).contains(&c)), "{even:?}");
        reject(&s[0], &config(), 3);
        // Health 1/8 against 1 and 1: first about 1 time in 17.
        let skewed = firsts(ReplicaOrdering::WeightedHealth, &s, 1);
        assert!(skewed[0] < 100, "{skewed:?}");
        assert_eq!(
            firsts(ReplicaOrdering::WeightedHealth, &s, 1),
            skewed,
            "seeded"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn p2c_avoids_the_slow_and_the_busy() {
        let s = states(3);
        s[0].judged(Verdict::Accept, Duration::from_secs(2), &config());
        let counts = firsts(ReplicaOrdering::PeakEwma, &s, 3);
        assert_eq!(counts[0], 0, "the slow one never wins a pair: {counts:?}");
        let _busy: Vec<_> = (0..5).map(|_| s[1].start(&config())).collect();
        let counts = firsts(ReplicaOrdering::PeakEwma, &s, 3);
        assert!(counts[2] > counts[1] && counts[2] > 550, "{counts:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn gray_comes_last_and_ejected_not_at_all() {
        let s = states(4);
        let cfg = ClusterConfig::default()
            .gray_list(Duration::from_secs(60))
            .weighing();
        reject(&s[0], &cfg, 1);
        reject(&s[1], &cfg, 5);
        assert!(s[1].is_ejected(Instant::now()));
        let mut rng = fastrand::Rng::with_seed(2);
        for ordering in [ReplicaOrdering::WeightedHealth, ReplicaOrdering::PeakEwma] {
            for _ in 0..50 {
                let (c, panic) = candidates(&s, &cfg, Instant::now());
                assert!(!panic);
                let o = ordering.order(&c, &mut rng, 4);
                assert_eq!(o.len(), 3, "the ejected one is left out");
                assert!(Arc::ptr_eq(&o[2], &s[0]), "the gray one last");
            }
        }
        tokio::time::advance(Duration::from_secs(61)).await;
        let (c, _) = candidates(&s, &cfg, Instant::now());
        assert_eq!(c.len(), 4, "ejection over (30 s)");
        assert!(c.iter().all(|(_, st)| !st.gray));
    }

    #[tokio::test(start_paused = true)]
    async fn below_half_in_rotation_the_ordering_panics_and_spreads() {
        let s = states(4);
        let cfg = ClusterConfig::default()
            .outlier(Some(OutlierConfig::default().max_ejection_percent(100.0)))
            .weighing();
        reject(&s[0], &cfg, 5);
        reject(&s[1], &cfg, 5);
        let (_, panic) = candidates(&s, &cfg, Instant::now());
        assert!(!panic, "two of four in rotation is not below half");
        reject(&s[2], &cfg, 4);
        let (_, panic) = candidates(&s, &cfg, Instant::now());
        assert!(!panic, "low health alone takes no replica out of rotation");
        reject(&s[2], &cfg, 1);
        let (c, panic) = candidates(&s, &cfg, Instant::now());
        assert!(panic);
        assert_eq!(c.len(), 4, "the ejected replicas are back");
        let mut rng = fastrand::Rng::with_seed(9);
        let mut firsts = [0; 4];
        for _ in 0..1000 {
            let first = &ReplicaOrdering::WeightedHealth.order(&c, &mut rng, 1)[0];
            firsts[s.iter().position(|r| Arc::ptr_eq(r, first)).unwrap()] += 1;
        }
        assert!(
            firsts.iter().all(|&n| (180..320).contains(&n)),
            "{firsts:?}"
        );
        // Without the threshold, the healthy one takes nearly all.
        let off = ClusterConfig::default()
            .outlier(Some(OutlierConfig::default().panic_threshold(0.0)))
            .weighing();
        let (c, panic) = candidates(&s, &off, Instant::now());
        assert!(!panic);
        let mut n = 0;
        for _ in 0..1000 {
            let first = &ReplicaOrdering::WeightedHealth.order(&c, &mut rng, 1)[0];
            n += usize::from(Arc::ptr_eq(first, &s[3]));
        }
        assert!(n > 800, "{n}");
    }

    #[test]
    fn a_replica_with_attempts_in_flight_draws_fewer_first_attempts() {
        let s = states(2);
        let busy: Vec<_> = (0..9).map(|_| s[0].start(&config())).collect();
        let now = Instant::now();
        let mut rng = fastrand::Rng::with_seed(7);
        let first_of = |config: &Weighing, rng: &mut fastrand::Rng| {
            let (c, _) = candidates(&s, config, now);
            (0..10_000)
                .filter(|_| {
                    Arc::ptr_eq(&ReplicaOrdering::WeightedHealth.order(&c, rng, 1)[0], &s[0])
                })
                .count()
        };
        // Weights 1/10 and 1/1 with Envoy's bias: the busy one first about
        // 9 % of the time; 1/100 with the default bias, 2: about 1 %.
        let envoy = ClusterConfig::default().active_request_bias(1.0).weighing();
        let busy_first = first_of(&envoy, &mut rng);
        assert!((700..1100).contains(&busy_first), "{busy_first}");
        let busy_first = first_of(&config(), &mut rng);
        assert!((50..150).contains(&busy_first), "{busy_first}");
        let unbiased = ClusterConfig::default().active_request_bias(0.0).weighing();
        let even = first_of(&unbiased, &mut rng);
        assert!((4700..5300).contains(&even), "{even}");
        drop(busy);
    }
}
