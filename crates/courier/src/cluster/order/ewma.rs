//! Peak EWMA latency (Finagle, linkerd2-proxy, tower): a moving average of
//! round-trip times that jumps to any sample above it at once and decays
//! towards lower ones over `decay`.
//!
//! Why peak: a replica that turns slow must lose traffic on its first slow
//! answer, not after an average catches up. Why decay on read as well: a
//! replica that was slow and is no longer chosen must come back into play,
//! so with no new sample its estimate drifts down (tower does the same).

use std::time::Duration;

use tokio::time::Instant;

/// The decay period (Finagle and linkerd: 10 s).
pub(crate) const DEFAULT_DECAY: Duration = Duration::from_secs(10);
/// The estimate of a replica never measured (linkerd: 30 ms).
pub(crate) const DEFAULT_RTT: Duration = Duration::from_millis(30);

#[derive(Debug)]
pub(crate) struct PeakEwma {
    estimate_ns: f64,
    stamp: Instant,
    decay_ns: f64,
}

impl PeakEwma {
    pub(crate) fn new(initial: Duration, decay: Duration) -> PeakEwma {
        PeakEwma {
            estimate_ns: initial.as_nanos() as f64,
            stamp: Instant::now(),
            decay_ns: decay.as_nanos().max(1) as f64,
        }
    }

    /// The estimate, decayed for the time since it was last touched.
    pub(crate) fn estimate(&mut self) -> Duration {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.stamp).as_nanos() as f64;
        self.estimate_ns *= (-elapsed / self.decay_ns).exp();
        self.stamp = now;
        Duration::from_nanos(self.estimate_ns as u64)
    }

    /// Takes a sample: a peak replaces the estimate, a lower one is blended in
    /// with the weight of the time since the last sample.
    pub(crate) fn observe(&mut self, rtt: Duration) {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.stamp).as_nanos() as f64;
        let rtt = rtt.as_nanos() as f64;
        if rtt > self.estimate_ns {
            self.estimate_ns = rtt;
        } else {
            let decay = (-elapsed / self.decay_ns).exp();
            self.estimate_ns = self.estimate_ns * decay + rtt * (1.0 - decay);
        }
        self.stamp = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    #[tokio::test(start_paused = true)]
    async fn peaks_at_once_and_decays_over_ten_seconds() {
        let mut e = PeakEwma::new(DEFAULT_RTT, DEFAULT_DECAY);
        assert_eq!(e.estimate(), DEFAULT_RTT);
        e.observe(Duration::from_millis(200));
        assert_eq!(
            e.estimate(),
            Duration::from_millis(200),
            "a peak is taken whole"
        );
        // Ten seconds later a 10 ms sample weighs 1 - 1/e.
        tokio::time::advance(DEFAULT_DECAY).await;
        e.observe(Duration::from_millis(10));
        let expected = 200.0 / std::f64::consts::E + 10.0 * (1.0 - 1.0 / std::f64::consts::E);
        assert!(
            (ms(e.estimate()) - expected).abs() < 0.5,
            "{:?}",
            e.estimate()
        );
        // Unused, it decays towards zero: a replica once slow comes back into play.
        tokio::time::advance(DEFAULT_DECAY * 5).await;
        assert!(ms(e.estimate()) < expected * 0.01);
    }
}
