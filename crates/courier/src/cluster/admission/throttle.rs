//! Adaptive throttling (Google SRE book, "Handling Overload"): when the
//! service accepts few of the requests sent to it, refuse some locally
//! instead of adding load it cannot take.
//!
//! Over a sliding window (2 minutes, in buckets) the cluster counts requests
//! and accepted requests, and refuses a new one with probability
//! `max(0, (requests − K·accepts) / (requests + 1))`, K = 2, at most 0.8.
//! Refused requests count as requests (as in the book), so the refusals
//! stop once enough of the requests let through are accepted again: the
//! mechanism recovers without a timer. Below `min_requests` in the window it
//! never refuses (Vostok: 30), so one failure on a quiet cluster does not.
//!
//! A request let through counts when it ends, with its verdict (or as not
//! accepted if it is dropped first): counted when it started, requests in
//! flight weighed as failures, and a burst at a cold start (the first 30
//! requests still waiting) made the next ones look like a service that
//! accepts nothing, and refused most of them.

use std::time::Duration;

use super::window::Window;

/// Adaptive throttling settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ThrottleConfig {
    /// K: requests may exceed accepts by this factor before any refusal. Default: 2.
    pub k: f64,
    /// The sliding window. Default: 2 minutes.
    pub window: Duration,
    /// Buckets the window is kept in (it slides one bucket at a time). Default: 12.
    pub buckets: u32,
    /// The highest refusal probability. Default: 0.8.
    pub max_probability: f64,
    /// Requests in the window below which nothing is refused. Default: 30.
    pub min_requests: u64,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            k: 2.0,
            window: Duration::from_secs(120),
            buckets: 12,
            max_probability: 0.8,
            min_requests: 30,
        }
    }
}

impl ThrottleConfig {
    /// Sets K.
    pub fn k(mut self, k: f64) -> Self {
        self.k = k;
        self
    }
    /// Sets the window.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }
    /// Sets the number of buckets (at least 1).
    pub fn buckets(mut self, buckets: u32) -> Self {
        self.buckets = buckets.max(1);
        self
    }
    /// Sets the highest refusal probability.
    pub fn max_probability(mut self, p: f64) -> Self {
        self.max_probability = p.clamp(0.0, 1.0);
        self
    }
    /// Sets the minimum of requests in the window before any refusal.
    pub fn min_requests(mut self, n: u64) -> Self {
        self.min_requests = n;
        self
    }
}

#[derive(Debug)]
pub(crate) struct Throttle {
    config: ThrottleConfig,
    // (requests, accepts)
    window: Window,
}

impl Throttle {
    pub(crate) fn new(config: ThrottleConfig) -> Throttle {
        Throttle {
            window: Window::new(config.window, config.buckets),
            config,
        }
    }

    /// The probability of refusing the next request.
    pub(crate) fn probability(&self) -> f64 {
        let (requests, accepts) = self.window.sums();
        if requests < self.config.min_requests {
            return 0.0;
        }
        let requests = requests as f64;
        let p = (requests - self.config.k * accepts as f64) / (requests + 1.0);
        p.clamp(0.0, self.config.max_probability)
    }

    /// Whether a request may go: `None` refuses it (and counts it as a
    /// request); `Some` counts it when the guard is told it was accepted,
    /// or dropped.
    pub(crate) fn admit(&self, rng: &mut fastrand::Rng) -> Option<Admitted<'_>> {
        let p = self.probability();
        if p == 0.0 || rng.f64() >= p {
            Some(Admitted(self))
        } else {
            self.window.add(1, 0);
            None
        }
    }
}

/// A request [`Throttle::admit`] let through: a request not accepted
/// unless [`accepted`](Admitted::accepted) says otherwise.
pub(crate) struct Admitted<'a>(&'a Throttle);

impl Admitted<'_> {
    /// The request was accepted.
    pub(crate) fn accepted(self) {
        self.0.window.add(1, 1);
        std::mem::forget(self);
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.window.add(1, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn refuses_as_the_book_says_and_forgets_after_the_window() {
        let t = Throttle::new(ThrottleConfig::default());
        let mut rng = fastrand::Rng::with_seed(5);
        for _ in 0..20 {
            t.admit(&mut rng).unwrap().accepted();
        }
        for _ in 0..9 {
            drop(t.admit(&mut rng).unwrap());
        }
        assert_eq!(t.probability(), 0.0, "below min_requests");
        // 100 requests (let through or refused), 20 accepted: (100 - 40) / 101.
        for _ in 0..71 {
            drop(t.admit(&mut rng));
        }
        assert!((t.probability() - 60.0 / 101.0).abs() < 1e-9);
        // All failing: capped at 0.8, and about 80 % refused.
        for _ in 0..1000 {
            drop(t.admit(&mut rng));
        }
        assert_eq!(t.probability(), 0.8);
        let refused = (0..1000).filter(|_| t.admit(&mut rng).is_none()).count();
        assert!((700..900).contains(&refused), "{refused}");
        // Two minutes on, the window has slid past all of it.
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(t.probability(), 0.8, "half a window on, still there");
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(t.probability(), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn accepts_at_two_thirds_refuse_nothing() {
        let t = Throttle::new(ThrottleConfig::default());
        let mut rng = fastrand::Rng::with_seed(5);
        for i in 0..1000 {
            let admitted = t.admit(&mut rng).expect("admitted");
            if i % 3 != 0 {
                admitted.accepted();
            }
            tokio::time::advance(Duration::from_millis(300)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn requests_in_flight_are_neither_accepted_nor_failed() {
        let t = Throttle::new(ThrottleConfig::default());
        let mut rng = fastrand::Rng::with_seed(5);
        let in_flight: Vec<_> = (0..100).map(|_| t.admit(&mut rng).unwrap()).collect();
        assert_eq!(t.probability(), 0.0);
        // Dropped unaccepted (the caller gave up), they count as failures.
        drop(in_flight);
        assert!((t.probability() - 0.8).abs() < 1e-9);
    }
}
