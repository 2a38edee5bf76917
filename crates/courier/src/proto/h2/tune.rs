//! When a connection's stream window should grow: as soon as the application
//! consumes half of it within three quarters of a round trip ([`super::grow`]
//! applies the answer).
//!
//! Why: a stream window caps a download at one window per round trip. 2 MiB
//! at 50 ms is 40 MB/s, twelve times less than HTTP/1.1 on the same link
//! (issue 19); a window large enough for every link would let any slow
//! reader make the client buffer that much. So the window follows what the
//! application consumes, the way Chromium's QUIC flow controller tunes its
//! receive windows (`QuicFlowController::MaybeIncreaseMaxWindowSize`: a
//! window consumed much faster than once per round trip is a bottleneck, so
//! it doubles):
//!
//! - **Ticks of half a window.** Bytes the application consumed are counted
//!   until they reach half the stream window the server has acknowledged;
//!   then the clock is read once. Half of it within 3/4 of a round trip is
//!   2/3 of the window per round trip (gRPC's beta): the window, not the
//!   link nor the reader, is what limits the transfer, and it grows to
//!   twice what the application showed it consumes per round trip (gRPC's
//!   gamma: `window × rtt / took`, four-fold if half of it went within a
//!   quarter of a round trip, fifty-fold within a fiftieth), at least
//!   double, up to a ceiling. On a long fast link the first tick (the
//!   first flight arrives in a few milliseconds) takes the window to what
//!   the link carries in one step: the four-fold cap it had until issue 30
//!   took three more round trips to go from 2 to 128 MiB at 50 ms. A
//!   reader slower than 2/3 of the window per round trip earns nothing,
//!   however much arrives; a reader that stops stops the count.
//! - **One growth at a time, measured after it took effect.** The grown
//!   window goes out in a SETTINGS frame; the next tick starts when the
//!   server acknowledges it, since what it sent before was still held to
//!   the old window (RFC 9113 §6.5.3: it applies SETTINGS before it
//!   acknowledges them). The server uses the grown window at once, so the
//!   next tick fills in a fraction of a round trip, and the window grows
//!   once a round trip at most, to what the last tick showed. The previous
//!   estimator (gRPC's and hyper's: a PING per sample, bytes counted until
//!   its ACK) doubled every other round trip at best, since each sample
//!   right after a growth still saw the old window, and a sample cut short
//!   by the end of a download counted as the link's limit and spaced the
//!   next samples out by 100 ms, then 400 ms: on a long link the ceiling
//!   took seconds. A tick cut short by the end of a download just takes
//!   longer, and changes nothing.
//! - **The round trip** is timed by the same SETTINGS frames: the one every
//!   connection sends in its preface, then each growth; the shortest counts.
//!   A SETTINGS frame sent during a download comes back behind the data the
//!   window let the server queue (in its socket, on the link), and a
//!   smoothed round trip that took that in grew the window past what the
//!   link carries (the window tests' 200 MB/s link shows it). No PING is
//!   ever sent for it: a connection whose streams wait (long polls)
//!   consumes nothing, reads no clock and sends nothing; one at its ceiling
//!   does no more than count.
//!
//! A window grown this way ends between 1.5 and 3 times what the
//! application consumes per round trip, or at the ceiling (128 MiB by
//! default, a stream at most half its connection's 256 MiB; gRPC and hyper
//! stop at 16 MiB, 335 MB/s at 50 ms).
//!
//! The tuner is connection state (some 50 bytes): a stream slot pays nothing.

use std::time::Duration;

use tokio::time::Instant;

/// One connection's stream-window tuning.
#[derive(Debug)]
pub(crate) struct Tuner {
    /// The stream window the server has acknowledged: it sends within it.
    acked: u32,
    /// The window never grows past this; at it, nothing more is done.
    ceiling: u32,
    /// courier's SETTINGS frame not yet acknowledged (the preface's, then
    /// one growth at a time): when it was sent and the window it carries.
    pending: Option<(Instant, u32)>,
    /// The shortest round trip timed, once a SETTINGS frame was
    /// acknowledged.
    rtt: Option<Duration>,
    /// Bytes consumed since the tick started.
    consumed: u32,
    /// When the tick started.
    tick_at: Instant,
}

impl Tuner {
    /// A tuner for a connection whose preface's SETTINGS, carrying stream
    /// window `initial`, goes out `now`; the window grows up to `ceiling`.
    pub(crate) fn new(initial: u32, ceiling: u32, now: Instant) -> Tuner {
        Tuner {
            acked: initial,
            ceiling: ceiling.max(initial),
            pending: Some((now, initial)),
            rtt: None,
            consumed: 0,
            tick_at: now,
        }
    }

    /// The most the stream window grows to.
    #[cfg(test)]
    pub(crate) fn ceiling(&self) -> u32 {
        self.ceiling
    }

    /// The shortest round trip timed, once a SETTINGS frame was acknowledged.
    #[cfg(test)]
    pub(crate) fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// The application consumed `n` bytes of DATA: the stream window to
    /// advertise if it grows (a SETTINGS frame must carry it, and
    /// [`on_settings_acked`](Self::on_settings_acked) be called when the
    /// server acknowledges it). `now` is called once per half window: this
    /// runs for every read.
    pub(crate) fn on_consumed(&mut self, n: usize, now: impl FnOnce() -> Instant) -> Option<u32> {
        if self.acked >= self.ceiling {
            return None;
        }
        self.consumed = self
            .consumed
            .saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
        if self.consumed < self.acked / 2 {
            return None;
        }
        let now = now();
        let took = now.saturating_duration_since(self.tick_at);
        self.tick_at = now;
        self.consumed = 0;
        let rtt = self.rtt?;
        if self.pending.is_some() || took * 4 >= rtt * 3 {
            return None;
        }
        let grown = grown(self.acked, took, rtt).min(self.ceiling);
        self.pending = Some((now, grown));
        Some(grown)
    }

    /// The server acknowledged courier's SETTINGS frame (the oldest one not
    /// yet acknowledged, which is the tuner's: courier sends no other).
    pub(crate) fn on_settings_acked(&mut self, now: Instant) {
        let Some((sent, window)) = self.pending.take() else {
            return;
        };
        let sample = now.saturating_duration_since(sent);
        self.rtt = Some(self.rtt.map_or(sample, |rtt| rtt.min(sample)));
        self.acked = window;
        // What arrives from now on was sent within the acknowledged window.
        self.consumed = 0;
        self.tick_at = now;
    }
}

/// The window to grow `acked` to, whose half was consumed in `took`, less
/// than 3/4 of the round trip `rtt`: twice what the application showed it
/// consumes per round trip (gRPC's gamma), `acked × rtt / took`; at least
/// twice `acked`. Half a window within a quarter of a round trip grows it
/// four-fold, within 1/50 of one fifty-fold: on a long fast link the first
/// tick takes the window to what the link carries in one growth, not in
/// one doubling per round trip. Saturates at `u32::MAX`; the caller caps it.
fn grown(acked: u32, took: Duration, rtt: Duration) -> u32 {
    let took = took.as_nanos().max(1);
    let by_rate = u128::from(acked) * rtt.as_nanos() / took;
    let grown = by_rate.max(u128::from(acked) * 2);
    u32::try_from(grown).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u32 = 1 << 20;
    const RTT: Duration = Duration::from_millis(50);
    /// No growth.
    const NONE: [u32; 0] = [];

    /// A tuner whose preface's SETTINGS was acknowledged one RTT after it
    /// was sent, with the 2 MiB stream window and a 32 MiB ceiling.
    fn tuner(now: &mut Instant) -> Tuner {
        let mut t = Tuner::new(2 * MIB, 32 * MIB, *now);
        *now += RTT;
        t.on_settings_acked(*now);
        assert_eq!(t.rtt(), Some(RTT));
        t
    }

    /// The application consumes `n` bytes in `chunks` reads spread evenly
    /// over `over`; the windows it was told to advertise.
    fn consume(t: &mut Tuner, now: &mut Instant, n: u32, over: Duration) -> Vec<u32> {
        let chunks = 64;
        let mut grown = Vec::new();
        for _ in 0..chunks {
            *now += over / chunks;
            grown.extend(t.on_consumed((n / chunks) as usize, || *now));
        }
        grown
    }

    #[test]
    fn a_reader_that_keeps_up_doubles_the_window_once_a_round_trip() {
        let mut now = Instant::now();
        let mut t = tuner(&mut now);
        let mut window = 2 * MIB;
        for _ in 0..4 {
            // The reader takes a window per round trip: half of it in half
            // a round trip, the window is the limit.
            assert_eq!(consume(&mut t, &mut now, window, RTT), [window * 2]);
            // No second growth before the server acknowledged the first,
            // however fast the reader: what it reads was sent within the
            // old window.
            assert_eq!(consume(&mut t, &mut now, window * 2, RTT / 8), NONE);
            now += RTT / 4;
            t.on_settings_acked(now);
            window *= 2;
        }
        // At the ceiling: nothing more, and the clock is not read.
        assert_eq!(window, 32 * MIB);
        assert_eq!(t.on_consumed(64 * MIB as usize, || unreachable!()), None);
    }

    /// Half a window within a quarter of a round trip is two windows per
    /// round trip: four times the window is twice that, no more.
    #[test]
    fn a_reader_twice_as_fast_as_the_window_grows_it_four_fold() {
        let mut now = Instant::now();
        let mut t = tuner(&mut now);
        assert_eq!(consume(&mut t, &mut now, 2 * MIB, RTT / 2), [8 * MIB]);
        now += RTT;
        t.on_settings_acked(now);
        // Just slower than that: doubled.
        let over = RTT + Duration::from_millis(2);
        assert_eq!(consume(&mut t, &mut now, 8 * MIB, over), [16 * MIB]);
    }

    /// On a long fast link half the window arrives in a sliver of the round
    /// trip: the window grows to twice what that rate carries per round trip
    /// in one step, not four-fold per round trip (2, 8, 32, 128 MiB took
    /// three round trips past the first at 50 ms; issue 30).
    #[test]
    fn a_reader_much_faster_than_the_window_grows_it_in_one_step() {
        let mut now = Instant::now();
        let mut t = Tuner::new(2 * MIB, 1024 * MIB, now);
        now += RTT;
        t.on_settings_acked(now);
        // Half the window (1 MiB) within a tenth of the round trip: ten
        // windows per round trip are consumed, so 20 MiB, twice that.
        assert_eq!(consume(&mut t, &mut now, 2 * MIB, RTT / 5), [20 * MIB]);
        now += RTT;
        t.on_settings_acked(now);
        // 10 MiB in a hundredth of the round trip: 100 × 20 MiB, capped.
        assert_eq!(consume(&mut t, &mut now, 20 * MIB, RTT / 50), [1024 * MIB]);
        now += RTT;
        t.on_settings_acked(now);
        assert_eq!(t.on_consumed(usize::MAX, || unreachable!()), None);
        // The ceiling binds however fast: all at one instant.
        let mut now = Instant::now();
        let mut t = tuner(&mut now);
        assert_eq!(t.on_consumed(MIB as usize, || now), Some(32 * MIB));
    }

    /// The rule between the old steps: at least double, else twice the
    /// per-round-trip rate shown, never more.
    #[test]
    fn growth_is_twice_the_rate_shown_and_at_least_double() {
        let ms = Duration::from_millis;
        assert_eq!(
            grown(MIB, ms(30), RTT),
            2 * MIB,
            "5/3 of it: at least double"
        );
        assert_eq!(grown(MIB, ms(25), RTT), 2 * MIB);
        assert_eq!(grown(MIB, ms(20), RTT), MIB / 2 * 5);
        assert_eq!(grown(MIB, ms(5), RTT), 10 * MIB);
        assert_eq!(grown(MIB, Duration::ZERO, RTT), u32::MAX, "saturates");
        assert_eq!(grown(u32::MAX, ms(1), RTT), u32::MAX);
        // Faster than half the window per half round trip: twice the half
        // window consumed per round trip (g ≤ 2 × acked/2 × rtt/took), and
        // no more than rounding below it.
        let acked = 3 * MIB + 17;
        for took in [1, 3, 7, 11, 19, 24] {
            let g = u64::from(grown(acked, ms(took), RTT));
            let shown = u64::from(acked) * 50;
            assert!(g * took <= shown, "{took} ms: {g}");
            assert!((g + 1) * took > shown, "{took} ms: {g}");
        }
    }

    #[test]
    fn a_reader_slower_than_two_thirds_of_the_window_per_round_trip_earns_nothing() {
        let mut now = Instant::now();
        let mut t = tuner(&mut now);
        // Half the window per round trip, for ten round trips.
        assert_eq!(consume(&mut t, &mut now, 10 * MIB, RTT * 10), NONE);
        // Just under 2/3 of it per round trip (a half window in a bit
        // more than 3/4 of a round trip).
        let over = RTT * 3 / 4 + Duration::from_millis(1);
        assert_eq!(consume(&mut t, &mut now, MIB, over), NONE);
        // A reader that stopped for 100 round trips, then read half a
        // window at once: the tick spans the pause, and earns nothing.
        now += RTT * 100;
        assert_eq!(consume(&mut t, &mut now, MIB, Duration::ZERO), NONE);
        // Just over 2/3 of it per round trip: the window doubles.
        let over = RTT * 3 / 4 - Duration::from_millis(1);
        assert_eq!(consume(&mut t, &mut now, MIB, over), [4 * MIB]);
    }

    #[test]
    fn nothing_grows_before_a_round_trip_was_timed() {
        let mut now = Instant::now();
        // The preface's SETTINGS is not acknowledged yet.
        let mut t = Tuner::new(2 * MIB, 32 * MIB, now);
        assert_eq!(
            consume(&mut t, &mut now, 8 * MIB, Duration::from_millis(1)),
            NONE
        );
        assert_eq!(t.rtt(), None);
    }

    #[test]
    fn a_tick_that_spans_an_idle_gap_grows_nothing_and_costs_nothing() {
        let mut now = Instant::now();
        let mut t = tuner(&mut now);
        // The end of one download and, after a pause, the start of the next.
        assert_eq!(consume(&mut t, &mut now, MIB / 2, RTT / 8), NONE);
        now += RTT * 20;
        assert_eq!(consume(&mut t, &mut now, MIB / 2, RTT / 8), NONE);
        // The next half window, read as fast, grows it at once.
        assert_eq!(consume(&mut t, &mut now, MIB, RTT / 2), [4 * MIB]);
    }

    /// A SETTINGS frame queued behind the data its own window let the
    /// server send comes back late: that delay is the window's doing, no
    /// reason to grow it further. Only a shorter round trip counts.
    #[test]
    fn the_round_trip_is_the_shortest_timed() {
        let mut now = Instant::now();
        let mut t = tuner(&mut now);
        assert_eq!(consume(&mut t, &mut now, MIB, RTT / 2), [4 * MIB]);
        now += RTT * 3;
        t.on_settings_acked(now);
        assert_eq!(t.rtt(), Some(RTT));
        assert_eq!(consume(&mut t, &mut now, 2 * MIB, RTT / 2), [8 * MIB]);
        now += RTT / 2;
        t.on_settings_acked(now);
        assert_eq!(t.rtt(), Some(RTT / 2));
        // An acknowledgement nobody waits for changes nothing.
        t.on_settings_acked(now + RTT / 4);
        assert_eq!(t.rtt(), Some(RTT / 2));
    }
}
