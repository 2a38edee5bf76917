//! Receive windows that grow as [`super::tune`] decides, up to the
//! configured ceilings, and only as fast as the application consumes.
//!
//! - **Streams: SETTINGS_INITIAL_WINDOW_SIZE.** When the window grows,
//!   courier sends one SETTINGS frame with the new stream window. Per RFC
//!   9113 §6.9.2 the server applies the difference to every open stream, so
//!   the download that earned it grows at once, and every later stream
//!   starts with it (the next request of a benchmark, or of a service call,
//!   needs no ramp). One frame, whatever the number of streams, and no
//!   per-stream record: per-stream WINDOW_UPDATEs would need each stream to
//!   remember its own target, bytes every long poll's slot would pay.
//! - **The connection: WINDOW_UPDATE, grown lazily**, to twice the stream
//!   window (up to its own ceiling). The connection window
//!   bounds what all streams together may have received and not read: it
//!   is the client's memory bound. It grows only when the application
//!   consumes: each WINDOW_UPDATE that gives back bytes read adds at most as
//!   many again, until the window reaches its target. A reader that stops
//!   stops the growth at once, so what the client buffers never passes the
//!   connection window it had advertised when reading stopped (a stream
//!   raised by the SETTINGS beside a faster one may hold more than its own
//!   reader earned, but never more than the stream ceiling, and all of them
//!   together never more than that connection window).
//!
//! With adaptive windows off ([`Growth::fixed`]), nothing here does
//! anything: the windows stay as configured.

use tokio::time::Instant;

use super::frame::MAX_WINDOW;
use super::settings::Local;
use super::tune::Tuner;

/// The ceilings of adaptive windows; `None` in the config: fixed windows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Adaptive {
    pub(crate) max_stream_window: u32,
    pub(crate) max_connection_window: u32,
}

/// A connection's window growth: the tuner and the connection window's
/// books. What the connection window may grow to is derived: twice the
/// stream window, within the initial window and the ceiling.
#[derive(Debug)]
pub(crate) struct Growth {
    /// `None`: fixed windows.
    tuner: Option<Tuner>,
    /// The connection window's ceiling (its initial size when fixed).
    max_conn: u32,
    /// The connection window courier has advertised in all (what the server
    /// may send plus what was received and not yet granted back).
    conn_advertised: u32,
}

impl Growth {
    /// Windows that stay as `local` says.
    pub(crate) fn fixed(local: &Local) -> Growth {
        Growth {
            tuner: None,
            max_conn: local.conn_window,
            conn_advertised: local.conn_window,
        }
    }

    /// Windows that start as `local` says and grow up to `adaptive`'s
    /// ceilings (never below the initial windows); the preface carrying
    /// `local`'s SETTINGS goes out `now`.
    pub(crate) fn new(local: &Local, adaptive: Option<Adaptive>, now: Instant) -> Growth {
        let Some(a) = adaptive else {
            return Growth::fixed(local);
        };
        let max_conn = a.max_connection_window.clamp(local.conn_window, MAX_WINDOW);
        // At most half the connection's window: the raised window applies to
        // every stream, read or not, and one stream nobody reads must not
        // take the whole connection's window from the others.
        let max_stream = a
            .max_stream_window
            .min(max_conn / 2)
            .clamp(local.stream_window, MAX_WINDOW);
        Growth {
            tuner: Some(Tuner::new(local.stream_window, max_stream, now)),
            max_conn,
            ..Growth::fixed(local)
        }
    }

    /// The most the stream window grows to.
    #[cfg(test)]
    pub(crate) fn stream_ceiling(&self) -> Option<u32> {
        self.tuner.as_ref().map(Tuner::ceiling)
    }

    /// The connection window courier has advertised.
    #[cfg(test)]
    pub(crate) fn conn_advertised(&self) -> u32 {
        self.conn_advertised
    }

    /// What the connection window may grow to, with stream window
    /// `stream_window`: room for it twice over (another busy stream, or bytes
    /// of finished ones not yet granted back, below the threshold).
    fn conn_target(&self, local: &Local) -> u32 {
        local
            .stream_window
            .saturating_mul(2)
            .clamp(local.conn_window, self.max_conn)
    }

    /// Read bytes are granted back once this many of `window` wait: half
    /// of fixed windows (the server waits at most half a window for more
    /// room), a quarter of adaptive ones (grpc-go's `limit/4`): large
    /// windows are sized to the link, and one that is only ever half open
    /// would carry half of what it was grown for.
    pub(crate) fn threshold(&self, window: u32) -> u32 {
        match self.tuner {
            Some(_) => window / 4,
            None => window / 2,
        }
    }

    /// courier's oldest SETTINGS frame not yet acknowledged was.
    pub(crate) fn settings_acked(&mut self) {
        if let Some(t) = self.tuner.as_mut() {
            t.on_settings_acked(Instant::now());
        }
    }

    /// The application consumed `n` bytes: the stream window they say the
    /// link needs, if it grows.
    pub(crate) fn on_consumed(&mut self, n: usize) -> Option<u32> {
        self.tuner
            .as_mut()
            .and_then(|t| t.on_consumed(n, Instant::now))
    }

    /// The connection window's threshold for granting bytes back.
    pub(crate) fn conn_threshold(&self) -> u32 {
        self.threshold(self.conn_advertised)
    }

    /// `increment` bytes go back to the server; bytes `read` may grow the
    /// connection window by as much again, up to its target: how much it
    /// grows (now advertised).
    pub(crate) fn grow_conn(&mut self, local: &Local, increment: u32, read: bool) -> u32 {
        let extra = match read {
            true => self
                .conn_target(local)
                .saturating_sub(self.conn_advertised)
                .min(increment),
            false => 0,
        };
        self.conn_advertised += extra;
        extra
    }
}
