//! Opening connections for the origin: connect and negotiate, count them
//! open, hand new ones to the waiters, and take them off the books when
//! they close (the drop guards below).

use super::*;
use crate::connect::AsyncIo;
use crate::pool::protocol::{Changes, Handshake, Reporter, Shared as _};

/// A connection the protocol made, before it is pooled.
enum Handshaken<P: Protocol> {
    Exclusive(P::Exclusive),
    /// Counted open, its driver running.
    Shared(P::Shared),
}

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
                tracing::debug!(host = %self.host, port = self.port, error = %format_args!("{error:#}"), "connect failed");
                self.connect_failed(error, stalled)
            }
        };
        self.spawn_connects(connects);
    }

    /// Connects, negotiates and handshakes one connection; a shared
    /// connection's driver task is running when this returns, and its peer
    /// has until `deadline` to show it speaks the protocol.
    pub(super) async fn establish(self: &Arc<Self>, deadline: Instant) -> Result<Conn<P>, Error> {
        let shared = &self.shared;
        let rotation = self.next_addr.fetch_add(1, Relaxed);
        let connected = shared
            .connector
            .connect(&self.host, self.port, self.tls, rotation, &self.route)
            .await?;
        let kind = P::negotiate(&shared.config, &self.protocol, self.tls, connected.alpn_h2)?;
        let id = shared.next_conn_id();
        let expires_at = shared.expiry(Instant::now());
        match self.handshake(id, connected.stream, kind, deadline) {
            Handshaken::Exclusive(conn) => Ok(Conn::Exclusive(self.open_exclusive(
                id,
                conn,
                expires_at,
                connected.remote,
            ))),
            // Usable at once: requests go out with the client's preface,
            // not a round trip later behind the server's (see `protocol`).
            Handshaken::Shared(conn) => Ok(Conn::Shared(Arc::new(SharedConn {
                id,
                remote: connected.remote,
                conn,
                expires_at,
            }))),
        }
    }

    /// Makes connection `id` of `kind` over `stream`: an exclusive one is
    /// returned as it is, to be counted by [`open_exclusive`]; a shared one
    /// is counted open here and its driver spawned, which reports the close
    /// when the connection ends.
    ///
    /// [`open_exclusive`]: Self::open_exclusive
    fn handshake<S: AsyncIo>(
        self: &Arc<Self>,
        id: u64,
        stream: S,
        kind: Kind,
        deadline: Instant,
    ) -> Handshaken<P> {
        let changes: Weak<Self> = Arc::downgrade(self);
        let reporter = Reporter::new(changes as Weak<dyn Changes>, id);
        let config = &self.shared.config;
        match P::handshake(stream, kind, config, &self.protocol, reporter, deadline) {
            Handshake::Exclusive(conn) => Handshaken::Exclusive(conn),
            Handshake::Shared { conn, driver } => {
                self.opened(Kind::Shared);
                let closed = SharedClosed {
                    metrics: Arc::clone(&self.shared.metrics),
                    origin: Arc::downgrade(self),
                    id,
                    established: Instant::now(),
                };
                tokio::spawn(async move {
                    driver.await;
                    drop(closed);
                });
                Handshaken::Shared(conn)
            }
        }
    }

    /// Counts a new connection as open.
    pub(super) fn opened(&self, kind: Kind) {
        let metrics = &self.shared.metrics;
        metrics.connections_established.inc();
        metrics.connections_open.inc();
        // (The per-protocol gauges are named for the protocols that are the
        // kinds today: HTTP/1.1 exclusive, HTTP/2 shared.)
        match kind {
            Kind::Shared => {
                metrics.connections_established_http2.inc();
                metrics.connections_open_http2.inc();
            }
            Kind::Exclusive => {
                metrics.connections_established_http1.inc();
                metrics.connections_open_http1.inc();
            }
        }
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
        self.opened(Kind::Exclusive);
        ExclusiveConn {
            id,
            conn: Box::new(conn),
            expires_at,
            fresh: true,
            remote,
            _open: OpenExclusive {
                id,
                origin: Arc::downgrade(self),
                metrics: Arc::clone(&self.shared.metrics),
                established: Instant::now(),
            },
        }
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    /// Adds an exclusive connection established elsewhere (over any byte
    /// stream) as if the pool had dialed it: for in-memory benchmarks.
    pub(crate) fn adopt_exclusive<S: AsyncIo>(self: &Arc<Self>, stream: S) {
        let id = self.shared.next_conn_id();
        let deadline = Instant::now() + self.shared.config.connect_timeout;
        let Handshaken::Exclusive(conn) = self.handshake(id, stream, Kind::Exclusive, deadline)
        else {
            unreachable!("asked for an exclusive connection");
        };
        let conn = self.open_exclusive(id, conn, None, None);
        let mut st = self.lock();
        st.protocol = Speaks::Exclusive;
        self.deliver_locked(&mut st, conn, true);
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    /// Adds a shared connection established elsewhere (over any byte
    /// stream) as if the pool had dialed it: for the fuzz target that
    /// drives whole HTTP/2 responses through the public API.
    pub(crate) fn adopt_shared<S: AsyncIo>(self: &Arc<Self>, stream: S) {
        let id = self.shared.next_conn_id();
        let deadline = Instant::now() + self.shared.config.connect_timeout;
        let Handshaken::Shared(conn) = self.handshake(id, stream, Kind::Shared, deadline) else {
            unreachable!("asked for a shared connection");
        };
        let conn = Arc::new(SharedConn {
            id,
            remote: None,
            conn,
            expires_at: None,
        });
        // Delivered as a dialed connection is (`connected` counts it off).
        self.lock().connecting += 1;
        let connects = self.connected(Conn::Shared(conn), false);
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
                if let Some(slots) = declared {
                    st.slots_hint = Some(slots.max(1));
                }
                st.budget.expire(Instant::now());
                if let Some(served) = c.conn.take_served() {
                    self.learn_budget(&mut st, served);
                }
                st.shared_conns.push(SharedSlot {
                    conn: c,
                    active: 0,
                    opened: 0,
                    idle_since: Instant::now(),
                    retiring: false,
                    declared: declared.is_some(),
                });
                let i = st.shared_conns.len() - 1;
                self.serve_streams(&mut st, i);
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
        self.metrics.connections_open_http1.dec();
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
    established: Instant,
}

impl<P: Protocol> Drop for SharedClosed<P> {
    fn drop(&mut self) {
        self.metrics
            .connection_duration
            .record(self.established.elapsed());
        self.metrics.connections_open.dec();
        self.metrics.connections_open_http2.dec();
        if let Some(origin) = self.origin.upgrade() {
            origin.connection_closed(self.id);
        }
    }
}
