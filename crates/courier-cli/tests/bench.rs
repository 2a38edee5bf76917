//! Runs the real `courier` binary against its built-in server and checks the JSON report.
//!
//! These go through the whole path a user takes (argument parsing, runtime, server, pool,
//! report file), so they catch wiring mistakes that unit tests of the parts cannot.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A scratch directory unique to this test process and test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "courier-cli-{test}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn courier(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(args)
        .output()
        .expect("run the courier binary")
}

fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "courier failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).expect("JSON report written");
    serde_json::from_str(&text).expect("JSON report parses")
}

#[test]
fn fixed_request_count_against_the_built_in_server() {
    let dir = TempDir::new("count");
    let json = dir.0.join("report.json");
    let json_arg = json.to_str().expect("temp path is UTF-8");
    let output = courier(&[
        "bench",
        "-n",
        "2000",
        "-c",
        "16",
        "--read-bytes",
        "0",
        "--json",
        json_arg,
    ]);
    assert_success(&output);

    let report = read_json(&json);
    assert_eq!(report["requests"], 2000, "{report:#}");
    assert_eq!(report["errors"], 0, "{report:#}");
    let established = report["connections_established"]
        .as_u64()
        .expect("connections_established is an integer");
    assert!(
        (1..=16).contains(&established),
        "16 workers need at most 16 connections, got {established}"
    );
    assert_eq!(report["config"]["concurrency"], 16);
    assert_eq!(report["config"]["read_bytes"], 0);
    assert!(report["latency_headers_ms"]["p50"].as_f64().unwrap_or(-1.0) > 0.0);

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Requests"), "{stdout}");
    assert!(stdout.contains("2,000"), "{stdout}");
    assert!(
        stdout.contains("Time to response headers (ms) - p99"),
        "{stdout}"
    );
}

#[test]
fn duration_run_stops_on_time() {
    let dir = TempDir::new("duration");
    let json = dir.0.join("report.json");
    let started = Instant::now();
    let output = courier(&[
        "bench",
        "--duration",
        "1",
        "-c",
        "8",
        "--json",
        json.to_str().expect("temp path is UTF-8"),
    ]);
    let took = started.elapsed();
    assert_success(&output);
    assert!(took < Duration::from_secs(6), "a 1 s run took {took:?}");

    let report = read_json(&json);
    let duration = report["duration_s"]
        .as_f64()
        .expect("duration_s is a number");
    assert!((0.9..3.0).contains(&duration), "duration_s = {duration}");
    assert!(report["requests"].as_u64().unwrap_or(0) > 0, "{report:#}");
    assert_eq!(report["errors"], 0, "{report:#}");
}

#[test]
fn bad_input_fails_with_a_clear_message() {
    let output = courier(&["bench", "-H", "not a header", "-n", "1"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("name: value"), "{stderr}");

    let output = courier(&["bench", "-n", "5", "-d", "1"]);
    assert!(!output.status.success());

    // A report that cannot be written is an error, reported with the path.
    let output = courier(&[
        "bench",
        "-n",
        "1",
        "-c",
        "1",
        "--json",
        "/nonexistent-courier-dir/report.json",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nonexistent-courier-dir"), "{stderr}");
}
