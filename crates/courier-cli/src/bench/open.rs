//! The open loop (`--rate R`, `--stages`): requests start on a fixed schedule, whatever the
//! latency.
//!
//! A closed loop slows down with the server and so under-reports latency ("coordinated
//! omission"): while one slot waits, the requests it would have sent are never timed. Here request
//! `i` is due at `start + i / R` (or when `pacer`'s ramp says). It is sent when due, if one of the
//! in-flight slots (`-c` per client; by default the connection cap, as wrk2's connections) is
//! free; otherwise it waits for one, and the request is late. Each request is timed twice: from
//! its actual send (uncorrected, what a closed loop reports) and from its intended start
//! (corrected, what a user arriving on schedule would see). Requests still waiting for a slot at
//! the deadline are never sent; the report counts them as not sent.
//!
//! Each runtime thread's sender ([`super::sender`]) sends its share of the schedule and drives
//! those requests itself; when its timer fires, it sends every request that has come due, so the
//! timer's 1 ms resolution is not a limit, and those requests share the connection's writes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::client::BenchClient;
use tokio::sync::Semaphore;

use super::args::Stop;
use super::pacer::Pacer;
use super::plan::Plan;
use super::request;
use super::sender::{self, Share};
use crate::error::{CliError, Result};

/// Requests sent more than this behind schedule count as late. The timer wakes up to 1 ms late
/// by design, so only lateness beyond that and scheduling noise is reported. With `--tick`,
/// the tick is added: holding a request until the next tick is the asked schedule.
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
    /// `--tick`: requests were sent only on ticks of this period.
    pub tick: Option<Duration>,
}

impl Schedule {
    /// Sent later than this after its due time, a request counts as late.
    pub fn late_after(&self) -> Duration {
        LATE_AFTER + self.tick.unwrap_or_default()
    }
}

/// Runs the schedule `pacer` sets over `clients`, at most `cap` in flight, sending only on
/// ticks of `tick` if set: one sender per runtime thread.
pub async fn run(
    plan: &Arc<Plan>,
    clients: &[BenchClient],
    pacer: &Pacer,
    cap: u64,
    stop: Stop,
    tick: Option<Duration>,
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
    let taken = Arc::new(AtomicU64::new(0));
    let senders = tokio::runtime::Handle::current()
        .metrics()
        .num_workers()
        .max(1) as u64;
    // Per client: no response yet. Requests sent until then find a cold pool, and are the
    // open loop's first requests (`first.rs`).
    let cold: Arc<[AtomicBool]> = clients.iter().map(|_| AtomicBool::new(true)).collect();
    let clients: Arc<[BenchClient]> = clients.into();
    let handles: Vec<_> = (0..senders)
        .map(|first| {
            let (plan, clients, pacer) = (Arc::clone(plan), Arc::clone(&clients), pacer.clone());
            let cold = Arc::clone(&cold);
            let (slots, taken) = (Arc::clone(&slots), Arc::clone(&taken));
            tokio::spawn(async move {
                let share = Share {
                    pacer: &pacer,
                    clock,
                    first,
                    step: senders,
                    limit: limit.map(|n| (n, &*taken)),
                    slots: &slots,
                    permits,
                    tick,
                    stop: &plan.stop,
                };
                let (plan, clients, cold) = (&*plan, &*clients, &*cold);
                sender::run(share, |i, due, start, measured| {
                    let c = (i % clients.len() as u64) as usize;
                    let (client, cold) = (&clients[c], &cold[c]);
                    let sent_cold = cold.load(Ordering::Relaxed);
                    async move {
                        let (outcome, _) =
                            request::send(client, &plan.template, i as usize, start).await;
                        if sent_cold {
                            if let Some(first) = &plan.first {
                                first.record(&outcome);
                            }
                            if matches!(outcome, request::Outcome::Response(_)) {
                                cold.store(false, Ordering::Relaxed);
                            }
                        }
                        if measured {
                            plan.record_open_loop(outcome, start.saturating_duration_since(due));
                        }
                    }
                })
                .await
            })
        })
        .collect();
    let mut schedule = Schedule {
        cap: permits as u64,
        tick,
        ..Schedule::default()
    };
    // After Ctrl-C: how many requests (from the first, warmup included) had come due.
    let mut interrupted_at: Option<u64> = None;
    for handle in handles {
        let sent = handle
            .await
            .map_err(|e| CliError::new(format!("a benchmark sender failed: {e}")))?;
        schedule.sent += sent.measured;
        schedule.max_in_flight = schedule.max_in_flight.max(sent.max_in_flight);
        interrupted_at = interrupted_at.max(sent.interrupted_at);
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
