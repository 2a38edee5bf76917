//! Server configuration.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::tls::{TlsConfig, ZeroRtt};

/// Settings for [`crate::start`].
///
/// Construct with struct-update syntax over the default so that fields added
/// later do not break callers:
/// `ServerConfig { keep_alive: false, ..Default::default() }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to listen on. The default, `127.0.0.1:0`, picks a free
    /// loopback port so parallel tests never collide.
    pub addr: SocketAddr,
    /// Whether connections are kept alive between requests (default
    /// `true`). With `false` every HTTP/1.1 response closes its connection,
    /// and every HTTP/2 connection sends GOAWAY as soon as its first request
    /// arrives (streams already open still finish), which is how tests force
    /// the client to open new connections.
    pub keep_alive: bool,
    /// Close a connection that has been idle (no request in progress) this
    /// long: HTTP/1.1 closes, HTTP/2 sends GOAWAY and closes. `None` = never
    /// (default).
    ///
    /// Lets tests reproduce the classic "server closed my pooled connection"
    /// race without waiting for a real server's long timeout.
    pub idle_timeout: Option<Duration>,
    /// Serve TLS (HTTPS) with this certificate; `None` = plain TCP (default).
    /// With TLS the protocol is picked by ALPN; see [`TlsConfig`] and
    /// [`crate::TestPki`] for certificates.
    pub tls: Option<TlsConfig>,
    /// Serve HTTP/1.1 (default `true`).
    pub http1: bool,
    /// Serve HTTP/2 (default `true`): over TLS when the client picks `h2` by
    /// ALPN, over plain TCP when the client starts with the HTTP/2
    /// connection preface (h2c "prior knowledge"; there is no `Upgrade: h2c`).
    ///
    /// With both protocols enabled a plain-TCP connection's first bytes are
    /// read to tell them apart; with only one, no detection happens.
    pub http2: bool,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` sent to HTTP/2 clients
    /// (default `Some(100)`, as many servers do). `None` advertises no limit.
    pub max_concurrent_streams: Option<u32>,
    /// Serve HTTP/3 too (default `false`; needs [`Self::tls`]): QUIC on a
    /// UDP socket with the TCP listener's port number, the same endpoints,
    /// and `alt-svc: h3=":PORT"` on every TCP response so clients can find
    /// it. [`Self::max_concurrent_streams`] caps the client's concurrent
    /// request streams (QUIC's MAX_STREAMS for bidirectional streams; at
    /// most 65,536, also for `None`, since QUIC allocates every allowed
    /// stream up front), and [`Self::idle_timeout`] applies as on TCP.
    pub http3: bool,
    /// QUIC's idle timeout (no packet either way) announced to HTTP/3
    /// clients as `max_idle_timeout`; `None` = 30 s (default). The
    /// effective timeout is the lower of both sides' (RFC 9000 §10.1), so a
    /// short value here tests a client's keep-alive against it.
    pub quic_idle_timeout: Option<Duration>,
    /// BBR congestion control for what the QUIC side sends (responses)
    /// instead of quinn's default Cubic (default `false`).
    pub quic_congestion_bbr: bool,
    /// 0-RTT (TLS 1.3 early data) on the QUIC side (default
    /// [`ZeroRtt::Off`]).
    pub quic_0rtt: ZeroRtt,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            keep_alive: true,
            idle_timeout: None,
            tls: None,
            http1: true,
            http2: true,
            max_concurrent_streams: Some(100),
            http3: false,
            quic_idle_timeout: None,
            quic_congestion_bbr: false,
            quic_0rtt: ZeroRtt::Off,
        }
    }
}
