//! The report as data: the typed schema of `--json`, also what the text table is rendered from.
//!
//! Keeping one struct for both outputs means the table and the file can never disagree, and a
//! later `courier compare` can read two files back into this same type. Field names are part of
//! the file format: add fields freely, but do not rename or remove them.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::args::BenchArgs;
use super::stats::{millis, per_second, ratio, Percentiles, PoolStats, WorkerStats};
use crate::error::{CliError, Result};

/// Everything a bench run found out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Version of the `courier` tool that produced the report.
    pub version: String,
    /// The URL requested (the built-in server's, when no URL was given).
    pub url: String,
    /// Method sent.
    pub method: String,
    /// Tokio worker threads used.
    pub threads: u64,
    /// Finished requests, failed or not.
    pub requests: u64,
    /// Requests that failed without a response.
    pub errors: u64,
    /// Failed requests by error kind (`timeout`, `connect`, …).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Responses by status code (keys are the codes as strings, as JSON requires).
    pub status_codes: BTreeMap<String, u64>,
    /// Wall time of the run, in seconds.
    pub duration_s: f64,
    /// Finished requests per second.
    pub rps: f64,
    /// Body bytes read by the benchmark (bytes drained by the library are not counted).
    pub bytes_read: u64,
    /// Body bytes read per second.
    pub bytes_per_s: f64,
    /// Time from sending a request to its response headers.
    pub latency_headers_ms: Percentiles,
    /// Time from sending a request to the last body byte read.
    pub latency_last_byte_ms: Percentiles,
    /// New connections opened during the run.
    pub connections_established: u64,
    /// Most connections open at once.
    pub connections_open_max: u64,
    /// Requests per established connection: how well connections were reused.
    pub requests_per_connection: f64,
    /// Most requests waiting for a connection at once (sampled every 100 ms).
    pub requests_queued_max: u64,
    /// Time requests waited for a connection.
    pub queue_time_ms: QueueTime,
    /// Dropped bodies drained to their end (connection kept).
    pub drains_completed: u64,
    /// Dropped bodies over the drain limits (connection closed).
    pub drains_aborted: u64,
    /// Requests retried because a reused connection turned out to be closed.
    pub stale_retries: u64,
    /// The flags of the run.
    pub config: BenchArgs,
}

/// Mean and maximum time spent waiting for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct QueueTime {
    pub mean: f64,
    pub max: f64,
}

/// The facts of a run that the report is computed from.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    pub config: &'a BenchArgs,
    pub url: &'a str,
    pub threads: u64,
    pub elapsed: Duration,
    pub totals: &'a WorkerStats,
    pub pool: &'a PoolStats,
}

impl BenchReport {
    /// Computes the report.
    pub fn new(facts: RunFacts<'_>) -> Self {
        let RunFacts {
            config,
            url,
            threads,
            elapsed,
            totals,
            pool,
        } = facts;
        let requests = totals.requests();
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            url: url.to_owned(),
            method: config.method.clone(),
            threads,
            requests,
            errors: totals.error_count(),
            errors_by_kind: totals
                .errors
                .iter()
                .map(|(kind, n)| ((*kind).to_owned(), *n))
                .collect(),
            status_codes: totals
                .statuses
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
            duration_s: elapsed.as_secs_f64(),
            rps: per_second(requests, elapsed),
            bytes_read: totals.body_bytes,
            bytes_per_s: per_second(totals.body_bytes, elapsed),
            latency_headers_ms: Percentiles::from_micros(&totals.to_headers),
            latency_last_byte_ms: Percentiles::from_micros(&totals.to_last_byte),
            connections_established: pool.connections_established,
            connections_open_max: pool.connections_open_max,
            requests_per_connection: ratio(requests, pool.connections_established),
            requests_queued_max: pool.requests_queued_max,
            queue_time_ms: QueueTime {
                mean: millis(pool.queue_time_mean),
                max: millis(pool.queue_time_max),
            },
            drains_completed: pool.drains_completed,
            drains_aborted: pool.drains_aborted,
            stale_retries: pool.stale_retries,
            config: config.clone(),
        }
    }

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
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::Value;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: BenchArgs,
    }

    /// A report from made-up measurements, shared with the table tests.
    pub(crate) fn sample_report() -> BenchReport {
        let config = Wrapper::try_parse_from(["bench", "-n", "4", "--pool-idle-timeout", "none"])
            .unwrap()
            .args;
        let mut totals = WorkerStats::new();
        for ms in [1, 2, 3] {
            let d = Duration::from_millis(ms);
            totals.record_response(200, d, d * 2, 128);
        }
        totals.record_error("timeout");
        let pool = PoolStats {
            connections_established: 2,
            connections_open_max: 2,
            requests_queued_max: 1,
            queue_time_mean: Duration::from_micros(250),
            queue_time_max: Duration::from_millis(1),
            drains_completed: 1,
            drains_aborted: 0,
            stale_retries: 0,
        };
        BenchReport::new(RunFacts {
            config: &config,
            url: "http://127.0.0.1:1/bytes/128",
            threads: 2,
            elapsed: Duration::from_millis(500),
            totals: &totals,
            pool: &pool,
        })
    }

    #[test]
    fn computed_fields() {
        let r = sample_report();
        assert_eq!(r.requests, 4);
        assert_eq!(r.errors, 1);
        assert_eq!(r.rps, 8.0);
        assert_eq!(r.bytes_per_s, 768.0);
        assert_eq!(r.requests_per_connection, 2.0);
        assert_eq!(
            r.queue_time_ms,
            QueueTime {
                mean: 0.25,
                max: 1.0
            }
        );
    }

    #[test]
    fn schema_has_the_documented_keys_and_types() {
        let value = serde_json::to_value(sample_report()).unwrap();
        let obj = value.as_object().unwrap();
        for key in [
            "requests",
            "errors",
            "connections_established",
            "connections_open_max",
            "drains_completed",
            "drains_aborted",
            "stale_retries",
            "requests_queued_max",
            "bytes_read",
            "threads",
        ] {
            assert!(
                obj[key].is_u64(),
                "{key} should be an integer: {:?}",
                obj.get(key)
            );
        }
        for key in [
            "duration_s",
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
        for key in ["version", "url", "method"] {
            assert!(obj[key].is_string(), "{key}");
        }
        assert_eq!(obj["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(obj["errors_by_kind"]["timeout"], 1);
        assert_eq!(obj["status_codes"]["200"], 3);
        for key in ["latency_headers_ms", "latency_last_byte_ms"] {
            for field in ["p50", "p90", "p99", "p999", "max", "mean"] {
                assert!(obj[key][field].is_f64(), "{key}.{field}");
            }
        }
        assert!(obj["queue_time_ms"]["mean"].is_f64());
        assert!(obj["queue_time_ms"]["max"].is_f64());

        let config = obj["config"].as_object().unwrap();
        assert_eq!(config["requests"], 4);
        assert_eq!(config["concurrency"], 64);
        assert_eq!(config["pool_idle_timeout"], "none");
        assert_eq!(config["duration"], Value::Null);
        assert_eq!(config["method"], "GET");
        for key in [
            "url",
            "read_bytes",
            "headers",
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
            "json",
        ] {
            assert!(config.contains_key(key), "config.{key} missing");
        }
    }

    #[test]
    fn round_trips_through_json() {
        let report = sample_report();
        let text = serde_json::to_string(&report).unwrap();
        let back: BenchReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn write_reports_the_path_on_failure() {
        let dir = std::env::temp_dir().join(format!("courier-cli-json-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.json");
        sample_report().write(&path).unwrap();
        let value: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(value["requests"], 4);

        let bad = dir.join("missing-dir").join("report.json");
        let err = sample_report().write(&bad).unwrap_err();
        assert!(err.to_string().contains("missing-dir"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
