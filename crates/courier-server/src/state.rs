//! The state tasks share: server-wide ([`ServerContext`]: settings, counters,
//! the registry of live connections, the shutdown signal) and per connection
//! ([`ConnState`], and [`InFlight`], a request in progress).
//!
//! Each accepted socket gets a [`ConnState`], shared between the connection
//! task (`conn.rs`), the service that handles its requests and the
//! server-wide registry. The state is how the outside world (the handle, the
//! fault endpoints) talks to a connection whose IO is owned by hyper: set a
//! flag, then wake the task through `control` (see `control.rs` for the
//! task's side).
//!
//! Why both in one file: each refers to the other (a connection reads its
//! server's settings and counts into it; the server's registry holds its
//! connections), and everything above (drivers, service, endpoints, the
//! handle) reads them; apart, they would import each other.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::HeaderValue;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::TokioExecutor;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::config::ServerConfig;
use crate::fault::RawFault;
use crate::{quic, tls};

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
    pub(crate) accepted: AtomicU64,
    pub(crate) open: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) http2_connections: AtomicU64,
    pub(crate) http3_connections: AtomicU64,
    pub(crate) tls_handshakes: AtomicU64,
    pub(crate) tls_resumed: AtomicU64,
    /// Requests received over HTTP/3 before the handshake completed.
    pub(crate) early_requests: AtomicU64,
    /// What the QUIC side does with early data.
    pub(crate) zero_rtt: crate::tls::ZeroRtt,
    /// Connection settings, built once from the config.
    pub(crate) http1: http1::Builder,
    pub(crate) http2: http2::Builder<TokioExecutor>,
    serves_http1: bool,
    serves_http2: bool,
    pub(crate) tls: Option<TlsAcceptor>,
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
    pub(crate) shutdown: watch::Sender<bool>,
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
            (Some(tls), true) => Some(quic::server_config(tls, config)?),
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
            early_requests: AtomicU64::new(0),
            zero_rtt: config.quic_0rtt,
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

    pub(crate) fn lock_conns(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
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

/// Shared state of one accepted connection.
pub(crate) struct ConnState {
    id: u64,
    /// Pre-rendered `x-connection-id` value, cloned into every response.
    id_header: HeaderValue,
    ctx: Arc<ServerContext>,
    /// Requests whose response has not been completely handed to hyper yet.
    in_flight: AtomicU32,
    started: Instant,
    /// When the last request finished, in nanoseconds since `started`; only
    /// maintained when an idle timeout is configured.
    last_done_nanos: AtomicU64,
    track_idle: bool,
    /// Wakes the connection task after `fault` or `close_requested` is set.
    control: Notify,
    fault: Mutex<Option<RawFault>>,
    close_requested: AtomicBool,
    goaway_requested: AtomicBool,
    /// Close with a TCP reset instead of a FIN (see `io.rs`).
    reset_on_close: AtomicBool,
    /// Whether the last write or flush returned `Pending`, i.e. hyper (or
    /// TLS) may still hold unwritten bytes. See `io::drive_until_written`.
    write_blocked: AtomicBool,
    /// A QUIC (HTTP/3) connection rather than a TCP one.
    quic: bool,
}

impl ConnState {
    pub(crate) fn new(id: u64, ctx: Arc<ServerContext>, quic: bool) -> Self {
        let track_idle = ctx.idle_timeout.is_some();
        Self {
            id,
            id_header: HeaderValue::from(id),
            ctx,
            in_flight: AtomicU32::new(0),
            started: Instant::now(),
            last_done_nanos: AtomicU64::new(0),
            track_idle,
            control: Notify::new(),
            fault: Mutex::new(None),
            close_requested: AtomicBool::new(false),
            goaway_requested: AtomicBool::new(false),
            reset_on_close: AtomicBool::new(false),
            write_blocked: AtomicBool::new(false),
            quic,
        }
    }

    /// Whether this is a QUIC (HTTP/3) connection.
    pub(crate) fn is_quic(&self) -> bool {
        self.quic
    }

    /// The sequential connection id (1 for the first accepted connection).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Value for the `x-connection-id` response header.
    pub(crate) fn id_header(&self) -> &HeaderValue {
        &self.id_header
    }

    /// The server this connection belongs to.
    pub(crate) fn ctx(&self) -> &ServerContext {
        &self.ctx
    }

    /// True when no request is in progress on this connection.
    pub(crate) fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// When this connection will have been idle for `timeout`, or `None` if a
    /// request is in progress right now.
    pub(crate) fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        if !self.is_idle() {
            return None;
        }
        let since_start = Duration::from_nanos(self.last_done_nanos.load(Ordering::Relaxed));
        Some(self.started + since_start + timeout)
    }

    /// Hands a raw fault to the connection task, which takes the socket back
    /// from hyper and misbehaves on it.
    pub(crate) fn raise_fault(&self, fault: RawFault) {
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner) = Some(fault);
        self.control.notify_one();
    }

    pub(crate) fn take_fault(&self) -> Option<RawFault> {
        self.fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Asks the task to close the connection if it is still idle when the
    /// task gets to it. Returns whether the connection was idle (and thus
    /// asked) at all.
    pub(crate) fn request_close_if_idle(&self) -> bool {
        if !self.is_idle() {
            return false;
        }
        self.close_requested.store(true, Ordering::Release);
        self.control.notify_one();
        true
    }

    pub(crate) fn take_close_request(&self) -> bool {
        self.close_requested.swap(false, Ordering::AcqRel)
    }

    /// Asks the task for a graceful shutdown whether or not requests are in
    /// progress: GOAWAY on HTTP/2, close after the current response on
    /// HTTP/1.1.
    pub(crate) fn request_goaway(&self) {
        self.goaway_requested.store(true, Ordering::Release);
        self.control.notify_one();
    }

    pub(crate) fn take_goaway_request(&self) -> bool {
        self.goaway_requested.swap(false, Ordering::AcqRel)
    }

    /// Makes the socket's eventual close a reset (RST) rather than a FIN.
    pub(crate) fn set_reset_on_close(&self) {
        self.reset_on_close.store(true, Ordering::Release);
    }

    pub(crate) fn reset_on_close(&self) -> bool {
        self.reset_on_close.load(Ordering::Acquire)
    }

    /// Resolves when a fault or close request may be pending.
    pub(crate) fn control_notified(&self) -> impl Future<Output = ()> + '_ {
        self.control.notified()
    }

    pub(crate) fn set_write_blocked(&self, blocked: bool) {
        self.write_blocked.store(blocked, Ordering::Relaxed);
    }

    pub(crate) fn write_blocked(&self) -> bool {
        self.write_blocked.load(Ordering::Relaxed)
    }
}

/// Marks one request as in progress for as long as it lives.
///
/// Created when the request is dispatched, moved into the response future
/// and then into the response body, so it drops when hyper has finished with
/// the response (or abandoned it).
pub(crate) struct InFlight(Arc<ConnState>);

impl InFlight {
    pub(crate) fn enter(conn: &Arc<ConnState>) -> Self {
        conn.in_flight.fetch_add(1, Ordering::AcqRel);
        conn.ctx.count_request();
        Self(Arc::clone(conn))
    }

    pub(crate) fn conn(&self) -> &ConnState {
        &self.0
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let conn = &self.0;
        if conn.track_idle {
            // Saturates after ~584 years of uptime.
            let nanos = u64::try_from(conn.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            conn.last_done_nanos.store(nanos, Ordering::Relaxed);
        }
        conn.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}
