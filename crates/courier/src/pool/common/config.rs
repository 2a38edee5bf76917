//! What the pool itself is configured by: caps, timeouts, lifetimes. The
//! client builds it from its own configuration; everything about reaching
//! an origin (DNS, proxies, TLS, which protocol) is the protocol's.

use std::time::Duration;

use tokio::time::Instant;

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
        retire_at(now, self.lifetime?, self.lifetime_jitter)
    }
}

/// When a connection established at `now` retires: `lifetime` plus a
/// uniformly random share of `jitter`.
pub(crate) fn retire_at(now: Instant, lifetime: Duration, jitter: Duration) -> Option<Instant> {
    let extra = if jitter.is_zero() {
        Duration::ZERO
    } else {
        jitter.mul_f64(fastrand::f64())
    };
    now.checked_add(lifetime + extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jitter spreads retirements over the whole window (a fleet must not
    /// rotate in lockstep), and none falls outside it; without jitter they
    /// all coincide. (The integration test of rotation cannot tell jitter
    /// from none: both give a handful of rotations.)
    #[test]
    fn jitter_spreads_retirement_over_its_window() {
        let now = Instant::now();
        let lifetime = Duration::from_secs(60);
        let jitter = Duration::from_secs(10);
        let offsets: Vec<Duration> = (0..400)
            .map(|_| retire_at(now, lifetime, jitter).unwrap() - now)
            .collect();
        let (min, max) = (offsets.iter().min().unwrap(), offsets.iter().max().unwrap());
        assert!(
            *min >= lifetime && *max <= lifetime + jitter,
            "{min:?}..{max:?}"
        );
        // 400 uniform draws: each tenth of the window holds some.
        let mut tenths = [0; 10];
        for o in &offsets {
            // Each tenth of the 10 s window is one second.
            tenths[((*o - lifetime).as_secs() as usize).min(9)] += 1;
        }
        assert!(tenths.iter().all(|&n| n > 0), "{tenths:?}");
        assert_eq!(
            retire_at(now, lifetime, Duration::ZERO),
            Some(now + lifetime)
        );
    }
}
