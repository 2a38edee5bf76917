//! The cluster scenario's open loop: requests due at a constant rate, each timed from when it
//! was due (corrected for coordinated omission) and from when it was sent.
//!
//! Why not the general open loop (`open.rs`): that one is built around request templates, the
//! pool-sampling pipeline, warmup, `-n` and Ctrl-C; this one sends through a `ClusterClient` (or
//! the round-robin baseline) and needs each request's due second for the fault figures. What
//! means the same is shared: when request `i` is due (`Pacer`), how many in-flight slots a cap
//! allows and the wait for all of them (`open::slots_for`, `open::all_free`), and what counts
//! as late (`open::LATE_AFTER`). The schedule is the same idea: one scheduler wakes when the
//! next request is due and sends everything due; a request that finds every in-flight slot
//! taken waits, and that wait counts in its latency.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::open::{self, LATE_AFTER};
use super::super::pacer::Pacer;
use super::sender::Sender;
use super::tally::{Failure, Tally};

/// How long requests still in flight at the end get beyond their budget.
const GRACE: Duration = Duration::from_millis(500);

/// The load of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Requests per second.
    pub rate: f64,
    /// How long requests are started.
    pub duration: Duration,
    /// A request's whole budget: in flight at the end for longer than it, it is abandoned.
    pub budget: Duration,
    /// Requests in flight at most (`-c`: any `u64`, clamped by `open::slots_for`).
    pub cap: u64,
}

/// What the scheduler saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sent {
    /// Requests due, and sent.
    pub requests: u64,
    /// Sent more than `LATE_AFTER` after they were due (no slot free in time, or a busy machine).
    pub late: u64,
    /// The most in flight at once.
    pub max_in_flight: u64,
    /// Still in flight when the run gave up on them.
    pub abandoned: u64,
    /// Due, but never sent: every in-flight slot was still taken at the end.
    pub not_sent: u64,
}

/// Runs `schedule` through `sender`, recording into `tally`; `begin` is called at the instant
/// the first request is due (it starts the replicas' fault clock).
pub async fn run(
    sender: &Sender,
    schedule: Schedule,
    tally: &Arc<Tally>,
    begin: impl FnOnce(),
) -> Sent {
    let permits = open::slots_for(schedule.cap);
    let slots = Arc::new(Semaphore::new(permits));
    let pacer = Pacer::constant(schedule.rate);
    let stop = CancellationToken::new();
    let mut sent = Sent::default();
    let start = Instant::now();
    begin();
    let end = start + schedule.duration;
    let mut i: u64 = 0;
    // A constant rate: `due` is never `None`.
    while let Some(offset) = pacer.due(i) {
        let due = start + offset;
        if due >= end {
            break;
        }
        tokio::time::sleep_until(due).await;
        // Bounded: requests that outlive their budget (they should not) must not hang the run.
        let Ok(Ok(permit)) = tokio::time::timeout_at(end, Arc::clone(&slots).acquire_owned()).await
        else {
            let total = pacer.due_between(Duration::ZERO, schedule.duration);
            sent.not_sent = total.saturating_sub(i);
            break;
        };
        let sent_at = Instant::now();
        if sent_at - due > LATE_AFTER {
            sent.late += 1;
        }
        let in_flight = (permits - slots.available_permits()) as u64;
        sent.max_in_flight = sent.max_in_flight.max(in_flight);
        sent.requests += 1;
        let (sender, tally, stop) = (sender.clone(), Arc::clone(tally), stop.clone());
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                () = stop.cancelled() => {}
                outcome = sender.send() => {
                    let now = Instant::now();
                    tally.record(offset, outcome, now - due, now - sent_at);
                }
            }
        });
        i += 1;
    }
    let give_up = Instant::now() + schedule.budget + GRACE;
    let _ = tokio::time::timeout_at(give_up, open::all_free(&slots, permits)).await;
    sent.abandoned = (permits - slots.available_permits()) as u64;
    stop.cancel();
    tally.unfinished(Failure::Unfinished, sent.abandoned);
    tally.unfinished(Failure::NotSent, sent.not_sent);
    sent
}
