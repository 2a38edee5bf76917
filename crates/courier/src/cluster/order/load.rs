//! Load: what a replica costs now, lower is better — the figure a
//! [power-of-two-choices](super::ordering::ReplicaOrdering::p2c) ordering
//! compares, apart from the choosing (tower's split: `load::PeakEwma` and
//! `load::PendingRequests` beside `balance::p2c`).
//!
//! Why apart: the chooser only compares two numbers; which number is the
//! replica's load is a separate decision with its own measurements, and a
//! new one (queue depth reported by the replica, say) should touch no
//! chooser.

use super::state::ReplicaState;

/// A replica's load, as a [`ReplicaOrdering::p2c`](super::ordering::ReplicaOrdering::p2c)
/// ordering compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Load {
    /// Peak EWMA latency (decay 10 s, 30 ms before any answer) × (attempts in
    /// flight + 1): slow and busy replicas both cost more (Finagle, linkerd,
    /// tower's `PeakEwma`).
    PeakEwma,
    /// Attempts in flight alone (tower's `PendingRequests`): the replica
    /// with fewer unanswered attempts wins, whatever its latency.
    PendingRequests,
}

impl Load {
    /// Every load, in the order their names are listed.
    pub const ALL: &'static [Load] = &[Load::PeakEwma, Load::PendingRequests];

    /// This load of `replica` now.
    pub(crate) fn of(self, replica: &ReplicaState) -> f64 {
        let pending = replica.in_flight() as f64;
        match self {
            Load::PeakEwma => replica.latency_estimate().as_secs_f64() * (pending + 1.0),
            Load::PendingRequests => pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::admission::criteria::Verdict;
    use crate::cluster::order::weighing::Weighing;
    use crate::cluster::replica::Replica;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn peak_ewma_weighs_latency_and_pending_counts_only_attempts() {
        let w = Weighing::default();
        let slow = ReplicaState::new(Replica::new("http://10.0.0.1:80").unwrap());
        let fast = std::sync::Arc::new(ReplicaState::new(
            Replica::new("http://10.0.0.2:80").unwrap(),
        ));
        slow.judged(Verdict::Accept, Duration::from_secs(2), &w);
        fast.judged(Verdict::Accept, Duration::from_millis(1), &w);
        let _busy = [fast.start(&w), fast.start(&w)];
        assert!(Load::PeakEwma.of(&slow) > Load::PeakEwma.of(&fast));
        assert_eq!(Load::PendingRequests.of(&slow), 0.0);
        assert_eq!(Load::PendingRequests.of(&fast), 2.0);
    }
}
