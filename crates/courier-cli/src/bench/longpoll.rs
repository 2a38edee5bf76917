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

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, Barrier, Semaphore};
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

/// Opens one connection per slot (`per_client` on each client) before the long polls start.
///
/// Each slot sends a `/delay/0` request and keeps its response unread, so its connection stays
/// leased (HTTP/1.1) or its stream open (HTTP/2) and the next slot must open another connection
/// or take another stream; once every slot has its response, all bodies are read and the
/// connections go back to the pool idle. At most [`OPENING_AT_ONCE`] requests are being
/// answered at a time.
pub async fn open_connections(
    template: &Template,
    clients: &[BenchClient],
    per_client: u64,
) -> Opening {
    let template = Arc::new(template.clone());
    let slots = clients.len() * usize::try_from(per_client).unwrap_or(usize::MAX);
    let opening = Arc::new(Semaphore::new(OPENING_AT_ONCE));
    let all_open = Arc::new(Barrier::new(slots));
    let mut handles = Vec::with_capacity(slots);
    let mut slot = 0usize;
    for client in clients {
        for _ in 0..per_client {
            let (template, client) = (Arc::clone(&template), client.clone());
            let (opening, all_open) = (Arc::clone(&opening), Arc::clone(&all_open));
            handles.push(tokio::spawn(async move {
                let permit = opening.acquire_owned().await;
                let response = client.execute(template.request(slot)).await;
                drop(permit);
                all_open.wait().await;
                match response {
                    Ok(response) => response.bytes().await.map(drop).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }));
            slot += 1;
        }
    }
    let mut outcome = Opening {
        requests: slots as u64,
        ..Opening::default()
    };
    for handle in handles {
        let error = match handle.await {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(e) => e.to_string(),
        };
        outcome.failed += 1;
        outcome.first_error.get_or_insert(error);
    }
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
