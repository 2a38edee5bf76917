//! The caller's [`ServerHandle`]: the server's address, counters and controls
//! (the state it reads is `state.rs`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::state::{ServerContext, Signals};

/// Handle to a running server: its address, its counters and its controls.
///
/// Dropping the handle stops the server (accepting and open connections) in
/// the background; use [`ServerHandle::shutdown`] to also wait for that.
pub struct ServerHandle {
    local_addr: SocketAddr,
    quic_addr: Option<SocketAddr>,
    ctx: Arc<ServerContext>,
    signals: Signals,
    accept_task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    pub(crate) fn new(
        local_addr: SocketAddr,
        quic_addr: Option<SocketAddr>,
        ctx: Arc<ServerContext>,
        signals: Signals,
        accept_task: JoinHandle<()>,
    ) -> Self {
        Self {
            local_addr,
            quic_addr,
            ctx,
            signals,
            accept_task: Some(accept_task),
        }
    }

    /// The address the server is actually listening on (with the real port
    /// when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The UDP address HTTP/3 is served on (same IP and port number as
    /// [`Self::local_addr`]), when [`crate::ServerConfig::http3`] is on.
    pub fn http3_addr(&self) -> Option<SocketAddr> {
        self.quic_addr
    }

    /// `http://HOST:PORT` (`https://` with TLS) followed by `path` (a `/`
    /// is inserted if `path` lacks one).
    ///
    /// HOST is always the IP address listened on, never a name, so with
    /// TLS the certificate needs that IP as a SAN (`127.0.0.1` for the
    /// default bind address; [`crate::TestPki`] makes IP SANs from names
    /// like `"127.0.0.1"`). An unspecified bind address (`0.0.0.0`, `::`) is
    /// rendered as loopback, since that is what a local client can reach.
    pub fn url(&self, path: &str) -> String {
        let ip = match self.local_addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let addr = SocketAddr::new(ip, self.local_addr.port());
        let slash = if path.starts_with('/') { "" } else { "/" };
        let scheme = if self.is_tls() { "https" } else { "http" };
        format!("{scheme}://{addr}{slash}{path}")
    }

    /// Whether the server speaks TLS (its URLs are `https://`).
    pub fn is_tls(&self) -> bool {
        self.ctx.tls.is_some()
    }

    /// Total TCP connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.ctx.accepted.load(Ordering::Relaxed)
    }

    /// Server-side connections currently open (accepted and not yet closed
    /// by either side, as far as the server has noticed).
    pub fn connections_open(&self) -> u64 {
        self.ctx.open.load(Ordering::Relaxed)
    }

    /// Requests received so far, counted when the request head has been
    /// parsed and dispatched (so a pending `/delay` already counts).
    pub fn requests_served(&self) -> u64 {
        self.ctx.requests.load(Ordering::Relaxed)
    }

    /// HTTP/2 connections accepted so far (h2 by ALPN, or h2c), total.
    pub fn connections_h2(&self) -> u64 {
        self.ctx.http2_connections.load(Ordering::Relaxed)
    }

    /// HTTP/3 (QUIC) connections whose handshake completed so far, total.
    /// They count in [`Self::connections_accepted`] and
    /// [`Self::connections_open`] too (from their first packet on).
    pub fn connections_h3(&self) -> u64 {
        self.ctx.http3_connections.load(Ordering::Relaxed)
    }

    /// TLS handshakes completed so far, full and resumed alike (failed
    /// handshakes are not counted).
    pub fn tls_handshakes(&self) -> u64 {
        self.ctx.tls_handshakes.load(Ordering::Relaxed)
    }

    /// Completed TLS handshakes that resumed an earlier session (TLS 1.3
    /// ticket or TLS 1.2 session id); a subset of [`Self::tls_handshakes`].
    pub fn tls_resumed(&self) -> u64 {
        self.ctx.tls_resumed.load(Ordering::Relaxed)
    }

    /// HTTP/3 requests received as early data (0-RTT, before their
    /// connection's handshake completed), total; see
    /// [`ZeroRtt::Accept`](crate::ZeroRtt::Accept).
    pub fn requests_early(&self) -> u64 {
        self.ctx.early_requests.load(Ordering::Relaxed)
    }

    /// Gracefully shuts down every open connection, busy or not.
    ///
    /// HTTP/2 connections send GOAWAY now: streams already started finish,
    /// new ones are refused, then the connection closes. HTTP/1.1
    /// connections close when idle, or right after the response in
    /// progress. Connections still in their TLS handshake (or whose first
    /// bytes have not arrived) are closed. The server keeps accepting new
    /// connections. Asynchronous, like [`Self::close_idle_connections`].
    pub fn goaway_all(&self) {
        let conns = self.ctx.lock_conns();
        for conn in conns.values() {
            conn.request_goaway();
        }
        tracing::debug!(connections = conns.len(), "goaway_all");
    }

    /// Closes every connection that has no request in progress right now
    /// (HTTP/2: GOAWAY, then close).
    ///
    /// Connections with a request in progress (e.g. a pending `/delay`) are
    /// left alone and stay usable afterwards. The close itself happens
    /// asynchronously on each connection's task, and is skipped if a new
    /// request started in between.
    pub fn close_idle_connections(&self) {
        let conns = self.ctx.lock_conns();
        let closed = conns
            .values()
            .filter(|conn| conn.request_close_if_idle())
            .count();
        tracing::debug!(closed, "close_idle_connections");
    }

    /// Stops accepting, closes every connection (requests in progress are
    /// abandoned) and waits until all server tasks have finished.
    pub async fn shutdown(mut self) {
        self.signals.shutdown.send_replace(true);
        if let Some(task) = self.accept_task.take() {
            if let Err(err) = task.await {
                if err.is_panic() {
                    tracing::error!("courier-server accept loop panicked: {err}");
                }
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.signals.shutdown.send_replace(true);
    }
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .field("connections_accepted", &self.connections_accepted())
            .field("connections_open", &self.connections_open())
            .field("requests_served", &self.requests_served())
            .field("connections_h2", &self.connections_h2())
            .field("connections_h3", &self.connections_h3())
            .field("tls", &self.is_tls())
            .finish()
    }
}
