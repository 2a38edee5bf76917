//! The server's congestion controller: quinn's Cubic, with the first slow
//! start counted in datagrams of the size MTU discovery has reached.
//!
//! Why: quinn counts the window in bytes and starts at 12,000 (ten
//! 1,200-byte datagrams, RFC 9002 §7.2), and MTU discovery raising the
//! datagram size does not raise the window. TCP starts at ten segments of the
//! path's MSS (89 KB on a 9,000-byte link) and counts slow start in
//! segments, so on a jumbo path a QUIC download started seven times smaller
//! and spent 2–3 more round trips in slow start: the first 64 MiB download at
//! 50 ms took 0.87 × TLS HTTP/1.1's rate (docs/src/http3.md, "Long link").
//! Here, until the first loss or congestion signal, each rise of the
//! datagram size scales the window by the same factor, as slow start in
//! datagrams would have it; after it, Cubic as quinn has it. The window so
//! gained is at most `6,550 / 1,200` (5.5 ×) what Cubic would have had,
//! and paced.

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics, Cubic, CubicConfig};
use quinn_proto::RttEstimator;

/// Builds [`DatagramStart`] controllers.
#[derive(Debug, Default)]
pub(crate) struct DatagramStartConfig {
    cubic: Arc<CubicConfig>,
}

impl ControllerFactory for DatagramStartConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let inner = Cubic::new(Arc::clone(&self.cubic), now, current_mtu);
        Box::new(DatagramStart {
            initial: inner.initial_window(),
            config: Arc::clone(&self.cubic),
            inner,
            counted: current_mtu,
            slow_start: true,
            now,
        })
    }
}

/// Cubic whose window follows the datagram size until the first congestion
/// event.
#[derive(Debug, Clone)]
pub(crate) struct DatagramStart {
    inner: Cubic,
    /// Cubic's settings, for a restart.
    config: Arc<CubicConfig>,
    /// The largest datagram size the window has been counted in: a size
    /// found again after black hole detection does not scale it twice.
    counted: u16,
    /// No congestion event yet: Cubic is in its first slow start, whose
    /// only state is the window.
    slow_start: bool,
    /// Cubic's initial window as configured (a restart's is not it).
    initial: u64,
    /// Latest time quinn gave (Cubic's constructor takes one; it ignores it).
    now: Instant,
}

impl DatagramStart {
    /// Restarts Cubic's first slow start at `window` bytes in `mtu`-byte
    /// datagrams: while no congestion event happened, Cubic's state is its
    /// window alone, so a fresh one with that initial window is the same
    /// controller.
    fn restart(&mut self, window: u64, mtu: u16) {
        let mut config = CubicConfig::clone(&self.config);
        config.initial_window(window);
        self.inner = Cubic::new(Arc::new(config), self.now, mtu);
    }
}

impl Controller for DatagramStart {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.now = now;
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.now = now;
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.slow_start = false;
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        if self.slow_start && new_mtu > self.counted {
            let window = self.inner.window() * u64::from(new_mtu) / u64::from(self.counted);
            self.restart(window, new_mtu);
            self.counted = new_mtu;
        } else {
            self.inner.on_mtu_update(new_mtu);
        }
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller() -> Box<dyn Controller> {
        Arc::new(DatagramStartConfig::default()).build(Instant::now(), 1200)
    }

    #[test]
    fn the_first_slow_start_counts_datagrams_of_the_discovered_size() {
        let mut cc = controller();
        let initial = cc.window();
        assert_eq!(
            initial, 12_000,
            "quinn's initial window: ten 1,200-byte datagrams"
        );
        // MTU discovery: 1,200 -> 3,875 -> 6,550.
        cc.on_mtu_update(3_875);
        assert_eq!(cc.window(), initial * 3_875 / 1_200);
        cc.on_mtu_update(6_550);
        assert_eq!(cc.window(), initial * 3_875 / 1_200 * 6_550 / 3_875);
        assert_eq!(cc.initial_window(), initial, "the configured one");
        // A smaller size (black hole detection) does not scale it down
        // below Cubic's own floor, as quinn's Cubic does.
        let before = cc.window();
        cc.on_mtu_update(1_200);
        assert_eq!(cc.window(), before);
        // Found again: counted once.
        cc.on_mtu_update(6_550);
        assert_eq!(cc.window(), before);
    }

    #[test]
    fn after_a_congestion_event_the_window_is_cubics() {
        let mut cc = controller();
        let now = Instant::now();
        cc.on_sent(now, 1_200, 1);
        cc.on_congestion_event(now, now, false, 1_200);
        let after_loss = cc.window();
        assert!(after_loss < 12_000, "Cubic reduced it: {after_loss}");
        cc.on_mtu_update(6_550);
        // Cubic's own rule: at least two datagrams, not scaled.
        assert_eq!(cc.window(), after_loss.max(2 * 6_550));
    }
}
