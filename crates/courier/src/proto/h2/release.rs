//! Granting receive window back (RFC 9113 §6.9): bytes read or discarded
//! go back to the server once a threshold of the window waits, and bytes
//! read may grow the windows as [`super::grow`] decides.

use super::conn::State;
use super::frame::{self, setting};
use super::streams::Key;

impl State {
    /// The stream window grew to `window`: raise it on every open stream
    /// and announce it (SETTINGS); the connection's target follows.
    fn grow_to(&mut self, window: u32) {
        let old = self.local.stream_window;
        if window <= old {
            return;
        }
        tracing::trace!(window, "HTTP/2 stream window grows");
        self.send_settings(&[(setting::INITIAL_WINDOW_SIZE, window)]);
        // The server may use the larger windows as soon as it reads the
        // SETTINGS: courier accepts them from now on (§6.9.2).
        let raise = window - old;
        for (_, stream) in self.streams.iter_mut() {
            if !stream.state().is_recv_closed() {
                stream.recv_window.raise(raise);
            }
        }
        self.local.stream_window = window;
    }

    /// The application read `n` bytes of DATA from a stream: granted back
    /// to the stream and the connection (see `release_stream`), and counted
    /// by the tuner; the connection window may grow by as much.
    pub(crate) fn release_read(&mut self, key: Key, id: u32, n: usize) {
        self.release_stream(key, id, n);
        if let Some(window) = self.growth.on_consumed(n) {
            self.grow_to(window);
        }
        self.release_connection_by(n, true);
    }

    /// `n` bytes of DATA were read (`read`) or discarded: grants them back
    /// to the server once a threshold of the connection window is used up;
    /// bytes read also grow the window by as much, up to its target.
    pub(crate) fn release_connection_by(&mut self, n: usize, read: bool) {
        if n == 0 {
            return;
        }
        let threshold = self.growth.conn_threshold();
        let Some(increment) = self.recv_window.release(n, threshold) else {
            return;
        };
        let extra = self.growth.grow_conn(&self.local, increment, read);
        if extra > 0 {
            self.recv_window.raise(extra);
        }
        frame::encode_window_update(&mut self.out, 0, increment + extra);
        self.wake_driver();
    }

    /// `n` bytes of DATA were discarded (or never reached a reader): grants
    /// them back to the server once half the connection window is used up.
    /// Bytes the application read go through `release_read` instead.
    pub(crate) fn release_connection(&mut self, n: usize) {
        self.release_connection_by(n, false);
    }

    /// The same for one stream's window.
    pub(crate) fn release_stream(&mut self, key: Key, id: u32, n: usize) {
        let threshold = self.growth.threshold(self.local.stream_window);
        let Some(stream) = self.streams.get(key, id) else {
            return;
        };
        if stream.state().is_recv_closed() {
            return;
        }
        if let Some(increment) = stream.recv_window.release(n, threshold) {
            frame::encode_window_update(&mut self.out, id, increment);
            self.wake_driver();
        }
    }
}
