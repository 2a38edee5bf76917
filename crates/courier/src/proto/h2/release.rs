//! Granting receive window back (RFC 9113 §6.9): bytes read or discarded
//! go back to the server once a threshold of the window waits, and bytes
//! read may grow the windows as [`super::grow`] decides. What to grant is
//! the receive-flow part's ([`super::recv_flow`]); this ties it to the
//! streams and the frames sent.

use super::conn::State;
use super::frame::setting;
use super::streams::Key;

impl State {
    /// The application read `n` bytes of DATA from a stream: granted back
    /// to the stream and the connection (see `release_stream`), and counted
    /// by the tuner; the windows may grow by as much.
    pub(crate) fn release_read(&mut self, key: Key, id: u32, n: usize) {
        self.release_stream(key, id, n);
        if let Some(raise) = self.recv.on_read(n) {
            self.grow_streams(raise);
        }
        self.release_connection_by(n, true);
    }

    /// The stream window grew by `raise`: announced (SETTINGS), and every
    /// open stream's raised; the connection's target follows.
    fn grow_streams(&mut self, raise: u32) {
        let window = self.recv.stream_window();
        self.send_settings(&[(setting::INITIAL_WINDOW_SIZE, window)]);
        // The server may use the larger windows as soon as it reads the
        // SETTINGS: courier accepts them from now on (§6.9.2).
        for (_, stream) in self.streams.iter_mut() {
            if !stream.state().is_recv_closed() {
                stream.recv_window.raise(raise);
            }
        }
    }

    /// `n` bytes of DATA were read (`read`) or discarded: grants them back
    /// to the server once a threshold of the connection window is used up
    /// (see [`super::recv_flow::RecvFlow::release`]).
    pub(crate) fn release_connection_by(&mut self, n: usize, read: bool) {
        if let Some(increment) = self.recv.release(n, read) {
            self.send.window_update(0, increment);
            self.wake_driver();
        }
    }

    /// `n` bytes of DATA were discarded (or never reached a reader): grants
    /// them back to the server once half the connection window is used up.
    /// Bytes the application read go through `release_read` instead.
    pub(crate) fn release_connection(&mut self, n: usize) {
        self.release_connection_by(n, false);
    }

    /// The same for one stream's window.
    pub(crate) fn release_stream(&mut self, key: Key, id: u32, n: usize) {
        let threshold = self.recv.stream_threshold();
        let Some(stream) = self.streams.get(key, id) else {
            return;
        };
        if stream.state().is_recv_closed() {
            return;
        }
        if let Some(increment) = stream.recv_window.release(n, threshold) {
            self.send.window_update(id, increment);
            self.wake_driver();
        }
    }
}
