//! One replica of the cluster scenario: a service time, a queue in front of
//! a fixed number of workers, the faults that apply to it, and counters of
//! what it did each second.
//!
//! Why a queue and not just a delay: a replica has a capacity. With one
//! worker and 5 ms of service time it serves 200 requests/s; a replica ten
//! times slower serves 20, and the requests a balancer keeps sending it wait
//! in line, which is what makes a slow replica hurt and what the cluster
//! client must steer around. The queue is virtual: each worker has the
//! instant it becomes free, a request takes the earliest, and its answer is
//! due when its service ends, so one timer per request does it all (no task,
//! no lock held across an await). Work a client gave up on still takes its
//! turn, as on a real server that does not notice.
//!
//! Faults that answer at once (503, reset) or stall skip the queue.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::replica_fault::{FaultKind, ReplicaFault};

/// What the replica does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Answer 200 after this long.
    Ok(Duration),
    /// Answer 503 after this long.
    Unavailable(Duration),
    /// Reset the connection.
    Reset,
    /// Never answer.
    Hang,
}

/// What one replica did in one second of the run (requests counted in the
/// second they arrived).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplicaSecond {
    /// Requests that arrived.
    pub arrived: u64,
    /// Of those, answered (or to be answered) 200.
    pub ok: u64,
    /// Answered 503.
    pub unavailable: u64,
    /// Answered with a connection reset.
    pub reset: u64,
    /// Stalled (never answered, or answered late by `stall:D`).
    pub stalled: u64,
}

/// One replica's behaviour and counters.
#[derive(Debug)]
pub(crate) struct ReplicaBehaviour {
    service_time: Duration,
    faults: Vec<ReplicaFault>,
    /// When each worker is free again.
    workers: Mutex<Vec<Instant>>,
    /// The load's start (set by `begin`); before it, only untimed faults apply and nothing is counted.
    epoch: OnceLock<Instant>,
    seconds: Mutex<Vec<ReplicaSecond>>,
}

impl ReplicaBehaviour {
    pub(crate) fn new(service_time: Duration, workers: usize, faults: Vec<ReplicaFault>) -> Self {
        let now = Instant::now();
        Self {
            service_time,
            faults,
            workers: Mutex::new(vec![now; workers.max(1)]),
            epoch: OnceLock::new(),
            seconds: Mutex::new(Vec::new()),
        }
    }

    /// Starts the fault clock and the counters at `at` (once).
    pub(crate) fn begin(&self, at: Instant) {
        let _ = self.epoch.set(at);
    }

    /// Counters per second since `begin`.
    pub(crate) fn seconds(&self) -> Vec<ReplicaSecond> {
        self.seconds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Decides what to do with a request arriving now, and counts it.
    pub(crate) fn decide(&self) -> Action {
        let now = Instant::now();
        let since = self.epoch.get().map(|e| now.saturating_duration_since(*e));
        let action = self.action(now, since.unwrap_or(Duration::ZERO), since.is_some());
        // Before `begin` (a warm-up) nothing is counted.
        if let Some(t) = since {
            self.count(t, action);
        }
        action
    }

    fn action(&self, now: Instant, t: Duration, begun: bool) -> Action {
        let mut slow = 1.0;
        let mut stall = None;
        let mut unavailable = false;
        let on = |f: &&ReplicaFault| {
            if begun {
                f.active_at(t)
            } else {
                f.start.is_zero()
            }
        };
        for fault in self.faults.iter().filter(on) {
            match fault.kind {
                FaultKind::Reset => return Action::Reset,
                FaultKind::Unavailable => unavailable = true,
                FaultKind::Flap(period) => {
                    let phase = (t - fault.start).as_nanos() / period.as_nanos().max(1);
                    unavailable |= phase % 2 == 0;
                }
                FaultKind::Stall(d) => stall = Some(d),
                FaultKind::Slow(k) => slow *= k,
            }
        }
        if unavailable {
            return Action::Unavailable(Duration::ZERO);
        }
        match stall {
            Some(None) => return Action::Hang,
            Some(Some(d)) => return Action::Ok(d),
            None => {}
        }
        let service = self.service_time.mul_f64(slow);
        let mut workers = self.workers.lock().unwrap_or_else(PoisonError::into_inner);
        let (i, free) = workers
            .iter()
            .enumerate()
            .min_by_key(|(_, at)| **at)
            .map(|(i, at)| (i, *at))
            .unwrap_or((0, now));
        let done = free.max(now) + service;
        workers[i] = done;
        Action::Ok(done - now)
    }

    fn count(&self, t: Duration, action: Action) {
        let second = usize::try_from(t.as_secs()).unwrap_or(usize::MAX);
        let stalled = self.stalls_at(t);
        let mut seconds = self.seconds.lock().unwrap_or_else(PoisonError::into_inner);
        if seconds.len() <= second {
            // A bound on memory whatever the clock says: a day of seconds.
            if second > 86_400 {
                return;
            }
            seconds.resize(second + 1, ReplicaSecond::default());
        }
        let s = &mut seconds[second];
        s.arrived += 1;
        match action {
            Action::Ok(_) if stalled => s.stalled += 1,
            Action::Ok(_) => s.ok += 1,
            Action::Unavailable(_) => s.unavailable += 1,
            Action::Reset => s.reset += 1,
            Action::Hang => s.stalled += 1,
        }
    }

    fn stalls_at(&self, t: Duration) -> bool {
        self.faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::Stall(_)) && f.active_at(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(specs: &[&str]) -> Vec<ReplicaFault> {
        specs.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn one_worker_queues_requests_one_service_time_apart() {
        let r = ReplicaBehaviour::new(Duration::from_millis(5), 1, Vec::new());
        r.begin(Instant::now());
        let ms = |a: Action| match a {
            Action::Ok(d) => d.as_millis(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            [r.decide(), r.decide(), r.decide()].map(ms),
            [5, 10, 15],
            "each waits for the one before"
        );
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(ms(r.decide()), 5, "an idle worker starts at once");
        assert_eq!(r.seconds()[0].ok, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn faults_follow_their_windows() {
        let r = ReplicaBehaviour::new(
            Duration::from_millis(5),
            2,
            faults(&["0=slow:10", "0=503@2s+2s", "0=stall@5s+1s", "0=reset@7s"]),
        );
        assert_eq!(r.decide(), Action::Ok(Duration::from_millis(50)));
        assert!(r.seconds().is_empty(), "nothing counted before begin");
        r.begin(Instant::now());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(r.decide(), Action::Unavailable(Duration::ZERO));
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(r.decide(), Action::Hang);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(r.decide(), Action::Reset);
        let s = r.seconds();
        assert_eq!((s[2].unavailable, s[5].stalled, s[7].reset), (1, 1, 1));
        assert_eq!(s.iter().map(|s| s.arrived).sum::<u64>(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_flapping_replica_is_down_then_up() {
        let r = ReplicaBehaviour::new(Duration::from_millis(5), 1, faults(&["0=flap:1s"]));
        r.begin(Instant::now());
        assert_eq!(r.decide(), Action::Unavailable(Duration::ZERO));
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert!(matches!(r.decide(), Action::Ok(_)));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(r.decide(), Action::Unavailable(Duration::ZERO));
    }
}
