//! The closed loop: request slots that send, wait for the response, and send again.
//!
//! N clients × C slots each, as in the .NET HttpClient benchmark (`--clients`, `-c`), or K
//! single-connection clients × M slots (`--connections`, `--streams`, h2load's model). Long
//! polls use the same slots with the in-flight counter on. A slot is one small task: the plan
//! and client handles, its slot number and the request being sent — everything it measures goes
//! into its thread's tally, so it holds no histogram of its own.

use std::future::Future;
use std::sync::Arc;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::client::BenchClient;

use super::interrupt;
use super::plan::{Admit, Plan};
use super::request;
use crate::error::{CliError, Result};

/// Runs `per_client` slots on each client until the plan's budget is spent or Ctrl-C.
///
/// The deadline of a timed run cuts the requests still in flight: the slots are aborted when it
/// passes. That is one timer for the run; a timeout around each request was a timer registered
/// and cleared per request, and a bigger slot. After Ctrl-C the slots stop at their next
/// request; those still in flight get the grace period, then are aborted the same way.
pub async fn run(plan: &Arc<Plan>, clients: &[BenchClient], per_client: u64) -> Result<()> {
    let mut handles = Vec::new();
    let mut slot = 0usize;
    for client in clients {
        for _ in 0..per_client {
            handles.push(tokio::spawn(worker(Arc::clone(plan), client.clone(), slot)));
            slot += 1;
        }
    }
    wait(plan, handles).await
}

/// Tasks that hold the long polls: a few per runtime thread, so the polls are spread over the
/// threads and each task's share is woken one poll at a time.
const HOLDERS_PER_THREAD: usize = 4;

/// Runs the slots as [`run`] does, but holds them in a few tasks ([`HOLDERS_PER_THREAD`] per
/// runtime thread) rather than one task each: the long polls' model, where what each slot costs
/// while it waits is the measurement. A tokio task adds 96 B of its own to its future and is
/// allocated aligned to 128 B (its size rounded up to a multiple of 128, and the allocator's
/// slack for the alignment on top), some 200 B per slot that are the harness's, not the
/// client's; a slot in a `FuturesUnordered` costs its future and a 64 B node. A program that
/// spawns a task per long poll pays those 200 B besides what the report shows (see the
/// performance chapter).
///
/// Each holder makes its slots itself, on the runtime thread it runs on: the slots are then
/// allocated where the opening phase's requests were, in the memory they left free, rather
/// than all in the calling thread's allocator arena beside it (glibc keeps an arena per
/// thread, and freed memory goes back to its own arena only).
pub async fn run_held(plan: &Arc<Plan>, clients: &[BenchClient], per_client: u64) -> Result<()> {
    let threads = tokio::runtime::Handle::current().metrics().num_workers();
    let per_client = usize::try_from(per_client).unwrap_or(usize::MAX);
    let slots = clients.len().saturating_mul(per_client);
    let holders = (threads.max(1) * HOLDERS_PER_THREAD).clamp(1, slots.max(1));
    let clients: Arc<[BenchClient]> = clients.into();
    let handles = (0..holders)
        .map(|holder| {
            let (plan, clients) = (Arc::clone(plan), Arc::clone(&clients));
            tokio::spawn(async move {
                let mut group = FuturesUnordered::new();
                for slot in (holder..slots).step_by(holders) {
                    let client = clients[slot / per_client.max(1)].clone();
                    group.push(worker(Arc::clone(&plan), client, slot));
                }
                while group.next().await.is_some() {}
            })
        })
        .collect();
    wait(plan, handles).await
}

/// Waits for the slots' tasks until the plan's budget is spent or Ctrl-C (see [`run`]).
async fn wait(plan: &Arc<Plan>, mut handles: Vec<JoinHandle<()>>) -> Result<()> {
    let mut joined = 0;
    let deadline = plan.clock.deadline;
    let cancelled = tokio::select! {
        result = join(&mut handles, &mut joined) => return result,
        cancelled = interrupt::cancelled_before(&plan.stop, deadline) => cancelled,
    };
    if cancelled {
        let grace = Instant::now() + interrupt::GRACE;
        let limit = deadline.map_or(grace, |deadline| deadline.min(grace));
        if let Ok(result) = tokio::time::timeout_at(limit, join(&mut handles, &mut joined)).await {
            return result;
        }
    }
    for handle in &handles[joined..] {
        handle.abort();
    }
    join(&mut handles, &mut joined).await
}

/// Waits for the slots from `*joined` on, counting those that ended; a cut slot is no error.
async fn join(handles: &mut [JoinHandle<()>], joined: &mut usize) -> Result<()> {
    while let Some(handle) = handles.get_mut(*joined) {
        let ended = handle.await;
        *joined += 1;
        match ended {
            Err(e) if !e.is_cancelled() => {
                return Err(CliError::new(format!("a benchmark worker failed: {e}")))
            }
            _ => {}
        }
    }
    Ok(())
}

/// One request slot: send, read, record, repeat until the budget is spent.
///
/// Not an `async fn`: one copies its arguments from its state into locals of its state, and a
/// million long polls pay for the copy a million times. This block uses what it captured.
#[allow(clippy::manual_async_fn)]
pub fn worker(plan: Arc<Plan>, client: BenchClient, slot: usize) -> impl Future<Output = ()> {
    async move {
        let one_round = matches!(plan.budget, super::plan::Budget::OneRound);
        // The clock is read twice per request (its head, its end), not three times: a request
        // starts at the instant the one before it ended. What lies between (recording it,
        // admitting the next, a few hundred instructions) counts in the next one's latency.
        let mut start = Instant::now();
        // A flag, not the `Option<&FirstRequests>`: it fits in the slot's padding, where a
        // pointer made every long poll 8 B bigger.
        let mut first = true;
        loop {
            let measured = match plan.admit_with(start) {
                Admit::Stop => break,
                Admit::Warmup => false,
                Admit::Measured => true,
            };
            let in_flight = plan.in_flight.as_ref().map(|counter| counter.enter());
            let (outcome, ended) = request::send(&client, &plan.template, slot, start).await;
            drop(in_flight);
            if std::mem::take(&mut first) {
                if let Some(cold) = &plan.first {
                    cold.record(&outcome);
                }
            }
            if measured {
                plan.record(outcome);
            }
            start = ended;
            if one_round && measured {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plan::{Budget, Clock};
    use crate::bench::recorder::Recorder;
    use crate::bench::request::Template;

    /// A slot is the request being sent plus little else: with 100,000 long polls in flight,
    /// every byte of the slot's own state counts 100,000 times.
    #[test]
    fn a_slot_costs_little_beyond_its_request() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let args = crate::bench::args::tests::parse(&[]).unwrap();
            let uri = "http://127.0.0.1:1/delay/1000".parse().unwrap();
            let template = Template::new(&args, vec![uri]).unwrap();
            let client = BenchClient::Plain(courier::Client::new());
            let request = request::send(&client, &template, 0, Instant::now());
            let request_size = std::mem::size_of_val(&request);
            drop(request);
            let library = client.execute(template.request(0));
            let library_size = std::mem::size_of_val(&library);
            drop(library);
            let start = Instant::now();
            let plan = Arc::new(Plan {
                template,
                recorder: Recorder::new(),
                clock: Clock {
                    start,
                    measure_start: start,
                    deadline: Some(start),
                },
                budget: Budget::OneRound,
                in_flight: None,
                stop: tokio_util::sync::CancellationToken::new(),
                first: None,
            });
            let slot = worker(plan, client, 0);
            let slot_size = std::mem::size_of_val(&slot);
            let response_size = std::mem::size_of::<courier::Response>();
            eprintln!(
                "slot future {slot_size} B, bench request future {request_size} B, \
                 library request future {library_size} B, response {response_size} B"
            );
            // The slot's own state (plan, client, slot number, start, admission) beside the
            // library's future. A response kept in the slot's state while the library's
            // future was in it too cost every long poll 400 B more (1,361 B of heap each).
            assert!(
                slot_size <= library_size + 96,
                "slot {slot_size} B vs the library's request future {library_size} B"
            );
        });
    }
}
