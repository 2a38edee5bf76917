//! What the cluster run's requests recorded: outcomes and latencies, in total and per second
//! of their intended start.
//!
//! Why per second: the fault figures ("p99 back within bound N s after the fault started")
//! need the latency of each second, and a request belongs to the second it was due in, so a
//! second whose requests were held up shows it even if they finished later. One lock for the
//! whole run: at the scenario's few thousand requests per second it is never contended enough
//! to matter, and it keeps the code small.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hdrhistogram::Histogram;

/// Highest latency recorded (µs); anything slower is clamped to it.
const MAX_US: u64 = 120_000_000;

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx response, body read.
    Success,
    /// Any other status (the last rejected answer).
    Status(u16),
    /// Refused locally by adaptive throttling.
    Throttled,
    /// An error, by kind.
    Error(String),
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
    pub failures: BTreeMap<String, u64>,
    /// From the intended start to the last byte (corrected for coordinated omission), µs.
    pub corrected: Histogram<u64>,
    /// From the actual send to the last byte, µs.
    pub uncorrected: Histogram<u64>,
    pub seconds: Vec<Second>,
}

/// The run's recorder.
#[derive(Debug)]
pub struct Tally(Mutex<Tallies>);

/// A histogram of 1 µs to 120 s at 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds are valid")
}

impl Tally {
    pub fn new() -> Self {
        Tally(Mutex::new(Tallies {
            requests: 0,
            successes: 0,
            throttled: 0,
            failures: BTreeMap::new(),
            corrected: histogram(),
            uncorrected: histogram(),
            seconds: Vec::new(),
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
                latency: histogram(),
            });
        }
        t.requests += 1;
        t.seconds[second].requests += 1;
        match outcome {
            Outcome::Success => {
                let c = us(corrected);
                t.successes += 1;
                t.corrected.saturating_record(c);
                t.uncorrected.saturating_record(us(uncorrected));
                t.seconds[second].successes += 1;
                t.seconds[second].latency.saturating_record(c);
            }
            Outcome::Throttled => t.throttled += 1,
            Outcome::Status(code) => *t.failures.entry(format!("status {code}")).or_default() += 1,
            Outcome::Error(kind) => *t.failures.entry(kind).or_default() += 1,
        }
    }

    /// Counts requests that were due but never finished (abandoned at the end).
    pub fn abandoned(&self, n: u64) {
        if n == 0 {
            return;
        }
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        t.requests += n;
        *t.failures
            .entry("unfinished at the end".to_owned())
            .or_default() += n;
    }

    /// Counts requests that were due but never sent (no in-flight slot free before the end).
    pub fn not_sent(&self, n: u64) {
        if n == 0 {
            return;
        }
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        t.requests += n;
        *t.failures
            .entry("not sent (every in-flight slot taken)".to_owned())
            .or_default() += n;
    }

    /// A copy of what was recorded.
    pub fn snapshot(&self) -> Tallies {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros())
        .unwrap_or(MAX_US)
        .clamp(1, MAX_US)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_land_in_their_seconds() {
        let t = Tally::new();
        let ms = Duration::from_millis;
        t.record(ms(100), Outcome::Success, ms(7), ms(6));
        t.record(ms(2100), Outcome::Status(503), ms(1), ms(1));
        t.record(ms(2200), Outcome::Throttled, ms(0), ms(0));
        t.abandoned(2);
        let s = t.snapshot();
        assert_eq!((s.requests, s.successes, s.throttled), (5, 1, 1));
        assert_eq!(s.failures["status 503"], 1);
        assert_eq!(s.failures["unfinished at the end"], 2);
        assert_eq!(s.seconds.len(), 3);
        assert_eq!((s.seconds[2].requests, s.seconds[2].successes), (2, 0));
        assert_eq!(s.seconds[0].latency.len(), 1);
    }
}
