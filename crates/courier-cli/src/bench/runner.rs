//! The closed-loop load generator: C workers, each sending one request at a time.
//!
//! Every worker loops on the one shared `Client` (so they compete for its pool, which is what is
//! being measured) and records into its own [`WorkerStats`]; nothing is shared on the hot path
//! but the client itself and, with `--requests`, one atomic ticket counter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use courier::{Client, MetricsSnapshot};
use http::{HeaderName, HeaderValue, Method, Uri};
use tokio::time::Instant;

use super::args::{BenchArgs, Stop};
use super::client::to_usize;
use super::sampler::{Peaks, Sampler};
use super::stats::{PoolStats, WorkerStats};
use crate::error::{CliError, Result};

/// After the workers stop, how long to wait at most for background drains to finish, so that
/// the drain counters in the report include the last requests' bodies.
const SETTLE_LIMIT: Duration = Duration::from_secs(3);

/// What a run produced, before it is turned into a report.
#[derive(Debug)]
pub struct RunOutcome {
    /// One entry per worker.
    pub workers: Vec<WorkerStats>,
    /// From the first request sent to the last one finished (or abandoned at the deadline).
    pub elapsed: Duration,
    /// The pool's view of the run.
    pub pool: PoolStats,
}

/// Everything a worker needs, shared by all workers.
struct Plan {
    client: Client,
    method: Method,
    uri: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Body bytes to read before dropping a response (`u64::MAX`: all of them).
    read_bytes: u64,
    budget: Budget,
}

/// When workers stop picking up new requests.
enum Budget {
    /// Exactly `limit` requests in total: each worker takes a ticket before each request.
    Requests { issued: AtomicU64, limit: u64 },
    /// Until the deadline; requests still in flight then are abandoned and not counted.
    Until(Instant),
}

impl Budget {
    fn take(&self) -> bool {
        match self {
            Self::Requests { issued, limit } => issued.fetch_add(1, Ordering::Relaxed) < *limit,
            Self::Until(deadline) => Instant::now() < *deadline,
        }
    }
}

/// The result of one request, as a worker records it.
enum Outcome {
    Response {
        status: u16,
        to_headers: Duration,
        to_last_byte: Duration,
        body_bytes: u64,
    },
    Failed(&'static str),
}

/// Runs the benchmark against `uri` with `client` on the current runtime.
pub async fn run(args: &BenchArgs, client: Client, uri: Uri) -> Result<RunOutcome> {
    let concurrency = to_usize(args.concurrency, "--concurrency")?;
    let start = Instant::now();
    let budget = match args.stop() {
        Stop::Requests(limit) => Budget::Requests {
            issued: AtomicU64::new(0),
            limit,
        },
        Stop::Duration(duration) => Budget::Until(start + duration),
    };
    let plan = Arc::new(Plan {
        client: client.clone(),
        method: args.http_method()?,
        uri,
        headers: args.http_headers()?,
        read_bytes: args.read_bytes.unwrap_or(u64::MAX),
        budget,
    });

    let sampler = Sampler::start(client.clone());
    let handles: Vec<_> = (0..concurrency)
        .map(|_| tokio::spawn(worker(Arc::clone(&plan))))
        .collect();
    let mut workers = Vec::with_capacity(concurrency);
    for handle in handles {
        let stats = handle
            .await
            .map_err(|e| CliError::new(format!("a benchmark worker failed: {e}")))?;
        workers.push(stats);
    }
    let elapsed = start.elapsed();

    settle(&client).await;
    let peaks = sampler.stop().await;
    Ok(RunOutcome {
        workers,
        elapsed,
        pool: pool_stats(&client.metrics(), &peaks),
    })
}

/// One request slot: send, read, record, repeat until the budget is spent.
async fn worker(plan: Arc<Plan>) -> WorkerStats {
    let mut stats = WorkerStats::new();
    while plan.budget.take() {
        let outcome = match plan.budget {
            Budget::Requests { .. } => one_request(&plan).await,
            Budget::Until(deadline) => {
                match tokio::time::timeout_at(deadline, one_request(&plan)).await {
                    Ok(outcome) => outcome,
                    Err(_) => break,
                }
            }
        };
        match outcome {
            Outcome::Response {
                status,
                to_headers,
                to_last_byte,
                body_bytes,
            } => stats.record_response(status, to_headers, to_last_byte, body_bytes),
            Outcome::Failed(kind) => stats.record_error(kind),
        }
    }
    stats
}

/// Sends one request and reads its body as far as `--read-bytes` says, timing both phases.
async fn one_request(plan: &Plan) -> Outcome {
    let start = Instant::now();
    let mut request = plan.client.request(plan.method.clone(), plan.uri.clone());
    for (name, value) in &plan.headers {
        request = request.header(name.clone(), value.clone());
    }
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(e) => return Outcome::Failed(e.kind().as_str()),
    };
    let to_headers = start.elapsed();
    let status = response.status().as_u16();
    let mut body_bytes = 0u64;
    while body_bytes < plan.read_bytes {
        match response.chunk().await {
            Ok(Some(chunk)) => body_bytes += chunk.len() as u64,
            Ok(None) => break,
            Err(e) => return Outcome::Failed(e.kind().as_str()),
        }
    }
    // Dropping an unfinished response hands the rest of the body to the library's drain.
    drop(response);
    Outcome::Response {
        status,
        to_headers,
        to_last_byte: start.elapsed(),
        body_bytes,
    }
}

/// Waits (bounded) until no request or connection is busy, i.e. background drains are done.
async fn settle(client: &Client) {
    let give_up = Instant::now() + SETTLE_LIMIT;
    while Instant::now() < give_up {
        let m = client.metrics();
        if m.requests_active == 0 && m.connections_active == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn pool_stats(m: &MetricsSnapshot, peaks: &Peaks) -> PoolStats {
    PoolStats {
        connections_established: m.connections_established,
        connections_open_max: m.connections_open_max.max(peaks.connections_open),
        requests_queued_max: peaks.requests_queued,
        queue_time_mean: m.time_in_queue.mean(),
        queue_time_max: m.time_in_queue.max(),
        drains_completed: m.drains_completed,
        drains_aborted: m.drains_aborted,
        stale_retries: m.stale_retries,
    }
}
