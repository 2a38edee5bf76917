//! Runs from several agents merge exactly: three local `courier bench` processes started
//! together with `--start-at`, merged by `courier merge`. The merged request count is the sum,
//! and the merged percentiles equal those of one histogram fed every agent's samples.

use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::support::{assert_success, command, courier, read_json, text, TempDir};

/// One agent's histogram of the time to the last byte, decoded independently of `courier`.
fn last_byte_histogram(report: &serde_json::Value) -> Histogram<u64> {
    let encoded = report["histograms"]["to_last_byte_us"]
        .as_str()
        .expect("histograms in the report");
    let bytes = STANDARD.decode(encoded).expect("base64");
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("an HdrHistogram V2 serialization");
    h.auto(true);
    h
}

#[test]
fn three_agents_merge_into_their_sum() {
    let dir = TempDir::new("merge");
    // The agents start together, 3 s from now (time enough for all three to get ready).
    let start = std::process::Command::new("date")
        .args(["-u", "-d", "+3 seconds", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("run date");
    let start = String::from_utf8_lossy(&start.stdout).trim().to_owned();
    let files: Vec<String> = (0..3)
        .map(|i| dir.file(&format!("agent-{i}.json")))
        .collect();
    let agents: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, json)| {
            let concurrency = ["1", "2", "4"][i];
            command()
                .args([
                    "bench",
                    "-n",
                    "400",
                    "-c",
                    concurrency,
                    "--start-at",
                    &start,
                ])
                .args(["--json", json])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start an agent")
        })
        .collect();
    let started = Instant::now();
    for agent in agents {
        let output = agent.wait_with_output().expect("agent ran");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(String::from_utf8_lossy(&output.stderr).contains("waiting"));
    }
    assert!(started.elapsed() < Duration::from_secs(30));

    let all = dir.file("all.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", &all, "--fail-if", "errors > 0"]);
    let output = courier(&args);
    assert_success(&output);
    assert!(
        text(&output).contains("merged from 3 agents"),
        "{}",
        text(&output)
    );

    let reports: Vec<_> = files
        .iter()
        .map(|f| read_json(std::path::Path::new(f)))
        .collect();
    let merged = read_json(std::path::Path::new(&all));
    assert_eq!(merged["requests"], 1200);
    assert_eq!(merged["agents"], 3);
    assert_eq!(merged["status_codes"]["200"], 1200);
    // One histogram fed every sample: the agents' histograms added.
    let mut every = last_byte_histogram(&reports[0]);
    for r in &reports[1..] {
        every.add(last_byte_histogram(r)).expect("add");
    }
    assert_eq!(every.len(), 1200);
    for (field, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
        let want = every.value_at_quantile(q) as f64 / 1000.0;
        let got = merged["latency_last_byte_ms"][field].as_f64().expect(field);
        assert_eq!(got, want, "{field}");
    }
    assert_eq!(
        merged["latency_last_byte_ms"]["max"].as_f64(),
        Some(every.max() as f64 / 1000.0)
    );
    // The merged report has the merged histogram, so it merges again.
    assert_eq!(last_byte_histogram(&merged), every);
}

#[test]
fn a_start_time_in_the_past_or_malformed_is_refused() {
    let output = courier(&["bench", "-n", "1", "--start-at", "2001-01-01T00:00:00Z"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("has already passed"),
        "{}",
        text(&output)
    );
    let output = courier(&["bench", "-n", "1", "--start-at", "at six"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("RFC 3339"), "{}", text(&output));
}
