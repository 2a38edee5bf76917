//! One origin's pool: the connection cap, the fair wait queue, the LIFO idle
//! stack, and connection attempts that belong to the pool, not to a request.
//!
//! All state sits behind one `std::sync::Mutex` that is only ever held for a
//! few pointer moves and never across an `.await`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http::HeaderValue;
use tokio::sync::oneshot;

use super::conn::PooledConn;
use super::Shared;
use crate::error::{Error, ErrorKind};
use crate::metrics::GaugeGuard;

/// Connection management for one scheme + host + port.
pub(crate) struct OriginPool {
    host: Box<str>,
    port: u16,
    /// `Host` header value, built once so requests only bump a refcount.
    pub(crate) host_header: HeaderValue,
    /// Where the next new connection starts in the resolved address list.
    next_addr: AtomicUsize,
    state: Mutex<State>,
    shared: Arc<Shared>,
}

struct State {
    /// LIFO: the most recently used connection is the warmest (and the
    /// oldest sink to the bottom where the idle timeout finds them).
    idle: Vec<Idle>,
    /// FIFO: the request that waited longest gets the next connection.
    waiters: VecDeque<Waiter>,
    /// Connections established and not yet closed (idle + leased).
    open: usize,
    /// Connection attempts in progress.
    connecting: usize,
    /// Connections whose dropped body is being drained and that are expected
    /// back within the drain grace period: waiters count on them instead of dialing.
    draining: usize,
}

struct Idle {
    conn: PooledConn,
    since: Instant,
}

type Delivery = Result<PooledConn, Error>;

struct Waiter {
    tx: oneshot::Sender<Delivery>,
    /// Only a newly established connection will do (the stale-connection retry).
    fresh_only: bool,
}

impl OriginPool {
    pub(crate) fn new(
        host: &str,
        port: u16,
        host_header: HeaderValue,
        shared: Arc<Shared>,
    ) -> Self {
        OriginPool {
            host: host.into(),
            port,
            host_header,
            next_addr: AtomicUsize::new(0),
            state: Mutex::new(State {
                idle: Vec::new(),
                waiters: VecDeque::new(),
                open: 0,
                connecting: 0,
                draining: 0,
            }),
            shared,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves consistent-enough
        // counters; keep serving rather than poisoning every request.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gets a connection: an idle one if any (most recent first), else waits in
    /// line for a returned or newly established one.
    ///
    /// `fresh_only` skips idle and returned connections; `queue_timeout` bounds
    /// the wait.
    pub(crate) async fn checkout(
        self: &Arc<Self>,
        fresh_only: bool,
        queue_timeout: Option<Duration>,
    ) -> Result<PooledConn, Error> {
        loop {
            let mut conn = match self.take_idle_or_enqueue(fresh_only) {
                Ok(conn) => conn,
                Err(slot) => self.wait(slot, queue_timeout).await?,
            };
            // A connection that closed while idle or in hand-off fails here; try the next.
            if conn.ready().await.is_ok() {
                return Ok(conn);
            }
        }
    }

    fn take_idle_or_enqueue(self: &Arc<Self>, fresh_only: bool) -> Result<PooledConn, WaitSlot> {
        let now = Instant::now();
        let (rx, connects) = {
            let mut st = self.lock();
            if !fresh_only {
                while let Some(idle) = st.idle.pop() {
                    self.shared.metrics.connections_idle.dec();
                    if !idle.conn.is_expired(now) && !idle.conn.is_closed() {
                        return Ok(idle.conn);
                    }
                    // Expired or dead: dropping it closes it; the driver task
                    // reports the close and frees its slot.
                }
            }
            st.purge_dead_waiters();
            let (tx, rx) = oneshot::channel();
            st.waiters.push_back(Waiter { tx, fresh_only });
            (rx, self.connects_needed(&mut st))
        };
        self.spawn_connects(connects);
        Err(WaitSlot {
            rx,
            origin: Arc::clone(self),
        })
    }

    async fn wait(
        &self,
        mut slot: WaitSlot,
        queue_timeout: Option<Duration>,
    ) -> Result<PooledConn, Error> {
        let metrics = &self.shared.metrics;
        let _queued = GaugeGuard::new(&metrics.requests_queued);
        let started = Instant::now();
        let received = match queue_timeout {
            Some(limit) => match tokio::time::timeout(limit, &mut slot.rx).await {
                Ok(r) => r,
                Err(_) => {
                    metrics.time_in_queue.record(started.elapsed());
                    return Err(Error::msg(
                        ErrorKind::PoolQueueTimeout,
                        "no connection became available within pool_queue_timeout",
                    ));
                }
            },
            None => (&mut slot.rx).await,
        };
        metrics.time_in_queue.record(started.elapsed());
        match received {
            Ok(delivery) => delivery,
            Err(_) => Err(Error::msg(
                ErrorKind::Canceled,
                "the connection pool was shut down",
            )),
        }
    }

    /// How many new connection attempts to start: one per waiter not already
    /// covered by an attempt in flight or a connection about to come back from
    /// a drain, within the per-host cap.
    fn connects_needed(&self, st: &mut State) -> usize {
        let cap = self.shared.config.max_connections_per_host;
        let mut n = 0;
        while st.waiters.len() > st.connecting + st.draining && st.open + st.connecting < cap {
            st.connecting += 1;
            n += 1;
        }
        n
    }

    fn spawn_connects(self: &Arc<Self>, n: usize) {
        for _ in 0..n {
            tokio::spawn(Arc::clone(self).connect());
        }
    }

    /// One connection attempt. Its result goes to whoever is first in line
    /// when it completes, not to the request that triggered it: that request
    /// may have been served by a returned connection in the meantime.
    async fn connect(self: Arc<Self>) {
        let shared = Arc::clone(&self.shared);
        let metrics = &shared.metrics;
        metrics.connect_attempts_total.inc();
        let attempt = GaugeGuard::new(&metrics.connect_attempts_current);
        let started = Instant::now();
        let rotation = self.next_addr.fetch_add(1, Relaxed);
        let result = tokio::time::timeout(shared.config.connect_timeout, async {
            let stream = shared
                .connector
                .connect(&self.host, self.port, rotation)
                .await?;
            super::http1::handshake(stream, &shared.config).await
        })
        .await
        .unwrap_or_else(|_| {
            Err(Error::msg(
                ErrorKind::ConnectTimeout,
                "connection not established within connect_timeout",
            ))
        });
        drop(attempt);

        let (sender, driver) = match result {
            Ok(established) => established,
            Err(error) => {
                metrics.connect_failures.inc();
                tracing::debug!(host = %self.host, port = self.port, %error, "connect failed");
                self.connect_failed(error);
                return;
            }
        };
        metrics.connect_duration.record(started.elapsed());
        metrics.connections_established.inc();
        metrics.connections_open.inc();
        {
            let mut st = self.lock();
            st.connecting -= 1;
            st.open += 1;
        }
        let id = shared.next_conn_id();
        let weak = Arc::downgrade(&self);
        let metrics_for_driver = Arc::clone(&shared.metrics);
        tokio::spawn(async move {
            driver.await;
            metrics_for_driver.connections_open.dec();
            if let Some(origin) = weak.upgrade() {
                origin.connection_closed(id);
            }
        });
        let conn = PooledConn {
            id,
            sender,
            expires_at: shared.expiry(Instant::now()),
            requests: 0,
        };
        self.deliver(conn, true);
    }

    fn connect_failed(self: &Arc<Self>, error: Error) {
        let connects = {
            let mut st = self.lock();
            st.connecting -= 1;
            let mut error = Some(error);
            while let Some(waiter) = st.waiters.pop_front() {
                match waiter
                    .tx
                    .send(Err(error.take().expect("error present until sent")))
                {
                    Ok(()) => break,
                    Err(Err(back)) => error = Some(back),
                    Err(Ok(_)) => break,
                }
            }
            self.connects_needed(&mut st)
        };
        self.spawn_connects(connects);
    }

    /// Hands a usable connection to the first waiter that takes it, or parks it
    /// on the idle stack.
    fn deliver(&self, conn: PooledConn, is_new: bool) {
        let mut st = self.lock();
        self.deliver_locked(&mut st, conn, is_new);
    }

    fn deliver_locked(&self, st: &mut State, mut conn: PooledConn, is_new: bool) {
        let mut i = 0;
        while i < st.waiters.len() {
            if !is_new && st.waiters[i].fresh_only {
                i += 1;
                continue;
            }
            let Some(waiter) = st.waiters.remove(i) else {
                break;
            };
            match waiter.tx.send(Ok(conn)) {
                Ok(()) => return,
                // That waiter gave up (timeout, cancelled): try the next one.
                Err(Ok(back)) => conn = back,
                Err(Err(_)) => return,
            }
        }
        st.idle.push(Idle {
            conn,
            since: Instant::now(),
        });
        self.shared.metrics.connections_idle.inc();
    }

    /// A lease gives its connection back after a complete response.
    pub(crate) fn put_back(&self, conn: PooledConn) {
        // Lifetime is checked on return as well as on checkout, so an expired
        // connection is closed as soon as its last request is done.
        if conn.is_closed() || conn.is_expired(Instant::now()) {
            return;
        }
        self.deliver(conn, false);
    }

    /// A dropped body's connection started draining; until the grace period
    /// ends, a new waiter counts on it rather than opening a connection.
    pub(crate) fn drain_started(&self) {
        self.lock().draining += 1;
    }

    /// A drain outlived its grace period: waiters should stop counting on it.
    pub(crate) fn drain_slow(self: &Arc<Self>) {
        let connects = {
            let mut st = self.lock();
            st.draining = st.draining.saturating_sub(1);
            self.connects_needed(&mut st)
        };
        self.spawn_connects(connects);
    }

    /// A drain ended within its grace period, with the connection to reuse
    /// (`Some`) or not (`None`: it will close and report that itself).
    pub(crate) fn drain_finished(&self, conn: Option<PooledConn>) {
        let mut st = self.lock();
        st.draining = st.draining.saturating_sub(1);
        if let Some(conn) = conn.filter(|c| !c.is_closed() && !c.is_expired(Instant::now())) {
            self.deliver_locked(&mut st, conn, false);
        }
    }

    /// The connection's driver task ended: the socket is closed.
    fn connection_closed(self: &Arc<Self>, id: u64) {
        let connects = {
            let mut st = self.lock();
            st.open = st.open.saturating_sub(1);
            if let Some(pos) = st.idle.iter().position(|i| i.conn.id == id) {
                st.idle.remove(pos);
                self.shared.metrics.connections_idle.dec();
            }
            // A freed slot lets a waiter at the cap get a connection of its own.
            self.connects_needed(&mut st)
        };
        self.spawn_connects(connects);
    }

    /// Closes idle connections past the idle timeout or their lifetime.
    /// Returns true when the origin holds nothing at all any more.
    pub(crate) fn scavenge(&self, now: Instant, idle_timeout: Option<Duration>) -> bool {
        let mut st = self.lock();
        let before = st.idle.len();
        st.idle.retain(|idle| {
            let idle_too_long =
                idle_timeout.is_some_and(|t| now.saturating_duration_since(idle.since) >= t);
            !(idle_too_long || idle.conn.is_expired(now) || idle.conn.is_closed())
        });
        for _ in st.idle.len()..before {
            self.shared.metrics.connections_idle.dec();
        }
        st.open == 0 && st.connecting == 0 && st.waiters.is_empty()
    }
}

impl State {
    /// Drops queue entries whose request gave up, from both ends (cheap, and
    /// enough to keep the queue from growing under timeouts).
    fn purge_dead_waiters(&mut self) {
        while self.waiters.front().is_some_and(|w| w.tx.is_closed()) {
            self.waiters.pop_front();
        }
        while self.waiters.back().is_some_and(|w| w.tx.is_closed()) {
            self.waiters.pop_back();
        }
    }
}

impl Drop for OriginPool {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for _ in 0..st.idle.len() {
            self.shared.metrics.connections_idle.dec();
        }
    }
}

/// A place in the wait queue.
///
/// Dropping it (timeout, cancelled request) closes the channel; a connection
/// that was handed over in that instant is put back instead of being lost.
struct WaitSlot {
    rx: oneshot::Receiver<Delivery>,
    origin: Arc<OriginPool>,
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        self.rx.close();
        if let Ok(Ok(conn)) = self.rx.try_recv() {
            self.origin.put_back(conn);
        }
    }
}
