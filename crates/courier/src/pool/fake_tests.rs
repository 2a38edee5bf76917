//! The pool with no HTTP in it: a fake [`Protocol`] whose connections are
//! a few atomics, made without dialing anything, and whose sends answer at
//! once with the connection's id.
//!
//! Why: DESIGN.md says the pool is generic over one small trait and knows
//! nothing of protocols. These tests hold it to that (they compile and run
//! with no request head, no frame, no socket, no client configuration) and
//! pin each of the pool's own rules where no protocol can blur them: the
//! per-origin cap, the FIFO queue, LIFO reuse and the probe of idle
//! connections, a shared connection's slots (more connections when every
//! slot is taken, or not when the configuration says so; none while the
//! peer allows 0; a lowered limit; before the peer declares them, the
//! protocol's assumption, within what the origin's last connection
//! declared), going away and refused requests, the request budget a
//! GOAWAY teaches, lifetime and idle expiry (on paused time), drains,
//! failed attempts, and metrics kept under the label a connection reports.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::{Authority, Scheme};
use http::Request;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::protocol::{self, Connected, Handshake, Kind, Label, Protocol, Reporter, Sent, Served};
use super::{Lease, OriginPool, Pool, PoolConfig};
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;

/// The fake's metrics label: any label will do; the pool counts under the
/// one its connections report, whatever their kind.
const LABEL: Label = Label::HTTP3;

/// What a test controls of one fake origin (looked up by host name: each
/// test uses its own).
#[derive(Default)]
struct Knobs {
    /// Slots every shared connection allows now, once declared.
    slots: AtomicUsize,
    /// New shared connections leave their slots undeclared, assuming these
    /// (0: they declare at once), until the test declares them.
    assumed: AtomicUsize,
    /// Connections dialled (attempts, failed ones included).
    dials: AtomicUsize,
    /// The next this many attempts fail.
    fail: AtomicUsize,
    /// When set, each attempt waits for a permit of it.
    gate: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    /// Each connection made, by id (the order made).
    conns: Mutex<Vec<Arc<ConnKnobs>>>,
}

/// What a test controls of one connection.
struct ConnKnobs {
    /// Its peer declared its slots.
    declared: AtomicBool,
    /// Its peer is going away (GOAWAY): it takes no new requests, and
    /// refuses what is sent on it from now on.
    going_away: AtomicBool,
    /// Its peer closed it.
    closed: AtomicBool,
    /// Ends a shared connection's driver (its peer closed it).
    close: tokio::sync::Notify,
    /// Slots this connection's peer allows, once declared, when not the
    /// origin's (`usize::MAX`: the origin's `slots`).
    own_slots: AtomicUsize,
    /// What its going away showed about the requests per connection.
    served: Mutex<Option<Served>>,
    reporter: Reporter,
}

mod random_tests;
mod scale_tests;

static ORIGINS: LazyLock<Mutex<HashMap<String, Arc<Knobs>>>> = LazyLock::new(Default::default);

fn knobs(host: &str) -> Arc<Knobs> {
    let mut origins = ORIGINS.lock().unwrap();
    Arc::clone(origins.entry(host.to_owned()).or_default())
}

impl Knobs {
    fn conn(&self, id: usize) -> Arc<ConnKnobs> {
        Arc::clone(&self.conns.lock().unwrap()[id])
    }

    /// Shared connection `id` declares its slots, and tells the pool.
    fn declare(&self, id: usize) {
        let c = self.conn(id);
        c.declared.store(true, SeqCst);
        c.reporter.report();
    }

    /// Connection `id`'s peer goes away, having served `served` (if it said).
    fn go_away(&self, id: usize, served: Option<Served>) {
        let c = self.conn(id);
        *c.served.lock().unwrap() = served;
        c.going_away.store(true, SeqCst);
        c.reporter.report();
    }

    /// Every shared connection tells the pool that something changed.
    fn report_all(&self) {
        for c in self.conns.lock().unwrap().iter() {
            c.reporter.report();
        }
    }
}

/// Exclusive connections only (`SHARED = false`) or shared ones only.
enum Fake<const SHARED: bool> {}

/// An exclusive fake connection: its id is what every send answers.
struct FakeExclusive {
    id: usize,
    knobs: Arc<ConnKnobs>,
}

/// A shared fake connection; its driver runs until the pool drops it.
struct FakeShared {
    id: usize,
    origin: Arc<Knobs>,
    knobs: Arc<ConnKnobs>,
    _alive: oneshot::Sender<()>,
}

impl FakeShared {
    /// The slots its peer allows once declared: its own, else the origin's.
    fn declared_slots(&self) -> usize {
        match self.knobs.own_slots.load(SeqCst) {
            usize::MAX => self.origin.slots.load(SeqCst),
            own => own,
        }
    }
}

/// Why a fake send failed: the connection's peer was going away, so it
/// refused the request unprocessed (and gives it back, to be sent again).
#[derive(Debug)]
struct Refused(#[allow(dead_code)] Request<Body>);

impl<const SHARED: bool> Protocol for Fake<SHARED> {
    type Exclusive = FakeExclusive;
    type Shared = FakeShared;
    type Answer = usize;
    type Failure = Refused;
    type Client = ();
    type Origin = Arc<Knobs>;

    fn origin(_: &Arc<()>, _: &Scheme, authority: &Authority) -> Result<Arc<Knobs>, Error> {
        Ok(knobs(authority.host()))
    }

    fn expect(_: &Arc<Knobs>) -> Option<Kind> {
        Some(if SHARED {
            Kind::Shared
        } else {
            Kind::Exclusive
        })
    }

    fn connect(
        knobs: &Arc<Knobs>,
        reporter: Reporter,
        _: Instant,
    ) -> impl Future<Output = Result<Connected<Self>, Error>> + Send {
        let knobs = Arc::clone(knobs);
        async move {
            knobs.dials.fetch_add(1, SeqCst);
            let gate = knobs.gate.lock().unwrap().clone();
            if let Some(gate) = gate {
                gate.acquire().await.expect("never closed").forget();
            }
            if knobs
                .fail
                .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err(Error::msg(ErrorKind::Connect, "refused by the test"));
            }
            let mut conns = knobs.conns.lock().unwrap();
            let id = conns.len();
            let conn = Arc::new(ConnKnobs {
                declared: AtomicBool::new(knobs.assumed.load(SeqCst) == 0),
                going_away: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                close: tokio::sync::Notify::new(),
                own_slots: AtomicUsize::new(usize::MAX),
                served: Mutex::new(None),
                reporter,
            });
            conns.push(Arc::clone(&conn));
            drop(conns);
            let conn = if SHARED {
                let (alive, gone) = oneshot::channel::<()>();
                let closing = Arc::clone(&conn);
                Handshake::Shared {
                    conn: FakeShared {
                        id,
                        origin: knobs,
                        knobs: conn,
                        _alive: alive,
                    },
                    driver: Box::pin(async move {
                        tokio::select! {
                            _ = gone => {}
                            () = closing.close.notified() => {}
                        }
                    }),
                }
            } else {
                Handshake::Exclusive(FakeExclusive { id, knobs: conn })
            };
            Ok(Connected { conn, remote: None })
        }
    }
}

impl<const SHARED: bool> protocol::Exclusive<Fake<SHARED>> for FakeExclusive {
    fn label(&self) -> Label {
        LABEL
    }

    fn is_open(&mut self) -> bool {
        !self.knobs.closed.load(SeqCst)
    }

    fn is_reusable(&self) -> bool {
        true
    }

    type Prepared = ();

    fn prepare(&mut self, _: &Request<Body>, _: &Arc<Knobs>) {}

    fn send<C: AsMut<Self> + Send>(
        mut conn: C,
        _: Request<Body>,
        (): (),
    ) -> impl Future<Output = (C, Sent<Fake<SHARED>>)> + Send {
        let id = conn.as_mut().id;
        std::future::ready((conn, Ok(id)))
    }
}

impl<const SHARED: bool> protocol::Shared<Fake<SHARED>> for FakeShared {
    /// The connection's id, or the request it refused.
    type Exchange = Result<usize, Option<Request<Body>>>;

    fn label(&self) -> Label {
        LABEL
    }

    fn slots(&self) -> usize {
        match self.knobs.declared.load(SeqCst) {
            true => self.declared_slots(),
            false => self.origin.assumed.load(SeqCst),
        }
    }

    fn declared(&self) -> Option<usize> {
        self.knobs
            .declared
            .load(SeqCst)
            .then(|| self.declared_slots())
    }

    fn accepts_requests(&self) -> bool {
        !self.knobs.going_away.load(SeqCst) && !self.knobs.closed.load(SeqCst)
    }

    fn is_closed(&self) -> bool {
        self.knobs.closed.load(SeqCst)
    }

    fn take_served(&self) -> Option<Served> {
        self.knobs.served.lock().unwrap().take()
    }

    fn send(&self, req: Request<Body>, _: Option<tokio::time::Instant>) -> Self::Exchange {
        match self.knobs.going_away.load(SeqCst) {
            true => Err(Some(req)),
            false => Ok(self.id),
        }
    }

    fn poll_send(
        sent: &mut Self::Exchange,
        _: &mut Context<'_>,
        _: &Arc<Knobs>,
    ) -> Poll<Sent<Fake<SHARED>>> {
        Poll::Ready(match sent {
            Ok(id) => Ok(*id),
            Err(req) => Err(Refused(req.take().expect("polled once"))),
        })
    }
}

fn pool_with<const SHARED: bool>(config: PoolConfig) -> (Pool<Fake<SHARED>>, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    (
        Pool::new(config, Arc::clone(&metrics), Arc::new(())),
        metrics,
    )
}

fn pool<const SHARED: bool>(max_connections_per_host: usize) -> (Pool<Fake<SHARED>>, Arc<Metrics>) {
    pool_with(PoolConfig {
        max_connections_per_host,
        ..PoolConfig::default()
    })
}

fn origin<P: Protocol>(pool: &Pool<P>, host: &str) -> Arc<OriginPool<P>> {
    pool.origin(&format!("http://{host}/").parse().unwrap())
        .unwrap()
}

/// Sends a request on `lease`; the answer is the connection's id.
async fn send<P: Protocol<Answer = usize>>(lease: Lease<P>) -> (Lease<P>, usize) {
    match lease.send(Request::new(Body::empty()), None).await {
        Ok(sent) => sent,
        Err(_) => panic!("the fake send failed"),
    }
}

/// A request that checks out and sends, spawned.
fn request<P: Protocol<Answer = usize>>(
    origin: &Arc<OriginPool<P>>,
) -> tokio::task::JoinHandle<(Lease<P>, usize)> {
    let origin = Arc::clone(origin);
    tokio::spawn(async move { send(origin.checkout(false, None).await.unwrap()).await })
}

/// Runs a test's body, which fails if it takes longer than 10 s (a request
/// the pool never serves would otherwise hang the test).
async fn within(body: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(10), body)
        .await
        .expect("the test took longer than 10 s");
}

/// Waits (yielding to the runtime, bounded) until `cond` holds.
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let wait = async {
        while !cond() {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .unwrap_or_else(|_| panic!("never: {what}"));
}

/// [`within`] for a test on paused time, which advances by the hour.
async fn within_paused(body: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(24 * 3600), body)
        .await
        .expect("the test took longer than a (paused) day");
}

/// Lets every task run as far as it can (a request that should wait, waits).
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn exclusive_connections_are_capped_handed_out_in_line_and_reused_last_in_first_out() {
    within(async {
        let (pool, metrics) = pool::<false>(2);
        let origin = origin(&pool, "exclusive.test");
        let a = origin.checkout(false, None).await.unwrap();
        let b = origin.checkout(false, None).await.unwrap();
        let (a, first) = send(a).await;
        let (b, second) = send(b).await;
        assert_ne!(first, second, "two connections");

        // At the cap: the next two wait, in the order they came.
        let third = request(&origin);
        until("the third request waits", || {
            metrics.requests_queued.get() == 1
        })
        .await;
        let fourth = request(&origin);
        until("the fourth request waits", || {
            metrics.requests_queued.get() == 2
        })
        .await;

        // The first connection back goes to the request that waited longest.
        b.release();
        let (c, got) = tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .expect("the connection went to a request that came later")
            .unwrap();
        assert_eq!(got, second, "the third request had waited longest");
        a.release();
        let (d, got) = fourth.await.unwrap();
        assert_eq!(got, first);
        assert_eq!(
            knobs("exclusive.test").dials.load(SeqCst),
            2,
            "the cap held"
        );
        let by = metrics.protocol(LABEL);
        assert_eq!((by.connections_open.get(), by.requests.get()), (2, 4));

        // Idle: the one returned last is the warmest, and is taken first.
        c.release();
        d.release();
        assert_eq!(by.connections_idle.get(), 2);
        let (_, got) = send(origin.checkout(false, None).await.unwrap()).await;
        assert_eq!(got, first, "the connection returned last");
    })
    .await;
}

#[tokio::test]
async fn an_idle_connection_the_peer_closed_is_probed_and_replaced() {
    within(async {
        let (pool, metrics) = pool::<false>(usize::MAX);
        let knobs = knobs("probe.test");
        let origin = origin(&pool, "probe.test");
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        a.release();
        knobs.conn(first).closed.store(true, SeqCst);
        let (_b, got) = send(origin.checkout(false, None).await.unwrap()).await;
        assert_ne!(got, first, "the closed connection was not handed out");
        assert_eq!(knobs.dials.load(SeqCst), 2);
        assert_eq!(metrics.connections_open.get(), 1, "the closed one is gone");
    })
    .await;
}

#[tokio::test]
async fn a_failed_attempt_fails_the_first_waiter_and_the_next_gets_a_dial_of_its_own() {
    within(async {
        let (pool, metrics) = pool::<false>(1);
        let knobs = knobs("fail.test");
        knobs.fail.store(1, SeqCst);
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        *knobs.gate.lock().unwrap() = Some(Arc::clone(&gate));
        let origin = origin(&pool, "fail.test");
        let first = {
            let origin = Arc::clone(&origin);
            tokio::spawn(async move { origin.checkout(false, None).await.map(|_| ()) })
        };
        until("the first waits", || metrics.requests_queued.get() == 1).await;
        let second = request(&origin);
        until("both wait", || metrics.requests_queued.get() == 2).await;
        assert_eq!(knobs.dials.load(SeqCst), 1, "one attempt at the cap");
        gate.add_permits(2);
        let err = first.await.unwrap().expect_err("the attempt failed");
        assert_eq!(err.kind(), ErrorKind::Connect);
        let (_, id) = second.await.unwrap();
        assert_eq!(id, 0, "the first connection made");
        assert_eq!(knobs.dials.load(SeqCst), 2);
        assert_eq!(metrics.connect_failures.get(), 1);
    })
    .await;
}

/// A request that only a new connection will do (the retry of one that a
/// reused connection failed) at the per-host cap, while a connection sits
/// idle: nothing was dialled for it until the idle timeout closed one (60 s
/// by default; never without one). An idle connection is closed to make
/// room, whether it was idle when the request came or came back while it
/// waited.
#[tokio::test(start_paused = true)]
async fn a_request_for_a_fresh_connection_at_the_cap_closes_an_idle_one() {
    within_paused(async {
        let (pool, metrics) = pool::<false>(1);
        let knobs = knobs("fresh-at-cap.test");
        let origin = origin(&pool, "fresh-at-cap.test");
        let fresh = |origin: &Arc<OriginPool<Fake<false>>>| {
            let origin = Arc::clone(origin);
            tokio::spawn(async move { send(origin.checkout(true, None).await.unwrap()).await })
        };
        // Idle when the request comes.
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        a.release();
        let (b, second) = fresh(&origin).await.unwrap();
        assert_ne!(second, first, "a fresh connection");
        // Back while the request waits.
        let waiting = fresh(&origin);
        until("the request waits", || metrics.requests_queued.get() == 1).await;
        b.release();
        let (_c, third) = waiting.await.unwrap();
        assert_ne!(third, second, "a fresh connection");
        assert_eq!(knobs.dials.load(SeqCst), 3);
        assert_eq!(metrics.connections_open.get(), 1, "within the cap");
    })
    .await;
}

#[tokio::test]
async fn shared_connections_take_requests_up_to_their_slots_then_another_opens() {
    within(async {
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("shared.test");
        knobs.slots.store(2, SeqCst);
        let origin = origin(&pool, "shared.test");
        let mut leases = Vec::new();
        for _ in 0..3 {
            leases.push(send(origin.checkout(false, None).await.unwrap()).await);
        }
        let ids: Vec<usize> = leases.iter().map(|(_, id)| *id).collect();
        assert_eq!(ids[0], ids[1], "two requests share the first connection");
        assert_ne!(ids[1], ids[2], "the third opens another");
        assert_eq!(knobs.dials.load(SeqCst), 2);
        let by = metrics.protocol(LABEL);
        assert_eq!((by.connections_open.get(), by.slots_active.get()), (2, 3));

        // The first connection's requests end: the next goes to the busiest
        // connection with room, so that an idle one can close.
        for (lease, _) in leases.drain(..2) {
            lease.release();
        }
        let (_, id) = send(origin.checkout(false, None).await.unwrap()).await;
        assert_eq!(id, ids[2]);
        assert_eq!(knobs.dials.load(SeqCst), 2);
        assert_eq!(by.connections_idle.get(), 1);
    })
    .await;
}

#[tokio::test]
async fn full_shared_connections_make_requests_wait_when_no_more_may_open() {
    within(async {
        let (pool, metrics) = pool_with::<true>(PoolConfig {
            more_shared_when_full: false,
            ..PoolConfig::default()
        });
        let knobs = knobs("single.test");
        knobs.slots.store(1, SeqCst);
        let origin = origin(&pool, "single.test");
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        let waiting = request(&origin);
        until("the second waits", || metrics.requests_queued.get() == 1).await;
        settle().await;
        assert_eq!(knobs.dials.load(SeqCst), 1, "no second connection");
        a.release();
        let (_, got) = waiting.await.unwrap();
        assert_eq!(got, first);
    })
    .await;
}

#[tokio::test]
async fn a_shared_connection_that_allows_no_slot_makes_requests_wait_not_dial() {
    within(async {
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("zero.test");
        let origin = origin(&pool, "zero.test");
        let waiting: Vec<_> = (0..3).map(|_| request(&origin)).collect();
        until("all three wait on the one connection", || {
            metrics.requests_queued.get() == 3 && metrics.connections_open.get() == 1
        })
        .await;
        settle().await;
        assert_eq!(knobs.dials.load(SeqCst), 1, "0 slots means wait");

        // The peer allows more: the pool hears it through the reporter.
        knobs.slots.store(3, SeqCst);
        knobs.report_all();
        for task in waiting {
            task.await.unwrap();
        }
        assert_eq!(knobs.dials.load(SeqCst), 1);
    })
    .await;
}

/// The connection's driver sets its new limit before its report reaches the
/// pool: the origin's books hold in between (the debug check of the
/// candidates took the new limit for one the origin had missed), and the
/// report lets the waiter in.
#[tokio::test]
async fn a_limit_raised_before_its_report_arrives_keeps_the_books() {
    // Raised, not yet reported: the third checkout finds no candidate
    // (the full connection left them when the second looked) and waits.
    limit_moved_before_its_report("raised.test", 1, None, 2).await;
}

/// A limit lowered and raised back before either change is reported: a
/// checkout in between found the connection full and left it out of the
/// candidates; the books (checked on every unlock in debug builds) must
/// hold until the report arrives, and the report must bring it back.
#[tokio::test]
async fn a_limit_lowered_and_raised_back_before_its_report_keeps_the_books() {
    // Lowered to the one in flight, not reported: the second finds the
    // connection full; then back where the pool last noted it.
    limit_moved_before_its_report("dip.test", 2, Some(1), 2).await;
}

/// One connection allowing `slots`, one request on it; the limit set to
/// `before_second` (if any) and a second request, then to `before_third`
/// and a third, none of it reported: both wait. The report lets one in, the
/// first's end the other, all on the one connection.
async fn limit_moved_before_its_report(
    host: &str,
    slots: usize,
    before_second: Option<usize>,
    before_third: usize,
) {
    within(async {
        let (pool, metrics) = pool_with::<true>(PoolConfig {
            more_shared_when_full: false,
            ..PoolConfig::default()
        });
        let knobs = knobs(host);
        knobs.slots.store(slots, SeqCst);
        let origin = origin(&pool, host);
        let (first, conn) = send(origin.checkout(false, None).await.unwrap()).await;
        if let Some(n) = before_second {
            knobs.slots.store(n, SeqCst);
        }
        let second = request(&origin);
        until("the second waits", || metrics.requests_queued.get() == 1).await;
        knobs.slots.store(before_third, SeqCst);
        let third = request(&origin);
        until("the third waits", || metrics.requests_queued.get() == 2).await;
        knobs.report_all();
        until("one goes on the raised slot", || {
            metrics.requests_queued.get() == 1
        })
        .await;
        first.release();
        for waiting in [second, third] {
            let (_, got) = waiting.await.unwrap();
            assert_eq!(got, conn, "every stream goes on the one connection");
        }
        assert_eq!(knobs.dials.load(SeqCst), 1);
    })
    .await;
}

/// The origin's slot hint (what its connections declare) rose: a
/// connection not yet declared, which offers up to the hint, gained room,
/// and the requests waiting stayed in line until something else happened
/// on it (a stream's end, a new checkout) though it could take them now.
/// Found by the random steps (seed 4191 of 20,000).
#[tokio::test]
async fn a_raised_slot_hint_lets_waiters_onto_connections_not_yet_declared() {
    within(async {
        let (pool, metrics) = pool::<true>(3);
        let knobs = knobs("hint-raised.test");
        knobs.assumed.store(3, SeqCst);
        knobs.slots.store(2, SeqCst);
        let origin = origin(&pool, "hint-raised.test");
        let (_r1, first) = send(origin.checkout(false, None).await.unwrap()).await;
        // The first connection declares 1: each new one is given 1.
        knobs.conn(first).own_slots.store(1, SeqCst);
        knobs.declare(first);
        let waiting: Vec<_> = (0..4).map(|_| request(&origin)).collect();
        until("two on new connections, two wait", || {
            metrics.connections_open.get() == 3 && metrics.requests_queued.get() == 2
        })
        .await;
        // A new one declares 2: it takes one more, and the other new one,
        // undeclared, may now take 2 as well.
        let new = (0..3).find(|&c| c != first).unwrap();
        knobs.declare(new);
        until("both waiting requests are served", || {
            metrics.requests_queued.get() == 0
        })
        .await;
        for task in waiting {
            task.await.unwrap();
        }
        assert_eq!(knobs.dials.load(SeqCst), 3);
    })
    .await;
}

/// The connection's driver runs on another thread than the unlocks that
/// check the books, and its limit may rise while a check looks at it (an
/// HTTP/2 connection's first SETTINGS: from the assumed 100 to Go's 250).
/// The check read the limit twice, once to see whether it moved since the
/// pool noted it and once for the room: a rise in between read as "not
/// moved" and "room", and the check panicked ("connection N with room is no
/// candidate") with the books right and the report on its way. Here a
/// thread raises and lowers the limit (unreported) while this one checks.
#[tokio::test]
async fn a_limit_moving_on_another_thread_while_the_books_are_checked_keeps_them() {
    within(async {
        let (pool, metrics) = pool_with::<true>(PoolConfig {
            more_shared_when_full: false,
            ..PoolConfig::default()
        });
        let knobs = knobs("moving.test");
        knobs.slots.store(1, SeqCst);
        let origin = origin(&pool, "moving.test");
        let (_first, conn) = send(origin.checkout(false, None).await.unwrap()).await;
        // The second finds the connection full: it leaves the candidates.
        let _second = request(&origin);
        until("the second waits", || metrics.requests_queued.get() == 1).await;
        let c = knobs.conn(conn);
        /// Stops the other thread however this one leaves (a failed
        /// check panics).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, SeqCst);
            }
        }
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut i = 0;
                while !done.load(SeqCst) {
                    c.own_slots.store(1 + i % 2, SeqCst);
                    i += 1;
                }
            });
            let _stop = Stop(&done);
            for _ in 0..200_000 {
                origin.books();
            }
        });
        c.own_slots.store(1, SeqCst);
    })
    .await;
}

#[tokio::test]
async fn a_lowered_slot_limit_holds_new_requests_until_the_streams_above_it_end() {
    within(async {
        let (pool, metrics) = pool_with::<true>(PoolConfig {
            more_shared_when_full: false,
            ..PoolConfig::default()
        });
        let knobs = knobs("lowered.test");
        knobs.slots.store(3, SeqCst);
        let origin = origin(&pool, "lowered.test");
        let mut leases = Vec::new();
        for _ in 0..3 {
            leases.push(send(origin.checkout(false, None).await.unwrap()).await.0);
        }
        knobs.slots.store(1, SeqCst);
        knobs.report_all();
        let waiting = request(&origin);
        until("the fourth waits", || metrics.requests_queued.get() == 1).await;
        // Two of three end: one is still in flight, the limit is 1.
        leases.pop().unwrap().release();
        leases.pop().unwrap().release();
        settle().await;
        assert!(!waiting.is_finished(), "sent above the lowered limit");
        leases.pop().unwrap().release();
        waiting.await.unwrap();
        assert_eq!(knobs.dials.load(SeqCst), 1);
    })
    .await;
}

/// A server whose stream limit is above the one assumed until its
/// SETTINGS (HTTP/2 assumes 100; nginx says 128): 256 requests at once
/// need two connections, and take two.
#[tokio::test]
async fn a_limit_above_the_assumed_one_opens_only_the_connections_needed() {
    within(async {
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("above-assumed.test");
        knobs.assumed.store(100, SeqCst);
        knobs.slots.store(128, SeqCst);
        let origin = origin(&pool, "above-assumed.test");
        let requests: Vec<_> = (0..256).map(|_| request(&origin)).collect();
        until("100 on the first connection, the rest wait", || {
            metrics.protocol(LABEL).slots_active.get() == 100
                && metrics.requests_queued.get() == 156
        })
        .await;
        knobs.declare(0);
        let mut leases = Vec::new();
        for r in requests {
            leases.push(r.await.unwrap());
        }
        let on = |id| leases.iter().filter(|(_, c)| *c == id).count();
        assert_eq!(knobs.dials.load(SeqCst), 2, "{:?}", (on(0), on(1), on(2)));
        assert_eq!((on(0), on(1)), (128, 128));
    })
    .await;
}

#[tokio::test]
async fn a_shared_connection_takes_requests_before_its_peer_declares_its_slots() {
    within(async {
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("undeclared.test");
        knobs.assumed.store(3, SeqCst);
        knobs.slots.store(1, SeqCst);
        let origin = origin(&pool, "undeclared.test");
        let requests: Vec<_> = (0..5).map(|_| request(&origin)).collect();
        // The assumed 3 go on the new connection at once; the other two wait
        // for it to declare its slots rather than dial on a guess.
        until("two wait, three are on the first connection", || {
            metrics.requests_queued.get() == 2 && metrics.protocol(LABEL).slots_active.get() == 3
        })
        .await;
        settle().await;
        assert_eq!(knobs.dials.load(SeqCst), 1, "one probe until declared");

        // It declares 1 slot: nothing more goes on it, and the next
        // connections are given no more than 1 each before their own
        // declarations (the origin's hint), so the two waiting get one each.
        knobs.declare(0);
        let mut leases = Vec::new();
        for r in requests {
            leases.push(r.await.unwrap());
        }
        let on = |id| leases.iter().filter(|(_, c)| *c == id).count();
        assert_eq!(
            knobs.dials.load(SeqCst),
            3,
            "{:?}",
            leases.iter().map(|l| l.1).collect::<Vec<_>>()
        );
        assert_eq!((on(0), on(1), on(2)), (3, 1, 1));
    })
    .await;
}

#[tokio::test]
async fn a_connection_going_away_takes_no_new_requests_and_what_it_refused_goes_to_another() {
    within(async {
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("goaway.test");
        knobs.slots.store(10, SeqCst);
        let origin = origin(&pool, "goaway.test");
        let (in_flight, first) = send(origin.checkout(false, None).await.unwrap()).await;
        // Checked out before the peer goes away, sent after: refused.
        let refused = origin.checkout(false, None).await.unwrap();
        knobs.go_away(first, None);
        let req = match refused.send(Request::new(Body::empty()), None).await {
            Err(Refused(req)) => req,
            Ok(_) => panic!("a going-away connection answered a new request"),
        };
        assert_eq!(
            metrics.protocol(LABEL).slots_active.get(),
            1,
            "the refused request's slot is free again"
        );
        // Sent again (as the client's retry does): on a new connection.
        let lease = origin.checkout(false, None).await.unwrap();
        let (lease, second) = match lease.send(req, None).await {
            Ok(sent) => sent,
            Err(_) => panic!("refused again"),
        };
        assert_ne!(second, first);
        // The request already answered on the old connection is unharmed;
        // when it ends, the old connection closes.
        in_flight.release();
        until("the old connection closes", || {
            metrics.connections_open.get() == 1
        })
        .await;
        lease.release();
        assert_eq!(knobs.dials.load(SeqCst), 2);
    })
    .await;
}

#[tokio::test]
async fn a_request_limit_a_goaway_showed_caps_the_requests_of_later_connections() {
    within(async {
        let (pool, _) = pool::<true>(usize::MAX);
        let knobs = knobs("budget.test");
        knobs.slots.store(10, SeqCst);
        let origin = origin(&pool, "budget.test");
        let (lease, first) = send(origin.checkout(false, None).await.unwrap()).await;
        // The server went away on reading its 4th request: 3 per
        // connection, so the pool gives each connection 2 at most.
        let served = Served {
            count: 3,
            certain: true,
        };
        knobs.go_away(first, Some(served));
        lease.release();
        let mut leases = Vec::new();
        for _ in 0..6 {
            leases.push(send(origin.checkout(false, None).await.unwrap()).await);
        }
        let mut per_conn: HashMap<usize, usize> = HashMap::new();
        for (_, id) in &leases {
            *per_conn.entry(*id).or_default() += 1;
        }
        assert!(!per_conn.contains_key(&first));
        assert!(per_conn.values().all(|&n| n <= 2), "{per_conn:?}");
        assert!(per_conn.len() >= 3, "{per_conn:?}");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn connections_retire_after_their_lifetime_but_never_under_a_request() {
    within_paused(async {
        let (pool, metrics) = pool_with::<false>(PoolConfig {
            lifetime: Some(Duration::from_secs(60)),
            ..PoolConfig::default()
        });
        let knobs = knobs("lifetime.test");
        let origin = origin(&pool, "lifetime.test");
        // Idle past its lifetime: not handed out again.
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        a.release();
        tokio::time::advance(Duration::from_secs(61)).await;
        let b = origin.checkout(false, None).await.unwrap();
        assert_eq!(metrics.connections_open.get(), 1, "the expired one closed");
        // In use past its lifetime: the request ends well, then it closes.
        tokio::time::advance(Duration::from_secs(61)).await;
        let (b, second) = send(b).await;
        assert_ne!(second, first);
        b.release();
        assert_eq!(metrics.connections_open.get(), 0);
        assert_eq!(knobs.dials.load(SeqCst), 2);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_shared_connection_past_its_lifetime_takes_no_new_requests() {
    within_paused(async {
        let (pool, metrics) = pool_with::<true>(PoolConfig {
            lifetime: Some(Duration::from_secs(60)),
            ..PoolConfig::default()
        });
        let knobs = knobs("shared-lifetime.test");
        knobs.slots.store(10, SeqCst);
        let origin = origin(&pool, "shared-lifetime.test");
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        tokio::time::advance(Duration::from_secs(61)).await;
        let (b, second) = send(origin.checkout(false, None).await.unwrap()).await;
        assert_ne!(second, first, "a new request went to an expired connection");
        a.release();
        until("the expired one closes once idle", || {
            metrics.connections_open.get() == 1
        })
        .await;
        b.release();
    })
    .await;
}

/// A request waiting for a stream gets none on a connection past its
/// lifetime when a stream of it ends: a connection kept full by waiters
/// would otherwise never rotate (every stream that ends hands its slot on).
#[tokio::test(start_paused = true)]
async fn a_waiter_gets_no_stream_on_a_connection_past_its_lifetime() {
    within_paused(async {
        let (pool, metrics) = pool_with::<true>(PoolConfig {
            lifetime: Some(Duration::from_secs(60)),
            more_shared_when_full: false,
            ..PoolConfig::default()
        });
        let knobs = knobs("waiter-lifetime.test");
        knobs.slots.store(2, SeqCst);
        let origin = origin(&pool, "waiter-lifetime.test");
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        let (c, _) = send(origin.checkout(false, None).await.unwrap()).await;
        let waiting = request(&origin);
        until("the third waits", || metrics.requests_queued.get() == 1).await;
        tokio::time::advance(Duration::from_secs(61)).await;
        // One of its two streams ends: the other keeps it open.
        a.release();
        let (b, second) = waiting.await.unwrap();
        assert_ne!(second, first, "a waiter went to an expired connection");
        assert_eq!(knobs.dials.load(SeqCst), 2);
        c.release();
        until("the expired one closes once idle", || {
            metrics.connections_open.get() == 1
        })
        .await;
        b.release();
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn idle_connections_close_after_the_idle_timeout_and_not_before() {
    within_paused(async {
        let config = PoolConfig {
            idle_timeout: Some(Duration::from_secs(4)),
            ..PoolConfig::default()
        };
        let (exclusive, exclusive_metrics) = pool_with::<false>(config.clone());
        let (shared, shared_metrics) = pool_with::<true>(config);
        knobs("idle-shared.test").slots.store(10, SeqCst);
        let a = origin(&exclusive, "idle-exclusive.test");
        let b = origin(&shared, "idle-shared.test");
        send(a.checkout(false, None).await.unwrap())
            .await
            .0
            .release();
        send(b.checkout(false, None).await.unwrap())
            .await
            .0
            .release();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(exclusive_metrics.connections_open.get(), 1);
        assert_eq!(shared_metrics.connections_open.get(), 1);
        // The scavenger runs every second (a quarter of the timeout).
        tokio::time::sleep(Duration::from_secs(4)).await;
        until("both idle connections close", || {
            exclusive_metrics.connections_open.get() == 0
                && shared_metrics.connections_open.get() == 0
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn a_waiter_counts_on_a_draining_connection_until_its_drain_is_slow() {
    within(async {
        let (pool, metrics) = pool::<false>(usize::MAX);
        let knobs = knobs("drain.test");
        let origin = origin(&pool, "drain.test");

        // A drained connection comes back to the one waiting for it.
        let (a, first) = send(origin.checkout(false, None).await.unwrap()).await;
        origin.drain_started();
        let waiting = request(&origin);
        until("the request waits", || metrics.requests_queued.get() == 1).await;
        settle().await;
        assert_eq!(knobs.dials.load(SeqCst), 1, "it counted on the drain");
        origin.drain_finished(a.into_reusable());
        let (b, got) = waiting.await.unwrap();
        assert_eq!(got, first);

        // A slow drain: the waiter gets a connection of its own.
        origin.drain_started();
        let waiting = request(&origin);
        until("the request waits", || metrics.requests_queued.get() == 1).await;
        origin.drain_slow();
        let (_, got) = waiting.await.unwrap();
        assert_ne!(got, first);
        assert_eq!(knobs.dials.load(SeqCst), 2);
        drop(b);
    })
    .await;
}

/// With 10,000 shared connections (1,000,000 long polls at 100 streams
/// each), a checkout that walks every connection costs 10,000 steps; the
/// search looks at a few candidates, picks the busiest connection with room
/// whatever the order its streams ended in, and keeps the gauges right
/// (the debug build checks the books on every unlock).
#[tokio::test(start_paused = true)]
async fn the_busiest_shared_connection_with_room_is_found_without_walking_them_all() {
    within_paused(async {
        const CONNS: usize = 300;
        const SLOTS: usize = 10;
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("many-shared.test");
        knobs.slots.store(SLOTS, SeqCst);
        let origin = origin(&pool, "many-shared.test");
        let mut by_conn: HashMap<usize, Vec<Lease<Fake<true>>>> = HashMap::new();
        for _ in 0..CONNS * SLOTS {
            let (lease, id) = send(origin.checkout(false, None).await.unwrap()).await;
            by_conn.entry(id).or_default().push(lease);
        }
        assert_eq!(knobs.dials.load(SeqCst), CONNS, "every connection full");
        assert!(by_conn.values().all(|l| l.len() == SLOTS));
        let by = metrics.protocol(LABEL);
        assert_eq!(by.slots_active.get(), (CONNS * SLOTS) as u64);

        // Streams end unevenly: connection k keeps k % SLOTS of its streams.
        let mut ids: Vec<usize> = by_conn.keys().copied().collect();
        ids.sort_unstable();
        for &id in &ids {
            let leases = by_conn.get_mut(&id).unwrap();
            for lease in leases.drain(id % SLOTS..) {
                lease.release();
            }
        }
        let active = |by_conn: &HashMap<usize, Vec<Lease<Fake<true>>>>| {
            by_conn.values().map(Vec::len).sum::<usize>() as u64
        };
        assert_eq!(by.slots_active.get(), active(&by_conn));
        assert_eq!(
            by.connections_idle.get(),
            ids.iter().filter(|&&id| id % SLOTS == 0).count() as u64
        );

        // New streams go to the busiest connection with room, the oldest
        // first among equals, until it is full.
        let before = origin.streams_examined();
        let checkouts = 2 * CONNS;
        for _ in 0..checkouts {
            let expected = ids
                .iter()
                .copied()
                .filter(|id| by_conn[id].len() < SLOTS)
                .max_by_key(|id| (by_conn[id].len(), std::cmp::Reverse(*id)))
                .unwrap();
            let (lease, id) = send(origin.checkout(false, None).await.unwrap()).await;
            assert_eq!(id, expected);
            by_conn.get_mut(&id).unwrap().push(lease);
        }
        let examined = origin.streams_examined() - before;
        assert!(
            examined <= 3 * checkouts,
            "{examined} candidates looked at for {checkouts} checkouts of {CONNS} connections"
        );
        assert_eq!(knobs.dials.load(SeqCst), CONNS, "no connection opened");
        assert_eq!(by.slots_active.get(), active(&by_conn));

        // A connection going away takes no new stream, and closes once its
        // streams end; the books follow.
        let leaving = *ids
            .iter()
            .filter(|id| by_conn[id].len() < SLOTS)
            .max_by_key(|id| by_conn[id].len())
            .unwrap();
        knobs.go_away(leaving, None);
        settle().await;
        for _ in 0..10 {
            let (lease, id) = send(origin.checkout(false, None).await.unwrap()).await;
            assert_ne!(id, leaving);
            by_conn.get_mut(&id).unwrap().push(lease);
        }
        let open = metrics.connections_open.get();
        for lease in by_conn.remove(&leaving).unwrap() {
            lease.release();
        }
        until("the connection that went away closes", || {
            metrics.connections_open.get() == open - 1
        })
        .await;
        assert_eq!(by.slots_active.get(), active(&by_conn));
        for lease in by_conn.into_values().flatten() {
            lease.release();
        }
        assert_eq!(by.slots_active.get(), 0);
        assert_eq!(by.connections_idle.get(), (CONNS - 1) as u64);
    })
    .await;
}

/// The origin made last is found without the map (`Origins::last`), and
/// that shortcut neither keeps an origin the scavenger forgets alive nor
/// hands it out afterwards.
#[tokio::test(start_paused = true)]
async fn the_last_origin_is_found_again_and_forgotten_like_the_others() {
    let (pool, _) = pool::<false>(usize::MAX);
    let a = origin(&pool, "last.test");
    assert!(Arc::ptr_eq(&a, &origin(&pool, "last.test")));
    // Another spelling of the same origin is the same origin (through the map).
    assert!(Arc::ptr_eq(&a, &origin(&pool, "LAST.test")));
    let other = origin(&pool, "other.test");
    assert!(!Arc::ptr_eq(&a, &other));
    assert!(Arc::ptr_eq(&a, &origin(&pool, "last.test")));
    assert!(Arc::ptr_eq(&other, &origin(&pool, "other.test")));
    // https is another origin, however the bytes compare.
    let secure = pool
        .origin(&"https://other.test/".parse().unwrap())
        .unwrap();
    assert!(!Arc::ptr_eq(&other, &secure));

    // Nothing holds them but the pool: the scavenger forgets all three,
    // the last one made included.
    let gone = [&a, &other, &secure].map(Arc::downgrade);
    drop((a, other, secure));
    pool.inner.scavenge(Instant::now());
    assert!(gone.iter().all(|o| o.upgrade().is_none()));
    let again = origin(&pool, "other.test");
    assert!(Arc::ptr_eq(&again, &origin(&pool, "other.test")));
}
