//! Flow-control windows (RFC 9113 §5.2, §6.9) as types that keep their
//! invariants, so the arithmetic is checked in one place instead of at every
//! frame that touches a window.
//!
//! - A [`SendWindow`] is what courier may still send. It never exceeds
//!   2^31−1 (a WINDOW_UPDATE or SETTINGS change past that is a
//!   FLOW_CONTROL_ERROR, and leaves the window as it was) and DATA never
//!   spends it below zero; only a lowered SETTINGS_INITIAL_WINDOW_SIZE may
//!   make a stream's window negative (§6.9.2), and then nothing is sent until
//!   WINDOW_UPDATEs bring it back above zero.
//! - A [`RecvWindow`] is what the server may still send, and the bytes read
//!   but not yet granted back. DATA past it is a FLOW_CONTROL_ERROR; courier
//!   never lowers its own window, so it is never negative.
//!
//! Both are 4-byte integers: a window's range (−(2^31−1) to 2^31−1, see
//! [`SendWindow::apply_initial_change`]) fits, and the stream slot stays small.

use super::frame::{Reason, MAX_WINDOW};

/// A flow-control rule was broken: the window would pass 2^31−1, or DATA
/// would spend more than it holds. The window is left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowError;

impl FlowError {
    /// The RFC 9113 error code for it, on the stream or the connection.
    pub(crate) fn reason(self) -> Reason {
        Reason::FLOW_CONTROL_ERROR
    }
}

/// What courier may still send on a connection or a stream.
///
/// Ordered by size: the connection's largest window so far tells a
/// WINDOW_UPDATE that gives back what DATA used from one that only inflates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SendWindow(i32);

/// `MAX_WINDOW` as the window's integer.
const MAX: i32 = MAX_WINDOW as i32;

impl SendWindow {
    /// A window of `size` bytes; `size` is at most 2^31−1 (the frame decoder
    /// rejects larger settings, and courier's own are clamped).
    pub(crate) fn new(size: u32) -> SendWindow {
        debug_assert!(size <= MAX_WINDOW, "window {size}");
        SendWindow(size.min(MAX_WINDOW) as i32)
    }

    /// Bytes DATA may carry now: none while the window is zero or negative.
    pub(crate) fn available(self) -> usize {
        self.0.max(0) as usize
    }

    /// A WINDOW_UPDATE of `increment` bytes.
    pub(crate) fn increase(&mut self, increment: u32) -> Result<(), FlowError> {
        self.set(i64::from(self.0) + i64::from(increment))
    }

    /// The server changed SETTINGS_INITIAL_WINDOW_SIZE from `old` to `new`:
    /// every stream's window moves by the difference, and may go negative
    /// (RFC 9113 §6.9.2). Past 2^31−1 is an error.
    ///
    /// Never below −(2^31−1): window − initial only grows (DATA spends at
    /// most what is there, WINDOW_UPDATE adds, a change moves both alike),
    /// so it stays at least −initial ≥ −(2^31−1), and the window at least
    /// that plus the new initial size, which is not negative.
    pub(crate) fn apply_initial_change(&mut self, old: u32, new: u32) -> Result<(), FlowError> {
        self.set(i64::from(self.0) + i64::from(new) - i64::from(old))
    }

    /// Spends `n` bytes of DATA, or fails and leaves the window as it was
    /// if it holds fewer.
    pub(crate) fn consume(&mut self, n: usize) -> Result<(), FlowError> {
        if n > self.available() {
            return Err(FlowError);
        }
        // `n` fits in the window, so in an i32.
        self.0 -= n as i32;
        Ok(())
    }

    fn set(&mut self, size: i64) -> Result<(), FlowError> {
        if size > i64::from(MAX) {
            return Err(FlowError);
        }
        debug_assert!(size >= -i64::from(MAX), "window {size}");
        self.0 = i32::try_from(size).map_err(|_| FlowError)?;
        Ok(())
    }
}

/// Bytes DATA on a stream may carry now: both its window and the
/// connection's must have room.
pub(crate) fn room(conn: SendWindow, stream: SendWindow) -> usize {
    conn.available().min(stream.available())
}

/// Spends `n` bytes of DATA from the connection's window and the stream's,
/// or from neither (an error) if either holds fewer.
pub(crate) fn consume_both(
    conn: &mut SendWindow,
    stream: &mut SendWindow,
    n: usize,
) -> Result<(), FlowError> {
    if n > room(*conn, *stream) {
        return Err(FlowError);
    }
    conn.consume(n)?;
    stream.consume(n)
}

/// What the server may still send on a connection or a stream, and what
/// courier has read of it but not yet granted back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvWindow {
    window: u32,
    /// Read (or discarded) and not yet returned with WINDOW_UPDATE. The
    /// window plus this never exceeds the size courier advertised.
    unacked: u32,
}

impl RecvWindow {
    /// A window of `size` bytes, at most 2^31−1.
    pub(crate) fn new(size: u32) -> RecvWindow {
        debug_assert!(size <= MAX_WINDOW, "window {size}");
        RecvWindow {
            window: size.min(MAX_WINDOW),
            unacked: 0,
        }
    }

    /// What the server may still send.
    pub(crate) fn available(self) -> u32 {
        self.window
    }

    /// DATA of `flow` bytes (padding included) arrived: fails, leaving the
    /// window as it was, if the server sent past it.
    pub(crate) fn consume(&mut self, flow: u32) -> Result<(), FlowError> {
        self.window = self.window.checked_sub(flow).ok_or(FlowError)?;
        Ok(())
    }

    /// Courier advertised `n` bytes more (a WINDOW_UPDATE beyond what was
    /// read, or a larger SETTINGS_INITIAL_WINDOW_SIZE): the server may send
    /// that much more. The advertised total stays within 2^31−1: the
    /// ceilings are clamped to it, and growth raises a window by no more
    /// than the rise of what it advertises; past it is courier's bug, not
    /// the server's (a debug build stops there; a release build keeps the
    /// window at the maximum, which the frame could not carry anyway).
    pub(crate) fn raise(&mut self, n: u32) {
        let raised = self.window.checked_add(n).filter(|w| *w <= MAX_WINDOW);
        debug_assert!(raised.is_some(), "window {} raised by {n}", self.window);
        self.window = raised.unwrap_or(MAX_WINDOW);
    }

    /// `n` received bytes were read (or dropped). Once `threshold` bytes wait
    /// to be granted back, returns the WINDOW_UPDATE increment to send, and
    /// the window is open again by that much.
    pub(crate) fn release(&mut self, n: usize, threshold: u32) -> Option<u32> {
        // Saturating: a count that large has passed any threshold anyway.
        self.unacked = self
            .unacked
            .saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
        if self.unacked < threshold {
            return None;
        }
        let increment = std::mem::take(&mut self.unacked);
        // Only bytes the window gave are granted back, so this stays within
        // what courier advertised (at most 2^31−1).
        self.window = self.window.saturating_add(increment);
        debug_assert!(self.window <= MAX_WINDOW, "window {}", self.window);
        Some(increment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_never_spends_a_send_window_below_zero() {
        let mut w = SendWindow::new(10);
        assert_eq!(w.consume(4), Ok(()));
        assert_eq!(w.available(), 6);
        assert_eq!(w.consume(7), Err(FlowError));
        assert_eq!(w.available(), 6, "a refused spend changes nothing");
        assert_eq!(w.consume(6), Ok(()));
        assert_eq!(w.available(), 0);
        assert_eq!(w.consume(1), Err(FlowError));
        assert_eq!(w.consume(0), Ok(()));
    }

    #[test]
    fn a_window_update_past_the_maximum_is_a_flow_control_error() {
        let mut w = SendWindow::new(MAX_WINDOW - 5);
        assert_eq!(w.increase(5), Ok(()));
        assert_eq!(w.available(), MAX_WINDOW as usize);
        let err = w.increase(1).unwrap_err();
        assert_eq!(err.reason(), Reason::FLOW_CONTROL_ERROR);
        assert_eq!(w.available(), MAX_WINDOW as usize, "left as it was");
        let mut empty = SendWindow::new(0);
        assert_eq!(empty.increase(MAX_WINDOW), Ok(()));
        assert_eq!(empty.increase(MAX_WINDOW), Err(FlowError));
    }

    #[test]
    fn a_lowered_initial_window_may_make_a_send_window_negative() {
        let mut w = SendWindow::new(65_535);
        w.consume(65_535).unwrap();
        w.apply_initial_change(65_535, 0).unwrap();
        assert_eq!(w, SendWindow(-65_535));
        assert_eq!(w.available(), 0, "nothing is sent on a negative window");
        assert_eq!(w.consume(1), Err(FlowError));
        w.increase(65_535).unwrap();
        assert_eq!(w.available(), 0, "back to zero, not above");
        w.increase(1).unwrap();
        assert_eq!(w.available(), 1);
        // The most negative a window can be, and back up.
        let mut w = SendWindow::new(MAX_WINDOW);
        w.consume(MAX_WINDOW as usize).unwrap();
        w.apply_initial_change(MAX_WINDOW, 0).unwrap();
        assert_eq!(w, SendWindow(-MAX));
        w.apply_initial_change(0, MAX_WINDOW).unwrap();
        assert_eq!(w.available(), 0);
    }

    #[test]
    fn a_raised_initial_window_past_the_maximum_is_an_error() {
        let mut w = SendWindow::new(65_535);
        w.increase(MAX_WINDOW - 65_535).unwrap();
        let err = w.apply_initial_change(65_535, 65_536).unwrap_err();
        assert_eq!(err.reason(), Reason::FLOW_CONTROL_ERROR);
        assert_eq!(w.available(), MAX_WINDOW as usize, "left as it was");
        assert_eq!(w.apply_initial_change(65_535, 65_535), Ok(()));
    }

    #[test]
    fn send_windows_order_by_size() {
        assert!(SendWindow::new(1) < SendWindow::new(2));
        let mut negative = SendWindow::new(0);
        negative.apply_initial_change(1, 0).unwrap();
        assert!(negative < SendWindow::new(0));
    }

    #[test]
    fn data_spends_both_windows_or_neither() {
        let (mut conn, mut stream) = (SendWindow::new(100), SendWindow::new(10));
        assert_eq!(room(conn, stream), 10);
        assert_eq!(consume_both(&mut conn, &mut stream, 11), Err(FlowError));
        assert_eq!((conn.available(), stream.available()), (100, 10));
        assert_eq!(consume_both(&mut conn, &mut stream, 10), Ok(()));
        assert_eq!((conn.available(), stream.available()), (90, 0));
        stream.apply_initial_change(10, 0).unwrap();
        assert_eq!(room(conn, stream), 0, "a negative window gives no room");
    }

    #[test]
    fn data_past_the_receive_window_is_an_error() {
        let mut w = RecvWindow::new(10);
        assert_eq!(w.consume(10), Ok(()));
        let err = w.consume(1).unwrap_err();
        assert_eq!(err.reason(), Reason::FLOW_CONTROL_ERROR);
        assert_eq!(w.available(), 0, "left as it was");
    }

    #[test]
    fn read_bytes_are_granted_back_past_the_threshold() {
        let mut w = RecvWindow::new(100);
        w.consume(100).unwrap();
        assert_eq!(w.release(30, 50), None);
        assert_eq!(w.available(), 0, "not granted yet");
        assert_eq!(w.release(20, 50), Some(50));
        assert_eq!(w.available(), 50);
        assert_eq!(w.release(10, 50), None);
        assert_eq!(w.release(40, 50), Some(50));
        assert_eq!(w.available(), 100, "back to what courier advertised");
    }

    #[test]
    fn a_raised_receive_window_takes_more_data() {
        let mut w = RecvWindow::new(10);
        w.consume(10).unwrap();
        w.raise(5);
        assert_eq!(w.consume(5), Ok(()));
        assert_eq!(w.consume(1), Err(FlowError));
        assert_eq!(w.release(15, 15), Some(15), "what was read goes back");
        assert_eq!(w.available(), 15);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "raised by")]
    fn raising_a_receive_window_past_the_maximum_is_a_bug() {
        let mut w = RecvWindow::new(MAX_WINDOW - 1);
        w.raise(2);
    }

    #[test]
    fn a_receive_window_stays_within_the_maximum() {
        let mut w = RecvWindow::new(MAX_WINDOW);
        w.consume(MAX_WINDOW).unwrap();
        assert_eq!(w.release(MAX_WINDOW as usize, 1), Some(MAX_WINDOW));
        assert_eq!(w.available(), MAX_WINDOW);
    }
}
