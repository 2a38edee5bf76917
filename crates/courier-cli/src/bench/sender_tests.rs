//! The sender on tokio's paused clock: every timer fires exactly when due, so the schedule,
//! the cap and the lateness can be asserted exactly.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, Notify};

use super::*;

const MS: Duration = Duration::from_millis(1);

/// What the fake requests saw: for each sent, `(i, due, start)`; how many ended; the most in
/// flight at once.
#[derive(Default)]
struct Log {
    sent: RefCell<Vec<(u64, Instant, Instant)>>,
    ended: Cell<u64>,
    in_flight: Cell<u64>,
    peak: Cell<u64>,
}

/// Requests that take `latency`, logged in `log`; `on_send` runs as each is sent.
fn requests(
    log: &Rc<Log>,
    latency: Duration,
    on_send: impl Fn(u64),
) -> impl FnMut(u64, Instant, Instant, bool) -> std::pin::Pin<Box<dyn Future<Output = ()>>> {
    let log = Rc::clone(log);
    move |i, due, start, _measured| {
        on_send(i);
        log.sent.borrow_mut().push((i, due, start));
        let log = Rc::clone(&log);
        Box::pin(async move {
            log.in_flight.set(log.in_flight.get() + 1);
            log.peak.set(log.peak.get().max(log.in_flight.get()));
            tokio::time::sleep(latency).await;
            log.in_flight.set(log.in_flight.get() - 1);
            log.ended.set(log.ended.get() + 1);
        })
    }
}

/// A clock that measures from now for `run` (no warmup).
fn clock(run: Option<Duration>) -> Clock {
    let start = Instant::now();
    Clock {
        start,
        measure_start: start,
        deadline: run.map(|run| start + run),
    }
}

fn share<'a>(
    pacer: &'a Pacer,
    clock: Clock,
    slots: &'a Semaphore,
    stop: &'a CancellationToken,
) -> Share<'a> {
    Share {
        pacer,
        clock,
        first: 0,
        step: 1,
        limit: None,
        slots,
        permits: slots.available_permits(),
        tick: None,
        stop,
    }
}

/// What every test's senders share: a schedule of one request a
/// millisecond, `slots` in-flight slots, the Ctrl-C token and the log.
fn setup(slots: usize) -> (Pacer, Semaphore, CancellationToken, Rc<Log>) {
    (
        Pacer::constant(1000.0),
        Semaphore::new(slots),
        CancellationToken::new(),
        Rc::new(Log::default()),
    )
}

#[tokio::test(start_paused = true)]
async fn requests_go_out_when_due_within_the_cap_and_are_cut_at_the_deadline() {
    let (pacer, slots, stop, log) = setup(8);
    let sent = run(
        share(&pacer, clock(Some(100 * MS)), &slots, &stop),
        requests(&log, 3 * MS, |_| {}),
    )
    .await;
    let requests = log.sent.borrow();
    assert_eq!(requests.len(), 100);
    assert_eq!(sent.measured, 100);
    for (n, &(i, due, start)) in requests.iter().enumerate() {
        assert_eq!(i, n as u64);
        assert_eq!(start, due, "request {i} sent late");
    }
    // 3 ms each at one a millisecond: 3 or 4 in flight, never near the cap.
    assert!((3..=4).contains(&sent.max_in_flight), "{sent:?}");
    // 98 and 99 were still in flight at the deadline: dropped, not ended (97 ends at the
    // deadline itself, either side of it as the timer wheel rounds).
    assert!((97..=98).contains(&log.ended.get()), "{}", log.ended.get());
    assert_eq!(log.ended.get() + log.in_flight.get(), 100);
    assert_eq!(sent.interrupted_at, None);
}

#[tokio::test(start_paused = true)]
async fn requests_due_while_every_slot_is_taken_wait_for_one_and_are_late() {
    let (pacer, slots, stop, log) = setup(4);
    let sent = run(
        share(&pacer, clock(Some(200 * MS)), &slots, &stop),
        requests(&log, 20 * MS, |_| {}),
    )
    .await;
    // 4 slots of 20 ms: 4 requests every 20 ms get out, of 200 due.
    assert_eq!(log.peak.get(), 4);
    assert_eq!(sent.max_in_flight, 4);
    assert_eq!(sent.measured, 40);
    let requests = log.sent.borrow();
    // The first four go on time; every later one waited for a slot, later and later.
    let lags: Vec<_> = requests
        .iter()
        .map(|&(_, due, start)| start - due)
        .collect();
    assert!(lags[..4].iter().all(|lag| lag.is_zero()), "{lags:?}");
    assert!(lags[8..].iter().all(|lag| *lag > LATE), "{lags:?}");
    assert!(lags.windows(2).all(|w| w[0] <= w[1]), "{lags:?}");
}

const LATE: Duration = super::super::open::LATE_AFTER;

#[tokio::test(start_paused = true)]
async fn with_a_tick_what_came_due_goes_out_on_the_tick() {
    let (pacer, slots, stop, log) = setup(64);
    let clock = clock(Some(100 * MS));
    let sent = run(
        Share {
            tick: Some(10 * MS),
            ..share(&pacer, clock, &slots, &stop)
        },
        requests(&log, MS, |_| {}),
    )
    .await;
    let requests = log.sent.borrow();
    for &(i, due, start) in requests.iter() {
        let since = start - clock.start;
        assert_eq!(since.as_millis() % 10, 0, "request {i} sent off a tick");
        assert!(start >= due && start - due < 10 * MS, "request {i}");
    }
    // Requests 0 to 90 go on the ticks up to 90 ms; 91 to 99 would go on the tick at the
    // deadline, so are never sent.
    assert_eq!(sent.measured, 91);
    // Each tick sends the ten that came due since the last.
    assert_eq!(sent.max_in_flight, 10);
}

#[tokio::test(start_paused = true)]
async fn senders_share_the_schedule_the_slots_and_the_request_count() {
    let (pacer, slots, stop, log) = setup(3);
    let taken = AtomicU64::new(0);
    let clock = clock(None);
    let sender = |first| {
        run(
            Share {
                first,
                step: 2,
                limit: Some((50, &taken)),
                ..share(&pacer, clock, &slots, &stop)
            },
            requests(&log, 5 * MS, |_| {}),
        )
    };
    let (a, b) = tokio::join!(sender(0), sender(1));
    // Exactly the 50 asked, each once, all finished (no deadline), never more than 3 at once.
    assert_eq!(a.measured + b.measured, 50);
    let mut sent: Vec<_> = log.sent.borrow().iter().map(|&(i, _, _)| i).collect();
    sent.sort_unstable();
    assert_eq!(sent, (0..50).collect::<Vec<_>>());
    assert_eq!(log.ended.get(), 50);
    assert_eq!(log.peak.get(), 3);
}

#[tokio::test(start_paused = true)]
async fn after_ctrl_c_nothing_more_is_sent_and_those_in_flight_finish() {
    let (pacer, slots, stop, log) = setup(8);
    let sent = run(
        share(&pacer, clock(Some(10_000 * MS)), &slots, &stop),
        requests(&log, 3 * MS, |i| {
            if i == 50 {
                stop.cancel();
            }
        }),
    )
    .await;
    // Request 50 went out as Ctrl-C came; 51 was not due yet.
    assert_eq!(sent.interrupted_at, Some(51));
    assert_eq!(sent.measured, 51);
    assert_eq!(log.ended.get(), 51);
}

#[tokio::test(start_paused = true)]
async fn after_ctrl_c_the_senders_count_as_due_only_what_was_sent() {
    let (pacer, slots, stop, log) = setup(8);
    let clock = clock(Some(10_000 * MS));
    let sender = |first| {
        run(
            Share {
                first,
                step: 2,
                ..share(&pacer, clock, &slots, &stop)
            },
            requests(&log, 3 * MS, |i| {
                if i == 50 {
                    stop.cancel();
                }
            }),
        )
    };
    let (a, b) = tokio::join!(sender(0), sender(1));
    // Requests 0 to 50 went out; the sender waiting for 51 knows only its 49 was due, the one
    // waiting for 52 that its 50 was: 51 requests were due, as many as were sent.
    assert_eq!(a.measured + b.measured, 51);
    assert_eq!(a.interrupted_at.max(b.interrupted_at), Some(51));
}

/// A connection as the library's HTTP/2 driver is one: each request queues its frames and
/// wakes the connection's own task, which runs once the sender yields and writes everything
/// queued in one write. Each write is answered `RTT` later, between two of the timer's ticks.
#[derive(Default)]
struct Connection {
    queued: Mutex<Vec<oneshot::Sender<()>>>,
    wake: Notify,
    /// The requests each write carried.
    writes: Mutex<Vec<usize>>,
    /// What was written and is not yet answered, and when the answers come.
    unanswered: Mutex<VecDeque<(Instant, Vec<oneshot::Sender<()>>)>>,
}

const RTT: Duration = Duration::from_micros(250);

impl Connection {
    /// The connection's task: writes what is queued.
    async fn write(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            let written = std::mem::take(&mut *self.queued.lock().unwrap());
            if written.is_empty() {
                continue;
            }
            self.writes.lock().unwrap().push(written.len());
            let answer_at = Instant::now() + RTT;
            self.unanswered
                .lock()
                .unwrap()
                .push_back((answer_at, written));
        }
    }

    /// The network: moves the paused clock on in steps finer than the timer's 1 ms, so
    /// answers can come between ticks (left to itself, the paused clock jumps from timer to
    /// timer), and delivers the answers due.
    async fn network(self: Arc<Self>) {
        loop {
            tokio::time::advance(Duration::from_micros(50)).await;
            let now = Instant::now();
            let mut unanswered = self.unanswered.lock().unwrap();
            while unanswered.front().is_some_and(|(at, _)| *at <= now) {
                let (_, written) = unanswered.pop_front().expect("checked");
                for answer in written {
                    let _ = answer.send(());
                }
            }
        }
    }

    /// A request on the connection: queued when first polled, done when answered.
    fn request(self: &Arc<Self>) -> impl Future<Output = ()> {
        let connection = Arc::clone(self);
        async move {
            let (answer, answered) = oneshot::channel();
            connection.queued.lock().unwrap().push(answer);
            connection.wake.notify_one();
            let _ = answered.await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn requests_due_between_ticks_wait_for_the_timer_and_go_out_in_one_write() {
    // One request every 100 us: ten come due between two of the timer's 1 ms ticks.
    let pacer = Pacer::constant(10_000.0);
    let (slots, stop, taken) = (
        Semaphore::new(256),
        CancellationToken::new(),
        AtomicU64::new(0),
    );
    let connection = Arc::new(Connection::default());
    tokio::spawn(Arc::clone(&connection).write());
    tokio::spawn(Arc::clone(&connection).network());
    let sent = run(
        Share {
            limit: Some((100, &taken)),
            ..share(&pacer, clock(None), &slots, &stop)
        },
        |_, _, _, _| connection.request(),
    )
    .await;
    assert_eq!(sent.measured, 100);
    // Request 0, due at the start, goes alone; then each tick sends the ten due since the
    // last in one write, though an answer woke the sender between ticks. Sending what had
    // come due at each answer wrote three or four requests at a time.
    let mut expected = vec![1];
    expected.extend([10; 9]);
    expected.push(9);
    assert_eq!(*connection.writes.lock().unwrap(), expected);
}

#[test]
fn ticks_round_up_to_the_period() {
    let start = Instant::now();
    let tick = Some(10 * MS);
    assert_eq!(on_tick(start, start, tick), start);
    assert_eq!(on_tick(start, start + MS, tick), start + 10 * MS);
    assert_eq!(on_tick(start, start + 10 * MS, tick), start + 10 * MS);
    assert_eq!(on_tick(start, start + 11 * MS, tick), start + 20 * MS);
    assert_eq!(on_tick(start, start + 11 * MS, None), start + 11 * MS);
}
