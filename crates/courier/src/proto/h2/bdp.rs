//! The bandwidth-delay product of a connection, estimated with PINGs, to size
//! its receive windows ([`super::grow`] applies the estimate).
//!
//! Why: a stream window caps a download at one window per round trip. 2 MiB
//! at 50 ms is 40 MB/s, twelve times less than HTTP/1.1 on the same link
//! (issue 19); a window large enough for every link would let any slow
//! reader make the client buffer that much. So the window follows the link,
//! as gRPC and Go's gRPC do (grpc-go `internal/transport/bdp_estimator.go`,
//! and hyper `src/proto/h2/ping.rs`, which follows it):
//!
//! 1. DATA arrives (64 KiB of it since the last sample: small responses are
//!    no burst) and no sample is running: a PING with [`BDP_PING`] goes out,
//!    and the sample starts at zero.
//! 2. Until its ACK, the sample counts bytes.
//! 3. The ACK gives a round trip time (smoothed: the first sample as it is,
//!    then 1/8 of each new one, hyper's average). The sample, at most about
//!    1.5 times the real BDP, over 1.5 RTT, is a bandwidth; if it is the
//!    largest seen so far and the sample is at least 2/3 of the current
//!    estimate, the estimate becomes twice the sample, up to a ceiling
//!    (gRPC's beta = 0.66 and gamma = 2).
//!
//! Where courier differs, and why:
//!
//! - **The sample counts bytes the application consumed, not bytes
//!   received** (gRPC and hyper count received bytes). A window then grows
//!   only while the application keeps up: a reader that stops, or reads
//!   slower than the link, consumes less than 2/3 of the window per round
//!   trip and earns nothing, however much arrives. With received bytes, a
//!   stream nobody reads grows its window every round trip up to the ceiling.
//! - **The ceilings are configurable**, 128 MiB per stream and 256 MiB per
//!   connection by default, a stream at most half its connection's (gRPC
//!   and hyper: 16 MiB): 16 MiB per 50 ms round
//!   trip is 335 MB/s, less than HTTP/1.1 gets on the link of issue 19's
//!   table (0.6 to 1.1 GB/s through nginx's HTTP/2, a 30 to 55 MB BDP at
//!   50 ms). Twice the BDP is what the estimate aims at (gamma), and a
//!   window only just above the BDP stalls between WINDOW_UPDATEs: measured
//!   there on a quiet machine, 64 MiB left h2c at 0.84 × h2load's
//!   throughput and 128 MiB at 0.91 × (32 MiB, in a busier sitting: 0.84 ×).
//!   It is memory only a reader that consumed 2/3 of 64 MiB within one
//!   round trip is given, and the connection ceiling bounds all of a
//!   connection's streams.
//! - **Samples pace themselves** (hyper's idea, with other numbers): back to
//!   back while the estimate grows; after two samples that do not grow it,
//!   no new one for 100 ms, then four times longer each time up to 10 s —
//!   unless half a window's worth arrives within a round trip of the last
//!   sample, which is traffic the window holds back (a steady transfer the
//!   window does not limit, a LAN or a slow reader, keeps the spacing: it
//!   sent a PING per half window before, hundreds a second on a LAN). A connection of small
//!   responses sends a PING a few times a minute; one whose streams are idle
//!   (long polls) receives no DATA, so sends none; at the ceiling, none.
//!
//! The estimator is connection state (some 60 bytes), not stream state: a
//! stream slot pays nothing for it.

use std::time::Duration;

use tokio::time::Instant;

/// The payload of a BDP PING, telling its ACK from keep-alive ones.
pub(crate) const BDP_PING: [u8; 8] = *b"bdp-ping";

/// DATA a sample waits for: a response or two of a few KiB is no burst to
/// measure, and sends no PING (nor do scripted peers see one after a small
/// body).
const MIN_BURST: u64 = 64 * 1024;
/// Samples that do not grow the estimate before they are spaced out.
const STABLE_SAMPLES: u8 = 2;
/// The first spacing of samples once the estimate is stable, and the largest.
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(10);

/// One connection's BDP estimate.
#[derive(Debug)]
pub(crate) struct Estimator {
    /// The current estimate: the window the link is believed to need.
    estimate: u32,
    /// The estimate never passes this; at it, no more samples.
    ceiling: u32,
    /// When the running sample's PING was sent; `None`: no sample running.
    sent_at: Option<Instant>,
    /// Bytes consumed since the PING was sent.
    sample: u64,
    /// Bytes received since the last sample ended.
    received: u64,
    /// Smoothed round trip time.
    rtt: Option<Duration>,
    /// The largest bandwidth seen, bytes per second.
    max_bandwidth: f64,
    /// No sample before this (unless half a window arrives within a round
    /// trip of `ended_at`).
    next_at: Instant,
    /// When the last sample ended.
    ended_at: Instant,
    delay: Duration,
    /// Samples in a row that did not grow the estimate.
    stable: u8,
}

impl Estimator {
    /// An estimate that starts at `initial` (the stream window advertised)
    /// and grows up to `ceiling`.
    pub(crate) fn new(initial: u32, ceiling: u32, now: Instant) -> Estimator {
        Estimator {
            estimate: initial,
            ceiling: ceiling.max(initial),
            sent_at: None,
            sample: 0,
            received: 0,
            rtt: None,
            max_bandwidth: 0.0,
            next_at: now,
            ended_at: now,
            delay: Duration::ZERO,
            stable: 0,
        }
    }

    /// The current estimate.
    #[cfg(test)]
    pub(crate) fn estimate(&self) -> u32 {
        self.estimate
    }

    /// The smoothed round trip time, once a sample has ended.
    #[cfg(test)]
    pub(crate) fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// DATA of `n` bytes arrived: true if a BDP PING must be sent now (the
    /// sample starts). `now` is called only past the cheap checks: this
    /// runs for every DATA frame.
    pub(crate) fn on_data(&mut self, n: usize, now: impl FnOnce() -> Instant) -> bool {
        if self.sent_at.is_some() || self.estimate >= self.ceiling {
            return false;
        }
        self.received = self.received.saturating_add(n as u64);
        if self.received < MIN_BURST {
            return false;
        }
        let now = now();
        if now < self.next_at && !self.window_limited(now) {
            return false;
        }
        self.sent_at = Some(now);
        self.sample = 0;
        self.received = 0;
        true
    }

    /// Half a window arrived within a round trip of the last sample: the
    /// window, not the sender, may be what holds the transfer back.
    fn window_limited(&self, now: Instant) -> bool {
        self.received >= u64::from(self.estimate / 2)
            && self
                .rtt
                .is_some_and(|rtt| now.saturating_duration_since(self.ended_at) <= rtt)
    }

    /// The application consumed `n` bytes of DATA.
    pub(crate) fn on_consumed(&mut self, n: usize) {
        if self.sent_at.is_some() {
            self.sample = self.sample.saturating_add(n as u64);
        }
    }

    /// A sample is running (its PING is unanswered).
    pub(crate) fn sampling(&self) -> bool {
        self.sent_at.is_some()
    }

    /// The BDP PING's ACK arrived: the new estimate if it grew.
    pub(crate) fn on_ack(&mut self, now: Instant) -> Option<u32> {
        let sent = self.sent_at.take()?;
        self.ended_at = now;
        let rtt_sample = now
            .saturating_duration_since(sent)
            .max(Duration::from_micros(1));
        let rtt = match self.rtt {
            None => rtt_sample,
            Some(rtt) if rtt_sample > rtt => rtt + (rtt_sample - rtt) / 8,
            Some(rtt) => rtt - (rtt - rtt_sample) / 8,
        };
        self.rtt = Some(rtt);
        let sample = std::mem::take(&mut self.sample);
        let bandwidth = sample as f64 / (rtt.as_secs_f64() * 1.5);
        let grows = bandwidth >= self.max_bandwidth
            && sample >= u64::from(self.estimate) * 2 / 3
            && sample > 0;
        if bandwidth > self.max_bandwidth {
            self.max_bandwidth = bandwidth;
        }
        if !grows {
            self.stabilize(now);
            return None;
        }
        let grown = sample.saturating_mul(2).min(u64::from(self.ceiling)) as u32;
        self.delay = Duration::ZERO;
        self.stable = 0;
        self.next_at = now;
        if grown <= self.estimate {
            return None;
        }
        self.estimate = grown;
        Some(grown)
    }

    /// A sample that did not grow the estimate: after a few, space them out.
    fn stabilize(&mut self, now: Instant) {
        self.stable += 1;
        if self.stable >= STABLE_SAMPLES {
            self.stable = 0;
            self.delay = if self.delay.is_zero() {
                FIRST_DELAY
            } else {
                (self.delay * 4).min(MAX_DELAY)
            };
        }
        self.next_at = now + self.delay;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;
    const RTT: Duration = Duration::from_millis(50);

    /// One sample: DATA arrives at `now`, the application consumes
    /// `consumed` bytes, and the ACK comes one RTT later.
    fn sample(e: &mut Estimator, now: &mut Instant, consumed: usize) -> Option<u32> {
        assert!(e.on_data(MIN_BURST as usize, || *now), "a sample starts");
        e.on_consumed(consumed);
        *now += RTT;
        e.on_ack(*now)
    }

    #[test]
    fn a_reader_that_keeps_up_doubles_the_estimate_each_round_trip() {
        let mut now = Instant::now();
        let mut e = Estimator::new(2 * MIB as u32, 32 * MIB as u32, now);
        // Window-limited: each round trip brings (and the reader takes) one window.
        assert_eq!(sample(&mut e, &mut now, 2 * MIB), Some(4 * MIB as u32));
        assert_eq!(e.rtt(), Some(RTT));
        assert_eq!(sample(&mut e, &mut now, 4 * MIB), Some(8 * MIB as u32));
        assert_eq!(sample(&mut e, &mut now, 8 * MIB), Some(16 * MIB as u32));
        assert_eq!(sample(&mut e, &mut now, 16 * MIB), Some(32 * MIB as u32));
        // At the ceiling: no more samples, no more PINGs.
        assert!(!e.on_data(MIN_BURST as usize, || now));
        assert_eq!(e.estimate(), 32 * MIB as u32);
    }

    #[test]
    fn a_reader_that_does_not_keep_up_earns_nothing() {
        let mut now = Instant::now();
        let mut e = Estimator::new(2 * MIB as u32, 32 * MIB as u32, now);
        // A full window arrives each round trip, but the reader takes half.
        assert_eq!(sample(&mut e, &mut now, MIB), None);
        // A reader that stopped: nothing consumed, nothing earned.
        assert_eq!(sample(&mut e, &mut now, 0), None);
        assert_eq!(e.estimate(), 2 * MIB as u32);
        // Just under 2/3 of the window: still nothing.
        now += FIRST_DELAY;
        assert_eq!(sample(&mut e, &mut now, 2 * MIB * 2 / 3 - 1), None);
        assert_eq!(e.estimate(), 2 * MIB as u32);
    }

    #[test]
    fn a_slower_sample_than_the_best_seen_does_not_grow_the_estimate() {
        let mut now = Instant::now();
        let mut e = Estimator::new(2 * MIB as u32, 64 * MIB as u32, now);
        assert_eq!(sample(&mut e, &mut now, 4 * MIB), Some(8 * MIB as u32));
        // 6 MiB is 2/3 of 8 MiB, but over a round trip twenty times longer
        // (168 ms once smoothed): less than half the bandwidth already seen.
        assert!(e.on_data(MIN_BURST as usize, || now));
        e.on_consumed(6 * MIB);
        now += RTT * 20;
        assert_eq!(e.on_ack(now), None);
        assert_eq!(e.estimate(), 8 * MIB as u32);
    }

    #[test]
    fn one_sample_runs_at_a_time_and_only_its_consumption_counts() {
        let mut now = Instant::now();
        let mut e = Estimator::new(2 * MIB as u32, 32 * MIB as u32, now);
        e.on_consumed(2 * MIB); // before the sample: not counted
        assert!(
            !e.on_data(MIN_BURST as usize - 1, || now),
            "a small response is no burst"
        );
        assert!(e.on_data(1, || now));
        assert!(e.sampling());
        assert!(
            !e.on_data(MIN_BURST as usize, || now),
            "one PING outstanding at a time"
        );
        now += RTT;
        assert_eq!(e.on_ack(now), None, "nothing consumed during the sample");
        assert!(!e.sampling());
        assert_eq!(e.on_ack(now), None, "an ACK without a sample does nothing");
    }

    #[test]
    fn stable_samples_space_out_until_half_a_window_arrives() {
        let mut now = Instant::now();
        let mut e = Estimator::new(2 * MIB as u32, 32 * MIB as u32, now);
        let mut delays = Vec::new();
        // Small responses: samples never grow the estimate.
        for _ in 0..12 {
            if !e.delay.is_zero() {
                let early = now + e.delay - Duration::from_millis(1);
                assert!(!e.on_data(128, || early), "no sample before the delay");
            }
            now += e.delay;
            assert_eq!(sample(&mut e, &mut now, 128), None);
            delays.push(e.delay.as_millis());
        }
        assert_eq!(delays[..6], [0, 100, 100, 400, 400, 1600]);
        assert_eq!(delays.last(), Some(&MAX_DELAY.as_millis()));
        // Half a window arriving within a round trip of the last sample
        // starts one at once.
        assert!(!e.on_data(MIB - 1000, || now));
        assert!(e.on_data(1000, || now));
    }

    /// A steady transfer the window does not hold back (a LAN, a reader
    /// slower than the link) keeps the spacing: half a window arriving
    /// over more than a round trip is no reason to sample. It started one
    /// for every half window, hundreds a second on a fast link.
    #[test]
    fn half_a_window_over_more_than_a_round_trip_waits_for_the_spacing() {
        let mut now = Instant::now();
        let mut e = Estimator::new(2 * MIB as u32, 32 * MIB as u32, now);
        for _ in 0..4 {
            now += e.delay;
            assert_eq!(sample(&mut e, &mut now, 128), None);
        }
        assert_eq!(e.delay, Duration::from_millis(400));
        for _ in 0..4 {
            now += RTT;
            assert!(!e.on_data(MIB / 4, || now), "no sample before the spacing");
        }
        now = e.next_at;
        assert!(e.on_data(1, || now), "the spacing is over");
    }
}
