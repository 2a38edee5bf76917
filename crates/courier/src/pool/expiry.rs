//! The background scavenger: idle timeout and lifetime for connections that
//! sit unused (a connection in use is only retired when it comes back).

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::PoolConfig;
use super::{PoolInner, Protocol};

/// How often to sweep: a quarter of the shortest limit, so a connection
/// outlives its limit by at most ~25 %, bounded to keep the sweep cheap.
pub(crate) fn scavenge_period(config: &PoolConfig) -> Duration {
    let shortest = match (config.idle_timeout, config.lifetime) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        // Nothing expires, but empty origins are still forgotten now and then.
        (None, None) => Duration::from_secs(60),
    };
    (shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(5))
}

/// Runs until the pool is dropped: `stop` is notified then (see
/// `PoolInner`'s `Drop`), so the task ends with its client instead of at
/// its next tick, up to a period later (5 s by default), which left a task
/// and a timer behind every dropped client.
pub(crate) fn spawn_scavenger<P: Protocol>(
    pool: Weak<PoolInner<P>>,
    stop: Arc<Notify>,
    period: Duration,
) {
    // The pool may be created outside a runtime; then the first request's
    // runtime starts the scavenger (see `Pool::origin`).
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    handle.spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = stop.notified() => return,
            }
            let Some(pool) = pool.upgrade() else { return };
            pool.scavenge(Instant::now());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_follows_the_shortest_limit() {
        let mut c = PoolConfig {
            idle_timeout: Some(Duration::from_secs(1)),
            ..PoolConfig::default()
        };
        assert_eq!(scavenge_period(&c), Duration::from_millis(250));
        c.lifetime = Some(Duration::from_millis(400));
        assert_eq!(scavenge_period(&c), Duration::from_millis(100));
        c.idle_timeout = Some(Duration::from_secs(3600));
        c.lifetime = None;
        assert_eq!(scavenge_period(&c), Duration::from_secs(5));
    }
}
