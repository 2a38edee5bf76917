//! When [`Strategy::Forking`](crate::cluster::Strategy::Forking) starts the next
//! replica: at equal shares of the budget (Vostok), or once the attempt is
//! late by the cluster's own recent answers (backup requests). Why the
//! second exists: see [`super::latency`].

use std::time::Duration;

use super::latency::Latencies;

/// How long forking waits for an answer before it starts the next replica.
///
/// ```
/// use courier::cluster::{ClusterConfig, ForkDelay};
///
/// // Fork the requests slower than 95 % of recent answers.
/// let config = ClusterConfig::default().fork_delay(ForkDelay::quantile(0.95));
/// # let _ = config;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ForkDelay {
    /// Every budget ÷ n (Vostok's `EqualDelaysProvider`).
    Equal,
    /// After the time `quantile` of the cluster's accepted answers took over
    /// the last 10 to 20 s, but no sooner than `floor` and no later than
    /// budget ÷ n; budget ÷ n until 100 answers are known. The replica
    /// budget still caps the extra attempts.
    Quantile {
        /// 0 to 1; 0.95 forks the 5 % slowest requests.
        quantile: f64,
        /// The shortest delay.
        floor: Duration,
    },
}

/// The period of the answer times [`ForkDelay::Quantile`] reads (the last
/// one to two of them).
pub(crate) const PERIOD: Duration = Duration::from_secs(10);

impl Default for ForkDelay {
    /// [`ForkDelay::Equal`], Vostok's.
    fn default() -> Self {
        ForkDelay::Equal
    }
}

impl ForkDelay {
    /// [`ForkDelay::Quantile`] at `quantile` (clamped to 0..=1), at least 1 ms.
    pub fn quantile(quantile: f64) -> ForkDelay {
        ForkDelay::Quantile {
            quantile: quantile.clamp(0.0, 1.0),
            floor: Duration::from_millis(1),
        }
    }

    /// What a cluster must record for this delay.
    pub(crate) fn latencies(&self) -> Option<Latencies> {
        match *self {
            ForkDelay::Equal => None,
            ForkDelay::Quantile { quantile, .. } => Some(Latencies::new(PERIOD, quantile)),
        }
    }

    /// The delay for a request of `budget` over up to `replicas` replicas.
    pub(crate) fn after(
        &self,
        budget: Duration,
        replicas: usize,
        latencies: Option<&Latencies>,
    ) -> Duration {
        let equal = budget / replicas.max(1) as u32;
        match (*self, latencies.and_then(Latencies::quantile)) {
            (ForkDelay::Quantile { floor, .. }, Some(late)) => late.max(floor).min(equal),
            _ => equal,
        }
    }
}

impl std::fmt::Display for ForkDelay {
    /// `equal`, or `p95` for the 0.95 quantile.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ForkDelay::Equal => f.write_str("equal"),
            ForkDelay::Quantile { quantile, .. } => write!(f, "p{}", quantile * 100.0),
        }
    }
}

/// `equal`, or `pNN` (`p95`, `p99.9`): the quantile at NN %, as
/// `courier bench --fork-delay` and the factory's TOML spell it.
impl std::str::FromStr for ForkDelay {
    type Err = String;

    fn from_str(text: &str) -> Result<ForkDelay, String> {
        if text == "equal" {
            return Ok(ForkDelay::Equal);
        }
        match text.strip_prefix('p').map(str::parse::<f64>) {
            Some(Ok(p)) if p > 0.0 && p < 100.0 => Ok(ForkDelay::quantile(p / 100.0)),
            _ => Err(format!(
                "{text:?} is not a fork delay: equal, or a quantile such as p95 or p99.9"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_quantile_delay_is_bounded_by_the_floor_and_the_equal_share() {
        let budget = Duration::from_millis(900);
        let equal = Duration::from_millis(300);
        let delay = ForkDelay::Quantile {
            quantile: 0.5,
            floor: Duration::from_millis(2),
        };
        let l = delay.latencies().unwrap();
        assert_eq!(delay.after(budget, 3, Some(&l)), equal, "no answers yet");
        for _ in 0..100 {
            l.record(Duration::from_micros(100));
        }
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(delay.after(budget, 3, Some(&l)), Duration::from_millis(2));
        for _ in 0..200 {
            l.record(Duration::from_millis(20));
        }
        tokio::time::advance(Duration::from_millis(100)).await;
        let late = delay.after(budget, 3, Some(&l));
        assert!(
            late >= Duration::from_millis(20) && late < Duration::from_millis(23),
            "{late:?}"
        );
        for _ in 0..1000 {
            l.record(Duration::from_secs(2));
        }
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(delay.after(budget, 3, Some(&l)), equal);
        assert_eq!(ForkDelay::Equal.after(budget, 3, None), equal);
        assert_eq!(ForkDelay::quantile(0.95).to_string(), "p95");
    }

    #[test]
    fn fork_delays_parse_as_they_print() {
        for text in ["equal", "p95", "p99.9", "p50"] {
            let d: ForkDelay = text.parse().unwrap();
            assert_eq!(d.to_string(), text);
        }
        for bad in ["p0", "p100", "p", "95", "pp9", "quantile"] {
            assert!(bad.parse::<ForkDelay>().is_err(), "{bad}");
        }
    }
}
