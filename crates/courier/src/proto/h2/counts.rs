//! The streams the server counts against its SETTINGS_MAX_CONCURRENT_STREAMS,
//! and the requests waiting for one of them (after h2's `Counts`).
//!
//! A stream counts from the moment courier opens it until it is closed both
//! ways (or failed): "counted" is not kept per stream, it is the stream's
//! state not being closed, and the one place a stream's state changes
//! ([`super::streams::Stream::transition`]) tells the count when a stream
//! closes. So the count cannot drift from the streams (the connection checks
//! the two agree after every change in debug builds: `State::check_counts`).

use std::collections::VecDeque;
use std::task::{Context, Waker};

/// The server's stream limit, the streams it counts, and who waits for room.
#[derive(Debug)]
pub(crate) struct Counts {
    /// Streams open or half-closed: the server counts them.
    active: usize,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (assumed until it says).
    max: usize,
    /// Requests waiting to open a stream.
    waiters: VecDeque<Waker>,
}

impl Counts {
    pub(crate) fn new(max: usize) -> Counts {
        Counts {
            active: 0,
            max,
            waiters: VecDeque::new(),
        }
    }

    /// Streams the server counts now.
    pub(crate) fn active(&self) -> usize {
        self.active
    }

    /// The server's limit.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Whether another stream would pass the server's limit.
    pub(crate) fn is_full(&self) -> bool {
        self.active >= self.max
    }

    /// The server set its limit to `max`; true if it rose.
    pub(crate) fn set_max(&mut self, max: usize) -> bool {
        let rose = max > self.max;
        self.max = max;
        rose
    }

    /// Courier opened a stream (idle → open or half-closed (local)).
    pub(crate) fn opened(&mut self) {
        self.active += 1;
    }

    /// A stream closed (its state's one transition function says so): it
    /// stops counting, and a request waiting to open one may go.
    pub(crate) fn closed(&mut self) {
        debug_assert!(self.active > 0, "a stream closed that was not counted");
        self.active -= 1;
        // All of them: a waiter may have been given up, and the rest must
        // not wait on it. They are rare (the pool keeps within the limit).
        self.wake_waiters();
    }

    /// The request of `cx` waits for room (or for the server's SETTINGS).
    pub(crate) fn wait(&mut self, cx: &Context<'_>) {
        if !self.waiters.iter().any(|w| w.will_wake(cx.waker())) {
            self.waiters.push_back(cx.waker().clone());
        }
    }

    /// Wakes every request waiting to open a stream (the limit rose, or the
    /// connection stopped taking streams).
    pub(crate) fn wake_waiters(&mut self) {
        for w in self.waiters.drain(..) {
            w.wake();
        }
    }

    /// The waiting requests, to be woken once the connection's lock is let go.
    pub(crate) fn take_waiters(&mut self) -> VecDeque<Waker> {
        std::mem::take(&mut self.waiters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_counts_open_streams_until_they_close() {
        let mut counts = Counts::new(2);
        counts.opened();
        assert!(!counts.is_full());
        counts.opened();
        assert!(counts.is_full());
        counts.closed();
        assert!(!counts.is_full());
        assert_eq!(counts.active(), 1);
        assert!(!counts.set_max(1));
        assert!(counts.is_full());
        assert!(counts.set_max(5));
        assert_eq!(counts.max(), 5);
    }
}
