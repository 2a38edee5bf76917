//! The receiving flow-control part of a connection (h2's `Recv`, for
//! windows): courier's settings, the connection's receive window, and how
//! the windows grow ([`super::grow`]).
//!
//! Its fields are its own: it says what to announce (a WINDOW_UPDATE's
//! increment, a larger stream window) and the connection
//! ([`super::release`]) queues the frames and raises the streams.

use tokio::time::Instant;

use super::flow::{FlowError, RecvWindow};
use super::grow::{Adaptive, Growth};
use super::settings::Local;

/// What the server may still send on the connection, and how that grows.
pub(crate) struct RecvFlow {
    /// The settings courier advertised (the stream window as last grown).
    local: Local,
    /// What the server may still send on the connection, and what was read
    /// of it that is not yet granted back.
    window: RecvWindow,
    /// Receive windows that grow with the link (or stay fixed).
    growth: Growth,
}

impl RecvFlow {
    /// The windows `local` advertises (the connection's raised from the
    /// default by the preface's WINDOW_UPDATE), growing up to `adaptive`'s
    /// ceilings (`None`: fixed); the preface goes out `now`.
    pub(crate) fn new(local: Local, adaptive: Option<Adaptive>, now: Instant) -> RecvFlow {
        RecvFlow {
            local,
            window: RecvWindow::new(local.conn_window),
            growth: Growth::new(&local, adaptive, now),
        }
    }

    /// The window every new stream starts with.
    pub(crate) fn stream_window(&self) -> u32 {
        self.local.stream_window
    }

    /// A DATA frame of `flow_len` bytes (with padding) arrived.
    pub(crate) fn consume(&mut self, flow_len: u32) -> Result<(), FlowError> {
        self.window.consume(flow_len)
    }

    /// What the server may still send on the connection.
    #[cfg(test)]
    pub(crate) fn available(&self) -> u32 {
        self.window.available()
    }

    /// The connection window courier has advertised.
    #[cfg(test)]
    pub(crate) fn conn_advertised(&self) -> u32 {
        self.growth.conn_advertised()
    }

    /// courier's oldest SETTINGS frame not yet acknowledged was.
    pub(crate) fn settings_acked(&mut self) {
        self.growth.settings_acked();
    }

    /// The application read `n` bytes: how much every open stream's window
    /// grows, if the stream window grows (courier announces the new one,
    /// [`RecvFlow::stream_window`], and accepts it at once, §6.9.2).
    pub(crate) fn on_read(&mut self, n: usize) -> Option<u32> {
        let window = self.growth.on_consumed(n)?;
        let old = self.local.stream_window;
        if window <= old {
            return None;
        }
        tracing::trace!(window, "HTTP/2 stream window grows");
        self.local.stream_window = window;
        Some(window - old)
    }

    /// A stream's read bytes are granted back once this many wait.
    pub(crate) fn stream_threshold(&self) -> u32 {
        self.growth.threshold(self.local.stream_window)
    }

    /// `n` bytes of DATA were read (`read`) or discarded: the connection
    /// WINDOW_UPDATE's increment, once a threshold of the window is used up;
    /// bytes read also grow the window by as much, up to its target.
    pub(crate) fn release(&mut self, n: usize, read: bool) -> Option<u32> {
        if n == 0 {
            return None;
        }
        let threshold = self.growth.conn_threshold();
        let increment = self.window.release(n, threshold)?;
        let extra = self.growth.grow_conn(&self.local, increment, read);
        if extra > 0 {
            self.window.raise(extra);
        }
        Some(increment + extra)
    }
}
