//! What every request slot of a run shares: the request, the clock, the budget, the recorder.
//!
//! Time has two phases: the warmup, whose requests are sent but not recorded, then the
//! measurement, which ends at the deadline (`-d`) or after the budgeted number of requests
//! (`-n`). A request belongs to the phase in which it starts, so nothing sent during the warmup
//! leaks into the figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::{Load, Model, Stop};
use super::first::FirstRequests;
use super::recorder::Recorder;
use super::request::{Outcome, Template};
use super::stats::Measured;

/// The phases of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// When the first request slot started.
    pub start: Instant,
    /// End of the warmup: requests starting from here on are measured.
    pub measure_start: Instant,
    /// With `-d`: when measurement ends; requests still in flight then are abandoned.
    pub deadline: Option<Instant>,
}

/// How many measured requests may still start.
#[derive(Debug)]
pub enum Budget {
    /// Exactly `limit` measured requests in total: each takes a ticket.
    Requests { issued: AtomicU64, limit: u64 },
    /// Until the clock's deadline.
    Until(Instant),
    /// One request per slot (long polls without `-d`/`-n`).
    OneRound,
}

/// What a slot may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send, but do not record (warmup).
    Warmup,
    /// Send and record.
    Measured,
    /// The budget is spent: stop.
    Stop,
}

/// Requests in flight now and at most, counted by the slots themselves (long polls).
#[derive(Debug, Default)]
pub struct InFlight {
    now: AtomicU64,
    peak: AtomicU64,
}

impl InFlight {
    /// Counts a request in flight until the guard is dropped.
    pub fn enter(&self) -> InFlightGuard<'_> {
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
        InFlightGuard(self)
    }

    /// Requests in flight now.
    pub fn now(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }

    /// The most requests that were in flight at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// Ends one request's time in flight when dropped (also when the request is abandoned).
#[derive(Debug)]
pub struct InFlightGuard<'a>(&'a InFlight);

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Everything the slots of one run share.
#[derive(Debug)]
pub struct Plan {
    pub template: Template,
    pub recorder: Arc<Recorder>,
    pub clock: Clock,
    pub budget: Budget,
    /// Counted only when someone reads it (long polls), so other runs skip the shared atomic.
    pub in_flight: Option<InFlight>,
    /// Cancelled by Ctrl-C (`interrupt`): no request starts after it.
    pub stop: CancellationToken,
    /// The requests on a cold pool: each slot's first (the closed loop), or those sent before
    /// their client's first response (the open loop). Long polls open their connections
    /// before the run.
    pub first: Option<FirstRequests>,
}

impl Plan {
    /// The plan of a run that starts now: the warmup first, then the measurement.
    pub fn new(template: Template, recorder: Arc<Recorder>, load: &Load) -> Self {
        let start = Instant::now();
        let measure_start = start + load.warmup;
        let deadline = match load.stop {
            Stop::Duration(d) => Some(measure_start + d),
            Stop::Requests(_) | Stop::OneRound => None,
        };
        let budget = match (load.stop, deadline) {
            (Stop::Requests(limit), _) => Budget::Requests {
                issued: AtomicU64::new(0),
                limit,
            },
            (Stop::Duration(_), Some(deadline)) => Budget::Until(deadline),
            _ => Budget::OneRound,
        };
        Self {
            template,
            recorder,
            clock: Clock {
                start,
                measure_start,
                deadline,
            },
            budget,
            in_flight: matches!(load.model, Model::LongPoll { .. }).then(InFlight::default),
            stop: CancellationToken::new(),
            first: matches!(load.model, Model::Closed | Model::Open { .. })
                .then(FirstRequests::default),
        }
    }

    /// Whether a request starting now may be sent, and whether it counts.
    #[cfg(test)]
    pub fn admit(&self) -> Admit {
        self.admit_with(Instant::now())
    }

    /// Whether a request starting at `now` may be sent, and whether it counts. The caller reads
    /// the clock: the same reading is the request's start.
    pub fn admit_with(&self, now: Instant) -> Admit {
        if self.stop.is_cancelled() {
            return Admit::Stop;
        }
        if now < self.clock.measure_start {
            return Admit::Warmup;
        }
        let more = match &self.budget {
            Budget::Requests { issued, limit } => issued.fetch_add(1, Ordering::Relaxed) < *limit,
            Budget::Until(deadline) => now < *deadline,
            Budget::OneRound => true,
        };
        if more {
            Admit::Measured
        } else {
            Admit::Stop
        }
    }

    /// Records a measured request's outcome into this thread's tally.
    pub fn record(&self, outcome: Outcome) {
        self.recorder.record(|tally| match outcome {
            Outcome::Response(m) => tally.record_response(&m),
            Outcome::Failed(failure) => tally.record_failure(failure),
        });
    }

    /// Records a measured open-loop request: its send lag, and its outcome with the lag attached
    /// (for the corrected latencies).
    pub fn record_open_loop(&self, outcome: Outcome, lag: Duration) {
        self.recorder.record(|tally| {
            tally.record_send_lag(lag);
            match outcome {
                Outcome::Response(m) => tally.record_response(&Measured {
                    send_lag: Some(lag),
                    ..m
                }),
                Outcome::Failed(failure) => tally.record_failure(failure),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_counts_and_keeps_its_peak() {
        let counter = InFlight::default();
        let a = counter.enter();
        let b = counter.enter();
        assert_eq!((counter.now(), counter.peak()), (2, 2));
        drop(a);
        let c = counter.enter();
        drop(b);
        drop(c);
        assert_eq!((counter.now(), counter.peak()), (0, 2));
    }

    fn plan(budget: Budget, warmup: Duration) -> Plan {
        let start = Instant::now();
        let args = crate::bench::args::tests::parse(&[]).unwrap();
        let template = Template::new(&args, vec!["http://127.0.0.1:1/".parse().unwrap()]).unwrap();
        Plan {
            template,
            recorder: Recorder::new(),
            clock: Clock {
                start,
                measure_start: start + warmup,
                deadline: None,
            },
            budget,
            in_flight: None,
            stop: CancellationToken::new(),
            first: None,
        }
    }

    #[test]
    fn a_request_budget_admits_exactly_its_limit_after_the_warmup() {
        let p = plan(
            Budget::Requests {
                issued: AtomicU64::new(0),
                limit: 3,
            },
            Duration::ZERO,
        );
        let admitted: Vec<_> = (0..5).map(|_| p.admit()).collect();
        assert_eq!(
            admitted,
            [
                Admit::Measured,
                Admit::Measured,
                Admit::Measured,
                Admit::Stop,
                Admit::Stop
            ]
        );
        let warm = plan(Budget::OneRound, Duration::from_secs(60));
        assert_eq!(warm.admit(), Admit::Warmup);
    }

    #[test]
    fn nothing_is_admitted_after_ctrl_c() {
        let p = plan(Budget::OneRound, Duration::ZERO);
        assert_eq!(p.admit(), Admit::Measured);
        p.stop.cancel();
        assert_eq!(p.admit(), Admit::Stop);
        let warm = plan(Budget::OneRound, Duration::from_secs(60));
        warm.stop.cancel();
        assert_eq!(warm.admit(), Admit::Stop);
    }

    #[test]
    fn a_deadline_budget_stops_at_the_deadline() {
        let p = plan(Budget::Until(Instant::now()), Duration::ZERO);
        assert_eq!(p.admit(), Admit::Stop);
        let p = plan(
            Budget::Until(Instant::now() + Duration::from_secs(60)),
            Duration::ZERO,
        );
        assert_eq!(p.admit(), Admit::Measured);
    }
}
