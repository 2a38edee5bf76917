//! A sample report from made-up measurements, which the table, compare, HTML, merge and
//! threshold tests share, and the tests of the schema itself (its keys and types, a round trip).
//!
//! Why a file of its own: the fixture is as long as a section of the schema, and the schema
//! file should read as the file format.

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
        connections_established_by_version: ByVersion {
            http1: 2,
            http2: 0,
            http3: 0,
        },
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
        first_requests: None,
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
    for key in [
        "tls",
        "open_loop",
        "longpoll",
        "first_requests",
        "allocations",
    ] {
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
