//! The gray list, after Vostok's `GrayListModifier`
//! (vostok/clusterclient.core, `Ordering/Weighed/Gray/`): a replica that
//! gives a rejected answer is gray for a period, and a gray replica's weight
//! is zero, so the ordering puts it after every other replica (gray ones
//! shuffled among themselves): it is tried only when all the others were.
//!
//! Why: adaptive health makes a failing replica rare, the gray list makes it
//! last at once, after one rejection, which suits services where a reject
//! means "this replica is restarting". Off by default, as in Vostok's
//! default ordering (adaptive health only); Vostok has no default period,
//! [`DEFAULT_GRAY_PERIOD`] is the one its tests use.

use std::time::Duration;

use tokio::time::Instant;

/// The gray period when the gray list is turned on without one: 5 minutes.
pub const DEFAULT_GRAY_PERIOD: Duration = Duration::from_secs(300);

/// One replica's place on the gray list.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Gray {
    until: Option<Instant>,
}

impl Gray {
    /// A rejected answer: gray for `period` from now.
    pub(crate) fn rejected(&mut self, period: Duration, now: Instant) {
        self.until = Some(now + period);
    }

    pub(crate) fn is_gray(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now < until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn gray_for_the_period_after_the_last_reject() {
        let mut g = Gray::default();
        assert!(!g.is_gray(Instant::now()));
        g.rejected(DEFAULT_GRAY_PERIOD, Instant::now());
        tokio::time::advance(Duration::from_secs(200)).await;
        g.rejected(DEFAULT_GRAY_PERIOD, Instant::now());
        tokio::time::advance(Duration::from_secs(200)).await;
        assert!(g.is_gray(Instant::now()), "the second reject restarted it");
        tokio::time::advance(Duration::from_secs(100)).await;
        assert!(!g.is_gray(Instant::now()));
    }
}
