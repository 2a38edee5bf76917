//! Server-wide state ([`ServerContext`]) and the caller's [`ServerHandle`].

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::TokioExecutor;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::config::ServerConfig;
use crate::conn::ConnState;
use crate::{http3, tls};

/// HTTP/2 flow-control windows we grant clients, sized for 1 MiB uploads
/// (`/echo`): a whole body fits one stream's window, and a handful of
/// such streams fit the connection's, so uploads never stall waiting for
/// WINDOW_UPDATE on loopback. Memory is only used if a client sends faster
/// than a handler consumes, which `/echo` bounds by the client reading.
const H2_STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const H2_CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;

/// Largest HTTP/2 frame clients may send us; bigger than the 16 KiB
/// default so large uploads take fewer frames.
const H2_MAX_FRAME_SIZE: u32 = 64 * 1024;

/// State shared by the accept loop, every connection and the handle.
pub(crate) struct ServerContext {
    accepted: AtomicU64,
    open: AtomicU64,
    requests: AtomicU64,
    http2_connections: AtomicU64,
    http3_connections: AtomicU64,
    tls_handshakes: AtomicU64,
    tls_resumed: AtomicU64,
    /// Connection settings, built once from the config.
    pub(crate) http1: http1::Builder,
    pub(crate) http2: http2::Builder<TokioExecutor>,
    serves_http1: bool,
    serves_http2: bool,
    tls: Option<TlsAcceptor>,
    /// The QUIC endpoint's settings when HTTP/3 is on; taken when it binds.
    pub(crate) quic: Option<quinn::ServerConfig>,
    /// `h3=":PORT"`, stamped on TCP responses once the QUIC endpoint is up.
    pub(crate) alt_svc: Option<http::HeaderValue>,
    pub(crate) keep_alive: bool,
    pub(crate) idle_timeout: Option<Duration>,
    /// Live connections, so the handle can reach idle ones.
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    /// Flips to `true` (or loses its sender) when the server must stop.
    shutdown: watch::Receiver<bool>,
    /// A replica of a `ReplicaSet`: it answers every request itself.
    pub(crate) replica: Option<Arc<crate::replica::ReplicaBehaviour>>,
}

/// The handle's end of the shutdown signal.
pub(crate) struct Signals {
    shutdown: watch::Sender<bool>,
}

impl ServerContext {
    /// Builds everything connections share from `config`.
    ///
    /// # Errors
    /// `InvalidInput` if no protocol is enabled or the TLS certificate and
    /// key are unusable (malformed, or not a pair).
    pub(crate) fn new(config: &ServerConfig) -> io::Result<(Self, Signals)> {
        if !config.http1 && !config.http2 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "ServerConfig enables neither http1 nor http2",
            ));
        }
        let tls = match &config.tls {
            Some(tls) => Some(tls::acceptor(tls, config.http1, config.http2)?),
            None => None,
        };
        let quic = match (&config.tls, config.http3) {
            (Some(tls), true) => Some(http3::server_config(tls, config)?),
            (None, true) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "ServerConfig enables http3 without tls (QUIC always uses TLS)",
                ))
            }
            (_, false) => None,
        };
        let mut http1 = http1::Builder::new();
        http1
            .keep_alive(config.keep_alive)
            // hyper's default 30 s header timeout needs a timer and would
            // interfere with `/fault` tests that hold connections open.
            .header_read_timeout(None);
        // Every stream's response future runs as its own tokio task.
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2
            .max_concurrent_streams(config.max_concurrent_streams)
            .initial_stream_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONNECTION_WINDOW)
            .max_frame_size(H2_MAX_FRAME_SIZE);
        let (tx, rx) = watch::channel(false);
        let ctx = Self {
            accepted: AtomicU64::new(0),
            open: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            http2_connections: AtomicU64::new(0),
            http3_connections: AtomicU64::new(0),
            tls_handshakes: AtomicU64::new(0),
            tls_resumed: AtomicU64::new(0),
            http1,
            http2,
            serves_http1: config.http1,
            serves_http2: config.http2,
            tls,
            quic,
            alt_svc: None,
            keep_alive: config.keep_alive,
            idle_timeout: config.idle_timeout,
            conns: Mutex::new(HashMap::new()),
            shutdown: rx,
            replica: None,
        };
        Ok((ctx, Signals { shutdown: tx }))
    }

    pub(crate) fn serves_http1(&self) -> bool {
        self.serves_http1
    }

    pub(crate) fn serves_http2(&self) -> bool {
        self.serves_http2
    }

    /// The TLS acceptor, when the server speaks TLS.
    pub(crate) fn tls_acceptor(&self) -> Option<&TlsAcceptor> {
        self.tls.as_ref()
    }

    /// `alt-svc` for TCP responses, when HTTP/3 is served.
    pub(crate) fn alt_svc(&self) -> Option<&http::HeaderValue> {
        self.alt_svc.as_ref()
    }

    pub(crate) fn count_http3_connection(&self) {
        self.http3_connections.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_http2_connection(&self) {
        self.http2_connections.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_tls_handshake(&self, resumed: bool) {
        self.tls_handshakes.fetch_add(1, Ordering::Relaxed);
        if resumed {
            self.tls_resumed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an accepted connection and returns its id (1, 2, 3, ...).
    pub(crate) fn next_connection_id(&self) -> u64 {
        self.accepted.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn register(&self, conn: Arc<ConnState>) {
        self.open.fetch_add(1, Ordering::Relaxed);
        self.lock_conns().insert(conn.id(), conn);
    }

    pub(crate) fn unregister(&self, id: u64) {
        self.lock_conns().remove(&id);
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    fn lock_conns(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        // A panic elsewhere cannot leave the map inconsistent (single
        // insert/remove calls), so a poisoned lock is still usable.
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves once the server is shutting down (also when the handle is
    /// gone without an explicit shutdown).
    pub(crate) async fn shutdown_requested(&self) {
        let mut rx = self.shutdown.clone();
        // An error means the sender was dropped: treat it as a shutdown.
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

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
