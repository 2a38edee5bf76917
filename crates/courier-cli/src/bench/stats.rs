//! Measurements and the maths that turns them into figures.
//!
//! A [`Tally`] holds what a set of requests measured: HdrHistograms of latency and counters. One
//! lives per runtime thread (see `recorder.rs`), and the sampler folds them into per-second and
//! whole-run tallies, so merging must be exact: it is (HdrHistogram adds counts bucket by bucket).
//! Latencies are kept in whole microseconds with 3 significant figures, which bounds the error of
//! any percentile to 0.1 % whatever the range.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::cause::Failure;
use crate::error::{CliError, Result};

/// Significant figures kept by the latency histograms.
const SIGNIFICANT_FIGURES: u8 = 3;

/// Distinct error messages kept per tally: enough for every real cause, bounded so a server
/// that puts something unique in every error cannot grow the tally without end.
pub const MAX_MESSAGES: usize = 32;

/// Where failures whose message did not fit under [`MAX_MESSAGES`] are counted.
pub const OTHER_MESSAGES: &str = "(other error messages)";

/// One finished request, as the load generator saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub status: u16,
    /// From the actual send to the response headers.
    pub to_headers: Duration,
    /// From the actual send to the last body byte read.
    pub to_last_byte: Duration,
    pub body_bytes: u64,
    /// Open loop: how late the request was sent after its intended start. The corrected
    /// latencies add it, so they count the time a request waited to be sent at all.
    pub send_lag: Option<Duration>,
}

/// What a set of requests measured.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Time from sending to response headers, in µs (successful requests only).
    pub to_headers: Histogram<u64>,
    /// Time from sending to the last body byte read, in µs (successful requests only).
    pub to_last_byte: Histogram<u64>,
    /// Open loop: from the intended start to the response headers, in µs.
    pub corrected_to_headers: Histogram<u64>,
    /// Open loop: from the intended start to the last body byte, in µs.
    pub corrected_to_last_byte: Histogram<u64>,
    /// Open loop: how late each request was sent after its intended start, in µs.
    pub send_lag: Histogram<u64>,
    /// Requests that completed without a transport error, by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that failed, by `ErrorKind::as_str()`.
    pub errors: BTreeMap<&'static str, u64>,
    /// Requests that failed, by the line that names the cause (`cause::describe`).
    pub messages: BTreeMap<String, u64>,
    /// Body bytes handed to the load generator (not counting bytes drained by the library).
    pub body_bytes: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

impl Tally {
    /// Empty measurements.
    pub fn new() -> Self {
        Self {
            to_headers: new_histogram(),
            to_last_byte: new_histogram(),
            corrected_to_headers: new_histogram(),
            corrected_to_last_byte: new_histogram(),
            send_lag: new_histogram(),
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            messages: BTreeMap::new(),
            body_bytes: 0,
        }
    }

    /// Records a request that got a response and read the body as far as asked.
    pub fn record_response(&mut self, m: &Measured) {
        record(&mut self.to_headers, micros(m.to_headers));
        record(&mut self.to_last_byte, micros(m.to_last_byte));
        if let Some(lag) = m.send_lag {
            record(&mut self.corrected_to_headers, micros(m.to_headers + lag));
            record(
                &mut self.corrected_to_last_byte,
                micros(m.to_last_byte + lag),
            );
        }
        // A status seen before is a lookup, not an `entry` (which readies an insertion each time).
        match self.statuses.get_mut(&m.status) {
            Some(n) => *n += 1,
            None => drop(self.statuses.insert(m.status, 1)),
        }
        self.body_bytes += m.body_bytes;
    }

    /// Records how late an open-loop request was sent (every sent request, failed or not).
    pub fn record_send_lag(&mut self, lag: Duration) {
        record(&mut self.send_lag, micros(lag));
    }

    /// Open-loop requests sent more than `after` behind schedule.
    pub fn late(&self, after: Duration) -> u64 {
        // Values in the same histogram bucket as `after` count as on time.
        let on_time = self.send_lag.count_between(0, micros(after));
        self.send_lag.len().saturating_sub(on_time)
    }

    /// Records a failed request (no latency: a failure's timing says little about the server).
    pub fn record_failure(&mut self, failure: Failure) {
        self.record_error(failure.kind);
        self.count_message(failure.message, 1);
    }

    /// Counts a failure of this kind.
    pub fn record_error(&mut self, kind: &'static str) {
        *self.errors.entry(kind).or_insert(0) += 1;
    }

    /// Adds `n` failures with this message, or to [`OTHER_MESSAGES`] once the map is full.
    fn count_message(&mut self, message: String, n: u64) {
        if let Some(count) = self.messages.get_mut(&message) {
            *count += n;
        } else if self.messages.len() < MAX_MESSAGES {
            self.messages.insert(message, n);
        } else {
            *self.messages.entry(OTHER_MESSAGES.to_owned()).or_insert(0) += n;
        }
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

    /// Adds another tally's measurements to these.
    pub fn add(&mut self, other: &Tally) -> Result<()> {
        add_histogram(&mut self.to_headers, &other.to_headers)?;
        add_histogram(&mut self.to_last_byte, &other.to_last_byte)?;
        add_histogram(&mut self.corrected_to_headers, &other.corrected_to_headers)?;
        add_histogram(
            &mut self.corrected_to_last_byte,
            &other.corrected_to_last_byte,
        )?;
        add_histogram(&mut self.send_lag, &other.send_lag)?;
        for (status, n) in &other.statuses {
            *self.statuses.entry(*status).or_insert(0) += n;
        }
        for (kind, n) in &other.errors {
            *self.errors.entry(kind).or_insert(0) += n;
        }
        for (message, n) in &other.messages {
            self.count_message(message.clone(), *n);
        }
        self.body_bytes += other.body_bytes;
        Ok(())
    }

    /// Empties the tally but keeps its memory (histogram arrays, map keys with zero counts), so
    /// recording into it again does not allocate.
    pub fn reset(&mut self) {
        self.to_headers.reset();
        self.to_last_byte.reset();
        self.corrected_to_headers.reset();
        self.corrected_to_last_byte.reset();
        self.send_lag.reset();
        self.statuses.values_mut().for_each(|n| *n = 0);
        self.errors.values_mut().for_each(|n| *n = 0);
        // Messages are rare (failures only) and unbounded in text: drop them.
        self.messages.clear();
        self.body_bytes = 0;
    }

    /// Merges tallies into one.
    #[cfg(test)]
    pub fn merge_all<'a>(tallies: impl IntoIterator<Item = &'a Tally>) -> Result<Self> {
        let mut total = Self::new();
        for tally in tallies {
            total.add(tally)?;
        }
        Ok(total)
    }
}

/// Latency percentiles in milliseconds: the shape used for every latency in the report.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Values the figures are computed from.
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    /// Summarizes a histogram of microseconds; all zeros when it is empty.
    pub fn from_micros(histogram: &Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        if histogram.is_empty() {
            return Self::default();
        }
        Self {
            count: histogram.len(),
            mean: histogram.mean() / 1000.0,
            p50: ms(histogram.value_at_quantile(0.50)),
            p75: ms(histogram.value_at_quantile(0.75)),
            p90: ms(histogram.value_at_quantile(0.90)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            max: ms(histogram.max()),
        }
    }

    /// Every figure minus a constant (clamped at zero): percentiles commute with a shift, so
    /// the wake-up latency of long polls is their latency minus the server's delay.
    pub fn minus(&self, ms: f64) -> Self {
        let sub = |v: f64| (v - ms).max(0.0);
        Self {
            count: self.count,
            mean: sub(self.mean),
            p50: sub(self.p50),
            p75: sub(self.p75),
            p90: sub(self.p90),
            p99: sub(self.p99),
            p999: sub(self.p999),
            max: sub(self.max),
        }
    }
}

/// Mean and maximum of a series of samples (the "- Mean" / "- Max" rows of the table).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct MeanMax {
    pub mean: f64,
    pub max: f64,
}

/// Accumulates samples into a [`MeanMax`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeanMaxAcc {
    sum: f64,
    n: u64,
    max: f64,
}

impl MeanMaxAcc {
    /// Adds one sample.
    pub fn observe(&mut self, value: f64) {
        self.sum += value;
        self.n += 1;
        self.max = if self.n == 1 {
            value
        } else {
            self.max.max(value)
        };
    }

    /// Mean and max of the samples; zeros when there were none.
    pub fn finish(&self) -> MeanMax {
        if self.n == 0 {
            return MeanMax::default();
        }
        MeanMax {
            mean: self.sum / self.n as f64,
            max: self.max,
        }
    }
}

/// The mean of the values added between two readings of a (count, sum) pair, e.g. the queue
/// time of the requests that queued during one second; `None` when nothing was added. Sums
/// can be estimates (count × mean), so a result outside `0..` is clamped.
pub fn interval_mean(before: (u64, f64), after: (u64, f64)) -> Option<f64> {
    let count = after.0.checked_sub(before.0).filter(|&n| n > 0)?;
    Some(((after.1 - before.1) / count as f64).max(0.0))
}

/// Percentage change from `base` to `value`; `None` when the base is zero (no meaningful ratio).
pub fn percent_change(base: f64, value: f64) -> Option<f64> {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        return None;
    }
    Some((value - base) / base.abs() * 100.0)
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

/// Bytes as mebibytes.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// An empty latency histogram.
pub fn new_histogram() -> Histogram<u64> {
    // Auto-resizing: any latency fits, and merging histograms of different ranges never fails.
    Histogram::new(SIGNIFICANT_FIGURES).expect("3 significant figures is a valid precision")
}

/// Records a value, growing the histogram as needed. (`saturating_record` would not grow it:
/// it clamps to the current range, which starts at about 2 ms.) Growing only fails past
/// `u64::MAX / 2` µs, where clamping is the right answer anyway.
pub fn record(histogram: &mut Histogram<u64>, micros: u64) {
    if histogram.record(micros).is_err() {
        histogram.saturating_record(micros);
    }
}

/// Adds `from` into `into`.
pub fn add_histogram(into: &mut Histogram<u64>, from: &Histogram<u64>) -> Result<()> {
    if from.is_empty() {
        return Ok(());
    }
    into.add(from)
        .map_err(|e| CliError::new(format!("cannot merge latency histograms: {e:?}")))
}

/// Whole microseconds, saturating.
pub fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn ok(to_headers: Duration, to_last_byte: Duration, bytes: u64) -> Measured {
        Measured {
            status: 200,
            to_headers,
            to_last_byte,
            body_bytes: bytes,
            send_lag: None,
        }
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= want * 0.001 + 1e-9
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut t = Tally::new();
        for i in 1..=1000 {
            t.record_response(&ok(ms(i), ms(i + 1), 10));
        }
        let p = Percentiles::from_micros(&t.to_headers);
        // 3 significant figures: each value within 0.1% of the exact one.
        assert_eq!(p.count, 1000);
        assert!(close(p.p50, 500.0), "{p:?}");
        assert!(close(p.p75, 750.0), "{p:?}");
        assert!(close(p.p90, 900.0), "{p:?}");
        assert!(close(p.p99, 990.0), "{p:?}");
        assert!(close(p.p999, 999.0), "{p:?}");
        assert!(close(p.max, 1000.0), "{p:?}");
        assert!(close(p.mean, 500.5), "{p:?}");
        let last = Percentiles::from_micros(&t.to_last_byte);
        assert!(close(last.p50, 501.0), "{last:?}");
        // Closed loop: nothing to correct.
        assert!(t.corrected_to_headers.is_empty());
    }

    #[test]
    fn corrected_latency_adds_the_send_lag() {
        let mut t = Tally::new();
        t.record_response(&Measured {
            send_lag: Some(ms(40)),
            ..ok(ms(10), ms(12), 0)
        });
        let corrected = Percentiles::from_micros(&t.corrected_to_last_byte);
        let uncorrected = Percentiles::from_micros(&t.to_last_byte);
        assert!(close(corrected.max, 52.0), "{corrected:?}");
        assert!(close(uncorrected.max, 12.0), "{uncorrected:?}");
        assert!(close(
            Percentiles::from_micros(&t.corrected_to_headers).max,
            50.0
        ));
    }

    #[test]
    fn late_requests_are_counted_from_the_send_lag() {
        let mut t = Tally::new();
        assert_eq!(t.late(ms(5)), 0);
        for lag in [0, 1, 4, 6, 30, 900] {
            t.record_send_lag(ms(lag));
        }
        assert_eq!(t.late(ms(5)), 3);
        assert_eq!(t.late(ms(900)), 0);
        assert_eq!(t.late(Duration::ZERO), 5);
    }

    #[test]
    fn merged_tallies_equal_one_tally_that_saw_everything() {
        let mut all = Tally::new();
        let mut shards = vec![Tally::new(), Tally::new(), Tally::new()];
        for i in 0..3000u64 {
            let latency = Duration::from_micros(100 + i * 37 % 5000);
            all.record_response(&ok(latency, latency, 1));
            shards[(i % 3) as usize].record_response(&ok(latency, latency, 1));
        }
        shards[1].record_error("timeout");
        shards[2].record_error("timeout");
        shards[2].record_error("connect");
        let not_found = Measured {
            status: 503,
            ..ok(ms(1), ms(1), 0)
        };
        shards[0].record_response(&not_found);
        all.record_response(&not_found);

        let merged = Tally::merge_all(&shards).unwrap();
        assert_eq!(merged.to_headers.len(), all.to_headers.len());
        for q in [0.5, 0.75, 0.9, 0.99, 0.999, 1.0] {
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
    fn reset_empties_but_a_second_merge_still_adds_up() {
        let mut shard = Tally::new();
        let mut total = Tally::new();
        shard.record_response(&ok(ms(5), ms(5), 3));
        shard.record_error("timeout");
        total.add(&shard).unwrap();
        shard.reset();
        assert_eq!(shard.requests(), 0);
        assert!(shard.to_headers.is_empty());
        assert_eq!(shard.body_bytes, 0);
        shard.record_response(&ok(ms(7), ms(7), 4));
        total.add(&shard).unwrap();
        assert_eq!(total.requests(), 3);
        assert_eq!(total.responses(), 2);
        assert_eq!(total.body_bytes, 7);
        assert_eq!(total.to_headers.len(), 2);
    }

    #[test]
    fn failure_messages_are_counted_and_bounded() {
        let fail = |message: String| Failure {
            kind: "connect",
            message,
        };
        let mut a = Tally::new();
        let mut b = Tally::new();
        a.record_failure(fail("connection refused 127.0.0.1:1".to_owned()));
        b.record_failure(fail("connection refused 127.0.0.1:1".to_owned()));
        for i in 0..MAX_MESSAGES + 5 {
            b.record_failure(fail(format!("unique {i}")));
        }
        a.add(&b).unwrap();
        assert_eq!(a.messages["connection refused 127.0.0.1:1"], 2);
        assert!(a.messages.len() <= MAX_MESSAGES + 1, "{:?}", a.messages);
        assert!(a.messages[OTHER_MESSAGES] >= 5);
        assert_eq!(a.messages.values().sum::<u64>(), a.error_count());
        a.reset();
        assert!(a.messages.is_empty());
    }

    #[test]
    fn merging_latencies_far_apart_does_not_fail() {
        let mut fast = Tally::new();
        fast.record_response(&ok(Duration::from_micros(3), Duration::from_micros(3), 0));
        let mut slow = Tally::new();
        slow.record_response(&ok(Duration::from_secs(3600), Duration::from_secs(3600), 0));
        let merged = Tally::merge_all([&fast, &slow]).unwrap();
        let p = Percentiles::from_micros(&merged.to_headers);
        assert!((p.max - 3_600_000.0).abs() < 3_600.0, "{p:?}");
    }

    #[test]
    fn empty_histogram_summarizes_to_zero() {
        assert_eq!(
            Percentiles::from_micros(&Tally::new().to_headers),
            Percentiles::default()
        );
    }

    #[test]
    fn shifting_percentiles_clamps_at_zero() {
        let p = Percentiles {
            count: 2,
            mean: 1000.5,
            p50: 1000.2,
            p75: 1000.3,
            p90: 1000.4,
            p99: 1001.0,
            p999: 1001.0,
            max: 1002.0,
        };
        let wake = p.minus(1000.0);
        assert!((wake.p50 - 0.2).abs() < 1e-9);
        assert!((wake.max - 2.0).abs() < 1e-9);
        assert_eq!(p.minus(5000.0).max, 0.0);
        assert_eq!(wake.count, 2);
    }

    #[test]
    fn mean_and_max_of_samples() {
        let mut acc = MeanMaxAcc::default();
        assert_eq!(acc.finish(), MeanMax::default());
        for v in [2.0, 6.0, 4.0] {
            acc.observe(v);
        }
        assert_eq!(
            acc.finish(),
            MeanMax {
                mean: 4.0,
                max: 6.0
            }
        );
    }

    #[test]
    fn per_interval_means_from_running_sums() {
        // 10 requests queued 5 ms each, then 5 more of 20 ms each.
        assert_eq!(interval_mean((10, 50.0), (15, 150.0)), Some(20.0));
        assert_eq!(interval_mean((15, 150.0), (15, 150.0)), None);
        assert_eq!(interval_mean((0, 0.0), (4, 10.0)), Some(2.5));
        // An estimate that went backwards is clamped, not negative.
        assert_eq!(interval_mean((10, 100.0), (11, 99.0)), Some(0.0));
    }

    #[test]
    fn percent_changes() {
        assert_eq!(percent_change(100.0, 105.0), Some(5.0));
        assert_eq!(percent_change(200.0, 150.0), Some(-25.0));
        assert_eq!(percent_change(0.0, 5.0), None);
        let seed = percent_change(1_648_740.0, 1_645_577.0).unwrap();
        assert!((seed - -0.19).abs() < 0.005, "{seed}");
    }

    #[test]
    fn rates_and_ratios() {
        assert_eq!(per_second(2000, ms(500)), 4000.0);
        assert_eq!(per_second(10, Duration::ZERO), 0.0);
        assert_eq!(ratio(2000, 16), 125.0);
        assert_eq!(ratio(5, 0), 0.0);
        assert_eq!(millis(Duration::from_micros(1500)), 1.5);
        assert_eq!(mib(3 * 1024 * 1024), 3.0);
    }
}
