//! Outlier ejection and the panic threshold, after Envoy's outlier detection
//! (`consecutive_5xx`, `base_ejection_time`, `max_ejection_percent`,
//! `max_ejection_time`) and its load balancers' panic threshold.
//!
//! A replica whose last `consecutive_rejects` answers (default 5) were all
//! rejected is ejected: it gets no request for `base_ejection_time` (30 s)
//! × the times it has been ejected (capped by `max_ejection_time`, 300 s),
//! unless `max_ejection_percent` (10 %, but always at least one replica, as
//! Envoy) are ejected already. The multiplier goes down by one for every
//! `base_ejection_time` the replica then stays out of ejection, so a replica
//! that failed once long ago is not punished as a flapping one. A replica
//! back from ejection starts afresh (health 1, relative weight forgotten),
//! as Envoy returns a host with its full weight: the ejection was the
//! penalty, and if it still fails five more rejects eject it for longer.
//!
//! Why beside adaptive health: health only makes a failing replica rare; a
//! replica that fails every request (a dead process behind a live port)
//! still costs a rejected attempt now and then, and ejection takes it out
//! altogether for a while. Why the panic threshold: when fewer than half the
//! replicas are in (not ejected, not gray-listed), steering everything to
//! the few left would overload them (and the judgement is more likely wrong
//! than half the fleet being down), so the ordering ignores the gray list,
//! ejection and weights and spreads requests over all replicas evenly, as
//! Envoy does. Adaptive health does not count here: it falls on every
//! replica of an overloaded cluster, and a panic then would send a share of
//! the load to the replicas that caused it (`courier bench --scenario
//! cluster` with one slow and one failing replica at 70 % load collapsed to
//! 83 % success that way).

use std::time::Duration;

use tokio::time::Instant;

/// Outlier ejection and panic threshold settings (Envoy's defaults).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OutlierConfig {
    /// Rejected answers in a row that eject a replica. Default: 5.
    pub consecutive_rejects: u32,
    /// Ejection time per time ejected. Default: 30 s.
    pub base_ejection_time: Duration,
    /// The longest ejection. Default: 300 s.
    pub max_ejection_time: Duration,
    /// The most replicas ejected at once, in percent (at least one replica
    /// may always be ejected). Default: 10.
    pub max_ejection_percent: f64,
    /// The fraction of healthy replicas below which the ordering panics and
    /// spreads requests over all replicas; 0 turns it off. Default: 0.5.
    pub panic_threshold: f64,
}

impl Default for OutlierConfig {
    fn default() -> Self {
        OutlierConfig {
            consecutive_rejects: 5,
            base_ejection_time: Duration::from_secs(30),
            max_ejection_time: Duration::from_secs(300),
            max_ejection_percent: 10.0,
            panic_threshold: 0.5,
        }
    }
}

impl OutlierConfig {
    /// Sets the rejected answers in a row that eject a replica (at least 1).
    pub fn consecutive_rejects(mut self, n: u32) -> Self {
        self.consecutive_rejects = n.max(1);
        self
    }
    /// Sets the ejection time per time ejected.
    pub fn base_ejection_time(mut self, d: Duration) -> Self {
        self.base_ejection_time = d;
        self
    }
    /// Sets the longest ejection.
    pub fn max_ejection_time(mut self, d: Duration) -> Self {
        self.max_ejection_time = d;
        self
    }
    /// Sets the most replicas ejected at once, in percent.
    pub fn max_ejection_percent(mut self, percent: f64) -> Self {
        self.max_ejection_percent = percent.clamp(0.0, 100.0);
        self
    }
    /// Sets the panic threshold (a fraction in [0, 1]).
    pub fn panic_threshold(mut self, fraction: f64) -> Self {
        self.panic_threshold = fraction.clamp(0.0, 1.0);
        self
    }

    /// How many of `replicas` may be ejected at once.
    pub(crate) fn max_ejected(&self, replicas: usize) -> usize {
        ((replicas as f64 * self.max_ejection_percent / 100.0) as usize).max(1)
    }

    /// Whether `healthy` of `replicas` is below the panic threshold.
    pub(crate) fn panics(&self, in_rotation: usize, replicas: usize) -> bool {
        (in_rotation as f64) < self.panic_threshold * replicas as f64
    }
}

/// One replica's ejection state.
#[derive(Debug, Default)]
pub(crate) struct Outlier {
    consecutive: u32,
    until: Option<Instant>,
    multiplier: u32,
    back: bool,
}

impl Outlier {
    /// Rejected answers in a row.
    pub(crate) fn consecutive(&self) -> u32 {
        self.consecutive
    }

    pub(crate) fn is_ejected(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now < until)
    }

    /// True once, the first time it is asked after an ejection ended.
    pub(crate) fn take_return(&mut self, now: Instant) -> bool {
        match self.until {
            Some(until) if now >= until && !self.back => {
                self.back = true;
                true
            }
            _ => false,
        }
    }

    /// Counts a verdict; true when the replica is due for ejection.
    pub(crate) fn judged(&mut self, rejected: bool, config: &OutlierConfig, now: Instant) -> bool {
        if !rejected {
            self.consecutive = 0;
            return false;
        }
        self.consecutive = self.consecutive.saturating_add(1);
        self.consecutive >= config.consecutive_rejects && !self.is_ejected(now)
    }

    /// Ejects the replica; returns for how long.
    pub(crate) fn eject(&mut self, config: &OutlierConfig, now: Instant) -> Duration {
        if let Some(until) = self.until {
            let base = config.base_ejection_time.as_nanos().max(1);
            let healthy_for = now.saturating_duration_since(until).as_nanos();
            let forgiven = u32::try_from(healthy_for / base).unwrap_or(u32::MAX);
            self.multiplier = self.multiplier.saturating_sub(forgiven);
        }
        self.multiplier = self.multiplier.saturating_add(1);
        let period = config
            .base_ejection_time
            .saturating_mul(self.multiplier)
            .min(config.max_ejection_time);
        self.until = Some(now + period);
        self.consecutive = 0;
        self.back = false;
        period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn five_in_a_row_then_thirty_seconds_times_ejections() {
        let c = OutlierConfig::default();
        let mut o = Outlier::default();
        let now = Instant::now;
        for _ in 0..4 {
            assert!(!o.judged(true, &c, now()));
        }
        assert!(!o.judged(false, &c, now()), "an accept resets the count");
        for _ in 0..4 {
            assert!(!o.judged(true, &c, now()));
        }
        assert!(o.judged(true, &c, now()));
        assert_eq!(o.eject(&c, now()), Duration::from_secs(30));
        assert!(o.is_ejected(now()));
        assert!(!o.take_return(now()));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(!o.is_ejected(now()));
        assert!(o.take_return(now()) && !o.take_return(now()), "back, once");
        // Ejected again at once: twice as long.
        assert_eq!(o.eject(&c, now()), Duration::from_secs(60));
        tokio::time::advance(Duration::from_secs(60)).await;
        // A minute back in service forgives two ejections: 30 s again.
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(o.eject(&c, now()), Duration::from_secs(30));
        for _ in 0..20 {
            o.eject(&c, now());
        }
        assert_eq!(o.eject(&c, now()), Duration::from_secs(300), "capped");
    }

    #[test]
    fn ten_percent_but_at_least_one_and_panic_below_half() {
        let c = OutlierConfig::default();
        assert_eq!(c.max_ejected(3), 1);
        assert_eq!(c.max_ejected(10), 1);
        assert_eq!(c.max_ejected(25), 2);
        assert!(!c.panics(5, 10));
        assert!(c.panics(4, 10));
        assert!(!OutlierConfig::default().panic_threshold(0.0).panics(0, 10));
    }
}
