//! Per-connection state and the connection task.
//!
//! Each accepted socket gets a [`ConnState`], shared between the connection
//! task, the service that handles its requests and the server-wide registry.
//! The state is how the outside world (the handle, the fault endpoints)
//! talks to a connection whose IO is owned by hyper: set a flag, then wake
//! the task through `control` (see `control.rs` for the task's side).
//!
//! The task itself ([`accept`]) registers the connection and runs it (see
//! `negotiate.rs`) until it ends or the server shuts down.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::HeaderValue;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::faults::RawFault;
use crate::handle::ServerContext;
use crate::negotiate;

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
    fn new(id: u64, ctx: Arc<ServerContext>, quic: bool) -> Self {
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

/// Keeps a connection in the server's registry and open count; dropping it
/// (when the task ends, however it ends) removes it.
struct Registration(Arc<ConnState>);

impl Drop for Registration {
    fn drop(&mut self) {
        self.0.ctx.unregister(self.0.id);
    }
}

/// Sets up an accepted socket and returns the task that serves it.
///
/// The setup (id, registry entry, open count) happens synchronously here so
/// the counters are right the moment `accept` returns, even before the task
/// is first polled.
pub(crate) fn accept(stream: TcpStream, ctx: &Arc<ServerContext>) -> impl Future<Output = ()> {
    let registration = register(ctx, false);
    let id = registration.0.id;
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(conn = id, "setting TCP_NODELAY failed: {err}");
    }
    async move {
        let state = &registration.0;
        tokio::select! {
            () = negotiate::serve(stream, state) => {}
            () = state.ctx.shutdown_requested() => {
                tracing::trace!(conn = id, "closing connection for server shutdown");
            }
        }
        drop(registration);
    }
}

/// [`accept`] for a QUIC connection attempt (its handshake still to come).
///
/// On shutdown the driver closes the connection itself, so the client
/// hears CONNECTION_CLOSE rather than waiting for its idle timeout.
pub(crate) fn accept_quic(
    incoming: quinn::Incoming,
    ctx: &Arc<ServerContext>,
) -> impl Future<Output = ()> {
    let registration = register(ctx, true);
    async move {
        crate::http3::serve(incoming, &registration.0).await;
        drop(registration);
    }
}

fn register(ctx: &Arc<ServerContext>, quic: bool) -> Registration {
    let id = ctx.next_connection_id();
    let state = Arc::new(ConnState::new(id, Arc::clone(ctx), quic));
    ctx.register(Arc::clone(&state));
    Registration(state)
}
