//! Opening connections for the origin: connect and negotiate, count them
//! open, hand new ones to the waiters, and take them off the books when
//! they close (the drop guards below).

use super::*;
use crate::proto::h2::signals::{Listener, Signals};

impl OriginPool {
    /// One connection attempt. Its result goes to whoever is first in line
    /// when it completes, not to the request that triggered it: that request
    /// may have been served by a returned connection in the meantime.
    pub(super) async fn connect(self: Arc<Self>) {
        let metrics = Arc::clone(&self.shared.metrics);
        metrics.connect_attempts_total.inc();
        let attempt = GaugeGuard::new(&metrics.connect_attempts_current);
        let started = Instant::now();
        let connect_timeout = self.shared.config.connect_timeout;
        let establishing = tokio::time::timeout(connect_timeout, self.establish());
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
                tracing::debug!(host = %self.host, port = self.port, %error, "connect failed");
                self.connect_failed(error, stalled)
            }
        };
        self.spawn_connects(connects);
    }

    /// Connects, negotiates and handshakes one connection; an HTTP/2
    /// connection's driver task is running when this returns.
    pub(super) async fn establish(self: &Arc<Self>) -> Result<Conn, Error> {
        let shared = &self.shared;
        let rotation = self.next_addr.fetch_add(1, Relaxed);
        let connected = shared
            .connector
            .connect(
                &self.host,
                self.port,
                self.tls,
                rotation,
                self.proxy.as_ref(),
            )
            .await?;
        let h2 = match shared.config.versions {
            Versions::Http2Only => {
                if self.forward.is_some() {
                    return Err(Error::msg(
                        ErrorKind::Config,
                        "HTTP/2 by prior knowledge cannot go through an HTTP proxy's forwarding (only https URLs are tunnelled)",
                    ));
                }
                if self.tls && !connected.alpn_h2 {
                    return Err(Error::msg(
                        ErrorKind::Protocol,
                        "the server did not negotiate HTTP/2 (ALPN h2)",
                    ));
                }
                true
            }
            Versions::Http1Only => false,
            Versions::Auto => connected.alpn_h2,
        };
        let id = shared.next_conn_id();
        let expires_at = shared.expiry(Instant::now());
        if !h2 {
            return Ok(Conn::Http1(self.open_http1(
                id,
                connected.stream,
                expires_at,
                connected.remote,
            )));
        }
        let hs = h2::request::handshake(connected.stream, &shared.config);
        self.track_http2(id, &hs.signals, hs.driver);
        // The stream limit is only known once the server's SETTINGS arrive;
        // they are the first thing it sends.
        if !hs.signals.wait_for_settings().await {
            return Err(h2::request::failure(&hs.handle).unwrap_or_else(|| {
                Error::msg(
                    ErrorKind::ConnectionClosed,
                    "HTTP/2 connection closed before the server's SETTINGS",
                )
            }));
        }
        Ok(Conn::Http2(Arc::new(Http2Conn {
            id,
            remote: connected.remote,
            handle: hs.handle,
            expires_at,
            signals: hs.signals,
        })))
    }

    /// Counts a new connection as open.
    pub(super) fn opened(&self, h2: bool) {
        let metrics = &self.shared.metrics;
        metrics.connections_established.inc();
        metrics.connections_open.inc();
        if h2 {
            metrics.connections_established_http2.inc();
            metrics.connections_open_http2.inc();
        } else {
            metrics.connections_established_http1.inc();
            metrics.connections_open_http1.inc();
        }
        self.lock().open += 1;
    }

    /// Listens to an HTTP/2 connection's signals, counts it as open and
    /// spawns its driver, which reports the close when the connection ends.
    pub(super) fn track_http2(self: &Arc<Self>, id: u64, signals: &Signals, driver: Driver) {
        let listener: Weak<OriginPool> = Arc::downgrade(self);
        signals.listen(listener as Weak<dyn Listener>, id);
        self.opened(true);
        let closed = Http2Closed {
            metrics: Arc::clone(&self.shared.metrics),
            origin: Arc::downgrade(self),
            id,
            established: Instant::now(),
        };
        tokio::spawn(async move {
            driver.await;
            drop(closed);
        });
    }

    /// An HTTP/1.1 connection over `stream`, counted as open until dropped.
    pub(super) fn open_http1<S: Io + 'static>(
        self: &Arc<Self>,
        id: u64,
        stream: S,
        expires_at: Option<Instant>,
        remote: Option<SocketAddr>,
    ) -> Http1Conn {
        self.opened(false);
        let mut conn = Box::new(h1::connection(stream, &self.shared.config));
        if let Some(forward) = &self.forward {
            conn.via_proxy(Arc::clone(forward));
        }
        Http1Conn {
            id,
            conn,
            expires_at,
            fresh: true,
            remote,
            _open: OpenHttp1 {
                id,
                origin: Arc::downgrade(self),
                metrics: Arc::clone(&self.shared.metrics),
                established: Instant::now(),
            },
        }
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    /// Adds an HTTP/1.1 connection established elsewhere (over any byte
    /// stream) as if the pool had dialed it: for in-memory benchmarks.
    pub(crate) fn adopt_http1<S: Io + 'static>(self: &Arc<Self>, stream: S) {
        let id = self.shared.next_conn_id();
        let conn = self.open_http1(id, stream, None, None);
        let mut st = self.lock();
        st.protocol = Protocol::Http1;
        self.deliver_locked(&mut st, conn, true);
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    /// Adds an HTTP/2 connection established elsewhere (over any byte
    /// stream) as if the pool had dialed it, once the server's SETTINGS
    /// arrived: for the fuzz target that drives whole HTTP/2 responses
    /// through the public API. A connection that fails first is dropped.
    pub(crate) async fn adopt_http2<S: Io + 'static>(self: &Arc<Self>, stream: S) {
        let id = self.shared.next_conn_id();
        let hs = h2::request::handshake(stream, &self.shared.config);
        self.track_http2(id, &hs.signals, hs.driver);
        if !hs.signals.wait_for_settings().await {
            return;
        }
        let conn = Arc::new(Http2Conn {
            id,
            remote: None,
            handle: hs.handle,
            expires_at: None,
            signals: hs.signals,
        });
        // Delivered as a dialed connection is (`connected` counts it off).
        self.lock().connecting += 1;
        let connects = self.connected(Conn::Http2(conn), false);
        self.spawn_connects(connects);
    }

    /// A new connection is ready: it settles the protocol and goes to the waiters.
    pub(super) fn connected(&self, conn: Conn, stalled: bool) -> usize {
        let mut st = self.lock();
        st.connecting -= 1;
        st.stalled -= usize::from(stalled);
        match conn {
            Conn::Http1(c) => {
                st.protocol = Protocol::Http1;
                self.deliver_locked(&mut st, c, true);
            }
            Conn::Http2(c) => {
                st.protocol = Protocol::Http2;
                st.h2_streams_hint = Some(c.max_streams().max(1));
                st.h2_budget.expire(Instant::now());
                if let Some(served) = c.signals.take_served() {
                    self.learn_budget(&mut st, served);
                }
                st.h2.push(H2Slot {
                    conn: c,
                    active: 0,
                    opened: 0,
                    idle_since: Instant::now(),
                    retiring: false,
                });
                let i = st.h2.len() - 1;
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

/// Counts an HTTP/1.1 connection as open for as long as it exists: it has no
/// task of its own whose end could report the close.
pub(crate) struct OpenHttp1 {
    id: u64,
    origin: Weak<OriginPool>,
    metrics: Arc<Metrics>,
    established: Instant,
}

impl Drop for OpenHttp1 {
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
            "an HTTP/1.1 connection dropped under its origin's lock"
        );
        origin.connection_closed(self.id);
    }
}

/// Counts an HTTP/2 connection as closed when its driver task ends, whether
/// the driver returned or was dropped unfinished (its runtime shut down).
struct Http2Closed {
    metrics: Arc<crate::metrics::Metrics>,
    origin: std::sync::Weak<OriginPool>,
    id: u64,
    established: Instant,
}

impl Drop for Http2Closed {
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
