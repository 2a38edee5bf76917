//! One runtime thread's share of the open loop: it sends its requests when due and drives them
//! itself, in a `FuturesUnordered`, rather than spawning a task for each.
//!
//! A task per request (its spawn, its own deadline timer, the handles it clones) was the
//! generator's cost, which a client's figure against h2load then carried. Here the requests in
//! flight live in the sender's task, and the run's deadline is one timer: at it, the sender
//! drops what is still in flight, as the closed loop aborts its slots. With `--threads N` there
//! are N senders, sender `k` taking requests `k, k + N, …` of the one schedule, all sharing one
//! set of in-flight slots.
//!
//! The sender sends only when its timer fires (or a slot frees for a late request), never when
//! a response wakes it: responses come all the time, and a request sent at each would go out in
//! a write of its own, where the timer's ticks send every request due since the last one
//! together (docs/src/performance.md, round 7, has the figures).
//!
//! `--tick MS` sends what has come due only on ticks of that period from the run's start, as
//! h2load's `--rps` does every 10 ms: fewer, bigger bursts, each request held up to a tick.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::Either;
use futures_util::stream::{FuturesUnordered, Stream, StreamExt};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::interrupt;
use super::pacer::Pacer;
use super::plan::Clock;

/// What a sender needs: the schedule, its part of it and the slots it shares.
pub struct Share<'a> {
    pub pacer: &'a Pacer,
    pub clock: Clock,
    /// This sender's first request and the stride between its requests (the number of senders).
    pub first: u64,
    pub step: u64,
    /// With `-n`: the measured requests to send over all senders, and how many are taken.
    pub limit: Option<(u64, &'a AtomicU64)>,
    /// The in-flight slots of all senders, and how many there are.
    pub slots: &'a Semaphore,
    pub permits: usize,
    /// Send only on ticks of this period (`--tick`).
    pub tick: Option<Duration>,
    pub stop: &'a CancellationToken,
}

/// What one sender saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sent {
    /// Measured requests sent.
    pub measured: u64,
    /// The most requests in flight at once, over all senders, when this one sent.
    pub max_in_flight: u64,
    /// After Ctrl-C: how many requests (from the first, warmup included) had come due, as far
    /// as this sender knows.
    pub interrupted_at: Option<u64>,
}

/// Sends `share`'s requests when due: `send(i, due, start, measured)` makes request `i`'s
/// future, which the sender drives until it ends, the deadline passes, or the Ctrl-C grace ends.
pub async fn run<'a, F, Fut>(share: Share<'a>, mut send: F) -> Sent
where
    F: FnMut(u64, Instant, Instant, bool) -> Fut,
    Fut: Future<Output = ()> + 'a,
{
    let Share {
        pacer,
        clock,
        first,
        step,
        limit,
        slots,
        permits,
        tick,
        stop,
    } = share;
    // The requests in flight, and one more member that ends at Ctrl-C: a `FuturesUnordered`
    // polls a member only when it was woken, where a Ctrl-C branch in the waits below was
    // polled (a mutex taken) at every response, some 770 instructions a request.
    let mut group = FuturesUnordered::new();
    group.push(Either::Right(async {
        stop.cancelled().await;
        Event::Stop
    }));
    let mut in_flight = 0usize;
    let mut sent = Sent::default();
    // One timer for the whole run, re-armed rather than made anew each time the sender waits.
    let wake = tokio::time::sleep_until(clock.start);
    tokio::pin!(wake);
    let mut armed = clock.start;
    let deadline = until(clock.deadline);
    tokio::pin!(deadline);
    let mut past_deadline = false;
    let mut i = first;
    // After the last stage nothing more is due.
    'schedule: while let Some(offset) = pacer.due(i) {
        let due = clock.start + offset;
        let measured = due >= clock.measure_start;
        if clock.deadline.is_some_and(|deadline| due >= deadline) {
            break;
        }
        if let (true, Some((n, taken))) = (measured, limit) {
            if taken.fetch_add(1, Ordering::Relaxed) >= n {
                break;
            }
        }
        let send_at = on_tick(clock.start, due, tick);
        // With a tick, the last requests due may fall to a tick at or past the deadline.
        if clock.deadline.is_some_and(|deadline| send_at >= deadline) {
            break;
        }
        // Until it is due, drive the requests in flight. Only the timer ends the wait: a
        // response wakes the sender at any moment, and sending then the one request due by
        // that moment would have the connection write each request alone, where the timer's
        // 1 ms ticks let every request due since the last tick go out in one write.
        let mut now = Instant::now();
        if now < send_at {
            if armed != send_at {
                wake.as_mut().reset(send_at);
                armed = send_at;
            }
            loop {
                tokio::select! {
                    biased;
                    Some(event) = group.next() => match event {
                        Event::Done => in_flight -= 1,
                        Event::Stop => {
                            // Request `i` was not due yet; this sender's previous one,
                            // `i - step`, was (the other senders' between them may not
                            // have been).
                            sent.interrupted_at = Some((i + 1).saturating_sub(step));
                            break 'schedule;
                        }
                    },
                    () = &mut wake => break,
                }
            }
            now = Instant::now();
        }
        let permit = match slots.try_acquire() {
            Ok(permit) => permit,
            // Every slot is taken: the request waits for one, and is late.
            Err(_) => loop {
                tokio::select! {
                    biased;
                    Some(event) = group.next() => match event {
                        Event::Done => in_flight -= 1,
                        Event::Stop => {
                            // Request `i` was due and waiting for a slot: it counts as not sent.
                            sent.interrupted_at = Some(i + 1);
                            break 'schedule;
                        }
                    },
                    permit = slots.acquire() => match permit {
                        Ok(permit) => {
                            now = Instant::now();
                            // A slot freed at the deadline comes too late.
                            if clock.deadline.is_some_and(|deadline| now >= deadline) {
                                break 'schedule;
                            }
                            break permit;
                        }
                        // Closed: never, the run does not close its slots.
                        Err(_) => break 'schedule,
                    },
                    () = &mut deadline => {
                        past_deadline = true;
                        break 'schedule;
                    }
                }
            },
        };
        let taken = permits - slots.available_permits();
        sent.max_in_flight = sent.max_in_flight.max(taken as u64);
        if measured {
            sent.measured += 1;
        }
        let request = send(i, due, now, measured);
        group.push(Either::Left(async move {
            let _slot = permit;
            request.await;
            Event::Done
        }));
        in_flight += 1;
        i += step;
    }
    // The schedule is over: the requests in flight finish, are cut at the deadline, or after
    // Ctrl-C get the grace period (bounded by the deadline). A timed run lasts until its deadline.
    let grace = !past_deadline
        && (sent.interrupted_at.is_some()
            || tokio::select! {
                stopped = finish(&mut group, &mut in_flight, clock.deadline.is_some()) => stopped,
                () = &mut deadline => false,
            });
    if grace {
        let grace = Instant::now() + interrupt::GRACE;
        let limit = clock.deadline.map_or(grace, |deadline| deadline.min(grace));
        let _ = tokio::time::timeout_at(limit, finish(&mut group, &mut in_flight, false)).await;
    }
    sent
}

/// What a member of the sender's group says when it ends.
enum Event {
    /// A request ended.
    Done,
    /// Ctrl-C.
    Stop,
}

/// Drives `group` until no request is in flight, then, if `hold`, until Ctrl-C; `true` if
/// Ctrl-C came.
async fn finish<S>(group: &mut S, in_flight: &mut usize, hold: bool) -> bool
where
    S: Stream<Item = Event> + Unpin,
{
    while *in_flight > 0 || hold {
        match group.next().await {
            Some(Event::Done) => *in_flight -= 1,
            Some(Event::Stop) => return true,
            // Only the Ctrl-C member is left after the last request, and it never ends alone.
            None => std::future::pending::<()>().await,
        }
    }
    false
}

/// Waits until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The first tick of period `tick` from `start` at or after `due` (`due` itself without a tick).
pub fn on_tick(start: Instant, due: Instant, tick: Option<Duration>) -> Instant {
    let Some(tick) = tick.filter(|tick| !tick.is_zero()) else {
        return due;
    };
    let ticks = (due - start).as_nanos().div_ceil(tick.as_nanos());
    start + tick * u32::try_from(ticks).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
