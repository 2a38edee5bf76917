//! A sliding window of two counters kept in buckets: the requests and
//! accepts of adaptive throttling, the requests and attempts of the replica
//! budget.
//!
//! Why buckets: the window slides one bucket at a time, so a count costs
//! one short lock and no per-event memory (Vostok keeps per-minute buckets
//! the same way in `ReplicaBudgetingModule` and `AdaptiveThrottlingModule`).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug)]
pub(crate) struct Window {
    origin: Instant,
    bucket: Duration,
    // (bucket number, a, b), indexed by bucket number % len.
    buckets: Mutex<Vec<(u64, u64, u64)>>,
}

impl Window {
    /// `window` kept in `buckets` buckets (at least one, at least 1 ms each).
    pub(crate) fn new(window: Duration, buckets: u32) -> Window {
        let n = buckets.max(1);
        Window {
            origin: Instant::now(),
            bucket: (window / n).max(Duration::from_millis(1)),
            buckets: Mutex::new(vec![(u64::MAX, 0, 0); n as usize]),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut (u64, u64, u64), &[(u64, u64, u64)]) -> T) -> T {
        let now = (Instant::now() - self.origin).as_nanos() / self.bucket.as_nanos();
        let now = now as u64;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let len = buckets.len() as u64;
        let oldest = now.saturating_sub(len - 1);
        for b in buckets.iter_mut() {
            if b.0 < oldest || b.0 > now {
                *b = (u64::MAX, 0, 0);
            }
        }
        let i = (now % len) as usize;
        if buckets[i].0 != now {
            buckets[i] = (now, 0, 0);
        }
        let mut slot = buckets[i];
        let out = f(&mut slot, &buckets);
        buckets[i] = slot;
        out
    }

    /// Adds to the two counters.
    pub(crate) fn add(&self, a: u64, b: u64) {
        self.with(|slot, _| {
            slot.1 += a;
            slot.2 += b;
        });
    }

    /// The two counters' sums over the window.
    pub(crate) fn sums(&self) -> (u64, u64) {
        self.with(|_, all| {
            all.iter()
                .fold((0, 0), |(a, b), &(_, ba, bb)| (a + ba, b + bb))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn forgets_a_bucket_at_a_time() {
        let w = Window::new(Duration::from_secs(120), 2);
        w.add(10, 1);
        tokio::time::advance(Duration::from_secs(60)).await;
        w.add(5, 2);
        assert_eq!(w.sums(), (15, 3));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(w.sums(), (5, 2), "the first minute is gone");
        tokio::time::advance(Duration::from_secs(600)).await;
        assert_eq!(w.sums(), (0, 0));
    }
}
