//! Runs that fail must say so: a non-zero exit and the real cause in the output, never a table
//! of zeros that reads as a measurement (issue 15, "honest results").
//!
//! Every target is on loopback or a reserved name (`.invalid` never resolves), and each run
//! lasts a second or a few dozen requests.

use crate::support::{assert_success, courier, read_json, text, Server, TempDir};

/// Runs `courier bench ARGS --json FILE`, expecting failure; returns the output and report.
fn failing_bench(dir: &TempDir, args: &[&str]) -> (String, serde_json::Value) {
    let json = dir.file("report.json");
    let mut full = vec!["bench"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--json", &json]);
    let output = courier(&full);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "expected exit 1:\n{all}");
    (all, read_json(std::path::Path::new(&json)))
}

#[test]
fn a_refused_port_fails_and_names_the_address() {
    let dir = TempDir::new("refused");
    let (out, report) = failing_bench(&dir, &["http://127.0.0.1:1/", "-d", "1", "-c", "4"]);
    assert!(out.contains("FAILED: all"), "{out}");
    assert!(out.contains("x connection refused 127.0.0.1:1"), "{out}");
    // The verdict comes before any figure.
    assert!(
        out.find("FAILED").unwrap() < out.find("Mean RPS").unwrap(),
        "{out}"
    );
    assert_eq!(report["rps"], 0.0, "failures are not throughput");
    assert_eq!(report["responses"], 0);
    assert_eq!(report["error_rate"], 1.0);
    assert!(report["errors"].as_u64().unwrap() > 0);
    assert_eq!(
        report["error_messages"]["connection refused 127.0.0.1:1"],
        report["errors"]
    );
    // Each of the 4 slots' first requests failed, and says so apart from the run's errors.
    assert_eq!(report["first_requests"]["failed"], 4, "{report:#}");
    assert_eq!(
        report["first_requests"]["latency_last_byte_ms"]["count"], 0,
        "{report:#}"
    );
    assert!(out.contains("First requests failed"), "{out}");
    // No latency of requests that got no response: no row, rather than 0.00 ms.
    assert!(!out.contains("First request of each slot"), "{out}");
}

#[test]
fn a_name_that_does_not_resolve_is_named() {
    let dir = TempDir::new("dns");
    let (out, _) = failing_bench(
        &dir,
        &["http://nonexistent.invalid/", "-n", "20", "-c", "2"],
    );
    assert!(
        out.contains("DNS lookup of nonexistent.invalid failed"),
        "{out}"
    );
}

#[test]
fn an_unknown_issuer_says_how_to_trust_it() {
    let dir = TempDir::new("tls");
    let ca = dir.file("ca.pem");
    let server = Server::start(&["--tls", "--cert-out", &ca]);
    let url = format!("{}bytes/16", server.url);
    let (out, _) = failing_bench(&dir, &[&url, "-n", "50", "-c", "2"]);
    assert!(out.contains("unknown issuer"), "{out}");
    assert!(
        out.contains("--insecure") && out.contains("--cacert FILE"),
        "{out}"
    );

    // The hint works: the run's CA makes the same server trusted.
    let output = courier(&["bench", &url, "-n", "50", "-c", "2", "--cacert", &ca]);
    assert_success(&output);
    assert!(!text(&output).contains("FAILED"), "{}", text(&output));
    // A file without a certificate is refused before the run.
    let output = courier(&["bench", &url, "-n", "1", "--cacert", "Cargo.toml"]);
    assert!(!output.status.success());
    assert!(
        text(&output).contains("no PEM certificate"),
        "{}",
        text(&output)
    );
}

#[test]
fn http2_against_an_http1_only_server_points_at_the_protocol() {
    let dir = TempDir::new("mismatch");
    let server = Server::start(&["--http1-only"]);
    let url = format!("{}bytes/16", server.url);
    let (out, report) = failing_bench(&dir, &[&url, "--http", "2", "-n", "50", "-c", "2"]);
    assert!(out.contains("FAILED"), "{out}");
    assert!(out.contains("HTTP/2"), "{out}");
    assert!(out.contains("hint:") && out.contains("--http 1.1"), "{out}");
    assert_eq!(report["responses"], 0);
}

#[test]
fn a_zero_or_negative_duration_is_refused_with_our_message() {
    for bad in ["0", "-1"] {
        let output = courier(&["bench", "-d", bad]);
        assert_eq!(output.status.code(), Some(2), "{}", text(&output));
        assert!(
            text(&output).contains("must last more than 0 seconds"),
            "{}",
            text(&output)
        );
    }
}

/// The long polls' opening phase sends one request per slot; over HTTP/2 a hundred slots share
/// a connection, so a failed slot is a failed request, not a connection that could not be
/// opened (a 1,000,000-slot run said "960590 connection(s) could not be opened" of 10,000).
#[test]
fn long_polls_that_cannot_open_count_requests_not_connections() {
    let dir = TempDir::new("longpoll-refused");
    let (out, _) = failing_bench(
        &dir,
        &[
            "http://127.0.0.1:1/",
            "--scenario",
            "longpoll",
            "-c",
            "150",
            "--delay",
            "0",
            "--http",
            "2",
            "--progress",
            "none",
        ],
    );
    assert!(
        out.contains("150 of 150 opening request(s) failed, 0 connection(s) open"),
        "{out}"
    );
    assert!(!out.contains("150 connection(s)"), "{out}");
    // The first failure says why.
    assert!(out.contains("connection refused 127.0.0.1:1"), "{out}");
}
