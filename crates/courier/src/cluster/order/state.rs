//! What the cluster knows of one replica: counters (atomics) and the
//! adaptive part behind one short lock — health, peak EWMA latency,
//! relative-weight statistics, gray list, ejection.
//!
//! Why together: every verdict updates all of them at once, and the
//! ordering reads all of them for each replica; one lock per replica per
//! verdict is the whole cost, and it is never held across an `.await`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::ewma::{PeakEwma, DEFAULT_DECAY, DEFAULT_RTT};
use super::gray::Gray;
use super::health::Health;
use super::recent::{Recent, RecentLatencyConfig};
use super::relative::Relative;
use super::weighing::Weighing;
use crate::cluster::admission::criteria::Verdict;
use crate::cluster::admission::outlier::Outlier;
use crate::cluster::replica::metrics::ReplicaSnapshot;
use crate::cluster::replica::Replica;

#[derive(Debug)]
pub(crate) struct ReplicaState {
    pub(crate) replica: Replica,
    requests: AtomicU64,
    accepted: AtomicU64,
    failures: AtomicU64,
    cancelled: AtomicU64,
    in_flight: AtomicU64,
    ejections: AtomicU64,
    adaptive: Mutex<Adaptive>,
}

#[derive(Debug)]
struct Adaptive {
    health: Health,
    latency: PeakEwma,
    relative: Relative,
    recent: Recent,
    gray: Gray,
    outlier: Outlier,
}

/// A replica as the ordering sees it at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Standing {
    /// Adaptive health × relative weight.
    pub(crate) weight: f64,
    /// Adaptive health alone.
    pub(crate) health: f64,
    pub(crate) gray: bool,
    pub(crate) ejected: bool,
    /// The recent latency average as of its last sample (for the median), s.
    pub(crate) typical: Option<f64>,
    /// The recent latency the factor reads now, s (see `recent.rs`).
    pub(crate) recent: f64,
}

impl Standing {
    /// In rotation, for the panic threshold: not ejected, not gray-listed
    /// (adaptive health does not count: see `outlier`).
    pub(crate) fn in_rotation(&self) -> bool {
        !self.gray && !self.ejected
    }
}

impl ReplicaState {
    pub(crate) fn new(replica: Replica) -> ReplicaState {
        ReplicaState {
            replica,
            requests: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            ejections: AtomicU64::new(0),
            adaptive: Mutex::new(Adaptive {
                health: Health::new(),
                latency: PeakEwma::new(DEFAULT_RTT, DEFAULT_DECAY),
                relative: Relative::default(),
                recent: Recent::new(),
                gray: Gray::default(),
                outlier: Outlier::default(),
            }),
        }
    }

    fn adaptive(&self) -> MutexGuard<'_, Adaptive> {
        self.adaptive.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Relaxed)
    }

    /// The peak EWMA latency estimate (see `load.rs`).
    pub(crate) fn latency_estimate(&self) -> Duration {
        self.adaptive().latency.estimate()
    }

    pub(crate) fn standing(&self, config: &Weighing, now: Instant) -> Standing {
        let mut a = self.adaptive();
        if a.outlier.take_return(now) {
            // Back from ejection: afresh (see outlier.rs).
            a.health = Health::new();
            a.relative = Relative::default();
        }
        let relative = match &config.relative_weights {
            Some(c) => a.relative.weight(c, now),
            None => 1.0,
        };
        let health = a.health.effective(&config.health, now);
        let recent = match &config.recent_latency {
            Some(c) => a.recent.latency(self.in_flight(), c, now),
            None => 0.0,
        };
        Standing {
            weight: health * relative,
            health,
            gray: a.gray.is_gray(now),
            ejected: a.outlier.is_ejected(now),
            typical: a.recent.typical(),
            recent,
        }
    }

    /// Runs `f` on the relative-weight part, under the lock.
    pub(crate) fn with_relative(&self, f: &mut dyn FnMut(&mut Relative)) {
        f(&mut self.adaptive().relative);
    }

    /// An attempt starts; it is in flight until the guard is dropped (an
    /// attempt cancelled by a strategy counts as neither success nor
    /// failure, but its time so far may count as latency: see
    /// [`InFlight`]'s `Drop`).
    pub(crate) fn start(self: &Arc<Self>, config: &Weighing) -> InFlight {
        self.requests.fetch_add(1, Relaxed);
        let idle = self.in_flight.fetch_add(1, Relaxed) == 0;
        let now = Instant::now();
        if config.recent_latency.is_some() {
            self.adaptive().recent.started(idle, now);
        }
        InFlight {
            state: Arc::clone(self),
            judged: false,
            started: now,
            recent: config.recent_latency,
        }
    }

    /// An attempt cancelled after `elapsed` without an answer: the replica
    /// takes at least that long, which is news only when it is longer than
    /// its latency estimate. Without this a replica that is stuck, and whose
    /// attempts are always the forks that lose, kept its full share: every
    /// request that drew it first waited a fork interval.
    fn cancelled_after(&self, elapsed: Duration, recent: Option<&RecentLatencyConfig>) {
        self.cancelled.fetch_add(1, Relaxed);
        let mut a = self.adaptive();
        if let Some(c) = recent {
            a.recent.ended(elapsed, false, c, Instant::now());
        }
        if elapsed > a.latency.estimate() {
            a.latency.observe(elapsed);
            a.relative.report(false, elapsed);
        }
    }

    /// The verdict on an attempt that took `rtt`; true when the replica is
    /// due for ejection (the caller decides, knowing the other replicas).
    pub(crate) fn judged(&self, verdict: Verdict, rtt: Duration, config: &Weighing) -> bool {
        let now = Instant::now();
        let rejected = verdict == Verdict::Reject;
        let counter = if rejected {
            &self.failures
        } else {
            &self.accepted
        };
        counter.fetch_add(1, Relaxed);
        let mut a = self.adaptive();
        if rejected {
            a.health.down(&config.health, now);
            if let Some(period) = config.gray_period {
                a.gray.rejected(period, now);
            }
        } else {
            a.health.up(&config.health);
        }
        a.latency.observe(rtt);
        a.relative.report(rejected, rtt);
        if let Some(c) = &config.recent_latency {
            // A rejection's time is a lower bound (a timeout), not an answer time.
            a.recent.ended(rtt, !rejected, c, now);
        }
        match &config.outlier {
            Some(c) => a.outlier.judged(rejected, c, now),
            None => false,
        }
    }

    /// Ejects the replica (outlier detection is on).
    pub(crate) fn eject(&self, config: &Weighing) -> Option<Duration> {
        let c = config.outlier.as_ref()?;
        self.ejections.fetch_add(1, Relaxed);
        Some(self.adaptive().outlier.eject(c, Instant::now()))
    }

    pub(crate) fn is_ejected(&self, now: Instant) -> bool {
        self.adaptive().outlier.is_ejected(now)
    }

    /// The snapshot, from a `standing` just taken and the recent-latency
    /// factor the ordering gives it.
    pub(crate) fn snapshot(
        &self,
        config: &Weighing,
        standing: &Standing,
        recent_weight: f64,
    ) -> ReplicaSnapshot {
        let now = Instant::now();
        let mut a = self.adaptive();
        let relative = config
            .relative_weights
            .as_ref()
            .map_or(1.0, |c| a.relative.weight(c, now));
        ReplicaSnapshot {
            replica: self.replica.clone(),
            requests: self.requests.load(Relaxed),
            failures: self.failures.load(Relaxed),
            in_flight: self.in_flight(),
            latency_ewma: a.latency.estimate(),
            recent_latency: Duration::try_from_secs_f64(standing.recent).unwrap_or_default(),
            recent_weight,
            health: standing.health,
            accepted: self.accepted.load(Relaxed),
            cancelled: self.cancelled.load(Relaxed),
            relative_weight: relative,
            weight: if standing.gray || standing.ejected {
                0.0
            } else {
                standing.weight * recent_weight
            },
            gray_listed: standing.gray,
            ejected: standing.ejected,
            ejections: self.ejections.load(Relaxed),
            consecutive_rejects: a.outlier.consecutive(),
        }
    }
}

/// An attempt in flight on a replica.
#[derive(Debug)]
pub(crate) struct InFlight {
    state: Arc<ReplicaState>,
    judged: bool,
    started: Instant,
    recent: Option<RecentLatencyConfig>,
}

impl InFlight {
    /// The attempt's verdict (see [`ReplicaState::judged`]).
    pub(crate) fn judged(&mut self, verdict: Verdict, rtt: Duration, config: &Weighing) -> bool {
        self.judged = true;
        self.state.judged(verdict, rtt, config)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.in_flight.fetch_sub(1, Relaxed);
        if !self.judged {
            let recent = self.recent.as_ref();
            self.state.cancelled_after(self.started.elapsed(), recent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(s: &Arc<ReplicaState>) -> ReplicaSnapshot {
        let config = Weighing::default();
        crate::cluster::order::ordering::snapshots(&[Arc::clone(s)], &config, Instant::now())
            .remove(0)
    }

    fn state() -> Arc<ReplicaState> {
        Arc::new(ReplicaState::new(
            Replica::new("http://10.0.0.1:80").unwrap(),
        ))
    }

    /// A replica whose attempts are always the losing forks is slower than
    /// its estimate says: the time they ran counts, as a lower bound.
    #[tokio::test(start_paused = true)]
    async fn a_cancelled_attempt_that_ran_long_raises_the_latency_estimate() {
        let s = state();
        let before = snap(&s);
        let attempt = s.start(&Weighing::default());
        tokio::time::advance(Duration::from_millis(300)).await;
        drop(attempt);
        let after = snap(&s);
        assert_eq!((after.cancelled, after.failures, after.accepted), (1, 0, 0));
        assert!(
            before.latency_ewma < Duration::from_millis(100),
            "{before:?}"
        );
        assert!(
            after.latency_ewma >= Duration::from_millis(300),
            "{after:?}"
        );
        assert_eq!(reported(&s), 1, "a sample for the relative weights");
    }

    /// Latency samples the relative weights hold for the current period.
    fn reported(s: &ReplicaState) -> u64 {
        let mut count = 0;
        s.with_relative(&mut |r| count = r.take_period().count);
        count
    }

    /// One cancelled quickly (another replica answered first) says nothing
    /// about this one being slow, and must not pull its estimate down.
    #[tokio::test(start_paused = true)]
    async fn a_cancelled_attempt_shorter_than_the_estimate_teaches_nothing() {
        let s = state();
        let before = snap(&s).latency_ewma;
        let attempt = s.start(&Weighing::default());
        tokio::time::advance(Duration::from_millis(1)).await;
        drop(attempt);
        let after = snap(&s).latency_ewma;
        assert!(
            after + Duration::from_millis(1) >= before,
            "{before:?} -> {after:?}"
        );
        // What the check guards: a short sample must not reach the relative
        // weights either, where it would make the replica look fast.
        assert_eq!(reported(&s), 0);
    }
}
