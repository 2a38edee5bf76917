//! [`ClientBuilder`]'s QUIC transport knobs for HTTP/3 (feature `http3`):
//! flow-control windows, congestion control and the idle timeout, named as
//! reqwest's (unstable) HTTP/3 options.
//!
//! Why the defaults: a receive window caps one response at window / RTT
//! (2 MiB at 50 ms: 42 MB/s); quinn allocates nothing for a window until
//! data arrives, so a large window costs memory only while a reader is
//! slower than the link (docs/src/http3.md "Performance" has the figures).

use std::time::Duration;

use crate::client::ClientBuilder;

impl ClientBuilder {
    /// QUIC's receive window per request stream: how much of one response
    /// body the server may send ahead of what the application has read.
    /// One response's throughput is at most this window per round trip.
    /// Default: 16 MiB (335 MB/s at 50 ms). Values below 16 KiB are raised to
    /// 16 KiB. Memory is taken only by data received and not yet read.
    /// Needs the cargo feature `http3`.
    pub fn http3_stream_receive_window(mut self, bytes: u32) -> Self {
        self.config.http3.stream_receive_window = bytes;
        self
    }

    /// QUIC's receive window for a whole connection (all its streams
    /// together). Default: 32 MiB. Values below 16 KiB are raised to 16 KiB.
    /// Needs the cargo feature `http3`.
    pub fn http3_conn_receive_window(mut self, bytes: u32) -> Self {
        self.config.http3.conn_receive_window = bytes;
        self
    }

    /// How many bytes of request bodies a connection may have sent and not
    /// yet acknowledged (QUIC's send window): an upload's throughput is at
    /// most this per round trip. Default: 32 MiB. Values below 16 KiB are
    /// raised to 16 KiB. Needs the cargo feature `http3`.
    pub fn http3_send_window(mut self, bytes: u64) -> Self {
        self.config.http3.send_window = bytes;
        self
    }

    /// 0-RTT (TLS 1.3 early data) on HTTP/3 connections that resume a
    /// session: a request safe to replay (GET, HEAD, OPTIONS, TRACE, no
    /// body) goes with the first flight, a round trip sooner; any other
    /// waits for the handshake. Early data can be captured and replayed by
    /// an attacker (RFC 8446 §8), so turning this on says the servers'
    /// safe methods really change nothing. A request the server did not
    /// take early (0-RTT rejected, `425 Too Early`) is sent again once
    /// after the handshake. Sessions are kept per server name and port,
    /// within this client. Default: off (reqwest's name and default). Needs
    /// the cargo feature `http3`.
    pub fn tls_early_data(mut self, enabled: bool) -> Self {
        self.config.http3.early_data = enabled;
        self
    }

    /// Congestion control for what the client sends (request bodies): BBR
    /// (quinn's, marked experimental there) instead of the default Cubic.
    /// Responses are paced by the server's congestion control, not this.
    /// Default: off. Needs the cargo feature `http3`.
    pub fn http3_congestion_bbr(mut self, enabled: bool) -> Self {
        self.config.http3.congestion_bbr = enabled;
        self
    }

    /// QUIC's idle timeout announced to servers: a connection with no packet
    /// either way for this long (or for the server's own timeout, if
    /// shorter) is gone. While requests wait, the client sends a PING every
    /// third of the shorter of the two, so a long poll outlives either; an
    /// idle connection is left to time out. Default: 30 s; at most 2^62 ms
    /// (building fails above). Needs the cargo feature `http3`.
    pub fn http3_max_idle_timeout(mut self, timeout: Duration) -> Self {
        self.config.http3.max_idle_timeout = timeout;
        self
    }
}
