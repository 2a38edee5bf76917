//! Opening connections for the origin: connect and negotiate, count them
//! open, hand new ones to the waiters, and take them off the books when
//! they close (the drop guards below).

use super::conn::ExclusiveParts;
use super::*;
use crate::metrics::Label;
use crate::pool::protocol::{Changes, Connected, Handshake, Reporter, Shared as _};

impl<P: Protocol> OriginPool<P> {
    /// One connection attempt. Its result goes to whoever is first in line
    /// when it completes, not to the request that triggered it: that request
    /// may have been served by a returned connection in the meantime.
    pub(super) async fn connect(self: Arc<Self>) {
        let metrics = Arc::clone(&self.shared.metrics);
        metrics.connect_attempts_total.inc();
        let attempt = GaugeGuard::new(&metrics.connect_attempts_current);
        let started = Instant::now();
        let connect_timeout = self.shared.config.connect_timeout;
        let deadline = started + connect_timeout;
        let establishing = tokio::time::timeout_at(deadline, self.establish(deadline));
        tokio::pin!(establishing);
        let stall = tokio::time::sleep(stall_after(connect_timeout));
        tokio::pin!(stall);
        let mut stalled = false;
        let result = loop {
            tokio::select! {
                result = &mut establishing => break result,
                () = &mut stall, if !stalled => {
                    // Still no connection: whoever waits for one gets a
                    // dial of its own (this one goes on, and is used if it
                    // finishes first).
                    stalled = true;
                    let connects = {
                        let mut st = self.lock();
                        st.stalled += 1;
                        self.connects_needed(&mut st)
                    };
                    self.spawn_connects(connects);
                }
            }
        };
        let result = result.unwrap_or_else(|_| {
            Err(Error::msg(
                ErrorKind::ConnectTimeout,
                "connection not established within connect_timeout",
            ))
        });
        drop(attempt);
        let connects = match result {
            Ok(conn) => {
                metrics.connect_duration.record(started.elapsed());
                self.connected(conn, stalled)
            }
            Err(error) => {
                metrics.connect_failures.inc();
                tracing::debug!(origin = %self.authority, error = %format_args!("{error:#}"), "connect failed");
                self.connect_failed(error, stalled)
            }
        };
        self.spawn_connects(connects);
    }

    /// Makes one connection (the protocol dials and negotiates); a shared
    /// connection's driver task is running when this returns, and its peer
    /// has until `deadline` to show it speaks the protocol.
    pub(super) async fn establish(self: &Arc<Self>, deadline: Instant) -> Result<Conn<P>, Error> {
        let id = self.shared.next_conn_id();
        let Connected { conn, remote } =
            P::connect(&self.protocol, self.reporter(id), deadline).await?;
        let expires_at = self.shared.config.expiry(Instant::now());
        Ok(self.pooled(id, conn, expires_at, remote))
    }

    /// Where connection `id` reports its changes.
    fn reporter(self: &Arc<Self>, id: u64) -> Reporter {
        let changes: Weak<Self> = Arc::downgrade(self);
        Reporter::new(changes as Weak<dyn Changes>, id)
    }

    /// Counts connection `id` open and wraps it as the pool keeps it: an
    /// exclusive one counted until it is dropped; a shared one until its
    /// driver, spawned here, ends. A shared one is usable at once:
    /// requests go out with its first bytes, not a round trip later behind
    /// its peer's (see `protocol`).
    fn pooled(
        self: &Arc<Self>,
        id: u64,
        made: Handshake<P>,
        expires_at: Option<Instant>,
        remote: Option<SocketAddr>,
    ) -> Conn<P> {
        match made {
            Handshake::Exclusive(conn) => {
                Conn::Exclusive(self.open_exclusive(id, conn, expires_at, remote))
            }
            Handshake::Shared { conn, driver } => {
                let label = conn.label();
                self.opened(label);
                let closed = SharedClosed {
                    metrics: Arc::clone(&self.shared.metrics),
                    origin: Arc::downgrade(self),
                    id,
                    label,
                    established: Instant::now(),
                };
                tokio::spawn(async move {
                    driver.await;
                    drop(closed);
                });
                Conn::Shared(Arc::new(SharedConn {
                    id,
                    remote,
                    conn,
                    label,
                    expires_at,
                }))
            }
        }
    }

    /// Counts a new connection as open.
    pub(super) fn opened(&self, label: Label) {
        let metrics = &self.shared.metrics;
        metrics.connections_established.inc();
        metrics.connections_open.inc();
        let by = metrics.protocol(label);
        by.connections_established.inc();
        by.connections_open.inc();
        self.lock().open += 1;
    }

    /// An exclusive connection, counted as open until dropped.
    pub(super) fn open_exclusive(
        self: &Arc<Self>,
        id: u64,
        conn: P::Exclusive,
        expires_at: Option<Instant>,
        remote: Option<SocketAddr>,
    ) -> ExclusiveConn<P> {
        let label = conn.label();
        self.opened(label);
        ExclusiveConn(Box::new(ExclusiveParts {
            id,
            conn,
            label,
            expires_at,
            fresh: true,
            remote,
            _open: OpenExclusive {
                id,
                label,
                origin: Arc::downgrade(self),
                metrics: Arc::clone(&self.shared.metrics),
                established: Instant::now(),
            },
        }))
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    /// Adds a connection made elsewhere (`make` is given what
    /// [`Protocol::connect`] would be) as if the pool had dialed it: for
    /// in-memory benchmarks and fuzz targets.
    pub(crate) fn adopt(
        self: &Arc<Self>,
        make: impl FnOnce(&P::Origin, Reporter, Instant) -> Handshake<P>,
    ) {
        let id = self.shared.next_conn_id();
        let deadline = Instant::now() + self.shared.config.connect_timeout;
        let made = make(&self.protocol, self.reporter(id), deadline);
        let conn = self.pooled(id, made, None, None);
        // Delivered as a dialed connection is (`connected` counts it off).
        self.lock().connecting += 1;
        let connects = self.connected(conn, false);
        self.spawn_connects(connects);
    }

    /// A new connection is ready: it settles the protocol and goes to the waiters.
    pub(super) fn connected(&self, conn: Conn<P>, stalled: bool) -> usize {
        let mut st = self.lock();
        st.connecting -= 1;
        st.stalled -= usize::from(stalled);
        match conn {
            Conn::Exclusive(c) => {
                st.protocol = Speaks::Exclusive;
                self.deliver_locked(&mut st, c, true);
            }
            Conn::Shared(c) => {
                st.protocol = Speaks::Shared;
                // Until its peer declares its slots, it offers what the
                // protocol assumes (within the hint), and plans nothing.
                let declared = c.conn.declared();
                let mut hint_moved = false;
                if let Some(slots) = declared {
                    let hint = Some(slots.max(1));
                    if st.slots_hint != hint {
                        st.slots_hint = hint;
                        // Connections not yet declared offer up to the hint.
                        st.shared_conns.offer_all();
                        hint_moved = true;
                    }
                }
                st.budget.expire(Instant::now());
                if let Some(served) = c.conn.take_served() {
                    self.learn_budget(&mut st, served);
                }
                let id = c.id;
                st.shared_conns.insert(SharedSlot {
                    conn: c,
                    active: 0,
                    opened: 0,
                    idle_since: Instant::now(),
                    retiring: false,
                    declared: declared.is_some(),
                    noted_max: usize::MAX,
                    left_full_at: None,
                });
                self.serve_streams(&mut st, id);
                if hint_moved {
                    self.serve_any(&mut st);
                }
            }
        }
        self.connects_needed(&mut st)
    }

    pub(super) fn connect_failed(&self, error: Error, stalled: bool) -> usize {
        let mut st = self.lock();
        st.connecting -= 1;
        st.stalled -= usize::from(stalled);
        let mut error = Some(error);
        while let Some(waiter) = st.waiters.pop_front() {
            let Some(e) = error.take() else { break };
            match waiter.tx.send(Err(e)) {
                Ok(()) => break,
                Err(Err(back)) => error = Some(back),
                Err(Ok(_)) => break,
            }
        }
        self.connects_needed(&mut st)
    }
}

/// Counts an exclusive connection as open for as long as it exists: it has
/// no task of its own whose end could report the close.
pub(crate) struct OpenExclusive<P: Protocol> {
    id: u64,
    label: Label,
    origin: Weak<OriginPool<P>>,
    metrics: Arc<Metrics>,
    established: Instant,
}

impl<P: Protocol> Drop for OpenExclusive<P> {
    fn drop(&mut self) {
        self.metrics
            .connection_duration
            .record(self.established.elapsed());
        self.metrics.connections_open.dec();
        self.metrics.protocol(self.label).connections_open.dec();
        let Some(origin) = self.origin.upgrade() else {
            return; // the origin is gone: no slot to free
        };
        // The origin drops connections only once its lock is released
        // (see `locked`), so the slot is freed here and now.
        debug_assert!(
            !super::locked::holds_lock(),
            "an exclusive connection dropped under its origin's lock"
        );
        origin.connection_closed(self.id);
    }
}

/// Counts a shared connection as closed when its driver task ends, whether
/// the driver returned or was dropped unfinished (its runtime shut down).
struct SharedClosed<P: Protocol> {
    metrics: Arc<crate::metrics::Metrics>,
    origin: std::sync::Weak<OriginPool<P>>,
    id: u64,
    label: Label,
    established: Instant,
}

impl<P: Protocol> Drop for SharedClosed<P> {
    fn drop(&mut self) {
        self.metrics
            .connection_duration
            .record(self.established.elapsed());
        self.metrics.connections_open.dec();
        self.metrics.protocol(self.label).connections_open.dec();
        if let Some(origin) = self.origin.upgrade() {
            origin.connection_closed(self.id);
        }
    }
}
