//! Adaptive health, after Vostok's `AdaptiveHealthWithLinearDecay`
//! (vostok/clusterclient.core, `Ordering/Weighed/Adaptive/`): a weight in
//! (0, 1] per replica, ×1.5 on an accepted answer (up to 1), ×0.5 on a
//! rejected one (down to 0.001), and the damage (1 − health) fading
//! linearly to nothing over `recovery` after the last rejection.
//!
//! Why multiplicative: a replica failing every request loses half its
//! traffic per failure, so a handful of failures take it out of rotation,
//! while a few successes bring it back; the floor keeps it reachable (and
//! still tried last) so it can prove it recovered.
//!
//! Why the fading: a replica at the floor is chosen about once per thousand
//! requests, so at low traffic it would wait a long time for the successes
//! that raise it. Vostok lets the damage decay over 10 minutes; courier's
//! default is 60 s, because issue 18 wants a recovered replica back to half
//! its fair share within a minute (at 30 s its health is above 0.5 whatever
//! the traffic). A new rejection restarts the fading, so a replica that keeps
//! failing stays near the floor.

use std::time::Duration;

use tokio::time::Instant;

/// Health of a replica never judged.
pub(crate) const MAX: f64 = 1.0;

/// Adaptive health settings (Vostok's defaults, but for `recovery`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct HealthConfig {
    /// Factor on an accepted answer, > 1. Default: 1.5.
    pub up: f64,
    /// Factor on a rejected answer, in (0, 1]. Default: 0.5.
    pub down: f64,
    /// The lowest health, in (0, 1). Default: 0.001.
    pub min: f64,
    /// The time over which a rejection's damage fades linearly; `None`
    /// keeps it until successes raise the health. Default: 60 s (Vostok: 10 min).
    pub recovery: Option<Duration>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            up: 1.5,
            down: 0.5,
            min: 0.001,
            recovery: Some(Duration::from_secs(60)),
        }
    }
}

impl HealthConfig {
    /// Sets the factor on an accepted answer (at least 1).
    pub fn up(mut self, factor: f64) -> Self {
        self.up = factor.max(1.0);
        self
    }
    /// Sets the factor on a rejected answer (clamped to (0, 1]).
    pub fn down(mut self, factor: f64) -> Self {
        self.down = factor.clamp(f64::MIN_POSITIVE, 1.0);
        self
    }
    /// Sets the lowest health (clamped to (0, 1]).
    pub fn min(mut self, min: f64) -> Self {
        self.min = min.clamp(f64::MIN_POSITIVE, 1.0);
        self
    }
    /// Sets (or, with `None`, turns off) the recovery over time.
    pub fn recovery(mut self, recovery: Option<Duration>) -> Self {
        self.recovery = recovery.filter(|d| !d.is_zero());
        self
    }
}

/// One replica's health: the value, and when its damage started fading.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Health {
    value: f64,
    pivot: Option<Instant>,
}

impl Health {
    pub(crate) fn new() -> Health {
        Health {
            value: MAX,
            pivot: None,
        }
    }

    /// After an accepted answer (the fading goes on from where it was).
    pub(crate) fn up(&mut self, config: &HealthConfig) {
        self.value = (self.value * config.up).min(MAX);
    }

    /// After a rejected answer or an error: the fading starts again.
    pub(crate) fn down(&mut self, config: &HealthConfig, now: Instant) {
        self.value = (self.value * config.down).max(config.min);
        self.pivot = Some(now);
    }

    /// The health the ordering uses at `now`: the value plus the part of the
    /// damage that has faded since the last rejection.
    pub(crate) fn effective(&self, config: &HealthConfig, now: Instant) -> f64 {
        let damage = MAX - self.value;
        match (config.recovery, self.pivot) {
            (Some(recovery), Some(pivot)) if damage > 0.0 => {
                let faded =
                    now.saturating_duration_since(pivot).as_secs_f64() / recovery.as_secs_f64();
                (self.value + damage * faded.min(1.0)).min(MAX)
            }
            _ => self.value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn halves_to_the_floor_and_climbs_back() {
        let c = HealthConfig::default().recovery(None);
        let mut h = Health::new();
        for _ in 0..20 {
            h.down(&c, Instant::now());
        }
        assert_eq!(h.effective(&c, Instant::now()), 0.001);
        h.up(&c);
        assert!((h.effective(&c, Instant::now()) - 0.0015).abs() < 1e-12);
        for _ in 0..20 {
            h.up(&c);
        }
        assert_eq!(h.effective(&c, Instant::now()), MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn damage_fades_linearly_and_a_new_reject_restarts_it() {
        let c = HealthConfig::default();
        let mut h = Health::new();
        for _ in 0..20 {
            h.down(&c, Instant::now());
        }
        let at = |h: &Health| h.effective(&c, Instant::now());
        assert_eq!(at(&h), 0.001);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!((at(&h) - (0.001 + 0.999 * 0.5)).abs() < 1e-9, "{}", at(&h));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(at(&h), MAX);
        h.down(&c, Instant::now());
        assert_eq!(at(&h), 0.0005f64.max(0.001), "faded damage is not banked");
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!((at(&h) - (0.001 + 0.999 * 0.1)).abs() < 1e-9);
    }
}
