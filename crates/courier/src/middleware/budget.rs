//! A retry budget: extra attempts (retries, hedges) may add at most a fixed
//! share of the load, so that when a dependency is down, retries do not
//! multiply the outage (Finagle's RetryBudget, gRPC retry throttling).
//!
//! Every original request deposits `ratio` of a token; every extra attempt
//! withdraws one. Deposits expire after `window`; a small reserve of
//! `min_per_second` tokens lets a low-traffic client still retry.
//! Recording is relaxed atomics over a ring of time slots: no lock.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::time::Instant;

/// How much extra load retries (or hedges) may add.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BudgetConfig {
    /// Extra attempts allowed per original request over the window. Default:
    /// 0.2 (at most ~20 % extra load).
    pub ratio: f64,
    /// Extra attempts always allowed per second, whatever the traffic.
    /// Default: 10.
    pub min_per_second: u32,
    /// How long a deposit counts. Default: 10 s.
    pub window: Duration,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            ratio: 0.2,
            min_per_second: 10,
            window: Duration::from_secs(10),
        }
    }
}

setters!(BudgetConfig {
    ratio: f64,
    min_per_second: u32,
    window: Duration,
});

const SLOTS: usize = 10;
/// Fixed point: one token is 1000 units.
const UNIT: i64 = 1000;

struct Slot {
    /// Which slot period this slot holds (period number since `start`).
    period: AtomicU64,
    deposits: AtomicI64,
    withdrawals: AtomicI64,
}

pub(crate) struct Budget {
    start: Instant,
    slot_ms: u64,
    deposit_units: i64,
    reserve_units: i64,
    slots: [Slot; SLOTS],
}

impl Budget {
    pub(crate) fn new(config: &BudgetConfig) -> Budget {
        let window_ms = (config.window.as_millis() as u64).max(SLOTS as u64);
        let ratio = if config.ratio.is_finite() {
            config.ratio.clamp(0.0, 1000.0)
        } else {
            0.0
        };
        Budget {
            start: Instant::now(),
            slot_ms: window_ms / SLOTS as u64,
            deposit_units: (ratio * UNIT as f64).round() as i64,
            reserve_units: i64::from(config.min_per_second)
                * (window_ms as i64 / 1000).max(1)
                * UNIT,
            slots: std::array::from_fn(|_| Slot {
                period: AtomicU64::new(0),
                deposits: AtomicI64::new(0),
                withdrawals: AtomicI64::new(0),
            }),
        }
    }

    fn period(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 / self.slot_ms
    }

    /// The slot for the current period, cleared if it still holds an old one.
    fn slot(&self, period: u64) -> &Slot {
        let slot = &self.slots[(period % SLOTS as u64) as usize];
        let seen = slot.period.load(Relaxed);
        if seen != period
            && slot
                .period
                .compare_exchange(seen, period, Relaxed, Relaxed)
                .is_ok()
        {
            // A racing deposit may be lost here; the budget is an estimate.
            slot.deposits.store(0, Relaxed);
            slot.withdrawals.store(0, Relaxed);
        }
        slot
    }

    /// An original request was sent.
    pub(crate) fn deposit(&self) {
        let period = self.period();
        self.slot(period)
            .deposits
            .fetch_add(self.deposit_units, Relaxed);
    }

    /// Asks for one extra attempt; false when the budget is spent.
    pub(crate) fn withdraw(&self) -> bool {
        let period = self.period();
        let current = self.slot(period);
        let oldest = period.saturating_sub(SLOTS as u64 - 1);
        let mut balance = self.reserve_units;
        for slot in &self.slots {
            let p = slot.period.load(Relaxed);
            if (oldest..=period).contains(&p) {
                balance += slot.deposits.load(Relaxed) - slot.withdrawals.load(Relaxed) * UNIT;
            }
        }
        if balance < UNIT {
            return false;
        }
        current.withdrawals.fetch_add(1, Relaxed);
        true
    }
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("deposit_units", &self.deposit_units)
            .field("reserve_units", &self.reserve_units)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_caps_withdrawals() {
        let b = Budget::new(&BudgetConfig {
            ratio: 0.2,
            min_per_second: 0,
            window: Duration::from_secs(60),
        });
        assert!(!b.withdraw(), "nothing deposited yet");
        for _ in 0..100 {
            b.deposit();
        }
        let granted = (0..100).filter(|_| b.withdraw()).count();
        assert_eq!(granted, 20);
    }

    #[test]
    fn reserve_allows_some_retries_without_traffic() {
        let b = Budget::new(&BudgetConfig {
            ratio: 0.0,
            min_per_second: 1,
            window: Duration::from_secs(3),
        });
        let granted = (0..10).filter(|_| b.withdraw()).count();
        assert_eq!(granted, 3);
    }
}
