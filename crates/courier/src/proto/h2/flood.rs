//! The flood budget of one connection: how many frames that cost courier work
//! but do nothing useful ("glitches", as nghttp2 calls them) the server may
//! send before courier ends the connection with GOAWAY ENHANCE_YOUR_CALM.
//!
//! Every such frame alone is legal, and real servers send a few: an empty
//! DATA frame when a handler flushes nothing, a PING to check liveness, a
//! WINDOW_UPDATE for a body already read, an extension frame courier does
//! not know. Sent in a loop they cost the client a core (measured: 1.5–2.4 s
//! of CPU per 3 s per connection, in flight or pooled), and each SETTINGS or
//! PING also costs a frame written back (CVE-2019-9512, -9515, -9518; the
//! CONTINUATION flood of 2024 is bounded per header block in [`super::recv`]).
//!
//! A token bucket, like nghttp2's glitch limiter (burst 1000, 33 per
//! second): each glitch takes one credit, and credit comes back with time
//! and — unlike nghttp2's — with useful work (a response head, a DATA frame
//! with bytes, a stream courier reset, whose window may still be in flight),
//! so a busy connection that sees a few glitches per request never runs dry,
//! and an idle one survives a PING every few seconds for ever. An absolute
//! count (h2's style for resets) would cut a healthy connection that lives
//! long enough.

use std::time::Duration;

use tokio::time::Instant;

/// Credit a connection starts with, and the most it holds (nghttp2's burst).
pub(crate) const BURST: u32 = 1000;
/// Credit that comes back per second (nghttp2's rate).
const PER_SECOND: u32 = 33;
/// Credit a final response head earns: the glitches a request may bring
/// about in the normal course (the server's WINDOW_UPDATEs for its body, a
/// reset that crosses courier's END_STREAM, an empty DATA before the end).
pub(crate) const PER_RESPONSE: u32 = 16;
/// Frames a reset may cross besides DATA (HEADERS, trailers, WINDOW_UPDATE,
/// RST_STREAM).
const PER_RESET: u32 = 8;

/// Credit a stream courier resets earns: the frames the server may have sent
/// on it before it saw the reset, which arrive after courier forgot it: its
/// window's worth of DATA in frames of the default size, and a few more.
pub(crate) fn after_reset(window: u32) -> u32 {
    let frames = window / super::frame::DEFAULT_MAX_FRAME_SIZE;
    frames.saturating_add(PER_RESET).min(BURST)
}

/// A frame that costs work and does nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Glitch {
    /// DATA with no bytes (padding at most) and no END_STREAM.
    EmptyData,
    /// A frame for a stream courier already closed or reset.
    ClosedStream,
    /// PRIORITY, or a frame type courier does not know.
    Ignored,
    /// An interim (1xx) response head.
    Informational,
    /// A CONTINUATION frame with no bytes.
    EmptyContinuation,
    /// SETTINGS (each costs an ACK) or a SETTINGS ACK.
    Settings,
    /// PING (each costs a PING ACK) or a PING ACK.
    Ping,
    /// WINDOW_UPDATE that unblocks nothing.
    WindowUpdate,
    /// A GOAWAY after the first.
    GoAway,
    /// A frame malformed in a way that fails its stream alone.
    Malformed,
}

impl Glitch {
    /// The connection error's text, also the GOAWAY's debug data.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Glitch::EmptyData => "peer flooded empty DATA frames",
            Glitch::ClosedStream => "peer flooded frames for closed streams",
            Glitch::Ignored => "peer flooded PRIORITY or unknown frames",
            Glitch::Informational => "peer flooded informational (1xx) responses",
            Glitch::EmptyContinuation => "peer flooded empty CONTINUATION frames",
            Glitch::Settings => "peer flooded SETTINGS frames",
            Glitch::Ping => "peer flooded PING frames",
            Glitch::WindowUpdate => "peer flooded WINDOW_UPDATE frames",
            Glitch::GoAway => "peer flooded GOAWAY frames",
            Glitch::Malformed => "peer flooded malformed frames",
        }
    }
}

/// The budget. The clock is read only when credit runs out.
#[derive(Debug)]
pub(crate) struct Budget {
    credit: u32,
    /// Time credit has been counted up to this instant.
    counted: Instant,
}

impl Budget {
    pub(crate) fn new() -> Budget {
        Budget {
            credit: BURST,
            counted: Instant::now(),
        }
    }

    /// Takes one credit for `glitch`; `Err` with the glitch's text when none
    /// is left: the server is flooding.
    pub(crate) fn spend(&mut self, glitch: Glitch) -> Result<(), &'static str> {
        if self.credit == 0 {
            self.refill(Instant::now());
        }
        match self.credit.checked_sub(1) {
            Some(left) => {
                self.credit = left;
                Ok(())
            }
            None => Err(glitch.what()),
        }
    }

    /// Gives back `n` credits for useful work, up to [`BURST`].
    pub(crate) fn earn(&mut self, n: u32) {
        self.credit = self.credit.saturating_add(n).min(BURST);
    }

    /// Adds the credit time has earned since it was last counted.
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.counted);
        let earned = elapsed.as_millis() * u128::from(PER_SECOND) / 1000;
        if earned == 0 {
            return;
        }
        let earned = u32::try_from(earned).unwrap_or(u32::MAX);
        if earned >= BURST {
            self.counted = now;
        } else {
            // Counted up to the last whole credit: fractions carry over.
            self.counted += Duration::from_millis(u64::from(earned) * 1000 / u64::from(PER_SECOND));
        }
        self.earn(earned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(budget: &mut Budget) -> u32 {
        let mut spent = 0;
        while budget.spend(Glitch::Ping).is_ok() {
            spent += 1;
            assert!(spent <= 10 * BURST, "never runs out");
        }
        spent
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_runs_out_at_the_burst_and_time_brings_credit_back() {
        let mut budget = Budget::new();
        assert_eq!(drain(&mut budget), BURST);
        assert_eq!(
            budget.spend(Glitch::EmptyData),
            Err("peer flooded empty DATA frames")
        );
        // A second brings 33 back, no more.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(drain(&mut budget), PER_SECOND);
        // A glitch every 30 ms (a little slower than 33 a second) goes on for ever.
        for _ in 0..1000 {
            tokio::time::advance(Duration::from_millis(31)).await;
            budget.spend(Glitch::Ping).expect("within the rate");
        }
        // A long quiet spell refills to the burst, not past it (plus the
        // few credits the last second's fractions left over).
        tokio::time::advance(Duration::from_secs(3600)).await;
        let drained = drain(&mut budget);
        assert!((BURST..BURST + PER_SECOND).contains(&drained), "{drained}");
    }

    #[test]
    fn a_reset_earns_its_window_in_full_frames() {
        // courier's default stream window, 2 MiB: 128 frames of 16 KiB.
        assert_eq!(after_reset(2 * 1024 * 1024), 128 + PER_RESET);
        assert_eq!(after_reset(0), PER_RESET);
        assert_eq!(after_reset(u32::MAX), BURST);
    }

    #[tokio::test(start_paused = true)]
    async fn useful_work_earns_credit_back_up_to_the_burst() {
        let mut budget = Budget::new();
        budget.earn(500);
        assert_eq!(drain(&mut budget), BURST);
        // A request's worth of glitches per response never runs dry.
        for _ in 0..10 * BURST {
            budget.earn(PER_RESPONSE);
            for _ in 0..PER_RESPONSE {
                budget.spend(Glitch::WindowUpdate).expect("earned");
            }
        }
    }
}
