//! Per-worker measurements and the maths that turns them into a report.
//!
//! Each worker owns its own histograms and counters, so the hot path never touches shared state
//! (no lock, not even an atomic): measurements are merged once, after the run. Latencies are kept
//! in HdrHistograms in whole microseconds with 3 significant figures, which bounds the error of
//! any percentile to 0.1% whatever the range, and merging is exact.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

/// Significant figures kept by the latency histograms.
const SIGNIFICANT_FIGURES: u8 = 3;

/// What one worker measured.
#[derive(Debug, Clone)]
pub struct WorkerStats {
    /// Time from sending to response headers, in microseconds (successful requests only).
    pub to_headers: Histogram<u64>,
    /// Time from sending to the last body byte read, in microseconds (successful requests only).
    pub to_last_byte: Histogram<u64>,
    /// Requests that completed without a transport error, by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that failed, by `ErrorKind::as_str()`.
    pub errors: BTreeMap<&'static str, u64>,
    /// Body bytes handed to the worker (not counting bytes drained by the library).
    pub body_bytes: u64,
}

impl Default for WorkerStats {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerStats {
    /// Empty measurements.
    pub fn new() -> Self {
        Self {
            to_headers: new_histogram(),
            to_last_byte: new_histogram(),
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            body_bytes: 0,
        }
    }

    /// Records a request that got a response and read the body as far as asked.
    pub fn record_response(
        &mut self,
        status: u16,
        to_headers: Duration,
        to_last_byte: Duration,
        body_bytes: u64,
    ) {
        record(&mut self.to_headers, micros(to_headers));
        record(&mut self.to_last_byte, micros(to_last_byte));
        *self.statuses.entry(status).or_insert(0) += 1;
        self.body_bytes += body_bytes;
    }

    /// Records a failed request (no latency: a failure's timing says little about the server).
    pub fn record_error(&mut self, kind: &'static str) {
        *self.errors.entry(kind).or_insert(0) += 1;
    }

    /// Requests that got a response.
    pub fn responses(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Requests that failed.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Every finished request, failed or not.
    pub fn requests(&self) -> u64 {
        self.responses() + self.error_count()
    }

    /// Adds another worker's measurements to these.
    pub fn merge(&mut self, other: &WorkerStats) -> Result<()> {
        add_histogram(&mut self.to_headers, &other.to_headers)?;
        add_histogram(&mut self.to_last_byte, &other.to_last_byte)?;
        for (status, n) in &other.statuses {
            *self.statuses.entry(*status).or_insert(0) += n;
        }
        for (kind, n) in &other.errors {
            *self.errors.entry(kind).or_insert(0) += n;
        }
        self.body_bytes += other.body_bytes;
        Ok(())
    }

    /// Merges all workers' measurements into one.
    pub fn merge_all<'a>(workers: impl IntoIterator<Item = &'a WorkerStats>) -> Result<Self> {
        let mut total = Self::new();
        for worker in workers {
            total.merge(worker)?;
        }
        Ok(total)
    }
}

/// Latency percentiles in milliseconds: the shape used for every latency in the report.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    /// Summarizes a histogram of microseconds; all zeros when it is empty.
    pub fn from_micros(histogram: &Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        if histogram.is_empty() {
            return Self::default();
        }
        Self {
            p50: ms(histogram.value_at_quantile(0.50)),
            p90: ms(histogram.value_at_quantile(0.90)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            max: ms(histogram.max()),
            mean: histogram.mean() / 1000.0,
        }
    }
}

/// What the client's own metrics say about the pool over the run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PoolStats {
    pub connections_established: u64,
    /// Highest number of open connections seen (sampled, and the library's own maximum).
    pub connections_open_max: u64,
    /// Most requests seen waiting for a connection at once (sampled every 100 ms).
    pub requests_queued_max: u64,
    pub queue_time_mean: Duration,
    pub queue_time_max: Duration,
    pub drains_completed: u64,
    pub drains_aborted: u64,
    pub stale_retries: u64,
}

/// Events per second; zero for an empty interval rather than infinity or NaN.
pub fn per_second(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}

/// A ratio that is zero when the divisor is (e.g. requests per connection with no connection).
pub fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}

/// A duration in milliseconds, as reports show it.
pub fn millis(duration: Duration) -> f64 {
    // From whole nanoseconds: one correctly rounded division, so 250 µs is exactly 0.25.
    duration.as_nanos() as f64 / 1_000_000.0
}

fn new_histogram() -> Histogram<u64> {
    // Auto-resizing: any latency fits, and merging histograms of different ranges never fails.
    Histogram::new(SIGNIFICANT_FIGURES).expect("3 significant figures is a valid precision")
}

/// Records a value, growing the histogram as needed. (`saturating_record` would not grow it:
/// it clamps to the current range, which starts at about 2 ms.) Growing only fails past
/// `u64::MAX / 2` µs, where clamping is the right answer anyway.
fn record(histogram: &mut Histogram<u64>, micros: u64) {
    if histogram.record(micros).is_err() {
        histogram.saturating_record(micros);
    }
}

fn add_histogram(into: &mut Histogram<u64>, from: &Histogram<u64>) -> Result<()> {
    into.add(from)
        .map_err(|e| CliError::new(format!("cannot merge latency histograms: {e:?}")))
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut w = WorkerStats::new();
        for i in 1..=1000 {
            w.record_response(200, ms(i), ms(i + 1), 10);
        }
        let p = Percentiles::from_micros(&w.to_headers);
        // 3 significant figures: each value within 0.1% of the exact one.
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 1e-9;
        assert!(close(p.p50, 500.0), "{p:?}");
        assert!(close(p.p90, 900.0), "{p:?}");
        assert!(close(p.p99, 990.0), "{p:?}");
        assert!(close(p.p999, 999.0), "{p:?}");
        assert!(close(p.max, 1000.0), "{p:?}");
        assert!(close(p.mean, 500.5), "{p:?}");
        let last = Percentiles::from_micros(&w.to_last_byte);
        assert!(close(last.p50, 501.0), "{last:?}");
    }

    #[test]
    fn merged_workers_equal_one_worker_that_saw_everything() {
        let mut all = WorkerStats::new();
        let mut workers = vec![WorkerStats::new(), WorkerStats::new(), WorkerStats::new()];
        for i in 0..3000u64 {
            let latency = Duration::from_micros(100 + i * 37 % 5000);
            all.record_response(200, latency, latency, 1);
            workers[(i % 3) as usize].record_response(200, latency, latency, 1);
        }
        workers[1].record_error("timeout");
        workers[2].record_error("timeout");
        workers[2].record_error("connect");
        workers[0].record_response(503, ms(1), ms(1), 0);
        all.record_response(503, ms(1), ms(1), 0);

        let merged = WorkerStats::merge_all(&workers).unwrap();
        assert_eq!(merged.to_headers.len(), all.to_headers.len());
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                merged.to_headers.value_at_quantile(q),
                all.to_headers.value_at_quantile(q)
            );
        }
        assert_eq!(merged.responses(), 3001);
        assert_eq!(merged.error_count(), 3);
        assert_eq!(merged.requests(), 3004);
        assert_eq!(merged.errors.get("timeout"), Some(&2));
        assert_eq!(merged.errors.get("connect"), Some(&1));
        assert_eq!(merged.statuses.get(&503), Some(&1));
        assert_eq!(merged.body_bytes, 3000);
    }

    #[test]
    fn merging_latencies_far_apart_does_not_fail() {
        let mut fast = WorkerStats::new();
        fast.record_response(200, Duration::from_micros(3), Duration::from_micros(3), 0);
        let mut slow = WorkerStats::new();
        slow.record_response(200, Duration::from_secs(3600), Duration::from_secs(3600), 0);
        let merged = WorkerStats::merge_all([&fast, &slow]).unwrap();
        let p = Percentiles::from_micros(&merged.to_headers);
        assert!((p.max - 3_600_000.0).abs() < 3_600.0, "{p:?}");
    }

    #[test]
    fn empty_histogram_summarizes_to_zero() {
        assert_eq!(
            Percentiles::from_micros(&WorkerStats::new().to_headers),
            Percentiles::default()
        );
    }

    #[test]
    fn rates_and_ratios() {
        assert_eq!(per_second(2000, ms(500)), 4000.0);
        assert_eq!(per_second(10, Duration::ZERO), 0.0);
        assert_eq!(ratio(2000, 16), 125.0);
        assert_eq!(ratio(5, 0), 0.0);
        assert_eq!(millis(Duration::from_micros(1500)), 1.5);
    }
}
