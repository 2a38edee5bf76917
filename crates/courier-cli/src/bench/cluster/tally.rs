//! What the cluster run's requests recorded: outcomes and latencies, in total and per second
//! of their intended start.
//!
//! Why per second: the fault figures ("p99 back within bound N s after the fault started")
//! need the latency of each second, and a request belongs to the second it was due in, so a
//! second whose requests were held up shows it even if they finished later. One lock for the
//! whole run: at the scenario's few thousand requests per second it is never contended enough
//! to matter, and it keeps the code small.
//!
//! Why not `stats::Tally`: that one is per runtime thread and cut into seconds of wall time by
//! the sampler, and keeps headers-vs-last-byte and per-status figures this scenario does not
//! report; this one files each request under the second it was due in. The histograms are the
//! shared ones (`stats::new_histogram`, `record`, `micros`).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::super::stats::{micros, new_histogram, record};

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx response, body read.
    Success,
    /// Refused locally by adaptive throttling.
    Throttled,
    /// Anything else.
    Failed(Failure),
}

/// Why a request failed. `Copy`, with the error kind as the library's `&'static str`: a run
/// that fails thousands of requests a second records each without allocating; the label the
/// report shows is made once per distinct failure, at the end ([`Failure`]'s `Display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Failure {
    /// Any status but 2xx (the last rejected answer).
    Status(u16),
    /// An error before the response, by `ErrorKind::as_str()`.
    Error(&'static str),
    /// An error while reading the body, by `ErrorKind::as_str()`.
    Body(&'static str),
    /// Still in flight when the run gave up on it.
    Unfinished,
    /// Due, but never sent: every in-flight slot was taken until the end.
    NotSent,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Status(code) => write!(f, "status {code}"),
            Failure::Error(kind) => f.write_str(kind),
            Failure::Body(kind) => write!(f, "{kind} (body)"),
            Failure::Unfinished => f.write_str("unfinished at the end"),
            Failure::NotSent => f.write_str("not sent (every in-flight slot taken)"),
        }
    }
}

/// One second of the run (by intended start).
#[derive(Debug, Clone)]
pub struct Second {
    pub requests: u64,
    pub successes: u64,
    /// Corrected latency of the successful requests (µs).
    pub latency: Histogram<u64>,
}

/// Everything recorded.
#[derive(Debug, Clone)]
pub struct Tallies {
    pub requests: u64,
    pub successes: u64,
    pub throttled: u64,
    /// Failures other than throttling, by cause.
    pub failures: BTreeMap<Failure, u64>,
    /// From the intended start to the last byte (corrected for coordinated omission), µs.
    pub corrected: Histogram<u64>,
    /// From the actual send to the last byte, µs.
    pub uncorrected: Histogram<u64>,
    pub seconds: Vec<Second>,
    /// Corrected latency of the successes since the progress line last took them
    /// ([`Tally::take_recent`]), µs.
    pub recent: Histogram<u64>,
}

/// What the progress line shows of the requests that finished so far.
#[derive(Debug, Clone)]
pub struct Finished {
    pub requests: u64,
    /// Failed or throttled.
    pub errors: u64,
    /// Corrected latency of the successes since the last call, µs.
    pub recent: Histogram<u64>,
}

/// The run's recorder.
#[derive(Debug)]
pub struct Tally(Mutex<Tallies>);

impl Tally {
    pub fn new() -> Self {
        Tally(Mutex::new(Tallies {
            requests: 0,
            successes: 0,
            throttled: 0,
            failures: BTreeMap::new(),
            corrected: new_histogram(),
            uncorrected: new_histogram(),
            seconds: Vec::new(),
            recent: new_histogram(),
        }))
    }

    /// Records a request due `due` after the start, that took `corrected` from then and
    /// `uncorrected` from its actual send.
    pub fn record(
        &self,
        due: Duration,
        outcome: Outcome,
        corrected: Duration,
        uncorrected: Duration,
    ) {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let second = due.as_secs() as usize;
        while t.seconds.len() <= second {
            t.seconds.push(Second {
                requests: 0,
                successes: 0,
                latency: new_histogram(),
            });
        }
        t.requests += 1;
        t.seconds[second].requests += 1;
        match outcome {
            Outcome::Success => {
                let c = micros(corrected);
                t.successes += 1;
                record(&mut t.corrected, c);
                record(&mut t.uncorrected, micros(uncorrected));
                t.seconds[second].successes += 1;
                record(&mut t.seconds[second].latency, c);
                record(&mut t.recent, c);
            }
            Outcome::Throttled => t.throttled += 1,
            Outcome::Failed(failure) => *t.failures.entry(failure).or_default() += 1,
        }
    }

    /// Counts `n` requests that were due but never finished, for `failure`: still in flight
    /// at the end ([`Failure::Unfinished`]) or never sent ([`Failure::NotSent`]).
    pub fn unfinished(&self, failure: Failure, n: u64) {
        if n == 0 {
            return;
        }
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        t.requests += n;
        *t.failures.entry(failure).or_default() += n;
    }

    /// What finished so far, and the latencies since the last call (taken: the next call
    /// starts afresh).
    pub fn take_recent(&self) -> Finished {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut recent = new_histogram();
        std::mem::swap(&mut recent, &mut t.recent);
        Finished {
            requests: t.requests,
            errors: t.requests - t.successes,
            recent,
        }
    }

    /// A copy of what was recorded.
    pub fn snapshot(&self) -> Tallies {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_land_in_their_seconds() {
        let t = Tally::new();
        let ms = Duration::from_millis;
        t.record(ms(100), Outcome::Success, ms(7), ms(6));
        t.record(
            ms(2100),
            Outcome::Failed(Failure::Status(503)),
            ms(1),
            ms(1),
        );
        t.record(ms(2200), Outcome::Throttled, ms(0), ms(0));
        t.unfinished(Failure::Unfinished, 2);
        let s = t.snapshot();
        assert_eq!((s.requests, s.successes, s.throttled), (5, 1, 1));
        assert_eq!(s.failures[&Failure::Status(503)], 1);
        assert_eq!(s.failures[&Failure::Unfinished], 2);
        assert_eq!(s.seconds.len(), 3);
        assert_eq!((s.seconds[2].requests, s.seconds[2].successes), (2, 0));
        assert_eq!(s.seconds[0].latency.len(), 1);
    }

    #[test]
    fn the_progress_line_takes_the_latencies_since_it_last_looked() {
        let t = Tally::new();
        let ms = Duration::from_millis;
        t.record(ms(100), Outcome::Success, ms(7), ms(6));
        t.record(ms(200), Outcome::Throttled, ms(0), ms(0));
        let first = t.take_recent();
        assert_eq!(
            (first.requests, first.errors, first.recent.len()),
            (2, 1, 1)
        );
        t.record(ms(1100), Outcome::Success, ms(9), ms(9));
        t.record(ms(1200), Outcome::Success, ms(3), ms(3));
        let second = t.take_recent();
        assert_eq!(
            (second.requests, second.errors, second.recent.len()),
            (4, 1, 2)
        );
        assert_eq!(t.take_recent().recent.len(), 0);
        // The run's own figures keep everything.
        assert_eq!(t.snapshot().corrected.len(), 3);
    }

    #[test]
    fn failures_are_counted_without_a_string_each_and_keep_their_labels() {
        // Recording a failure copies it: no `String` per failed request.
        fn copy<T: Copy>() {}
        copy::<Outcome>();
        for (failure, label) in [
            (Failure::Status(503), "status 503"),
            (Failure::Error("timeout"), "timeout"),
            (Failure::Body("connect"), "connect (body)"),
            (Failure::Unfinished, "unfinished at the end"),
            (Failure::NotSent, "not sent (every in-flight slot taken)"),
        ] {
            assert_eq!(failure.to_string(), label);
        }
    }
}
