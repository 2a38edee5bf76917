//! The replica budget, after Vostok's `ReplicaBudgetingModule`
//! (vostok/clusterclient.core, `Modules/ReplicaBudgetingModule.cs`): over a
//! sliding window (2 minutes, in per-minute buckets) the cluster counts
//! requests and the replica attempts they made; while attempts ÷ requests is
//! at or above 1.2 (and the window holds at least 30 requests), a new request
//! may go to one replica only.
//!
//! Why: retries on other replicas multiply the load exactly when the service
//! is failing, and failures spread (a retry storm). Capping the ratio lets
//! the strategies do their work in the normal case (a few requests forked
//! or retried) and turns them off when most would be, so a failing service
//! sees at most 1.2 × the traffic its callers make. Envoy's retry budget
//! (20 % of active requests) is the same idea counted in flight.

use std::time::Duration;

use super::window::Window;

/// Replica budget settings (Vostok's defaults).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplicaBudgetConfig {
    /// The highest attempts ÷ requests ratio at which requests still get
    /// extra attempts. Default: 1.2.
    pub max_ratio: f64,
    /// The sliding window. Default: 2 minutes.
    pub window: Duration,
    /// Buckets the window is kept in. Default: 2 (one per minute, as Vostok).
    pub buckets: u32,
    /// Requests in the window below which the budget never applies. Default: 30.
    pub min_requests: u64,
}

impl Default for ReplicaBudgetConfig {
    fn default() -> Self {
        ReplicaBudgetConfig {
            max_ratio: 1.2,
            window: Duration::from_secs(120),
            buckets: 2,
            min_requests: 30,
        }
    }
}

impl ReplicaBudgetConfig {
    /// Sets the highest ratio (at least 1).
    pub fn max_ratio(mut self, ratio: f64) -> Self {
        self.max_ratio = ratio.max(1.0);
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
    /// Sets the minimum of requests in the window before the budget applies.
    pub fn min_requests(mut self, n: u64) -> Self {
        self.min_requests = n;
        self
    }
}

#[derive(Debug)]
pub(crate) struct ReplicaBudget {
    config: ReplicaBudgetConfig,
    // (requests, attempts)
    window: Window,
}

impl ReplicaBudget {
    pub(crate) fn new(config: ReplicaBudgetConfig) -> ReplicaBudget {
        ReplicaBudget {
            window: Window::new(config.window, config.buckets),
            config,
        }
    }

    /// Attempts ÷ requests over the window (0 without requests).
    pub(crate) fn ratio(&self) -> f64 {
        let (requests, attempts) = self.window.sums();
        attempts as f64 / requests.max(1) as f64
    }

    /// Whether a new request may go to more than one replica (Vostok: not
    /// when the window holds enough requests and the ratio is at or above the limit).
    pub(crate) fn allows_extra(&self) -> bool {
        let (requests, attempts) = self.window.sums();
        requests < self.config.min_requests
            || (attempts as f64 / requests.max(1) as f64) < self.config.max_ratio
    }

    /// A request finished after `attempts` replica attempts.
    pub(crate) fn record(&self, attempts: u64) {
        self.window.add(1, attempts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn limits_from_the_ratio_and_forgets_after_the_window() {
        let b = ReplicaBudget::new(ReplicaBudgetConfig::default());
        for _ in 0..29 {
            b.record(3);
        }
        assert!(b.allows_extra(), "below 30 requests nothing is limited");
        b.record(3);
        assert!(!b.allows_extra());
        assert_eq!(b.ratio(), 3.0);
        // Single attempts bring the ratio down: 30·3 + n = 1.2·(30 + n) at n = 270,
        // and at the limit is still over it (Vostok's `>=`).
        for _ in 0..270 {
            b.record(1);
        }
        assert_eq!(b.ratio(), 1.2);
        assert!(!b.allows_extra());
        b.record(1);
        assert!(b.allows_extra(), "{}", b.ratio());
        for _ in 0..100 {
            b.record(2);
        }
        assert!(!b.allows_extra());
        tokio::time::advance(Duration::from_secs(121)).await;
        assert!(b.allows_extra(), "two minutes later the window is empty");
        assert_eq!(b.ratio(), 0.0);
    }
}
