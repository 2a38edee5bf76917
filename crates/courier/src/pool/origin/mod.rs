//! One origin's pool: the connection cap, the fair wait queue, the LIFO idle
//! stack of exclusive (HTTP/1.1) connections, the slots of shared (HTTP/2)
//! connections, and connection attempts that belong to the pool, not to a
//! request.
//!
//! A shared connection's slots (streams) are counted against the number its
//! peer allows now (HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS; 0 means "wait",
//! never "dial more"; before its peer has said, the protocol's assumption,
//! no more than the origin's connections declared) and against the
//! requests per connection a GOAWAY
//! taught (a server that closes connections after N requests gets N per
//! connection, and the next connection is opened before the last is spent).
//! Connections report changes of either through the
//! [`Reporter`](super::protocol::Reporter) the pool gives them.
//!
//! All state sits behind one `std::sync::Mutex` that is only ever held for a
//! few pointer moves and never across an `.await`.
//!
//! This file holds the state and the request side (checkout, the queue,
//! connections coming back); [`planning`] decides how many connections to
//! open, [`dial`] opens them and keeps the books when they close, and
//! [`streams`] runs the shared connections' slots.

#[cfg(test)]
mod books;
mod conn;
mod dial;
mod idle;
mod lease;
mod locked;
mod planning;
mod shared_conns;
mod streams;

#[cfg(test)]
pub(crate) use books::Books;
use conn::{Conn, ExclusiveConn, SharedConn};
pub(crate) use dial::OpenExclusive;
use idle::{Idle, IdleStack};
pub(crate) use lease::Lease;
pub(crate) use lease::Sending;
use locked::{Locked, Published};
use planning::stall_after;
use shared_conns::SharedConns;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use http::uri::{Authority, Scheme};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::common::budget::StreamBudget;
use super::common::protocol::{Exclusive as _, Kind, Protocol, Served};
use super::common::Shared;
use crate::error::{Error, ErrorKind};
use crate::metrics::{GaugeGuard, Metrics};

/// Connection management for one scheme + host + port.
pub(crate) struct OriginPool<P: Protocol> {
    scheme: Scheme,
    authority: Authority,
    /// What the protocols keep for this origin: how its connections are
    /// made, what its requests carry.
    protocol: P::Origin,
    state: Mutex<State<P>>,
    shared: Arc<Shared>,
}

/// What this origin's connections are known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaks {
    /// Negotiation will tell and nothing is connected yet: probe with one
    /// connection rather than dial one per waiting request.
    Unknown,
    Exclusive,
    Shared,
}

impl From<Kind> for Speaks {
    fn from(kind: Kind) -> Speaks {
        match kind {
            Kind::Exclusive => Speaks::Exclusive,
            Kind::Shared => Speaks::Shared,
        }
    }
}

struct State<P: Protocol> {
    protocol: Speaks,
    /// Exclusive connections, LIFO (see [`IdleStack`]).
    idle: IdleStack<P>,
    /// Shared connections with their slot counts.
    shared_conns: SharedConns<P>,
    /// FIFO: the request that waited longest gets the next connection or stream.
    waiters: VecDeque<Waiter<P>>,
    /// Connections established and not yet closed.
    open: usize,
    /// Connection attempts in progress.
    connecting: usize,
    /// Of those, attempts that have run past [`stall_after`]: they still
    /// count against the per-host cap, but no longer stand for a waiter's
    /// connection, so a waiter behind a stuck handshake gets a dial of its own.
    stalled: usize,
    /// Exclusive connections whose dropped body is being drained and that
    /// are expected back within the drain grace period: waiters count on them.
    draining: usize,
    /// Slots per shared connection, for planning how many to open (and a
    /// bound on what a new one is given before its peer declares its own);
    /// known once a connection of this origin declared them (HTTP/2: the
    /// server's first SETTINGS arrived).
    slots_hint: Option<usize>,
    /// Requests the server serves on one shared connection in all, learnt
    /// from GOAWAYs (see [`StreamBudget`]): each connection is given at most
    /// that many, then retires, and the next one is opened in advance.
    budget: StreamBudget,
    /// Exclusive connections taken out of the state to be closed once the
    /// lock is released (see [`locked`]).
    closing: Vec<ExclusiveConn<P>>,
    /// This origin's share of the client's gauges, derived from the above.
    published: Published,
}

struct SharedSlot<P: Protocol> {
    conn: Arc<SharedConn<P>>,
    active: usize,
    /// Streams given out on it so far, against the origin's `budget`.
    opened: usize,
    idle_since: Instant,
    /// Takes no new streams (expired, GOAWAY); closes when `active` reaches 0.
    retiring: bool,
    /// Its peer's declared slots are known here (the origin's `slots_hint`
    /// learnt them); until then it offers what the protocol assumes.
    declared: bool,
    /// Its peer's slot limit when the origin last looked (kept by
    /// [`SharedConns`]; `usize::MAX` before the first look). The connection's
    /// own figure may be newer: its report of the change is on its way.
    noted_max: usize,
    /// Its peer's slot limit when a pick found it full and left it out of
    /// the candidates (`None` while it is one). A limit that moved since
    /// (down and back up, say) is on its way in a report, which offers it.
    left_full_at: Option<usize>,
}

impl<P: Protocol> SharedSlot<P> {
    /// May take one more stream: not retiring, under its slots (see
    /// [`has_room_at`](Self::has_room_at)), and under the origin's learnt
    /// budget.
    fn has_room(&self, budget: Option<usize>, hint: Option<usize>) -> bool {
        self.has_room_at(self.conn.max_streams(), budget, hint)
    }

    /// [`has_room`](Self::has_room) with its peer's limit `max` read once by
    /// the caller (the driver may change it meanwhile, on another thread).
    ///
    /// The streams it may carry at once: what its peer declared; before
    /// that, what the origin's connections declared (`hint`), which is what
    /// the planning counts on it for: a server that allows 8 is not sent
    /// 100 streams on each new connection only to refuse 92, and 256
    /// requests to one that allows 128 do not wait for a third connection
    /// because the second, undeclared, took only the 100 HTTP/2 assumes.
    /// (The streams past the protocol's assumption wait in the connection
    /// for its peer's SETTINGS.) With no hint, what the protocol assumes.
    fn has_room_at(&self, max: usize, budget: Option<usize>, hint: Option<usize>) -> bool {
        let slots = match hint {
            Some(hint) if !self.declared => hint,
            _ => max,
        };
        !self.retiring && self.active < slots && budget.is_none_or(|b| self.opened < b)
    }
}

type Delivery<P> = Result<Conn<P>, Error>;

struct Waiter<P: Protocol> {
    tx: oneshot::Sender<Delivery<P>>,
    /// Only a newly established connection will do (the stale-connection retry).
    fresh_only: bool,
}

impl<P: Protocol> OriginPool<P> {
    pub(crate) fn new(
        scheme: Scheme,
        authority: Authority,
        protocol: P::Origin,
        shared: Arc<Shared>,
    ) -> Self {
        let speaks = P::expect(&protocol).map_or(Speaks::Unknown, Speaks::from);
        OriginPool {
            scheme,
            authority,
            protocol,
            state: Mutex::new(State {
                protocol: speaks,
                idle: IdleStack::new(),
                shared_conns: SharedConns::default(),
                waiters: VecDeque::new(),
                open: 0,
                connecting: 0,
                stalled: 0,
                draining: 0,
                slots_hint: None,
                budget: StreamBudget::default(),
                closing: Vec::new(),
                published: Published::default(),
            }),
            shared,
        }
    }

    /// `scheme://authority/`, for errors to say which origin they are about.
    pub(crate) fn url(&self) -> http::Uri {
        http::Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query("/")
            .build()
            .unwrap_or_default()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// What the protocols keep for this origin.
    pub(crate) fn protocol(&self) -> &P::Origin {
        &self.protocol
    }

    /// The state, until the guard drops: then the gauges follow it and the
    /// connections it retired close (see [`locked`]).
    fn lock(&self) -> Locked<'_, P> {
        // A panic elsewhere while holding the lock leaves consistent-enough
        // counters; keep serving rather than poisoning every request.
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        Locked::new(st, &self.shared.metrics)
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    /// Gets a connection or slot: a slot on a shared connection with room,
    /// else an idle exclusive connection (most recent first), else waits in
    /// line for a returned one or a new one.
    ///
    /// `fresh_only` skips pooled exclusive connections; `queue_timeout` bounds the wait.
    pub(crate) async fn checkout(
        self: &Arc<Self>,
        fresh_only: bool,
        queue_timeout: Option<Duration>,
    ) -> Result<Lease<P>, Error> {
        match self.try_checkout(fresh_only, Instant::now()) {
            Ok(lease) => Ok(lease),
            Err(slot) => {
                Arc::clone(self)
                    .checkout_queued(slot, fresh_only, queue_timeout)
                    .await
            }
        }
    }

    /// [`checkout`](Self::checkout) when a connection or stream is at hand
    /// (the common case, and no future needed), else the place in line.
    /// `now` is when the request started: a clock read it already made.
    pub(crate) fn try_checkout(
        self: &Arc<Self>,
        fresh_only: bool,
        now: Instant,
    ) -> Result<Lease<P>, WaitSlot<P>> {
        loop {
            let conn = self.take_or_enqueue(fresh_only, now)?;
            let mut lease = Lease::new(conn, Arc::clone(self));
            // A connection that closed while idle fails here (dropping the
            // lease cleans up); try the next.
            if lease.ready() {
                return Ok(lease);
            }
        }
    }

    /// The rest of a [`checkout`](Self::checkout) that had to wait in line.
    pub(crate) async fn checkout_queued(
        self: Arc<Self>,
        mut slot: WaitSlot<P>,
        fresh_only: bool,
        queue_timeout: Option<Duration>,
    ) -> Result<Lease<P>, Error> {
        loop {
            let mut lease = Lease::new(self.wait(slot, queue_timeout).await?, Arc::clone(&self));
            if lease.ready() {
                return Ok(lease);
            }
            match self.try_checkout(fresh_only, Instant::now()) {
                Ok(lease) => return Ok(lease),
                Err(next) => slot = next,
            }
        }
    }

    fn take_or_enqueue(
        self: &Arc<Self>,
        fresh_only: bool,
        now: Instant,
    ) -> Result<Conn<P>, WaitSlot<P>> {
        let (rx, connects) = {
            let mut st = self.lock();
            if let Some(conn) = self.reserve_stream(&mut st, now) {
                // A server that closes connections after a number of
                // streams: the next one may be due before anyone waits.
                let connects = match st.budget.get() {
                    Some(_) => self.connects_needed(&mut st),
                    None => 0,
                };
                drop(st);
                self.spawn_connects(connects);
                return Ok(Conn::Shared(conn));
            }
            if !fresh_only {
                while let Some(idle) = st.idle.pop() {
                    if !idle.conn.is_expired(now) {
                        return Ok(Conn::Exclusive(idle.conn));
                    }
                    // Expired: closed once the lock is released.
                    st.closing.push(idle.conn);
                }
            }
            st.purge_dead_waiters();
            let (tx, rx) = oneshot::channel();
            st.waiters.push_back(Waiter { tx, fresh_only });
            if fresh_only {
                st.make_room_for_fresh(self.shared.config.max_connections_per_host);
            }
            (rx, self.connects_needed(&mut st))
        };
        self.spawn_connects(connects);
        Err(WaitSlot {
            rx,
            origin: Arc::clone(self),
        })
    }

    /// Reserves a slot on the shared connection with room that keeps the
    /// fewest connections busy: the busiest one that is not full (see
    /// [`SharedConns::pick`]: no walk over the connections).
    fn reserve_stream(&self, st: &mut State<P>, now: Instant) -> Option<Arc<SharedConn<P>>> {
        if st.shared_conns.is_empty() {
            return None;
        }
        let budget = st.budget.get();
        let id = st.shared_conns.pick(budget, st.slots_hint, now)?;
        st.shared_conns.start_stream(id, budget);
        st.shared_conns.get(id).map(|s| Arc::clone(&s.conn))
    }

    async fn wait(
        &self,
        mut slot: WaitSlot<P>,
        queue_timeout: Option<Duration>,
    ) -> Result<Conn<P>, Error> {
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

    /// Hands an exclusive connection to the first waiter that takes it, or
    /// parks it on the idle stack.
    fn deliver_locked(&self, st: &mut State<P>, mut conn: ExclusiveConn<P>, is_new: bool) {
        let mut i = 0;
        while i < st.waiters.len() {
            if !is_new && st.waiters[i].fresh_only {
                i += 1;
                continue;
            }
            let Some(waiter) = st.waiters.remove(i) else {
                break;
            };
            match waiter.tx.send(Ok(Conn::Exclusive(conn))) {
                Ok(()) => return,
                // That waiter gave up (timeout, cancelled): try the next one.
                Err(Ok(Conn::Exclusive(back))) => conn = back,
                Err(_) => return,
            }
        }
        // Whatever it was before, it now waits where the server may close it.
        conn.fresh = false;
        st.idle.push(Idle {
            conn,
            since: Instant::now(),
        });
        st.make_room_for_fresh(self.shared.config.max_connections_per_host);
    }

    /// A lease gives its exclusive connection back after a complete response.
    pub(crate) fn put_back(&self, conn: ExclusiveConn<P>) {
        // Lifetime is checked on return as well as on checkout, so an expired
        // connection is closed as soon as its last request is done.
        if conn.is_expired_now() {
            return;
        }
        let mut st = self.lock();
        self.deliver_locked(&mut st, conn, false);
    }

    /// A shared connection's slot is free again (response read, dropped, or failed).
    pub(crate) fn stream_done(self: &Arc<Self>, id: u64) {
        let mut st = self.lock();
        let Some(active) = st.shared_conns.end_stream(id) else {
            return; // already closed and forgotten
        };
        // The clock only for a connection going idle or a slot handed on:
        // most streams end beside others with no one waiting (a read is
        // about 30 ns in a VM).
        if active > 0 && st.waiters.is_empty() {
            return;
        }
        let now = Instant::now();
        let Some(slot) = st.shared_conns.get_mut(id) else {
            return;
        };
        if slot.retiring || !slot.conn.accepts_streams(now) {
            if active == 0 {
                st.shared_conns.remove(id);
                return;
            }
            // Past its lifetime (or going away) with streams still open: the
            // slot goes to no waiter, or a connection kept full by waiters
            // would never rotate. They are served elsewhere or dialled for.
            slot.retiring = true;
            self.serve_any(&mut st);
            let connects = self.connects_needed(&mut st);
            drop(st);
            self.spawn_connects(connects);
            return;
        }
        if active == 0 {
            slot.idle_since = now;
        }
        self.serve_streams(&mut st, id);
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
    ///
    /// Waiters that counted on it are planned for again either way: its
    /// close may have been reported while it still counted as draining.
    pub(crate) fn drain_finished(self: &Arc<Self>, conn: Option<Conn<P>>) {
        let connects = {
            let mut st = self.lock();
            st.draining = st.draining.saturating_sub(1);
            if let Some(Conn::Exclusive(conn)) = conn {
                if conn.is_expired(Instant::now()) {
                    st.closing.push(conn);
                } else {
                    self.deliver_locked(&mut st, conn, false);
                }
            }
            self.connects_needed(&mut st)
        };
        self.spawn_connects(connects);
    }

    /// The connection is closed (exclusive: dropped; shared: its driver ended).
    fn connection_closed(self: &Arc<Self>, id: u64) {
        let connects = {
            let mut st = self.lock();
            st.open = st.open.saturating_sub(1);
            // Leases still holding streams find it gone when they end.
            st.shared_conns.remove(id);
            // A freed slot lets a waiter at the cap get a connection of its own.
            self.connects_needed(&mut st)
        };
        self.spawn_connects(connects);
    }

    /// Closes idle connections past the idle timeout or their lifetime.
    /// Returns true when the origin holds nothing at all any more.
    pub(crate) fn scavenge(&self, now: Instant, idle_timeout: Option<Duration>) -> bool {
        let idle_too_long = |since: Instant| {
            idle_timeout.is_some_and(|t| now.saturating_duration_since(since) >= t)
        };
        let mut st = self.lock();
        let st = &mut *st;
        st.idle.remove_into(
            |idle| {
                idle_too_long(idle.since) || idle.conn.is_expired(now) || !idle.conn.conn.is_open()
            },
            &mut st.closing,
        );
        for slot in st.shared_conns.iter_mut() {
            if !slot.conn.accepts_streams(now) {
                slot.retiring = true;
            }
        }
        self.forget_idle_shared(st, |s| s.retiring || idle_too_long(s.idle_since));
        st.holds_nothing()
    }

    /// Candidates the shared-slot search has looked at so far (tests of its
    /// cost).
    #[cfg(test)]
    pub(crate) fn streams_examined(&self) -> usize {
        self.lock().shared_conns.examined
    }

    /// Idle-stack entries walked so far (tests of a checkout's cost).
    #[cfg(test)]
    pub(crate) fn idle_walked(&self) -> usize {
        self.lock().idle.walked
    }

    /// No connection, attempt or waiter: the origin can be forgotten.
    pub(crate) fn holds_nothing(&self) -> bool {
        self.lock().holds_nothing()
    }
}

impl<P: Protocol> State<P> {
    fn holds_nothing(&self) -> bool {
        self.open == 0 && self.connecting == 0 && self.waiters.is_empty()
    }

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

impl<P: Protocol> Drop for OriginPool<P> {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        locked::unpublish(st, &self.shared.metrics);
    }
}

/// A place in the wait queue.
///
/// Dropping it (timeout, cancelled request) closes the channel; a connection
/// or stream handed over in that instant is given back instead of being lost.
pub(crate) struct WaitSlot<P: Protocol> {
    rx: oneshot::Receiver<Delivery<P>>,
    origin: Arc<OriginPool<P>>,
}

impl<P: Protocol> Drop for WaitSlot<P> {
    fn drop(&mut self) {
        self.rx.close();
        match self.rx.try_recv() {
            Ok(Ok(Conn::Exclusive(conn))) => self.origin.put_back(conn),
            Ok(Ok(Conn::Shared(conn))) => self.origin.stream_done(conn.id),
            _ => {}
        }
    }
}
