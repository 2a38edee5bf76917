//! Latency histograms many threads record into without a lock, and their
//! snapshots: log-linear buckets (16 per power of two, so a percentile is
//! within 6.25 % of the value), in microseconds.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

#[cfg(feature = "serde")]
use serde::ser::{Serialize, SerializeStruct, Serializer};

const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
const MAX_EXP: u32 = 40;
const BUCKETS: usize = ((MAX_EXP - SUB_BITS) as u64 * SUB + 2 * SUB) as usize;

fn bucket_of(us: u64) -> usize {
    let v = us.min((1 << MAX_EXP) - 1);
    if v < 2 * SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let sub = (v >> (exp - SUB_BITS)) & (SUB - 1);
    ((exp - SUB_BITS) as u64 * SUB + sub + SUB) as usize
}

/// The midpoint of a bucket, which is what a percentile reports.
fn bucket_value(index: usize) -> u64 {
    let i = index as u64;
    if i < 2 * SUB {
        return i;
    }
    let exp = (i - SUB) / SUB + SUB_BITS as u64;
    let sub = (i - SUB) % SUB;
    let shift = exp - SUB_BITS as u64;
    let low = (SUB + sub) << shift;
    low + ((1u64 << shift) >> 1)
}

/// A latency histogram that many threads record into without a lock.
pub(crate) struct AtomicHistogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum_us: AtomicU64,
    max_us: AtomicU64,
    min_us: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        AtomicHistogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
            min_us: AtomicU64::new(u64::MAX),
        }
    }
}

impl std::fmt::Debug for AtomicHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicHistogram")
            .field("count", &self.count.load(Relaxed))
            .finish_non_exhaustive()
    }
}

impl AtomicHistogram {
    pub(crate) fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(us)].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        self.sum_us.fetch_add(us, Relaxed);
        self.max_us.fetch_max(us, Relaxed);
        self.min_us.fetch_min(us, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let buckets: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        // Derive the count from the buckets so percentiles are self-consistent
        // even while other threads record.
        let count = buckets.iter().sum();
        HistogramSnapshot {
            buckets,
            count,
            sum_us: self.sum_us.load(Relaxed),
            max_us: self.max_us.load(Relaxed),
            min_us: match self.min_us.load(Relaxed) {
                u64::MAX => 0,
                v => v,
            },
        }
    }
}

/// A copy of a latency histogram (microsecond resolution, ≤ 6.25 % bucket error).
///
/// With the `serde` feature it serializes as a summary: `count`, `mean_ms`, `min_ms`, `p50_ms`, `p90_ms`,
/// `p99_ms`, `max_ms`.
#[derive(Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    buckets: Vec<u64>,
    count: u64,
    sum_us: u64,
    max_us: u64,
    min_us: u64,
}

impl HistogramSnapshot {
    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The arithmetic mean, or zero when empty.
    pub fn mean(&self) -> Duration {
        match self.count {
            0 => Duration::ZERO,
            n => Duration::from_micros(self.sum_us / n),
        }
    }

    /// The smallest value recorded, or zero when empty.
    pub fn min(&self) -> Duration {
        Duration::from_micros(self.min_us)
    }

    /// The largest value recorded, or zero when empty.
    pub fn max(&self) -> Duration {
        Duration::from_micros(self.max_us)
    }

    /// The value below which `p` percent of the values fall (`p` in 0..=100).
    pub fn percentile(&self, p: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let p = p.clamp(0.0, 100.0);
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let v = bucket_value(i).clamp(self.min_us, self.max_us);
                return Duration::from_micros(v);
            }
        }
        self.max()
    }
}

impl std::fmt::Debug for HistogramSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistogramSnapshot")
            .field("count", &self.count)
            .field("mean", &self.mean())
            .field("p50", &self.percentile(50.0))
            .field("p99", &self.percentile(99.0))
            .field("max", &self.max())
            .finish()
    }
}

#[cfg(feature = "serde")]
impl Serialize for HistogramSnapshot {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut st = s.serialize_struct("HistogramSnapshot", 7)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("mean_ms", &ms(self.mean()))?;
        st.serialize_field("min_ms", &ms(self.min()))?;
        st.serialize_field("p50_ms", &ms(self.percentile(50.0)))?;
        st.serialize_field("p90_ms", &ms(self.percentile(90.0)))?;
        st.serialize_field("p99_ms", &ms(self.percentile(99.0)))?;
        st.serialize_field("max_ms", &ms(self.max()))?;
        st.end()
    }
}

impl HistogramSnapshot {
    /// Adds `other`'s values into `self`.
    pub(crate) fn merge(&mut self, other: &HistogramSnapshot) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
        self.min_us = self.min_us.min(other.min_us);
    }

    /// Values recorded since `earlier` (a snapshot of the same histogram), as
    /// (bucket midpoint, count) pairs: what an exporter feeds to another
    /// histogram. Buckets that went down (a different histogram) are skipped.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn delta_since<'a>(
        &'a self,
        earlier: Option<&'a HistogramSnapshot>,
    ) -> impl Iterator<Item = (Duration, u64)> + 'a {
        self.buckets.iter().enumerate().filter_map(move |(i, &n)| {
            let before = earlier.and_then(|e| e.buckets.get(i)).copied().unwrap_or(0);
            let d = n.saturating_sub(before);
            (d > 0).then(|| {
                let us = bucket_value(i).clamp(self.min_us, self.max_us.max(self.min_us));
                (Duration::from_micros(us), d)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_bounded() {
        let mut last = 0;
        for v in 0..100_000u64 {
            let b = bucket_of(v);
            assert!(b == last || b == last + 1, "gap at {v}");
            last = b;
            let mid = bucket_value(b);
            let err = (mid as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 0.0625, "value {v} bucket mid {mid}");
        }
        assert!(bucket_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn percentiles_of_uniform_values() {
        let h = AtomicHistogram::default();
        for ms in 1..=100 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        let p50 = s.percentile(50.0).as_secs_f64() * 1e3;
        let p99 = s.percentile(99.0).as_secs_f64() * 1e3;
        assert!((47.0..=53.0).contains(&p50), "p50 = {p50}");
        assert!((93.0..=100.0).contains(&p99), "p99 = {p99}");
        assert_eq!(s.max(), Duration::from_millis(100));
        assert_eq!(s.min(), Duration::from_millis(1));
        assert_eq!(s.mean(), Duration::from_micros(50_500));
        assert_eq!(s.percentile(100.0), s.max());
    }

    #[test]
    fn empty_histogram_is_zero() {
        let s = AtomicHistogram::default().snapshot();
        assert_eq!(s.percentile(99.0), Duration::ZERO);
        assert_eq!(s.mean(), Duration::ZERO);
        assert_eq!(s.min(), Duration::ZERO);
    }
}
