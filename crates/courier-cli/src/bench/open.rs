//! The open loop (`--rate R`, `--stages`): requests start on a fixed schedule, whatever the
//! latency.
//!
//! A closed loop slows down with the server and so under-reports latency ("coordinated
//! omission"): while one slot waits, the requests it would have sent are never timed. Here request
//! `i` is due at `start + i / R` (or when `pacer`'s ramp says). A scheduler task sends each one when due, if one of the
//! in-flight slots (`-c` per client; by default the connection cap, as wrk2's connections) is
//! free; otherwise it waits for one, and the request is late. Each request is timed twice: from
//! its actual send (uncorrected, what a closed loop reports) and from its intended start
//! (corrected, what a user arriving on schedule would see). Requests still waiting for a slot at
//! the deadline are never sent; the report counts them as not sent.
//!
//! One scheduler sends everything, so the timer's 1 ms resolution is not a limit: when it wakes,
//! it sends every request that has come due.

use std::sync::Arc;
use std::time::Duration;

use super::client::BenchClient;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::Stop;
use super::interrupt;
use super::pacer::Pacer;
use super::plan::Plan;
use super::request;
use crate::error::{CliError, Result};

/// Requests sent more than this behind schedule count as late. The timer wakes up to 1 ms late
/// by design, so only lateness beyond that and scheduling noise is reported.
pub const LATE_AFTER: Duration = Duration::from_millis(5);

/// What the scheduler saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Schedule {
    /// Measured requests that were due (in the measured time, or `-n`).
    pub intended: u64,
    /// Of those, the requests actually sent.
    pub sent: u64,
    /// The in-flight cap over all clients.
    pub cap: u64,
    /// The most requests in flight at once.
    pub max_in_flight: u64,
}

/// Runs the schedule `pacer` sets over `clients`, at most `cap` in flight.
pub async fn run(
    plan: &Arc<Plan>,
    clients: &[BenchClient],
    pacer: &Pacer,
    cap: u64,
    stop: Stop,
) -> Result<Schedule> {
    if clients.is_empty() {
        return Err(CliError::new("no client to send requests with"));
    }
    let permits = slots_for(cap);
    let slots = Arc::new(Semaphore::new(permits));
    let clock = plan.clock;
    let limit = match stop {
        Stop::Requests(n) => Some(n),
        Stop::Duration(_) | Stop::OneRound => None,
    };
    let mut schedule = Schedule {
        cap: permits as u64,
        ..Schedule::default()
    };
    let mut i: u64 = 0;
    // After Ctrl-C: how many requests (from the first, warmup included) had come due.
    let mut interrupted_at: Option<u64> = None;
    // After the last stage nothing more is due.
    while let Some(offset) = pacer.due(i) {
        let due = clock.start + offset;
        let measured = due >= clock.measure_start;
        if clock.deadline.is_some_and(|deadline| due >= deadline)
            || (measured && limit.is_some_and(|n| schedule.sent >= n))
        {
            break;
        }
        if Instant::now() < due {
            tokio::select! {
                () = plan.stop.cancelled() => {
                    // Request `i` was not due yet: requests before it were.
                    interrupted_at = Some(i);
                    break;
                }
                () = tokio::time::sleep_until(due) => {}
            }
        }
        let Some(permit) = acquire(&slots, clock.deadline, &plan.stop).await else {
            if plan.stop.is_cancelled() {
                // Request `i` was due and waiting for a slot: it counts as not sent.
                interrupted_at = Some(i + 1);
            }
            break;
        };
        let in_flight = permits - slots.available_permits();
        schedule.max_in_flight = schedule.max_in_flight.max(in_flight as u64);
        if measured {
            schedule.sent += 1;
        }
        let client = clients[(i % clients.len() as u64) as usize].clone();
        tokio::spawn(one(
            Arc::clone(plan),
            client,
            i as usize,
            due,
            measured,
            permit,
        ));
        i += 1;
    }
    let warmup_due = pacer.due_between(Duration::ZERO, clock.measure_start - clock.start);
    schedule.intended = match (interrupted_at, limit, clock.deadline) {
        // After Ctrl-C, only the requests due before it were due at all.
        (Some(due), limit, _) => due
            .saturating_sub(warmup_due)
            .min(limit.unwrap_or(u64::MAX)),
        (None, Some(n), _) => n,
        (None, None, Some(deadline)) => {
            pacer.due_between(clock.measure_start - clock.start, deadline - clock.start)
        }
        (None, None, None) => schedule.sent,
    };
    // Every slot free again means every request sent has finished.
    let cancelled = match clock.deadline {
        // Requests still in flight abandon themselves at the deadline.
        Some(deadline) => interrupt::cancelled_before(&plan.stop, Some(deadline)).await,
        // With `-n`, every request finishes.
        None => tokio::select! {
            () = all_free(&slots, permits) => false,
            () = plan.stop.cancelled() => true,
        },
    };
    if cancelled {
        let grace = Instant::now() + interrupt::GRACE;
        let limit = clock.deadline.map_or(grace, |deadline| deadline.min(grace));
        let _ = tokio::time::timeout_at(limit, all_free(&slots, permits)).await;
    }
    Ok(schedule)
}

/// The in-flight slots of an open loop capped at `cap` (`-c` can be any `u64`): at most
/// tokio's `Semaphore::MAX_PERMITS` (`Semaphore::new` panics above it), and at most `u32::MAX`,
/// since waiting for every slot at the end takes them all in one `acquire_many(u32)` call (with
/// more slots than that, the wait would return while requests were still in flight).
pub fn slots_for(cap: u64) -> usize {
    usize::try_from(cap.min(u64::from(u32::MAX)))
        .unwrap_or(usize::MAX)
        .min(Semaphore::MAX_PERMITS)
}

/// Waits until every one of `permits` slots is free again (every request sent has finished):
/// `permits` comes from [`slots_for`], so it fits one `acquire_many`.
pub async fn all_free(slots: &Semaphore, permits: usize) {
    let all = u32::try_from(permits).unwrap_or(u32::MAX);
    // Err only if the semaphore was closed, which neither loop does.
    let _ = slots.acquire_many(all).await;
}

/// A free slot, or `None` once the deadline has passed or Ctrl-C was pressed.
async fn acquire(
    slots: &Arc<Semaphore>,
    deadline: Option<Instant>,
    stop: &CancellationToken,
) -> Option<OwnedSemaphorePermit> {
    let acquire = Arc::clone(slots).acquire_owned();
    let acquire = async {
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, acquire).await.ok()?.ok(),
            None => acquire.await.ok(),
        }
    };
    tokio::select! {
        permit = acquire => permit,
        () = stop.cancelled() => None,
    }
}

/// One scheduled request: sends, records with its lag, frees its slot.
async fn one(
    plan: Arc<Plan>,
    client: BenchClient,
    slot: usize,
    due: Instant,
    measured: bool,
    _permit: OwnedSemaphorePermit,
) {
    let start = Instant::now();
    let lag = start.saturating_duration_since(due);
    let Ok((outcome, _)) = plan
        .until_deadline(request::send(&client, &plan.template, slot, start))
        .await
    else {
        return;
    };
    if measured {
        plan.record_open_loop(outcome, lag);
    }
}
