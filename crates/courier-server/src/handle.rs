//! Server-wide state ([`ServerContext`]) and the caller's [`ServerHandle`].

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::server::conn::http1;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::ServerConfig;
use crate::conn::ConnState;

/// State shared by the accept loop, every connection and the handle.
pub(crate) struct ServerContext {
    accepted: AtomicU64,
    open: AtomicU64,
    requests: AtomicU64,
    /// Connection settings, built once from the config.
    pub(crate) http1: http1::Builder,
    pub(crate) idle_timeout: Option<Duration>,
    /// Live connections, so the handle can reach idle ones.
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    /// Flips to `true` (or loses its sender) when the server must stop.
    shutdown: watch::Receiver<bool>,
}

/// The handle's end of the shutdown signal.
pub(crate) struct Signals {
    shutdown: watch::Sender<bool>,
}

impl ServerContext {
    pub(crate) fn new(config: &ServerConfig) -> (Self, Signals) {
        let mut http1 = http1::Builder::new();
        http1
            .keep_alive(config.keep_alive)
            // hyper's default 30 s header timeout needs a timer and would
            // interfere with `/fault` tests that hold connections open.
            .header_read_timeout(None);
        let (tx, rx) = watch::channel(false);
        let ctx = Self {
            accepted: AtomicU64::new(0),
            open: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            http1,
            idle_timeout: config.idle_timeout,
            conns: Mutex::new(HashMap::new()),
            shutdown: rx,
        };
        (ctx, Signals { shutdown: tx })
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
    ctx: Arc<ServerContext>,
    signals: Signals,
    accept_task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    pub(crate) fn new(
        local_addr: SocketAddr,
        ctx: Arc<ServerContext>,
        signals: Signals,
        accept_task: JoinHandle<()>,
    ) -> Self {
        Self {
            local_addr,
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

    /// `http://HOST:PORT` followed by `path` (a `/` is inserted if `path`
    /// lacks one). An unspecified bind address (`0.0.0.0`, `::`) is
    /// rendered as loopback, since that is what a local client can reach.
    pub fn url(&self, path: &str) -> String {
        let ip = match self.local_addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let addr = SocketAddr::new(ip, self.local_addr.port());
        let slash = if path.starts_with('/') { "" } else { "/" };
        format!("http://{addr}{slash}{path}")
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

    /// Closes every connection that has no request in progress right now.
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
            .finish()
    }
}
