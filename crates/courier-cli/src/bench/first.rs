//! Each slot's first request: the cold pool.
//!
//! A closed loop's slots all start at once on a pool with no connection, so their first
//! requests are the ones that wait for connections to open (DNS, TCP, TLS, an HTTP/2 preface):
//! what a service sees in its first moments, and what the run's percentiles, over thousands of
//! requests on open connections, hide. They are kept apart from the run's figures, warmup or
//! not. A slot records here once in its life, so a lock costs nothing that shows.

use std::sync::{Mutex, PoisonError};

use hdrhistogram::Histogram;

use super::json::FirstRequestsReport;
use super::request::Outcome;
use super::stats::{micros, new_histogram, record, Percentiles};

/// The first requests' latencies to the last body byte, and how many failed.
#[derive(Debug)]
pub struct FirstRequests(Mutex<Kept>);

#[derive(Debug)]
struct Kept {
    to_last_byte: Histogram<u64>,
    failed: u64,
}

impl Default for FirstRequests {
    fn default() -> Self {
        Self(Mutex::new(Kept {
            to_last_byte: new_histogram(),
            failed: 0,
        }))
    }
}

impl FirstRequests {
    /// Records a slot's first request.
    pub fn record(&self, outcome: &Outcome) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Outcome::Response(m) => record(&mut kept.to_last_byte, micros(m.to_last_byte)),
            Outcome::Failed(_) => kept.failed += 1,
        }
    }

    /// What the first requests measured.
    pub fn report(&self) -> FirstRequestsReport {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        FirstRequestsReport {
            latency_last_byte_ms: Percentiles::from_micros(&kept.to_last_byte),
            failed: kept.failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::cause::Failure;
    use crate::bench::stats::Measured;

    fn response(ms: u64) -> Outcome {
        Outcome::Response(Measured {
            status: 200,
            to_headers: Duration::from_millis(ms),
            to_last_byte: Duration::from_millis(ms),
            body_bytes: 0,
            send_lag: None,
        })
    }

    #[test]
    fn responses_are_timed_and_failures_counted() {
        let first = FirstRequests::default();
        for ms in [40, 2, 3] {
            first.record(&response(ms));
        }
        first.record(&Outcome::Failed(Failure {
            kind: "connect",
            message: "connection refused".to_owned(),
        }));
        let report = first.report();
        assert_eq!(report.failed, 1);
        assert_eq!(report.latency_last_byte_ms.count, 3);
        assert!((report.latency_last_byte_ms.p50 - 3.0).abs() < 0.01);
        assert!((report.latency_last_byte_ms.max - 40.0).abs() < 0.1);
    }
}
