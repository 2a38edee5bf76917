//! The pool's books under long random sequences of what its requests,
//! connections, peers and clock can do.
//!
//! Why: the debug check of the shared connections' books (`check_books`,
//! run on every unlock of an origin) panicked once in a full interop run,
//! and the window fixed since (a limit that dipped and came back before its
//! report) is one of many orders in which checkouts, stream ends, limit
//! changes and their reports, GOAWAYs, closes, dials, requests giving up
//! and the clock can meet. Each seed here makes a sequence of those steps
//! and runs it against the fake protocol on paused time, on one thread (so
//! a seed replays the same run), and checks:
//! - after every step, the books (the debug check, on the unlock of
//!   [`OriginPool::books`]) and that no task panicked;
//! - at rest with every change reported, that no request waits while a
//!   connection would take it, and that the open-connection gauge is the
//!   origin's count;
//! - at the end (every report in, every limit above 0, every dial let
//!   through, every lease given back), that every request was served or
//!   failed without the clock moving, and that every count is back to 0
//!   once the pool is dropped.
//!
//! A failing sequence is shrunk to a few steps and printed with its set-up,
//! to become a named test.

use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicUsize;
use std::sync::Once;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::*;
use crate::pool::origin::{Books, WaitSlot};

/// Seeds per kind of connection, and steps per seed: about a second each
/// in a debug build.
const SEEDS: u64 = 300;
const STEPS: usize = 300;

/// splitmix64: small, seeded, and enough to pick steps.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

/// One step. Numbers pick among what exists when the step runs (modulo
/// its count), so a sequence with steps removed still runs.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// A request checks out (a task): for a fresh connection only, waiting
    /// at most so many milliseconds.
    Checkout {
        fresh: bool,
        timeout_ms: Option<u16>,
    },
    /// A checkout from the test's task: a lease, or a place in line kept.
    TryCheckout,
    /// A place in line kept is given up (its request cancelled).
    GiveUp(u8),
    /// A place in line kept is waited on (a task).
    Wait(u8),
    /// A waiting request's task is cancelled.
    Abort(u8),
    /// A lease goes back: its response was read.
    Release(u8),
    /// A lease is dropped: an exclusive connection closes, a stream ends.
    Drop(u8),
    /// A request goes out on a lease (a going-away connection refuses it,
    /// and the lease goes).
    Send(u8),
    /// A lease's body is drained (exclusive; a shared lease is released).
    Drain(u8),
    /// A drain ends: `quick`ly, in its grace period, or not (then it ends
    /// at a later `DrainEnd`); with the connection reusable (`ok`) or not.
    DrainEnd { which: u8, quick: bool, ok: bool },
    /// A shared connection's peer allows `slots` (the report may wait).
    Limit { conn: u8, slots: u8, report: bool },
    /// A report that waited arrives.
    Report(u8),
    /// A shared connection's peer declares its slots.
    Declare { conn: u8, report: bool },
    /// A shared connection's peer goes away, having served so many.
    GoAway {
        conn: u8,
        served: Option<(u8, bool)>,
        report: bool,
    },
    /// A connection's peer closes it.
    Close(u8),
    /// So many dials waiting at the gate go on.
    Dials(u8),
    /// The next dial fails.
    FailNext,
    /// The clock moves (milliseconds).
    Advance(u16),
    /// Every task runs as far as it can; then the books are checked at rest.
    Settle,
}

/// What a seed runs against.
#[derive(Clone, Debug)]
struct Setup {
    cap: usize,
    more_shared_when_full: bool,
    idle_timeout: Option<Duration>,
    lifetime: Option<Duration>,
    /// Slots a new shared connection assumes until declared (0: declared at once).
    assumed: usize,
    /// Slots a shared connection declares unless told otherwise.
    slots: usize,
}

impl Setup {
    fn new(rng: &mut Rng) -> Setup {
        let secs = |rng: &mut Rng, from: u64, to: u64| {
            Duration::from_millis(1000 * from + rng.below(1000 * (to - from)))
        };
        Setup {
            cap: [1, 2, 3, usize::MAX][rng.below(4) as usize],
            more_shared_when_full: rng.chance(70),
            idle_timeout: rng.chance(50).then(|| secs(rng, 1, 4)),
            lifetime: rng.chance(30).then(|| secs(rng, 2, 6)),
            assumed: [0, 0, 0, 1, 3, 100][rng.below(6) as usize],
            slots: [1, 2, 3, 5, 100][rng.below(5) as usize],
        }
    }
}

fn ops(rng: &mut Rng, n: usize) -> Vec<Op> {
    // Weights: requests come and go most; the peer's moves and the clock
    // between them.
    const TABLE: &[(u64, u8)] = &[
        (14, 0),
        (6, 1),
        (3, 2),
        (2, 3),
        (3, 4),
        (12, 5),
        (4, 6),
        (4, 7),
        (3, 8),
        (3, 9),
        (9, 10),
        (6, 11),
        (2, 12),
        (2, 13),
        (2, 14),
        (6, 15),
        (2, 16),
        (4, 17),
        (6, 18),
    ];
    let total: u64 = TABLE.iter().map(|(w, _)| w).sum();
    (0..n)
        .map(|_| {
            let mut pick = rng.below(total);
            let kind = TABLE
                .iter()
                .find(|(w, _)| {
                    let hit = pick < *w;
                    pick = pick.saturating_sub(*w);
                    hit
                })
                .map_or(18, |(_, k)| *k);
            let b = rng.byte();
            match kind {
                0 => Op::Checkout {
                    fresh: rng.chance(10),
                    timeout_ms: rng.chance(30).then(|| 100 + rng.below(3000) as u16),
                },
                1 => Op::TryCheckout,
                2 => Op::GiveUp(b),
                3 => Op::Wait(b),
                4 => Op::Abort(b),
                5 => Op::Release(b),
                6 => Op::Drop(b),
                7 => Op::Send(b),
                8 => Op::Drain(b),
                9 => Op::DrainEnd {
                    which: b,
                    quick: rng.chance(60),
                    ok: rng.chance(70),
                },
                10 => Op::Limit {
                    conn: b,
                    slots: [0, 1, 2, 3, 5][rng.below(5) as usize],
                    report: rng.chance(50),
                },
                11 => Op::Report(b),
                12 => Op::Declare {
                    conn: b,
                    report: rng.chance(60),
                },
                13 => Op::GoAway {
                    conn: b,
                    served: rng
                        .chance(50)
                        .then(|| (1 + rng.below(6) as u8, rng.chance(50))),
                    report: rng.chance(60),
                },
                14 => Op::Close(b),
                15 => Op::Dials(1 + rng.below(3) as u8),
                16 => Op::FailNext,
                17 => Op::Advance(10 + rng.below(3000) as u16),
                _ => Op::Settle,
            }
        })
        .collect()
}

thread_local! {
    /// The first panic on this thread while a run records (tasks' panics
    /// included: the runtime runs them on this thread).
    static PANICKED: RefCell<Option<String>> = const { RefCell::new(None) };
    static RECORDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Panics while recording are kept (and not printed: shrinking fails
/// runs on purpose); others go to the usual hook.
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let usual = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if RECORDING.get() {
                PANICKED.with(|p| {
                    p.borrow_mut().get_or_insert_with(|| info.to_string());
                });
            } else {
                usual(info);
            }
        }));
    });
}

fn panicked() -> Option<String> {
    PANICKED.with(|p| p.borrow().clone())
}

/// Runs `ops` on a fresh pool and origin; the first thing found wrong.
fn run<const SHARED: bool>(setup: &Setup, ops: &[Op]) -> Result<(), String> {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let host = format!("random-{}-{}.test", SHARED, RUNS.fetch_add(1, SeqCst));
    record_panics();
    PANICKED.with(|p| p.borrow_mut().take());
    RECORDING.set(true);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(World::<SHARED>::new(setup, &host).run(ops))
    }));
    drop(runtime);
    RECORDING.set(false);
    ORIGINS.lock().unwrap().remove(&host);
    let result = result.unwrap_or_else(|_| Err("the test's task panicked".into()));
    match panicked() {
        Some(panic) => Err(format!("panic: {panic}")),
        None => result,
    }
}

struct World<const SHARED: bool> {
    /// Kept until the end, which drops it.
    _pool: Pool<Fake<SHARED>>,
    metrics: Arc<Metrics>,
    origin: Arc<OriginPool<Fake<SHARED>>>,
    knobs: Arc<Knobs>,
    gate: Arc<Semaphore>,
    checkouts: Vec<JoinHandle<Result<Lease<Fake<SHARED>>, Error>>>,
    places: Vec<WaitSlot<Fake<SHARED>>>,
    leases: Vec<Lease<Fake<SHARED>>>,
    /// Leases whose body drains, and whether the drain was slow.
    drains: Vec<(Lease<Fake<SHARED>>, bool)>,
    /// Connections (the fake's index) with a change not reported yet.
    unreported: Vec<usize>,
}

impl<const SHARED: bool> World<SHARED> {
    fn new(setup: &Setup, host: &str) -> World<SHARED> {
        let (pool, metrics) = pool_with::<SHARED>(PoolConfig {
            max_connections_per_host: setup.cap,
            idle_timeout: setup.idle_timeout,
            lifetime: setup.lifetime,
            more_shared_when_full: setup.more_shared_when_full,
            ..PoolConfig::default()
        });
        let knobs = knobs(host);
        knobs.slots.store(setup.slots, SeqCst);
        knobs.assumed.store(setup.assumed, SeqCst);
        let gate = Arc::new(Semaphore::new(0));
        *knobs.gate.lock().unwrap() = Some(Arc::clone(&gate));
        let origin = origin(&pool, host);
        World {
            _pool: pool,
            metrics,
            origin,
            knobs,
            gate,
            checkouts: Vec::new(),
            places: Vec::new(),
            leases: Vec::new(),
            drains: Vec::new(),
            unreported: Vec::new(),
        }
    }

    async fn run(mut self, ops: &[Op]) -> Result<(), String> {
        for (i, op) in ops.iter().enumerate() {
            self.step(*op).await;
            self.harvest().await?;
            let books = self.origin.books();
            if let Some(panic) = panicked() {
                return Err(format!("step {i} ({op:?}): {panic}"));
            }
            if matches!(op, Op::Settle) {
                self.at_rest(&books)
                    .map_err(|e| format!("step {i} (at rest): {e}; {books:?}"))?;
            }
        }
        self.finish().await
    }

    fn conn(&self, pick: u8) -> Option<(usize, Arc<ConnKnobs>)> {
        let conns = self.knobs.conns.lock().unwrap();
        if conns.is_empty() {
            return None;
        }
        let i = usize::from(pick) % conns.len();
        Some((i, Arc::clone(&conns[i])))
    }

    fn report(&mut self, conn: usize, now: bool) {
        if now {
            self.knobs.conn(conn).reporter.report();
        } else {
            self.unreported.push(conn);
        }
    }

    async fn step(&mut self, op: Op) {
        fn take<T>(v: &mut Vec<T>, pick: u8) -> Option<T> {
            (!v.is_empty()).then(|| v.swap_remove(usize::from(pick) % v.len()))
        }
        match op {
            Op::Checkout { fresh, timeout_ms } => {
                let origin = Arc::clone(&self.origin);
                let timeout = timeout_ms.map(|ms| Duration::from_millis(u64::from(ms)));
                self.checkouts.push(tokio::spawn(async move {
                    origin.checkout(fresh, timeout).await
                }));
            }
            Op::TryCheckout => match self.origin.try_checkout(false, Instant::now()) {
                Ok(lease) => self.leases.push(lease),
                Err(place) => self.places.push(place),
            },
            Op::GiveUp(pick) => drop(take(&mut self.places, pick)),
            Op::Wait(pick) => {
                if let Some(place) = take(&mut self.places, pick) {
                    let origin = Arc::clone(&self.origin);
                    self.checkouts
                        .push(tokio::spawn(origin.checkout_queued(place, false, None)));
                }
            }
            Op::Abort(pick) => {
                if let Some(task) = take(&mut self.checkouts, pick) {
                    task.abort();
                }
            }
            Op::Release(pick) => {
                if let Some(lease) = take(&mut self.leases, pick) {
                    lease.release();
                }
            }
            Op::Drop(pick) => drop(take(&mut self.leases, pick)),
            Op::Send(pick) => {
                if let Some(lease) = take(&mut self.leases, pick) {
                    if let Ok((lease, _)) = lease.send(Request::new(Body::empty()), None).await {
                        self.leases.push(lease);
                    }
                }
            }
            Op::Drain(pick) => {
                if let Some(lease) = take(&mut self.leases, pick) {
                    if lease.is_shared() {
                        lease.release();
                    } else {
                        self.origin.drain_started();
                        self.drains.push((lease, false));
                    }
                }
            }
            Op::DrainEnd { which, quick, ok } => {
                if let Some((lease, slow)) = take(&mut self.drains, which) {
                    self.end_drain(lease, slow, quick, ok);
                }
            }
            Op::Limit {
                conn,
                slots,
                report,
            } => {
                if let (true, Some((i, c))) = (SHARED, self.conn(conn)) {
                    c.own_slots.store(usize::from(slots), SeqCst);
                    self.report(i, report);
                }
            }
            Op::Report(pick) => {
                if let Some(i) = take(&mut self.unreported, pick) {
                    self.knobs.conn(i).reporter.report();
                }
            }
            Op::Declare { conn, report } => {
                if let (true, Some((i, c))) = (SHARED, self.conn(conn)) {
                    c.declared.store(true, SeqCst);
                    self.report(i, report);
                }
            }
            Op::GoAway {
                conn,
                served,
                report,
            } => {
                if let (true, Some((i, c))) = (SHARED, self.conn(conn)) {
                    *c.served.lock().unwrap() = served.map(|(count, certain)| Served {
                        count: usize::from(count),
                        certain,
                    });
                    c.going_away.store(true, SeqCst);
                    self.report(i, report);
                }
            }
            Op::Close(conn) => {
                if let Some((_, c)) = self.conn(conn) {
                    c.closed.store(true, SeqCst);
                    c.close.notify_one();
                }
            }
            Op::Dials(n) => self.gate.add_permits(usize::from(n)),
            Op::FailNext => {
                self.knobs.fail.fetch_add(1, SeqCst);
            }
            Op::Advance(ms) => tokio::time::advance(Duration::from_millis(u64::from(ms))).await,
            Op::Settle => settle().await,
        }
        // Tasks run a little between steps, not always to the end.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
    }

    fn end_drain(&mut self, lease: Lease<Fake<SHARED>>, slow: bool, quick: bool, ok: bool) {
        match (slow, quick, ok) {
            (false, true, true) => self.origin.drain_finished(lease.into_reusable()),
            (false, true, false) => {
                self.origin.drain_finished(None);
                drop(lease);
            }
            (false, false, _) => {
                self.origin.drain_slow();
                self.drains.push((lease, true));
            }
            (true, _, true) => lease.release(),
            (true, _, false) => drop(lease),
        }
    }

    /// Requests whose checkout ended: their leases are kept.
    async fn harvest(&mut self) -> Result<(), String> {
        let mut i = 0;
        while i < self.checkouts.len() {
            if !self.checkouts[i].is_finished() {
                i += 1;
                continue;
            }
            match self.checkouts.swap_remove(i).await {
                Ok(Ok(lease)) => self.leases.push(lease),
                // Its wait timed out, its dial failed or timed out.
                Ok(Err(_)) => {}
                Err(e) if e.is_cancelled() => {}
                Err(e) => return Err(format!("a request's task failed: {e}")),
            }
        }
        Ok(())
    }

    /// Every change reported and every task as far as it goes: no request
    /// waits while a connection would take it.
    fn at_rest(&self, books: &Books) -> Result<(), String> {
        if self.unreported.is_empty() {
            if books.waiting > 0 && books.shared_with_room > 0 {
                return Err("a request waits while a shared connection has room".into());
            }
            if books.waiting_any > 0 && books.idle > 0 {
                return Err("a request waits while a connection is idle".into());
            }
        }
        if self.metrics.connections_open.get() != books.open as u64 {
            return Err(format!(
                "{} connections open by the gauge",
                self.metrics.connections_open.get()
            ));
        }
        Ok(())
    }

    /// Everything the peer held back comes, every request ends: all of it
    /// without the clock moving. Then the pool goes, and every count with it.
    async fn finish(mut self) -> Result<(), String> {
        for i in std::mem::take(&mut self.unreported) {
            self.knobs.conn(i).reporter.report();
        }
        let conns: Vec<Arc<ConnKnobs>> = self.knobs.conns.lock().unwrap().clone();
        for c in &conns {
            if c.own_slots.load(SeqCst) == 0 {
                c.own_slots.store(1, SeqCst);
                c.reporter.report();
            }
        }
        self.knobs.fail.store(0, SeqCst);
        self.gate.add_permits(Semaphore::MAX_PERMITS / 2);
        self.places.clear();
        for (lease, slow) in std::mem::take(&mut self.drains) {
            self.end_drain(lease, slow, true, true);
        }
        for (lease, _) in std::mem::take(&mut self.drains) {
            lease.release();
        }
        for round in 0.. {
            for lease in self.leases.drain(..) {
                lease.release();
            }
            settle().await;
            self.harvest().await?;
            if let Some(panic) = panicked() {
                return Err(format!("at the end: {panic}"));
            }
            if self.checkouts.is_empty() && self.leases.is_empty() {
                break;
            }
            if round == 50 {
                let books = self.origin.books();
                return Err(format!(
                    "{} requests never served at the end; {books:?}",
                    self.checkouts.len()
                ));
            }
        }
        let books = self.origin.books();
        if books.waiting + books.connecting + books.draining > 0 {
            return Err(format!("at the end: {books:?}"));
        }
        let by = self.metrics.protocol(LABEL);
        let counts = [
            ("requests queued", self.metrics.requests_queued.get()),
            ("streams", by.slots_active.get()),
            ("attempts", self.metrics.connect_attempts_current.get()),
        ];
        if let Some((what, n)) = counts.iter().find(|(_, n)| *n != 0) {
            return Err(format!("at the end: {n} {what}"));
        }
        let metrics = Arc::clone(&self.metrics);
        drop(self);
        settle().await;
        let by = metrics.protocol(LABEL);
        let counts = [
            ("connections open", metrics.connections_open.get()),
            ("connections idle", by.connections_idle.get()),
            ("streams", by.slots_active.get()),
        ];
        match counts.iter().find(|(_, n)| *n != 0) {
            Some((what, n)) => Err(format!("the pool dropped: {n} {what}")),
            None => panicked().map_or(Ok(()), |p| Err(format!("the pool dropped: {p}"))),
        }
    }
}

/// The fewest steps of `ops` (removing runs of steps, then single ones)
/// that still fail.
fn shrink<const SHARED: bool>(setup: &Setup, mut ops: Vec<Op>) -> Vec<Op> {
    let mut chunk = ops.len() / 2;
    while chunk >= 1 {
        let mut start = 0;
        while start < ops.len() {
            let mut fewer = ops.clone();
            fewer.drain(start..(start + chunk).min(ops.len()));
            if run::<SHARED>(setup, &fewer).is_err() {
                ops = fewer;
            } else {
                start += chunk;
            }
        }
        chunk /= 2;
    }
    ops
}

/// Runs [`SEEDS`] seeds of [`STEPS`] steps (`COURIER_POOL_SEEDS` seeds if
/// set, for a longer search by hand); a failure is shrunk and shown.
fn seeds<const SHARED: bool>(first: u64) {
    let count = std::env::var("COURIER_POOL_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(SEEDS);
    let mut steps = 0;
    for seed in first..first + count {
        let mut rng = Rng(seed);
        let setup = Setup::new(&mut rng);
        let ops = ops(&mut rng, STEPS);
        if let Err(error) = run::<SHARED>(&setup, &ops) {
            let fewest = shrink::<SHARED>(&setup, ops);
            let again = run::<SHARED>(&setup, &fewest).err().unwrap_or_default();
            panic!(
                "seed {seed} ({} connections): {error}\n\
                 shrunk to {} steps: {again}\n{setup:?}\n{fewest:#?}",
                if SHARED { "shared" } else { "exclusive" },
                fewest.len(),
            );
        }
        steps += STEPS;
    }
    eprintln!("{count} seeds from {first}, {steps} steps: the books held");
}

#[test]
fn shared_connections_keep_their_books_under_random_steps() {
    seeds::<true>(1);
}

#[test]
fn exclusive_connections_keep_their_books_under_random_steps() {
    seeds::<false>(1_000_000);
}
