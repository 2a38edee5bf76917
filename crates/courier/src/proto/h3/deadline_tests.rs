//! The connection's deadline table and timer, on paused time, with no
//! QUIC: requests are futures that never answer (or answer when told).

use std::future::{pending, poll_fn};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Deadlines, Entry, Kept, Timer, Within};
use crate::error::ErrorKind;
use crate::proto::exchange::SendError;

/// The driver: the timer polled in a task of its own; counts its polls.
fn drive(deadlines: &Arc<Deadlines>) -> Arc<AtomicUsize> {
    let polls = Arc::new(AtomicUsize::new(0));
    let mut timer = Timer::new(Arc::clone(deadlines));
    let counted = Arc::clone(&polls);
    tokio::spawn(poll_fn(move |cx| {
        counted.fetch_add(1, Ordering::Relaxed);
        timer.poll(cx);
        Poll::<()>::Pending
    }));
    polls
}

fn never() -> impl std::future::Future<Output = Result<(), SendError>> {
    pending()
}

/// A request answered when the sender is told to, with its deadline at
/// `at`.
fn answerable(
    deadlines: &Arc<Deadlines>,
    at: Instant,
) -> (
    oneshot::Sender<()>,
    Within<impl std::future::Future<Output = Result<(), SendError>>>,
) {
    let (answer, answered) = oneshot::channel::<()>();
    let request = async move {
        answered.await.expect("answered");
        Ok(())
    };
    let kept = Kept::new(Arc::clone(deadlines), at);
    (answer, Within::new(request, Some(kept)))
}

fn entries(deadlines: &Deadlines) -> usize {
    deadlines.lock().entries.iter().flatten().count()
}

/// Deadlines out of order on one connection: each request fails at its
/// own, with the request timeout's error; one answered before its
/// deadline is untouched, and nothing is left in the table.
#[tokio::test(start_paused = true)]
async fn each_request_fails_at_its_own_deadline_and_others_go_on() {
    let deadlines = Arc::new(Deadlines::default());
    let _polls = drive(&deadlines);
    let start = Instant::now();
    let late = [600, 200, 400].map(|ms| {
        let at = start + Duration::from_millis(ms);
        let within = Within::new(never(), Some(Kept::new(Arc::clone(&deadlines), at)));
        tokio::spawn(async move {
            let err = within.await.expect_err("past its deadline");
            (err, start.elapsed(), ms)
        })
    });
    let (answer, on_time) = answerable(&deadlines, start + Duration::from_millis(5_000));
    let on_time = tokio::spawn(on_time);
    for task in late {
        let (err, took, ms) = task.await.expect("task");
        assert_eq!(err.error.kind(), ErrorKind::Timeout, "{:#}", err.error);
        assert!(err.handed_back.is_none());
        assert_eq!(took, Duration::from_millis(ms));
    }
    answer.send(()).expect("waiting");
    assert!(
        on_time.await.expect("task").is_ok(),
        "answered before its deadline"
    );
    assert_eq!(entries(&deadlines), 0);
}

/// Deadlines in the order requests start (one timeout for all) move
/// nothing: the driver is not woken for each, only when the timer fires.
#[tokio::test(start_paused = true)]
async fn later_deadlines_do_not_wake_the_driver() {
    let deadlines = Arc::new(Deadlines::default());
    let polls = drive(&deadlines);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..100u64 {
        let at = start + Duration::from_millis(1_000 + i);
        let within = Within::new(never(), Some(Kept::new(Arc::clone(&deadlines), at)));
        tasks.push(tokio::spawn(within));
        tokio::task::yield_now().await;
    }
    // The first deadline woke the driver once to arm its timer.
    assert!(polls.load(Ordering::Relaxed) <= 2, "{polls:?}");
    for task in tasks {
        assert!(task.await.expect("task").is_err(), "past its deadline");
    }
    assert_eq!(start.elapsed(), Duration::from_millis(1_099));
    assert_eq!(entries(&deadlines), 0);
}

/// A request answered before its deadline leaves the table: the timer,
/// firing at its time, finds nothing and stops.
#[tokio::test(start_paused = true)]
async fn an_answered_request_leaves_the_table() {
    let deadlines = Arc::new(Deadlines::default());
    let _polls = drive(&deadlines);
    let (answer, within) = answerable(&deadlines, Instant::now() + Duration::from_secs(1));
    let task = tokio::spawn(within);
    tokio::task::yield_now().await;
    assert_eq!(entries(&deadlines), 1);
    answer.send(()).expect("waiting");
    assert!(task.await.expect("task").is_ok(), "answered");
    assert_eq!(entries(&deadlines), 0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(deadlines.lock().timer, None);
}

/// A request dropped while it waits leaves the table too.
#[tokio::test(start_paused = true)]
async fn a_dropped_request_leaves_the_table() {
    let deadlines = Arc::new(Deadlines::default());
    let _polls = drive(&deadlines);
    let within = Within::new(
        never(),
        Some(Kept::new(
            Arc::clone(&deadlines),
            Instant::now() + Duration::from_secs(1),
        )),
    );
    let task = tokio::spawn(within);
    tokio::task::yield_now().await;
    assert_eq!(entries(&deadlines), 1);
    task.abort();
    let _ = task.await;
    assert_eq!(entries(&deadlines), 0);
}

/// A connection's table holds an entry for each request in flight (room
/// for 128 with 100 long polls waiting): 40 B with a flag of its own for a
/// passed deadline, 32 B with the deadline taken out instead.
#[test]
fn an_entry_is_a_deadline_and_a_waker() {
    let size = std::mem::size_of::<Option<Entry>>();
    assert!(size <= 32, "a deadline entry is {size} B (40 B before)");
}
