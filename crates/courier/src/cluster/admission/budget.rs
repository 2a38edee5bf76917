//! The replica budget, after Vostok's `ReplicaBudgetingModule`
//! (vostok/clusterclient.core, `Modules/ReplicaBudgetingModule.cs`), held
//! attempt by attempt, with Envoy's cap on what is in flight beside it:
//!
//! - **The window**: over a sliding window (2 minutes, in per-minute
//!   buckets) the cluster counts requests and the replica attempts they
//!   made. An attempt past a request's first is refused while attempts ÷
//!   requests is at or above 1.2 (and the window holds at least 30 requests).
//! - **In flight**: extra attempts running at once are at most 20 % of the
//!   requests running (and at least 3 may run): Envoy's retry budget
//!   (`retry_budget.budget_percent`, `min_retry_concurrency`). Unlike a
//!   refusal by the ratio, which ends the request's extra attempts, this
//!   one is for now: the request asks again a few milliseconds later, within
//!   its budget (see `strategy::Start::Busy`).
//!
//! Why: retries on other replicas multiply the load exactly when the service
//! is failing, and failures spread (a retry storm). Capping the ratio lets
//! the strategies do their work in the normal case (a few requests forked
//! or retried) and turns them off when most would be, so a failing service
//! sees at most 1.2 × the traffic its callers make.
//!
//! Where courier differs from Vostok, and why: Vostok decides once, when a
//! request starts, and counts its attempts when it ends. When latency rises
//! all at once, every request already running forks on a ratio measured
//! before any of them did (measured here: 1.27 attempts per request under a
//! 1.2 budget, and the forks overloaded the replicas that were left). So a
//! request and its first attempt count when it starts, every extra attempt
//! asks the budget when it would start and counts at once, and the window
//! can no longer be spent in a burst: two quiet minutes save up 20 % of their
//! requests as extra attempts, which the in-flight cap releases only at the
//! rate requests run.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use super::window::Window;

/// Replica budget settings (Vostok's and Envoy's defaults).
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
    /// Requests in the window below which the ratio never applies. Default: 30.
    pub min_requests: u64,
    /// Extra attempts in flight, as a share of requests in flight. Default: 0.2.
    pub max_in_flight_share: f64,
    /// Extra attempts that may always be in flight. Default: 3.
    pub min_in_flight: u64,
}

impl Default for ReplicaBudgetConfig {
    fn default() -> Self {
        ReplicaBudgetConfig {
            max_ratio: 1.2,
            window: Duration::from_secs(120),
            buckets: 2,
            min_requests: 30,
            max_in_flight_share: 0.2,
            min_in_flight: 3,
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
    /// Sets the minimum of requests in the window before the ratio applies.
    pub fn min_requests(mut self, n: u64) -> Self {
        self.min_requests = n;
        self
    }
    /// Sets the share of requests in flight that extra attempts in flight
    /// may reach (at least 0).
    pub fn max_in_flight_share(mut self, share: f64) -> Self {
        self.max_in_flight_share = share.max(0.0);
        self
    }
    /// Sets how many extra attempts may always be in flight.
    pub fn min_in_flight(mut self, n: u64) -> Self {
        self.min_in_flight = n;
        self
    }
}

#[derive(Debug)]
pub(crate) struct ReplicaBudget {
    config: ReplicaBudgetConfig,
    // (requests, attempts)
    window: Window,
    requests_in_flight: AtomicU64,
    extras_in_flight: AtomicU64,
}

impl ReplicaBudget {
    pub(crate) fn new(config: ReplicaBudgetConfig) -> ReplicaBudget {
        ReplicaBudget {
            window: Window::new(config.window, config.buckets),
            config,
            requests_in_flight: AtomicU64::new(0),
            extras_in_flight: AtomicU64::new(0),
        }
    }

    /// Attempts ÷ requests over the window (0 without requests).
    pub(crate) fn ratio(&self) -> f64 {
        let (requests, attempts) = self.window.sums();
        attempts as f64 / requests.max(1) as f64
    }

    /// Attempts ÷ requests is at or above the limit, over a window that
    /// holds enough requests: no attempt past a request's first.
    pub(crate) fn over_ratio(&self) -> bool {
        let (requests, attempts) = self.window.sums();
        requests >= self.config.min_requests
            && attempts as f64 / requests.max(1) as f64 >= self.config.max_ratio
    }

    /// A request starts, with its first attempt: counted until the guard drops.
    pub(crate) fn begin(&self) -> RequestInFlight<'_> {
        self.window.add(1, 1);
        self.requests_in_flight.fetch_add(1, Relaxed);
        RequestInFlight(self)
    }

    /// An attempt past a request's first, if the budget has room for it:
    /// counted in the window at once, and in flight until the guard drops.
    pub(crate) fn try_extra(self: &Arc<Self>) -> Result<ExtraInFlight, NoRoom> {
        if self.over_ratio() {
            return Err(NoRoom::Ratio);
        }
        let running = self.requests_in_flight.load(Relaxed) as f64;
        let cap = (running * self.config.max_in_flight_share) as u64;
        let cap = cap.max(self.config.min_in_flight);
        self.extras_in_flight
            .fetch_update(Relaxed, Relaxed, |n| (n < cap).then_some(n + 1))
            .map_err(|_| NoRoom::InFlight)?;
        self.window.add(0, 1);
        Ok(ExtraInFlight(Arc::clone(self)))
    }
}

/// Why the budget has no room for an extra attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoRoom {
    /// Attempts ÷ requests is at the limit: no more for this request.
    Ratio,
    /// The extra attempts in flight are at their cap: room comes back as
    /// soon as one of them ends, so the request may ask again shortly.
    InFlight,
}

/// A request the budget counts as running.
pub(crate) struct RequestInFlight<'a>(&'a ReplicaBudget);

impl Drop for RequestInFlight<'_> {
    fn drop(&mut self) {
        self.0.requests_in_flight.fetch_sub(1, Relaxed);
    }
}

/// An extra attempt the budget counts as running: it travels with the
/// attempt's future, so a cancelled attempt frees its place too.
pub(crate) struct ExtraInFlight(Arc<ReplicaBudget>);

impl Drop for ExtraInFlight {
    fn drop(&mut self) {
        self.0.extras_in_flight.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` requests that each made `attempts` attempts, all ended.
    fn record(b: &Arc<ReplicaBudget>, n: usize, attempts: usize) {
        for _ in 0..n {
            let _request = b.begin();
            for _ in 1..attempts {
                drop(b.try_extra().expect("room for the extra attempt"));
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn limits_from_the_ratio_and_forgets_after_the_window() {
        let b = Arc::new(ReplicaBudget::new(ReplicaBudgetConfig::default()));
        record(&b, 29, 3);
        {
            let _request = b.begin();
            assert_eq!(
                b.try_extra().err(),
                Some(NoRoom::Ratio),
                "30 requests and 88 attempts"
            );
        }
        assert_eq!(b.ratio(), 88.0 / 30.0);
        // Single attempts bring the ratio down: 88 + n = 1.2·(30 + n) at n = 260,
        // and at the limit is still over it (Vostok's `>=`).
        record(&b, 260, 1);
        assert_eq!(b.ratio(), 1.2);
        let _request = b.begin();
        assert!(b.try_extra().is_ok(), "{}", b.ratio());
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(b.ratio(), 0.0, "two minutes later the window is empty");
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_requests_cannot_all_fork_on_a_ratio_measured_before_it() {
        let config = ReplicaBudgetConfig::default().min_in_flight(1000);
        let b = Arc::new(ReplicaBudget::new(config));
        // 100 requests start together, then each wants two more replicas.
        let requests: Vec<_> = (0..100).map(|_| b.begin()).collect();
        let extras: Vec<_> = (0..200).filter_map(|_| b.try_extra().ok()).collect();
        assert_eq!(extras.len(), 20, "120 attempts for 100 requests");
        assert!(b.ratio() <= 1.2, "{}", b.ratio());
        drop((requests, extras));
    }

    #[tokio::test(start_paused = true)]
    async fn extra_attempts_in_flight_are_capped_by_the_requests_in_flight() {
        let b = Arc::new(ReplicaBudget::new(ReplicaBudgetConfig::default()));
        // Two minutes of single attempts save up 20 % of them as extras.
        record(&b, 10_000, 1);
        let requests: Vec<_> = (0..50).map(|_| b.begin()).collect();
        let mut extras: Vec<_> = (0..50).filter_map(|_| b.try_extra().ok()).collect();
        assert_eq!(extras.len(), 10, "20 % of the 50 requests in flight");
        assert_eq!(b.try_extra().err(), Some(NoRoom::InFlight));
        extras.pop();
        assert!(
            b.try_extra().is_ok(),
            "an extra attempt's end frees its place"
        );
        drop(requests);
        extras.clear();
        // Nothing in flight: the floor still lets a lone request fork.
        let _one = b.begin();
        let floor: Vec<_> = (0..5).filter_map(|_| b.try_extra().ok()).collect();
        assert_eq!(floor.len(), 3);
    }
}
