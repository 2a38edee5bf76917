//! The report as data: the typed schema of `--json`, read back by `courier compare`.
//!
//! The text table, the chart, the HTML page and the comparison are all rendered from this one
//! struct, so they can never disagree with the file. Field names are the file format: add
//! fields freely (as `Option` or with `#[serde(default)]` so older files still load), but do not
//! rename or remove them; bump [`SCHEMA_VERSION`] when a meaning changes.
//!
//! The parts: this file (the schema), `file` (writing and reading a report file), `tests` (a
//! sample report the other modules' tests share, and the schema's tests).

mod file;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::args::BenchArgs;
use super::limits::Limits;
use super::stats::{MeanMax, Percentiles};

/// Version of the report format. 2: `rps` counts successful requests only (it counted failed
/// ones too), and `responses`, `error_rate` and `error_messages` were added.
pub const SCHEMA_VERSION: u32 = 2;

/// Everything a bench run found out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Version of this format ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Version of the `courier` tool that produced the report.
    pub version: String,
    /// The URL requested (the first one, when long polls spread over several servers).
    pub url: String,
    /// Every URL requested.
    pub urls: Vec<String>,
    /// Method sent.
    pub method: String,
    /// Protocol asked for.
    pub protocol: String,
    /// `requests` or `longpoll`.
    pub scenario: String,
    /// Where the server ran: `in-process`, `process` (child processes) or `external` (a URL).
    pub server: String,
    /// The load model with its defaults resolved.
    pub load: LoadReport,
    /// Client runtime threads.
    pub threads: u64,
    /// CPU cores of the machine.
    pub cores: u64,
    /// Seconds run before measuring, excluded from every figure.
    pub warmup_s: f64,
    /// Measured wall time, in seconds.
    pub duration_s: f64,
    /// Measured requests that finished, failed or not.
    pub requests: u64,
    /// Requests that got a response (any status).
    #[serde(default)]
    pub responses: u64,
    /// Requests that failed without a response.
    pub errors: u64,
    /// `errors / requests`, as a fraction (0 when nothing finished).
    #[serde(default)]
    pub error_rate: f64,
    /// Failed requests by the line naming the cause, e.g. `connection refused 127.0.0.1:1`.
    #[serde(default)]
    pub error_messages: BTreeMap<String, u64>,
    /// Whether Ctrl-C ended the run early (the figures cover the time until then).
    #[serde(default)]
    pub interrupted: bool,
    /// Failed requests by error kind (`timeout`, `connect`, …).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Responses by status code (keys are the codes as strings, as JSON requires).
    pub status_codes: BTreeMap<String, u64>,
    /// Requests that got a response, per second ("Mean RPS"); failures never count.
    pub rps: f64,
    /// Body bytes read by the benchmark (bytes drained by the library are not counted).
    pub bytes_read: u64,
    /// Body bytes read per second.
    pub bytes_per_s: f64,
    /// Time from sending a request to its response headers (from the actual send).
    pub latency_headers_ms: Percentiles,
    /// Time from sending a request to the last body byte read (from the actual send).
    pub latency_last_byte_ms: Percentiles,
    /// Open connections, sampled over the run ("Current Connections - Mean/Max").
    pub connections_current: MeanMax,
    /// Most connections open at once.
    pub connections_open_max: u64,
    /// New connections the run's clients established, counted from when they were built: the
    /// long polls' opening phase and the warmup included (their connections serve the measured
    /// requests); the timeline's per-second counts cover the measured seconds only.
    pub connections_established: u64,
    /// The same, by the protocol each connection speaks.
    #[serde(default)]
    pub connections_established_by_version: ByVersion,
    /// TLS handshakes completed (full and resumed), counted like `connections_established`.
    #[serde(default)]
    pub tls_handshakes: u64,
    /// TLS handshakes that resumed an earlier session.
    #[serde(default)]
    pub tls_resumed: u64,
    /// Connection attempts in progress, sampled ("Current Outgoing Connect Attempts").
    pub connect_attempts_current: MeanMax,
    /// Connection attempts that failed, counted like `connections_established`.
    pub connect_failures: u64,
    /// Requests per connection used (open at the start plus established).
    pub requests_per_connection: f64,
    /// Requests waiting for a connection, sampled.
    pub requests_queued: MeanMax,
    /// Mean time in the pool's queue per second, then mean and max over the seconds
    /// ("Requests Queue Duration - Mean/Max"); only requests that waited count.
    pub queue_time_ms: MeanMax,
    /// Dropped bodies drained to their end (connection kept).
    pub drains_completed: u64,
    /// Dropped bodies over the drain limits (connection closed).
    pub drains_aborted: u64,
    /// Requests retried because a reused connection turned out to be closed.
    pub stale_retries: u64,
    /// TLS figures; `null` until the client reports TLS metrics.
    pub tls: Option<TlsReport>,
    /// This process's CPU and memory.
    pub process: ProcessReport,
    /// Open-loop figures (`--rate`).
    pub open_loop: Option<OpenLoopReport>,
    /// Long-poll figures (`--scenario longpoll`).
    pub longpoll: Option<LongPollReport>,
    /// Each slot's first request, on the pool the run started with (none open): the closed
    /// loop only, warmup or not.
    #[serde(default)]
    pub first_requests: Option<FirstRequestsReport>,
    /// Allocation counts (`--count-allocations`).
    pub allocations: Option<AllocationReport>,
    /// Open-file and port limits, and notes on what limited the run.
    pub limits: Limits,
    /// Per-second samples of the measured time.
    pub timeline: Vec<TimelineSample>,
    /// The flags of the run.
    pub config: BenchArgs,
    /// What each `--fail-if` found.
    #[serde(default)]
    pub thresholds: Vec<crate::threshold::Checked>,
    /// The full latency histograms, for `courier merge` (absent in reports before it).
    #[serde(default)]
    pub histograms: Option<super::histograms::Histograms>,
    /// `--targets`: the file's entries (empty for a single URL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<super::targets_file::TargetReport>,
    /// Reports merged into this one by `courier merge` (1 for a single run).
    #[serde(default = "one")]
    pub agents: u64,
}

/// The load model as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// `closed`, `open` or `longpoll`.
    pub model: String,
    /// Independent clients (connection pools).
    pub clients: u64,
    /// Request slots per client (open loop: in-flight cap per client).
    pub concurrency: u64,
    /// Connection cap per origin and client (`null`: unbounded).
    pub max_connections_per_host: Option<u64>,
    /// Open loop: requests per second asked for.
    pub rate: Option<f64>,
    /// Long polls: the server's delay in seconds.
    pub delay_s: Option<f64>,
    /// `duration`, `requests` or `one-round`.
    pub stop: String,
}

/// A count per HTTP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ByVersion {
    #[serde(rename = "HTTP/1.1")]
    pub http1: u64,
    #[serde(rename = "HTTP/2")]
    pub http2: u64,
    /// Only in reports of runs that spoke it (older reports have none).
    #[serde(rename = "HTTP/3", default, skip_serializing_if = "is_zero")]
    pub http3: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Each slot's first request: all of them wait for connections to open (DNS, TCP, TLS, an HTTP/2
/// preface), as a service's first requests do.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct FirstRequestsReport {
    /// From the send to the last body byte, those that got a response.
    pub latency_last_byte_ms: Percentiles,
    /// Those that failed.
    pub failed: u64,
}

/// TLS figures, in the seed table's rows (present when the run made TLS connections).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TlsReport {
    /// Handshakes completed during the measured time.
    pub handshakes_total: u64,
    /// Of those, handshakes that resumed an earlier session.
    #[serde(default)]
    pub resumed: u64,
    /// Handshakes in progress, sampled.
    pub handshakes_current: MeanMax,
    /// TLS sessions (connections) active, sampled.
    pub sessions_active: MeanMax,
    /// Handshake duration per second, mean and max over the seconds.
    pub handshake_duration_ms: MeanMax,
}

/// The benchmark process's own CPU and memory.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcessReport {
    /// Highest one-second CPU use, in % of all cores (100 = every core busy).
    pub cpu_max_pct: f64,
    /// Mean CPU use over the measured time, in % of all cores.
    pub cpu_mean_pct: f64,
    /// Highest resident set size ("working set"), in MiB.
    pub rss_max_mb: f64,
    /// Highest resident anonymous memory ("private memory"), in MiB.
    pub private_max_mb: f64,
    /// Whether the built-in server ran in this process (its CPU and memory are included).
    pub includes_server: bool,
    /// CPU time used over the measured time, in seconds (summed over agents by `merge`).
    #[serde(default)]
    pub cpu_seconds: f64,
}

/// Open-loop figures.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct OpenLoopReport {
    /// Requests per second asked for.
    pub rate: f64,
    /// Measured requests that were due.
    pub intended: u64,
    /// Of those, the requests sent.
    pub sent: u64,
    /// Requests sent per second.
    pub sent_per_s: f64,
    /// Due but never sent: every in-flight slot was busy until the end.
    pub not_sent: u64,
    /// Sent more than `late_after_ms` behind schedule.
    pub late: u64,
    /// Threshold for `late`.
    pub late_after_ms: f64,
    /// Sent but still in flight at the end (abandoned, not in the latency figures).
    pub unfinished: u64,
    /// Most requests in flight at once allowed, over all clients.
    pub in_flight_cap: u64,
    /// Most requests that were in flight at once.
    pub max_in_flight: u64,
    /// How late requests were sent after their intended start.
    pub send_lag_ms: Percentiles,
    /// From the intended start to the response headers (corrected for coordinated omission).
    pub latency_corrected_headers_ms: Percentiles,
    /// From the intended start to the last body byte (corrected for coordinated omission).
    pub latency_corrected_last_byte_ms: Percentiles,
}

/// Long-poll figures.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LongPollReport {
    /// How long the server held each request, in seconds.
    pub delay_s: f64,
    /// Requests the run tried to hold in flight.
    pub target_in_flight: u64,
    /// The most requests that were in flight at once.
    pub peak_in_flight: u64,
    /// Latency after the server answered (latency minus the delay).
    pub wake_up_ms: Percentiles,
    /// Resident set before the first request, in MiB.
    pub rss_before_mb: f64,
    /// Resident set at the peak in flight, in MiB.
    pub rss_peak_mb: f64,
    /// The highest resident set of the run until the long polls ended, the opening phase's
    /// included (`VmHWM`), in MiB: what the client must be given, where `rss_peak_mb` is what
    /// the long polls hold. 0 in reports from before it was measured.
    #[serde(default)]
    pub rss_high_water_mb: f64,
    /// (RSS at peak − RSS before) ÷ requests in flight then, in bytes: a request and its
    /// connection, user space and allocator slack included.
    pub memory_per_request_bytes: f64,
    /// Heap growth per open, idle connection (opened before the long polls; over HTTP/2 with
    /// h2's stream tables grown for the slots' streams), in bytes.
    pub heap_per_connection_bytes: f64,
    /// Heap growth from before the first connection to the peak ÷ requests in flight then, in
    /// bytes: the heap part of `memory_per_request_bytes`.
    pub heap_per_request_bytes: f64,
    /// Server addresses the requests were spread over.
    pub server_addresses: u64,
}

/// Allocation counts of the measured time: the client's, from `execute` to the end of the body.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AllocationReport {
    pub allocations: u64,
    pub bytes: u64,
    pub allocations_per_request: f64,
    pub bytes_per_request: f64,
    /// Headers each request carried.
    pub request_headers: u64,
    /// Allocations of building one `http::Request` (the caller's, left out of the counts above).
    #[serde(default)]
    pub request_construction_allocations: f64,
    /// Bytes allocated building one `http::Request`.
    #[serde(default)]
    pub request_construction_bytes: f64,
}

/// One second of the measured time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TimelineSample {
    /// End of the interval, in seconds since measurement started.
    pub t_s: f64,
    /// Length of the interval (1, or less/more for the last one).
    pub interval_s: f64,
    /// Requests finished in the interval.
    pub requests: u64,
    pub errors: u64,
    pub rps: f64,
    /// Open loop: the requests due in the interval, per second (what `rps` aims at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<f64>,
    pub bytes_per_s: f64,
    /// Latency to the last byte of the requests finished in the interval.
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Connections open at the end of the interval.
    pub connections_open: u64,
    /// Connection attempts in progress at the end of the interval.
    pub connect_attempts: u64,
    /// Requests waiting for a connection at the end of the interval.
    pub requests_queued: u64,
    /// Requests sent and not yet answered at the end of the interval.
    pub requests_active: u64,
    /// Connections established in the interval.
    pub connections_established: u64,
    /// Mean queue time of the requests that queued in the interval.
    pub queue_time_ms: Option<f64>,
    /// CPU use in the interval, in % of all cores.
    pub cpu_pct: Option<f64>,
    /// Resident set at the end of the interval, in MiB.
    pub rss_mb: Option<f64>,
}

/// Reads one figure out of a timeline sample (for charts).
pub type SampleFigure = fn(&TimelineSample) -> f64;

fn one() -> u64 {
    1
}

#[cfg(test)]
pub(crate) mod tests;
