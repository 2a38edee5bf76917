//! Replica ordering: in which order a request's attempts visit the replicas.
//!
//! Why two: weighted random by adaptive health (Vostok's default) spreads
//! load evenly and steers it away from failing replicas; power of two
//! choices on peak EWMA latency × load (Finagle, linkerd) steers it away from
//! slow and busy ones, which health alone does not see.

use std::sync::Arc;

use super::metrics::ReplicaState;

/// How replicas are ordered for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReplicaOrdering {
    /// Weighted random sampling without replacement, each replica weighted
    /// by its adaptive health: healthy replicas first, replicas that keep
    /// failing (health down to 0.001) last. The default.
    #[default]
    WeightedHealth,
    /// Power of two choices: of two replicas drawn at random, the one with
    /// the lower cost goes first, cost = peak EWMA latency (decay 10 s, 30 ms
    /// before any answer) × (attempts in flight + 1); repeated for the rest.
    PeakEwma,
}

impl ReplicaOrdering {
    /// The first `max` replicas of `replicas` in this ordering.
    pub(crate) fn order(
        self,
        replicas: &[Arc<ReplicaState>],
        rng: &mut fastrand::Rng,
        max: usize,
    ) -> Vec<Arc<ReplicaState>> {
        let mut left: Vec<&Arc<ReplicaState>> = replicas.iter().collect();
        let mut out = Vec::with_capacity(max.min(left.len()));
        match self {
            ReplicaOrdering::WeightedHealth => {
                let mut weights: Vec<f64> = left.iter().map(|r| r.health()).collect();
                while out.len() < max && !left.is_empty() {
                    let total: f64 = weights.iter().sum();
                    let mut point = rng.f64() * total;
                    let mut pick = left.len() - 1;
                    for (i, w) in weights.iter().enumerate() {
                        if point < *w {
                            pick = i;
                            break;
                        }
                        point -= w;
                    }
                    weights.swap_remove(pick);
                    out.push(Arc::clone(left.swap_remove(pick)));
                }
            }
            ReplicaOrdering::PeakEwma => {
                while out.len() < max && !left.is_empty() {
                    let pick = if left.len() == 1 {
                        0
                    } else {
                        let a = rng.usize(..left.len());
                        let b = (a + 1 + rng.usize(..left.len() - 1)) % left.len();
                        if left[b].cost() < left[a].cost() {
                            b
                        } else {
                            a
                        }
                    };
                    out.push(Arc::clone(left.swap_remove(pick)));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::criteria::Verdict;
    use super::super::replica::Replica;
    use super::*;
    use std::time::Duration;

    fn states(n: usize) -> Vec<Arc<ReplicaState>> {
        (0..n)
            .map(|i| {
                let url = format!("http://10.0.0.{i}:80");
                Arc::new(ReplicaState::new(Replica::new(url.as_str()).unwrap()))
            })
            .collect()
    }

    fn firsts(ordering: ReplicaOrdering, s: &[Arc<ReplicaState>], seed: u64) -> Vec<usize> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut counts = vec![0; s.len()];
        for _ in 0..1000 {
            let first = &ordering.order(s, &mut rng, 3)[0];
            counts[s.iter().position(|r| Arc::ptr_eq(r, first)).unwrap()] += 1;
        }
        counts
    }

    #[test]
    fn every_replica_once_and_no_more_than_asked() {
        let s = states(5);
        let mut rng = fastrand::Rng::with_seed(7);
        for ordering in [ReplicaOrdering::WeightedHealth, ReplicaOrdering::PeakEwma] {
            let all = ordering.order(&s, &mut rng, 10);
            assert_eq!(all.len(), 5);
            for r in &s {
                assert_eq!(all.iter().filter(|x| Arc::ptr_eq(x, r)).count(), 1);
            }
            assert_eq!(ordering.order(&s, &mut rng, 2).len(), 2);
        }
    }

    #[test]
    fn unhealthy_replicas_come_first_rarely() {
        let s = states(3);
        let even = firsts(ReplicaOrdering::WeightedHealth, &s, 1);
        assert!(even.iter().all(|&c| (250..420).contains(&c)), "{even:?}");
        for _ in 0..3 {
            s[0].judged(Verdict::Reject, Duration::ZERO);
        }
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
        s[0].judged(Verdict::Accept, Duration::from_secs(2));
        let counts = firsts(ReplicaOrdering::PeakEwma, &s, 3);
        assert_eq!(counts[0], 0, "the slow one never wins a pair: {counts:?}");
        let _busy: Vec<_> = (0..5).map(|_| s[1].start()).collect();
        let counts = firsts(ReplicaOrdering::PeakEwma, &s, 3);
        assert!(counts[2] > counts[1] && counts[2] > 550, "{counts:?}");
    }
}
