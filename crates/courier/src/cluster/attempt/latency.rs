//! A cluster's recent answer times, as a histogram of atomics, read at a
//! quantile to decide when forking starts the next replica
//! ([`ForkDelay::Quantile`](crate::cluster::ForkDelay::Quantile)).
//!
//! Why: forking's classic delay, budget ÷ n (Vostok's `EqualDelaysProvider`),
//! is a third of a second with a 1 s budget, so every request that draws a
//! slow replica first waits that long, whatever the others answer in: with
//! one replica of ten 10× slow, that wait is the cluster's p99 until the
//! ordering has learnt the replica is slow. Backup requests at a latency
//! quantile (Finagle's `BackupRequestFilter`, the Cassandra driver's
//! `PercentileSpeculativeExecutionPolicy`, "The Tail at Scale") fork only
//! the requests that are already late by the cluster's own measure.
//!
//! Recording is one relaxed atomic add, no lock; the window is two
//! generations of `period` each (the current one and the last), so the
//! quantile covers the last one to two periods. Buckets are log-linear, 8 per
//! power of two (12.5 % wide), from 64 µs to about 2 minutes; the quantile
//! is the upper edge of its bucket, so it errs late, never early.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::time::Instant;

/// Sub-buckets per power of two.
const SUB_BITS: u32 = 3;
const SUB: u64 = 1 << SUB_BITS;
/// Times below 2^6 µs share the first bucket.
const FIRST_OCTAVE: u32 = 6;
/// The last power of two with buckets of its own (2^26 µs ≈ 67 s, its
/// buckets up to 134 s); anything longer counts in the last bucket.
const LAST_OCTAVE: u32 = 26;
const BUCKETS: usize = 1 + (((LAST_OCTAVE - FIRST_OCTAVE + 1) as usize) << SUB_BITS);
/// Answers a quantile needs before it means anything.
const MIN_SAMPLES: u64 = 100;
/// How long a computed quantile is reused (reading it walks the buckets).
const REFRESH: Duration = Duration::from_millis(50);

#[derive(Debug)]
struct Generation {
    /// The period these counts are from.
    epoch: AtomicU64,
    counts: Box<[AtomicU64]>,
}

impl Generation {
    fn new() -> Generation {
        Generation {
            epoch: AtomicU64::new(u64::MAX),
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counts from `epoch`, cleared first if they are older.
    fn at(&self, epoch: u64) -> &Generation {
        if self.epoch.load(Relaxed) != epoch && self.epoch.swap(epoch, Relaxed) != epoch {
            // A sample added by another thread meanwhile may be lost: an
            // estimate, not an account.
            for c in self.counts.iter() {
                c.store(0, Relaxed);
            }
        }
        self
    }
}

/// Recent answer times of a cluster.
#[derive(Debug)]
pub(crate) struct Latencies {
    /// The quantile read.
    q: f64,
    origin: Instant,
    period: Duration,
    generations: [Generation; 2],
    /// The last quantile computed, in µs + 1 (0: not enough samples), and
    /// when, in ms since `origin`.
    cached: AtomicU64,
    cached_at: AtomicU64,
}

impl Latencies {
    /// Answer times over the last one to two `period`s, read at `q` (0 to 1).
    pub(crate) fn new(period: Duration, q: f64) -> Latencies {
        Latencies {
            q: q.clamp(0.0, 1.0),
            origin: Instant::now(),
            period: period.max(Duration::from_millis(1)),
            generations: [Generation::new(), Generation::new()],
            cached: AtomicU64::new(0),
            cached_at: AtomicU64::new(0),
        }
    }

    fn epoch(&self, now: Instant) -> u64 {
        (now.saturating_duration_since(self.origin).as_nanos() / self.period.as_nanos()) as u64
    }

    /// An answer that took `d`.
    pub(crate) fn record(&self, d: Duration) {
        let epoch = self.epoch(Instant::now());
        let g = self.generations[(epoch % 2) as usize].at(epoch);
        g.counts[bucket(d)].fetch_add(1, Relaxed);
    }

    /// The time the quantile of recent answers took at most, once at least
    /// 100 answers were recorded over the last one to two periods.
    pub(crate) fn quantile(&self) -> Option<Duration> {
        let now = Instant::now();
        let ms = now.saturating_duration_since(self.origin).as_millis() as u64;
        // Only a quantile is reused: until there is one, every request
        // looks again, so the first request past the 100th answer has it.
        let at = self.cached_at.load(Relaxed);
        let cached = self.cached.load(Relaxed);
        if cached != 0 && ms.saturating_sub(at) < REFRESH.as_millis() as u64 {
            return Some(Duration::from_micros(cached - 1));
        }
        let us = self.compute(self.q, self.epoch(now));
        self.cached.store(us.map_or(0, |us| us + 1), Relaxed);
        self.cached_at.store(ms, Relaxed);
        us.map(Duration::from_micros)
    }

    fn compute(&self, q: f64, epoch: u64) -> Option<u64> {
        let recent = |g: &Generation| {
            let e = g.epoch.load(Relaxed);
            e == epoch || e.checked_add(1) == Some(epoch)
        };
        // Read on the request path (every request, while there are too few
        // answers): no allocation.
        let live = [&self.generations[0], &self.generations[1]].map(|g| recent(g).then_some(g));
        let count = |i: usize| {
            live.iter()
                .flatten()
                .map(|g| g.counts[i].load(Relaxed))
                .sum::<u64>()
        };
        let total: u64 = (0..BUCKETS).map(count).sum();
        if total < MIN_SAMPLES {
            return None;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for i in 0..BUCKETS {
            seen += count(i);
            if seen >= rank {
                return Some(upper_edge(i));
            }
        }
        Some(upper_edge(BUCKETS - 1))
    }
}

fn bucket(d: Duration) -> usize {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    if us < 1 << FIRST_OCTAVE {
        return 0;
    }
    let octave = 63 - us.leading_zeros();
    if octave > LAST_OCTAVE {
        return BUCKETS - 1;
    }
    let sub = (us >> (octave - SUB_BITS)) & (SUB - 1);
    1 + (((octave - FIRST_OCTAVE) as usize) << SUB_BITS) + sub as usize
}

/// The longest time (µs) bucket `i` holds.
fn upper_edge(i: usize) -> u64 {
    if i == 0 {
        return 1 << FIRST_OCTAVE;
    }
    let octave = (i as u32 - 1) / SUB as u32 + FIRST_OCTAVE;
    let sub = (i as u64 - 1) % SUB;
    (SUB + sub + 1) << (octave - SUB_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn buckets_are_an_eighth_of_their_octave_and_the_edge_errs_late() {
        for us in [1, 63, 64, 100, 5_000, 5_001, 333_333, 60_000_000] {
            let d = Duration::from_micros(us);
            let edge = upper_edge(bucket(d));
            assert!(edge > us, "{us} µs: edge {edge}");
            assert!(
                edge as f64 <= (us.max(64) as f64) * 1.126,
                "{us} µs: edge {edge}"
            );
        }
        assert_eq!(bucket(Duration::from_secs(3600)), BUCKETS - 1);
        let edges: Vec<u64> = (0..BUCKETS).map(upper_edge).collect();
        assert!(edges.windows(2).all(|w| w[0] < w[1]), "edges increase");
    }

    /// The `q` quantile now, uncached.
    fn at(l: &Latencies, q: f64) -> Option<Duration> {
        l.compute(q, l.epoch(Instant::now()))
            .map(Duration::from_micros)
    }

    #[tokio::test(start_paused = true)]
    async fn the_quantile_of_recent_answers_once_there_are_enough() {
        let l = Latencies::new(Duration::from_secs(10), 0.9);
        for _ in 0..90 {
            l.record(ms(5));
        }
        assert_eq!(l.quantile(), None, "90 answers are not enough");
        for _ in 0..10 {
            l.record(ms(50));
        }
        let p90 = l.quantile().unwrap();
        assert!((ms(5)..ms(6)).contains(&p90), "{p90:?}");
        for _ in 0..100 {
            l.record(ms(50));
        }
        assert_eq!(l.quantile(), Some(p90), "reused for {REFRESH:?}");
        tokio::time::advance(REFRESH).await;
        assert!(l.quantile().unwrap() >= ms(50));
        let p95 = at(&l, 0.95).unwrap();
        assert!((ms(50)..ms(57)).contains(&p95), "{p95:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn old_answers_are_forgotten_a_period_at_a_time() {
        let l = Latencies::new(Duration::from_secs(10), 0.5);
        for _ in 0..200 {
            l.record(ms(300));
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        for _ in 0..200 {
            l.record(ms(5));
        }
        let median = at(&l, 0.5).unwrap();
        assert!(median < ms(6), "both periods count: {median:?}");
        assert!(
            at(&l, 0.9).unwrap() > ms(300),
            "the last period still counts"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        for _ in 0..200 {
            l.record(ms(5));
        }
        let p99 = at(&l, 0.99).unwrap();
        assert!(
            p99 < ms(6),
            "two periods on, the slow ones are gone: {p99:?}"
        );
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(at(&l, 0.5), None, "nothing recent");
    }
}
