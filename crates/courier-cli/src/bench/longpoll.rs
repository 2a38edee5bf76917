//! Long polls: how many requests the client can hold in flight, and what each one costs.
//!
//! The slots are the closed loop's, sending to `/delay/{ms}`, with the in-flight counter on.
//! Before them, [`open_connections`] opens one connection per slot (with `/delay/0` requests),
//! so the long polls find their connections open and their latency minus the delay is the
//! wake-up time, not connection setup. [`Monitor`] watches the in-flight counter and reads the resident set
//! whenever it reaches a new peak, so memory per in-flight request is (RSS at peak − RSS before
//! any connection opened) ÷ requests in flight then: connection and request together, which is
//! what a long poll costs over HTTP/1.1. The built-in server runs in child processes for this
//! scenario by default, so the RSS is the client's alone.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use tokio::sync::{oneshot, Barrier};
use tokio::task::JoinHandle;

use super::client::BenchClient;

use super::plan::Plan;
use super::procfs;
use super::request::Template;
use crate::alloc;
use crate::error::Result;

/// Opens a connection per slot before the long polls and takes the memory readings they are
/// compared with: resident set and heap before any connection, heap once all are open. Heap
/// bytes are counted from here until [`Monitor::finish`].
pub async fn prepare(
    template: &Template,
    clients: &[BenchClient],
    per_client: u64,
) -> Result<MemoryBase> {
    let rss_before = procfs::rss_bytes().unwrap_or(0);
    alloc::enable();
    let heap_before = alloc::heap_balance();
    let opening = open_connections(&template.without_delay()?, clients, per_client).await;
    let heap_open = alloc::heap_balance();
    // Opening a connection per slot allocated and freed a task per slot: give that memory
    // back, or the peak resident set would count it as the long polls' cost.
    procfs::release_free_memory();
    // One per slot over HTTP/1.1; over HTTP/2, one per server stream limit's worth of slots.
    let connections_opened = clients.iter().map(|c| c.metrics().connections_open).sum();
    if let Some(warning) = opening.warning(connections_opened) {
        eprintln!("courier bench: {warning}");
    }
    Ok(MemoryBase {
        rss_before,
        heap_before,
        heap_open,
        connections_opened,
    })
}

/// Connection attempts in flight at once while opening connections: the built-in server's
/// accept queue holds 128, and a burst beyond it costs a 1 s SYN retransmission.
const OPENING_AT_ONCE: usize = 64;

/// Tasks that open the connections, each for its share of the slots: a few per runtime
/// thread, so the responses are taken in parallel, and a fixed number whatever the slot count.
const OPENING_TASKS_PER_THREAD: usize = 2;

/// Opens one connection per slot (`per_client` on each client) before the long polls start.
///
/// Each slot sends a `/delay/0` request and keeps its response's body unread, so its connection
/// stays leased (HTTP/1.1) or its stream open (HTTP/2) and the next slot must open another
/// connection or take another stream; once every slot has its response, all bodies are read and
/// the connections go back to the pool idle. At most [`OPENING_AT_ONCE`] requests are being
/// answered at a time; see [`open_all`] for why the slots are not a task each.
pub async fn open_connections(
    template: &Template,
    clients: &[BenchClient],
    per_client: u64,
) -> Opening {
    let per_client = usize::try_from(per_client).unwrap_or(usize::MAX);
    let slots = clients.len().saturating_mul(per_client);
    let template = Arc::new(template.clone());
    let clients: Arc<[BenchClient]> = clients.into();
    let threads = tokio::runtime::Handle::current().metrics().num_workers();
    let send = move |slot: usize| {
        let client = &clients[slot / per_client.max(1)];
        let response = client.execute(template.request(slot));
        async move {
            match response.await {
                Ok(response) => Ok(response.into_body()),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let read = |body: courier::ResponseBody| async move {
        let response = courier::Response::from_http(http::Response::new(body));
        response.bytes().await.map(drop).map_err(|e| e.to_string())
    };
    let tasks = threads.max(1) * OPENING_TASKS_PER_THREAD;
    open_all(slots, tasks, OPENING_AT_ONCE, send, read).await
}

/// Sends slot `0..slots`'s request with `send`, keeps what each returns until every slot has
/// returned, then hands each to `finish`; at most `at_once` sends (and then finishes) at a time.
///
/// The slots are shared by `tasks` tasks (fewer if there are fewer slots), each with its share
/// as a bounded stream of futures: a task per slot held each slot's request future and response
/// in a task of its own until the last connection opened, 3.18 GB at the peak for a million
/// long polls that then took 1.2 GB. Here a slot costs what it keeps (its response's body,
/// which holds the connection or stream) and no task.
async fn open_all<S, SF, H, F, FF>(
    slots: usize,
    tasks: usize,
    at_once: usize,
    send: S,
    finish: F,
) -> Opening
where
    S: Fn(usize) -> SF + Send + Sync + 'static,
    SF: Future<Output = std::result::Result<H, String>> + Send + 'static,
    H: Send + 'static,
    F: Fn(H) -> FF + Send + Sync + 'static,
    FF: Future<Output = std::result::Result<(), String>> + Send + 'static,
{
    let tasks = tasks.clamp(1, slots.max(1));
    let each = (at_once / tasks).max(1);
    let (send, finish) = (Arc::new(send), Arc::new(finish));
    let all_sent = Arc::new(Barrier::new(tasks));
    let handles: Vec<JoinHandle<Opening>> = (0..tasks)
        .map(|task| {
            let (send, finish, all_sent) = (
                Arc::clone(&send),
                Arc::clone(&finish),
                Arc::clone(&all_sent),
            );
            tokio::spawn(async move {
                let mut outcome = Opening::default();
                let mut held = Vec::new();
                let mut sends = stream::iter((task..slots).step_by(tasks))
                    .map(|slot| send(slot))
                    .buffer_unordered(each);
                while let Some(sent) = sends.next().await {
                    outcome.requests += 1;
                    match sent {
                        Ok(kept) => held.push(kept),
                        Err(e) => outcome.fail(e),
                    }
                }
                drop(sends);
                all_sent.wait().await;
                let mut finishes = stream::iter(held)
                    .map(|kept| finish(kept))
                    .buffer_unordered(each);
                while let Some(finished) = finishes.next().await {
                    if let Err(e) = finished {
                        outcome.fail(e);
                    }
                }
                outcome
            })
        })
        .collect();
    let mut outcome = Opening::default();
    for handle in handles {
        match handle.await {
            Ok(part) => outcome.add(part),
            // A task that panicked: its slots are not known to have opened.
            Err(e) => outcome.fail(e.to_string()),
        }
    }
    outcome.requests = slots as u64;
    outcome
}

/// How the opening phase went: one request per slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Opening {
    /// Requests sent, one per slot.
    pub requests: u64,
    /// Of those, requests that got no complete response.
    pub failed: u64,
    /// What the first failed request said.
    pub first_error: Option<String>,
}

impl Opening {
    /// One more request that got no complete response.
    fn fail(&mut self, error: String) {
        self.failed += 1;
        self.first_error.get_or_insert(error);
    }

    /// Another task's share of the slots.
    fn add(&mut self, part: Opening) {
        self.requests += part.requests;
        self.failed += part.failed;
        if let Some(error) = part.first_error {
            self.first_error.get_or_insert(error);
        }
    }

    /// What to tell the user when some slots failed. Failures are counted as the requests they
    /// are: over HTTP/2 a hundred slots share one connection, so the slot count says nothing
    /// about connections; the connections are the clients' own count (`connections_open`).
    pub fn warning(&self, connections_open: u64) -> Option<String> {
        if self.failed == 0 {
            return None;
        }
        let mut text = format!(
            "{} of {} opening request(s) failed, {connections_open} connection(s) open before the long polls",
            self.failed, self.requests
        );
        if let Some(error) = &self.first_error {
            text.push_str("; the first: ");
            text.push_str(error);
        }
        Some(text)
    }
}

/// How often the in-flight counter is watched.
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// Memory readings taken before the long polls start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryBase {
    /// Resident set before any connection opened, in bytes.
    pub rss_before: u64,
    /// Heap balance (see `alloc::heap_balance`) before any connection opened.
    pub heap_before: i64,
    /// Heap balance once every slot's connection was open and idle.
    pub heap_open: i64,
    /// Connections open after the opening phase (the clients' own count).
    pub connections_opened: u64,
}

/// Memory around the peak of requests in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PeakMemory {
    pub base: MemoryBase,
    /// Resident set when the most requests were in flight, in bytes.
    pub rss_at_peak: u64,
    /// Heap balance when the most requests were in flight.
    pub heap_at_peak: i64,
    /// Requests in flight when `rss_at_peak` was read.
    pub in_flight_at_peak: u64,
    /// The most requests in flight at once (exact, from the counter).
    pub peak_in_flight: u64,
    /// The highest resident set of the whole run so far, the opening phase's included, in bytes
    /// (what a user must provision, where `rss_at_peak` is what the long polls hold).
    pub rss_high_water: u64,
    pub server_addresses: u64,
}

impl PeakMemory {
    /// Bytes of resident memory per request in flight at the peak, its connection included.
    pub fn per_request(&self) -> f64 {
        per(
            self.rss_at_peak.saturating_sub(self.base.rss_before) as f64,
            self.in_flight_at_peak,
        )
    }

    /// Heap bytes per open, idle connection after the opening phase. Over HTTP/2 this includes
    /// h2's stream and frame tables, grown for the slots' streams while opening and kept: the long
    /// polls use them.
    pub fn heap_per_connection(&self) -> f64 {
        per(
            (self.base.heap_open - self.base.heap_before) as f64,
            self.base.connections_opened,
        )
    }

    /// Heap bytes per request in flight, its share of the connections included (as for the
    /// resident figure): the rest of that figure is the allocator's own.
    pub fn heap_per_request(&self) -> f64 {
        per(
            (self.heap_at_peak - self.base.heap_before) as f64,
            self.in_flight_at_peak,
        )
    }
}

fn per(total: f64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        (total / n as f64).max(0.0)
    }
}

/// A running watcher.
pub struct Monitor {
    stop: oneshot::Sender<()>,
    task: JoinHandle<PeakMemory>,
}

impl Monitor {
    /// Watches `plan`'s in-flight counter.
    pub fn start(plan: Arc<Plan>, server_addresses: u64, base: MemoryBase) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut memory = PeakMemory {
                base,
                rss_at_peak: base.rss_before,
                heap_at_peak: base.heap_open,
                in_flight_at_peak: 0,
                peak_in_flight: 0,
                rss_high_water: 0,
                server_addresses,
            };
            let mut ticks = tokio::time::interval(WATCH_EVERY);
            loop {
                tokio::select! {
                    _ = ticks.tick() => alloc::uncounted(|| observe(&plan, &mut memory)),
                    _ = &mut stopped => break,
                }
            }
            // The counter's own peak is exact; the RSS goes with the closest watch.
            if let Some(counter) = &plan.in_flight {
                memory.peak_in_flight = counter.peak();
            }
            memory.rss_high_water = procfs::rss_high_water_bytes()
                .unwrap_or(0)
                .max(memory.rss_at_peak);
            memory
        });
        Self { stop, task }
    }

    /// Stops watching (and counting heap bytes) and returns what was seen.
    pub async fn finish(self) -> PeakMemory {
        let _ = self.stop.send(());
        let memory = self.task.await.unwrap_or_default();
        alloc::disable();
        memory
    }
}

fn observe(plan: &Plan, memory: &mut PeakMemory) {
    let Some(counter) = &plan.in_flight else {
        return;
    };
    let now = counter.now();
    if now == 0 || now < memory.in_flight_at_peak {
        return;
    }
    // Out of file descriptors, /proc cannot be read: keep the last good reading.
    let Some(rss) = procfs::rss_bytes() else {
        return;
    };
    let heap = alloc::heap_balance();
    if now > memory.in_flight_at_peak {
        memory.rss_at_peak = rss;
        memory.heap_at_peak = heap;
    } else {
        memory.rss_at_peak = memory.rss_at_peak.max(rss);
        memory.heap_at_peak = memory.heap_at_peak.max(heap);
    }
    memory.in_flight_at_peak = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_per_request_and_connection() {
        let m = PeakMemory {
            base: MemoryBase {
                rss_before: 10_000_000,
                heap_before: 1_000,
                heap_open: 5_001_000,
                connections_opened: 10_000,
            },
            rss_at_peak: 30_000_000,
            heap_at_peak: 6_001_000,
            in_flight_at_peak: 10_000,
            peak_in_flight: 10_000,
            rss_high_water: 40_000_000,
            server_addresses: 1,
        };
        assert_eq!(m.per_request(), 2000.0);
        assert_eq!(m.heap_per_connection(), 500.0);
        assert_eq!(m.heap_per_request(), 600.0);
        assert_eq!(PeakMemory::default().per_request(), 0.0);
        assert_eq!(PeakMemory::default().heap_per_request(), 0.0);
        let shrunk = PeakMemory {
            rss_at_peak: 5,
            heap_at_peak: 0,
            ..m
        };
        assert_eq!(shrunk.per_request(), 0.0);
        assert_eq!(shrunk.heap_per_request(), 0.0);
    }

    /// A million long polls' opening must not cost a task per slot (3.18 GB at the peak, against
    /// 1.2 GB for the long polls themselves): the tasks alive while the slots send stay a fixed
    /// number, at most `at_once` sends are under way, and every slot keeps what it got until
    /// the last slot has it.
    #[test]
    fn the_opening_runs_in_a_fixed_number_of_tasks() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (slots, tasks, at_once) = (5_000, 4, 64);
        let sending = Arc::new(AtomicUsize::new(0));
        let most_sending = Arc::new(AtomicUsize::new(0));
        let most_tasks = Arc::new(AtomicUsize::new(0));
        let kept = Arc::new(AtomicUsize::new(0));
        let finished_early = Arc::new(AtomicUsize::new(0));
        let outcome = rt.block_on({
            let (sending, most_sending, most_tasks) = (
                Arc::clone(&sending),
                Arc::clone(&most_sending),
                Arc::clone(&most_tasks),
            );
            let (kept, kept_too) = (Arc::clone(&kept), Arc::clone(&kept));
            let finished_early = Arc::clone(&finished_early);
            let send = move |slot: usize| {
                let (sending, most_sending, most_tasks, kept) = (
                    Arc::clone(&sending),
                    Arc::clone(&most_sending),
                    Arc::clone(&most_tasks),
                    Arc::clone(&kept),
                );
                async move {
                    let now = sending.fetch_add(1, SeqCst) + 1;
                    most_sending.fetch_max(now, SeqCst);
                    let alive = tokio::runtime::Handle::current()
                        .metrics()
                        .num_alive_tasks();
                    most_tasks.fetch_max(alive, SeqCst);
                    tokio::task::yield_now().await;
                    sending.fetch_sub(1, SeqCst);
                    kept.fetch_add(1, SeqCst);
                    match slot % 1_000 {
                        7 => Err(format!("slot {slot} failed")),
                        _ => Ok(slot),
                    }
                }
            };
            let finish = move |slot: usize| {
                if kept_too.load(SeqCst) < slots {
                    finished_early.fetch_add(1, SeqCst);
                }
                async move {
                    match slot % 1_000 {
                        9 => Err(format!("slot {slot}'s body failed")),
                        _ => Ok(()),
                    }
                }
            };
            open_all(slots, tasks, at_once, send, finish)
        });
        assert_eq!(outcome.requests, 5_000);
        assert_eq!(outcome.failed, 10, "{outcome:?}");
        assert!(outcome.first_error.is_some());
        assert_eq!(kept.load(SeqCst), slots);
        assert_eq!(
            finished_early.load(SeqCst),
            0,
            "a slot let go before all had sent"
        );
        let most = most_sending.load(SeqCst);
        assert!((1..=at_once).contains(&most), "{most} sends at once");
        let most = most_tasks.load(SeqCst);
        assert!(most <= tasks, "{most} tasks alive for {slots} slots");
    }

    #[test]
    fn failed_slots_are_requests_and_connections_are_counted_apart() {
        let fine = Opening {
            requests: 1_000_000,
            ..Opening::default()
        };
        assert_eq!(fine.warning(10_000), None);
        let some = Opening {
            requests: 1_000_000,
            failed: 960_590,
            first_error: Some("timed out".into()),
        };
        assert_eq!(
            some.warning(396).as_deref(),
            Some(
                "960590 of 1000000 opening request(s) failed, 396 connection(s) open \
                 before the long polls; the first: timed out"
            )
        );
    }
}
