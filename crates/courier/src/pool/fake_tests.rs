//! The pool with no HTTP in it: a fake [`Protocol`] whose connections are
//! in-memory pipes and whose sends answer at once with the connection's id.
//!
//! Why: DESIGN.md says the pool is generic over one small trait and knows
//! nothing of protocols. These tests hold it to that (they compile and run
//! with no request head, no frame, no socket) and pin the pool's own rules
//! where no protocol can blur them: the per-origin cap, the FIFO queue, LIFO
//! reuse, and a shared connection's slots (more connections when every slot
//! is taken; none while the peer allows 0; before the peer declares them,
//! the protocol's assumption, within what the origin's last connection
//! declared).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::{Authority, Scheme};
use http::Request;

use super::protocol::{self, Handshake, Kind, Protocol, Reporter, Sent, Served};
use super::{Lease, OriginPool, Pool};
use crate::body::Body;
use crate::config::Config;
use crate::connect::{AsyncIo, Connect, Connecting, ProxyEndpoint};
use crate::error::Error;
use crate::metrics::Metrics;

/// What a test controls of one fake origin (looked up by host name: the
/// protocol's functions have no `self`).
#[derive(Default)]
struct Knobs {
    /// Slots every shared connection allows now, once declared.
    slots: AtomicUsize,
    /// New shared connections leave their slots undeclared, assuming these
    /// (0: they declare at once), until the test declares them.
    assumed: AtomicUsize,
    /// Each shared connection's declaration, in the order they were made.
    declared: Mutex<Vec<Arc<AtomicBool>>>,
    /// Connections dialled.
    dials: AtomicUsize,
    /// Connections made (each one's id).
    made: AtomicUsize,
    /// The shared connections' reporters, to tell the pool of a change.
    reporters: Mutex<Vec<Reporter>>,
}

static ORIGINS: LazyLock<Mutex<HashMap<String, Arc<Knobs>>>> = LazyLock::new(Default::default);

fn knobs(host: &str) -> Arc<Knobs> {
    let mut origins = ORIGINS.lock().unwrap();
    Arc::clone(origins.entry(host.to_owned()).or_default())
}

/// Exclusive connections only (`SHARED = false`) or shared ones only.
enum Fake<const SHARED: bool> {}

/// An exclusive fake connection: its id is what every send answers.
struct FakeExclusive {
    id: usize,
}

/// A shared fake connection.
struct FakeShared {
    id: usize,
    knobs: Arc<Knobs>,
    closed: AtomicBool,
    declared: Arc<AtomicBool>,
}

impl Knobs {
    /// Shared connection `i` (in the order made) declares its slots, and
    /// tells the pool.
    fn declare(&self, i: usize) {
        self.declared.lock().unwrap()[i].store(true, SeqCst);
        self.reporters.lock().unwrap()[i].report();
    }
}

impl<const SHARED: bool> Protocol for Fake<SHARED> {
    type Exclusive = FakeExclusive;
    type Shared = FakeShared;
    type Answer = usize;
    type Failure = Error;
    type Origin = Arc<Knobs>;

    fn origin(_: &Scheme, authority: &Authority, _: Option<&ProxyEndpoint>) -> Arc<Knobs> {
        knobs(authority.host())
    }

    fn expect(_: &Config, _: bool) -> Option<Kind> {
        Some(if SHARED {
            Kind::Shared
        } else {
            Kind::Exclusive
        })
    }

    fn negotiate(config: &Config, _: &Arc<Knobs>, tls: bool, _: bool) -> Result<Kind, Error> {
        Ok(Self::expect(config, tls).expect("decided by the configuration"))
    }

    fn handshake<S: AsyncIo>(
        _stream: S,
        kind: Kind,
        _: &Config,
        knobs: &Arc<Knobs>,
        reporter: Reporter,
        _: tokio::time::Instant,
    ) -> Handshake<Self> {
        let id = knobs.made.fetch_add(1, SeqCst);
        match kind {
            Kind::Exclusive => Handshake::Exclusive(FakeExclusive { id }),
            Kind::Shared => {
                knobs.reporters.lock().unwrap().push(reporter);
                let declared = Arc::new(AtomicBool::new(knobs.assumed.load(SeqCst) == 0));
                knobs.declared.lock().unwrap().push(Arc::clone(&declared));
                Handshake::Shared {
                    conn: FakeShared {
                        id,
                        knobs: Arc::clone(knobs),
                        closed: AtomicBool::new(false),
                        declared,
                    },
                    // Open until the runtime ends.
                    driver: Box::pin(std::future::pending()),
                }
            }
        }
    }
}

impl<const SHARED: bool> protocol::Exclusive<Fake<SHARED>> for FakeExclusive {
    fn is_open(&mut self) -> bool {
        true
    }

    fn is_reusable(&self) -> bool {
        true
    }

    type Prepared = ();

    fn prepare(&mut self, _: &Request<Body>, _: &OriginPool<Fake<SHARED>>) {}

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
    type Exchange = usize;

    fn slots(&self) -> usize {
        match self.declared.load(SeqCst) {
            true => self.knobs.slots.load(SeqCst),
            false => self.knobs.assumed.load(SeqCst),
        }
    }

    fn declared(&self) -> Option<usize> {
        self.declared
            .load(SeqCst)
            .then(|| self.knobs.slots.load(SeqCst))
    }

    fn accepts_requests(&self) -> bool {
        !self.closed.load(SeqCst)
    }

    fn is_closed(&self) -> bool {
        self.closed.load(SeqCst)
    }

    fn take_served(&self) -> Option<Served> {
        None
    }

    fn send(&self, _: Request<Body>) -> usize {
        self.id
    }

    fn poll_send(
        id: &mut usize,
        _: &mut Context<'_>,
        _: &OriginPool<Fake<SHARED>>,
    ) -> Poll<Sent<Fake<SHARED>>> {
        Poll::Ready(Ok(*id))
    }
}

/// Every connection is an in-memory pipe nobody reads; counts the dials.
struct Pipes;

impl Connect for Pipes {
    fn connect(&self, host: &str, _port: u16) -> Connecting {
        let knobs = knobs(host);
        Box::pin(async move {
            knobs.dials.fetch_add(1, SeqCst);
            let (ours, _theirs) = tokio::io::duplex(64);
            Ok::<_, io::Error>(Box::new(ours) as Box<dyn AsyncIo>)
        })
    }
}

fn pool<const SHARED: bool>(max_connections_per_host: usize) -> (Pool<Fake<SHARED>>, Arc<Metrics>) {
    let mut config = Config {
        max_connections_per_host,
        proxy_from_env: false,
        ..Config::default()
    };
    config.dial.connector = Some(Arc::new(Pipes));
    let metrics = Arc::new(Metrics::default());
    (Pool::new(config, Arc::clone(&metrics), None), metrics)
}

fn origin<P: Protocol>(pool: &Pool<P>, host: &str) -> Arc<OriginPool<P>> {
    pool.origin(&format!("http://{host}/").parse().unwrap())
        .unwrap()
}

/// Sends a request on `lease`; the answer is the connection's id.
async fn send<P: Protocol<Answer = usize>>(lease: Lease<P>) -> (Lease<P>, usize) {
    match lease.send(Request::new(Body::empty())).await {
        Ok(sent) => sent,
        Err(_) => panic!("a fake send does not fail"),
    }
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
        let waiter = |origin: &Arc<OriginPool<Fake<false>>>| {
            let origin = Arc::clone(origin);
            tokio::spawn(async move { send(origin.checkout(false, None).await.unwrap()).await })
        };
        let third = waiter(&origin);
        until("the third request waits", || {
            metrics.requests_queued.get() == 1
        })
        .await;
        let fourth = waiter(&origin);
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
        assert_eq!(metrics.snapshot().connections_active_http1, 2);

        // Idle: the one returned last is the warmest, and is taken first.
        c.release();
        d.release();
        let m = metrics.snapshot();
        assert_eq!((m.connections_idle_http1, m.connections_open_http1), (2, 2));
        let (_, got) = send(origin.checkout(false, None).await.unwrap()).await;
        assert_eq!(got, first, "the connection returned last");
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
        let m = metrics.snapshot();
        assert_eq!((m.connections_active_http2, m.http2_streams_active), (2, 3));

        // The first connection's requests end: the next goes to the busiest
        // connection with room, so that an idle one can close.
        for (lease, _) in leases.drain(..2) {
            lease.release();
        }
        let (_, id) = send(origin.checkout(false, None).await.unwrap()).await;
        assert_eq!(id, ids[2]);
        assert_eq!(knobs.dials.load(SeqCst), 2);
        assert_eq!(metrics.snapshot().connections_idle_http2, 1);
    })
    .await;
}

#[tokio::test]
async fn a_shared_connection_that_allows_no_slot_makes_requests_wait_not_dial() {
    within(async {
        let (pool, metrics) = pool::<true>(usize::MAX);
        let knobs = knobs("zero.test");
        let origin = origin(&pool, "zero.test");
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let origin = Arc::clone(&origin);
                tokio::spawn(async move { send(origin.checkout(false, None).await.unwrap()).await })
            })
            .collect();
        until("all three wait on the one connection", || {
            metrics.requests_queued.get() == 3 && metrics.connections_open.get() == 1
        })
        .await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(knobs.dials.load(SeqCst), 1, "0 slots means wait");

        // The peer allows more: the pool hears it through the reporter.
        knobs.slots.store(3, SeqCst);
        for reporter in knobs.reporters.lock().unwrap().iter() {
            reporter.report();
        }
        for task in waiting {
            task.await.unwrap();
        }
        assert_eq!(knobs.dials.load(SeqCst), 1);
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
        let requests: Vec<_> = (0..5)
            .map(|_| {
                let origin = Arc::clone(&origin);
                tokio::spawn(async move { send(origin.checkout(false, None).await.unwrap()).await })
            })
            .collect();
        // The assumed 3 go on the new connection at once; the other two wait
        // for it to declare its slots rather than dial on a guess.
        until("two wait, three are on the first connection", || {
            let m = metrics.snapshot();
            m.requests_queued == 2 && m.http2_streams_active == 3
        })
        .await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
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
