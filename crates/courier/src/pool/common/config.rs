//! What the pool itself is configured by: caps, timeouts, lifetimes. The
//! client builds it from its own configuration; everything about reaching
//! an origin (DNS, proxies, TLS, which protocol) is the protocol's.

use std::time::Duration;

use tokio::time::Instant;

use super::expiry;

/// The pool's settings.
#[derive(Debug, Clone)]
pub(crate) struct PoolConfig {
    /// Connections open or being opened per origin, at most.
    pub(crate) max_connections_per_host: usize,
    /// An unused connection closes after this long.
    pub(crate) idle_timeout: Option<Duration>,
    /// A connection takes no new request this long after it was made...
    pub(crate) lifetime: Option<Duration>,
    /// ...plus a random share of this, so a fleet does not rotate in lockstep.
    pub(crate) lifetime_jitter: Duration,
    /// A connection attempt fails after this long.
    pub(crate) connect_timeout: Duration,
    /// When every shared connection of an origin is full, another may be
    /// opened (within the cap); otherwise requests wait for a slot.
    pub(crate) more_shared_when_full: bool,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            max_connections_per_host: usize::MAX,
            idle_timeout: None,
            lifetime: None,
            lifetime_jitter: Duration::ZERO,
            connect_timeout: Duration::from_secs(10),
            more_shared_when_full: true,
        }
    }
}

impl PoolConfig {
    /// When a connection established at `now` must retire: the lifetime plus
    /// a random share of the jitter.
    pub(crate) fn expiry(&self, now: Instant) -> Option<Instant> {
        expiry::retire_at(now, self.lifetime?, self.lifetime_jitter)
    }
}
