//! The report as data: the typed schema of `--json`, read back by `courier compare`.
//!
//! The text table, the chart, the HTML page and the comparison are all rendered from this one
//! struct, so they can never disagree with the file. Field names are the file format: add
//! fields freely (as `Option` or with `#[serde(default)]` so older files still load), but do not
//! rename or remove them; bump [`SCHEMA_VERSION`] when a meaning changes.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::args::BenchArgs;
use super::limits::Limits;
use super::stats::{MeanMax, Percentiles};
use crate::error::{CliError, Result};

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
    /// New connections established during the measured time.
    pub connections_established: u64,
    /// The same, by the protocol each connection speaks.
    #[serde(default)]
    pub connections_established_by_version: ByVersion,
    /// TLS handshakes completed during the measured time (full and resumed).
    #[serde(default)]
    pub tls_handshakes: u64,
    /// TLS handshakes that resumed an earlier session.
    #[serde(default)]
    pub tls_resumed: u64,
    /// Connection attempts in progress, sampled ("Current Outgoing Connect Attempts").
    pub connect_attempts_current: MeanMax,
    /// Connection attempts that failed during the measured time.
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

impl BenchReport {
    /// Writes the report as pretty-printed JSON; the message names the file on failure.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| CliError::new(format!("cannot encode the JSON report: {e}")))?;
        fs::write(path, text + "\n").map_err(|e| {
            CliError::new(format!(
                "cannot write the JSON report to {}: {e}",
                path.display()
            ))
        })
    }

    /// Reads a report written by [`BenchReport::write`]; the message names the file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path)
            .map_err(|e| CliError::new(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            CliError::new(format!(
                "{} is not a courier bench JSON report: {e}",
                path.display()
            ))
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Value;

    /// A report from made-up measurements, shared with the table, compare and HTML tests.
    pub(crate) fn sample_report() -> BenchReport {
        let config =
            crate::bench::args::tests::parse(&["-n", "4", "--pool-idle-timeout", "none"]).unwrap();
        let latency = |scale: f64| Percentiles {
            count: 3,
            mean: 2.0 * scale,
            p50: 2.0 * scale,
            p75: 3.0 * scale,
            p90: 3.0 * scale,
            p99: 3.0 * scale,
            p999: 3.0 * scale,
            max: 3.0 * scale,
        };
        BenchReport {
            schema_version: SCHEMA_VERSION,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            url: "http://127.0.0.1:1/bytes/128".to_owned(),
            urls: vec!["http://127.0.0.1:1/bytes/128".to_owned()],
            method: "GET".to_owned(),
            protocol: "HTTP/1.1".to_owned(),
            scenario: "requests".to_owned(),
            server: "in-process".to_owned(),
            load: LoadReport {
                model: "closed".to_owned(),
                clients: 1,
                concurrency: 64,
                max_connections_per_host: None,
                rate: None,
                delay_s: None,
                stop: "requests".to_owned(),
            },
            threads: 2,
            cores: 2,
            warmup_s: 0.0,
            duration_s: 0.5,
            requests: 4,
            responses: 3,
            errors: 1,
            error_rate: 0.25,
            error_messages: [("request timed out (127.0.0.1:1)".to_owned(), 1)]
                .into_iter()
                .collect(),
            interrupted: false,
            errors_by_kind: [("timeout".to_owned(), 1)].into_iter().collect(),
            status_codes: [("200".to_owned(), 3)].into_iter().collect(),
            rps: 6.0,
            bytes_read: 384,
            bytes_per_s: 768.0,
            latency_headers_ms: latency(1.0),
            latency_last_byte_ms: latency(2.0),
            connections_current: MeanMax {
                mean: 1.5,
                max: 2.0,
            },
            connections_open_max: 2,
            connections_established: 2,
            connections_established_by_version: ByVersion { http1: 2, http2: 0 },
            tls_handshakes: 0,
            tls_resumed: 0,
            connect_attempts_current: MeanMax {
                mean: 0.5,
                max: 1.0,
            },
            connect_failures: 0,
            requests_per_connection: 2.0,
            requests_queued: MeanMax {
                mean: 0.0,
                max: 1.0,
            },
            queue_time_ms: MeanMax {
                mean: 0.25,
                max: 1.0,
            },
            drains_completed: 1,
            drains_aborted: 0,
            stale_retries: 0,
            tls: None,
            process: ProcessReport {
                cpu_max_pct: 50.0,
                cpu_mean_pct: 40.0,
                rss_max_mb: 12.5,
                private_max_mb: 8.0,
                includes_server: true,
                cpu_seconds: 0.4,
            },
            open_loop: None,
            longpoll: None,
            allocations: None,
            limits: Limits {
                open_files: Some(20_000),
                open_files_raised_from: Some(1024),
                local_ports: Some(28_232),
                notes: Vec::new(),
            },
            timeline: vec![TimelineSample {
                t_s: 0.5,
                interval_s: 0.5,
                requests: 4,
                errors: 1,
                rps: 8.0,
                p99_ms: 6.0,
                connections_open: 2,
                cpu_pct: Some(50.0),
                rss_mb: Some(12.5),
                ..TimelineSample::default()
            }],
            config,
            thresholds: Vec::new(),
            histograms: None,
            agents: 1,
            targets: Vec::new(),
        }
    }

    #[test]
    fn round_trips_through_json() {
        let mut report = sample_report();
        report.open_loop = Some(OpenLoopReport {
            rate: 500.0,
            intended: 1000,
            sent: 998,
            ..OpenLoopReport::default()
        });
        report.longpoll = Some(LongPollReport {
            peak_in_flight: 200,
            ..LongPollReport::default()
        });
        report.allocations = Some(AllocationReport {
            allocations: 10,
            ..AllocationReport::default()
        });
        report.tls = Some(TlsReport::default());
        let text = serde_json::to_string(&report).unwrap();
        let back: BenchReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn schema_has_the_documented_keys_and_types() {
        let value = serde_json::to_value(sample_report()).unwrap();
        let obj = value.as_object().unwrap();
        for key in [
            "schema_version",
            "requests",
            "errors",
            "connections_established",
            "connections_open_max",
            "connect_failures",
            "drains_completed",
            "drains_aborted",
            "stale_retries",
            "bytes_read",
            "threads",
            "cores",
        ] {
            assert!(
                obj[key].is_u64(),
                "{key} should be an integer: {:?}",
                obj.get(key)
            );
        }
        for key in [
            "duration_s",
            "warmup_s",
            "rps",
            "bytes_per_s",
            "requests_per_connection",
        ] {
            assert!(
                obj[key].is_f64(),
                "{key} should be a number: {:?}",
                obj.get(key)
            );
        }
        for key in ["version", "url", "method", "protocol", "scenario", "server"] {
            assert!(obj[key].is_string(), "{key}");
        }
        assert_eq!(obj["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(obj["schema_version"], SCHEMA_VERSION);
        assert_eq!(obj["errors_by_kind"]["timeout"], 1);
        assert_eq!(obj["status_codes"]["200"], 3);
        for key in ["latency_headers_ms", "latency_last_byte_ms"] {
            assert!(obj[key]["count"].is_u64(), "{key}.count");
            for field in ["p50", "p75", "p90", "p99", "p999", "max", "mean"] {
                assert!(obj[key][field].is_f64(), "{key}.{field}");
            }
        }
        for key in [
            "connections_current",
            "connect_attempts_current",
            "requests_queued",
            "queue_time_ms",
        ] {
            assert!(obj[key]["mean"].is_f64(), "{key}.mean");
            assert!(obj[key]["max"].is_f64(), "{key}.max");
        }
        for key in [
            "cpu_max_pct",
            "cpu_mean_pct",
            "rss_max_mb",
            "private_max_mb",
        ] {
            assert!(obj["process"][key].is_f64(), "process.{key}");
        }
        for key in ["model", "clients", "concurrency", "stop"] {
            assert!(obj["load"].get(key).is_some(), "load.{key}");
        }
        // Optional sections are present as null, so readers can rely on the key.
        for key in ["tls", "open_loop", "longpoll", "allocations"] {
            assert_eq!(obj[key], Value::Null, "{key}");
        }
        assert!(obj["limits"]["notes"].is_array());
        let second = &obj["timeline"][0];
        for key in [
            "t_s",
            "interval_s",
            "requests",
            "rps",
            "p99_ms",
            "connections_open",
            "cpu_pct",
            "rss_mb",
        ] {
            assert!(second.get(key).is_some(), "timeline[].{key}");
        }

        let config = obj["config"].as_object().unwrap();
        assert_eq!(config["requests"], 4);
        assert_eq!(config["pool_idle_timeout"], "none");
        assert_eq!(config["duration"], Value::Null);
        assert_eq!(config["method"], "GET");
        assert_eq!(config["scenario"], "requests");
        for key in [
            "url",
            "concurrency",
            "clients",
            "connections",
            "streams",
            "rate",
            "warmup",
            "delay",
            "read_bytes",
            "headers",
            "body_size",
            "threads",
            "timeout",
            "max_connections_per_host",
            "pooled_connection_lifetime",
            "pooled_connection_lifetime_jitter",
            "connect_timeout",
            "pool_queue_timeout",
            "max_response_drain_size",
            "response_drain_timeout",
            "response_size",
            "count_allocations",
            "json",
            "html",
        ] {
            assert!(config.contains_key(key), "config.{key} missing");
        }
    }

    #[test]
    fn write_and_read_name_the_path_on_failure() {
        let dir = std::env::temp_dir().join(format!("courier-cli-json-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.json");
        sample_report().write(&path).unwrap();
        assert_eq!(BenchReport::read(&path).unwrap(), sample_report());

        let bad = dir.join("missing-dir").join("report.json");
        let err = sample_report().write(&bad).unwrap_err();
        assert!(err.to_string().contains("missing-dir"), "{err}");
        let err = BenchReport::read(&bad).unwrap_err();
        assert!(err.to_string().contains("missing-dir"), "{err}");

        let junk = dir.join("junk.json");
        fs::write(&junk, "{\"requests\": 1}").unwrap();
        let err = BenchReport::read(&junk).unwrap_err();
        assert!(
            err.to_string().contains("not a courier bench JSON report"),
            "{err}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
