//! `courier bench --scenario cluster` end to end: the real binary runs ten replicas with faults
//! for a few seconds, and its JSON report shows the faults taking effect: the 503 replica's
//! requests are rejected and retried elsewhere (success stays high, attempts per request rise
//! above 1), and a replica that stalls loses its share of the traffic.

use crate::support::{bench_json, courier, text, TempDir};
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Runs `courier bench --scenario cluster ARGS --json DIR/cluster.json`, which must succeed.
fn cluster(dir: &TempDir, args: &[&str]) -> (Value, String) {
    let mut all = vec!["--scenario", "cluster"];
    all.extend_from_slice(args);
    bench_json(dir, "cluster", &all)
}

#[test]
fn faults_take_effect_and_the_report_has_its_shape() {
    let dir = TempDir::new("cluster");
    // Sequential: a stalled attempt times out (budget / 3) and is judged, so the stalled
    // replica's health, and with it its share, falls. The stall starts at 1 s, so the first
    // second shows the replica at its fair share.
    let (report, out) = cluster(
        &dir,
        &[
            "-d",
            "4",
            "--rate",
            "200",
            "--timeout",
            "0.3",
            "--cluster-strategy",
            "sequential3",
            "--fault",
            "7=503",
            "--fault",
            "5=stall@1s",
        ],
    );
    for line in [
        "10 replicas, 5.00 ms service time",
        "faults: 7=503 5=stall@1s",
        "weighted health, sequential3",
        "replica share of attempts",
        "timed faults",
    ] {
        assert!(out.contains(line), "missing `{line}` in:\n{out}");
    }
    assert_eq!(report["scenario"], "cluster");
    let run = &report["runs"][0];
    let requests = f(&run["requests"]);
    assert!((700.0..=900.0).contains(&requests), "{run:#}");
    assert!(
        f(&run["success_rate"]) > 0.97,
        "503s retried elsewhere: {run:#}"
    );
    assert!(f(&run["attempts_per_request"]) > 1.0, "{run:#}");
    for key in ["p50", "p99", "p99_9", "p99_99", "max"] {
        assert!(f(&run["latency_ms"][key]) > 0.0, "{key}: {run:#}");
    }
    let replicas = run["replicas"].as_array().expect("replicas");
    assert_eq!(replicas.len(), 10);
    let r7 = &replicas[7];
    assert_eq!(f(&r7["ok"]), 0.0, "{r7:#}");
    assert!(f(&r7["unavailable"]) > 0.0, "{r7:#}");
    assert!(f(&r7["health"]) < 0.1, "{r7:#}");
    let share = |r: &Value, s: usize| f(&r["share_per_second"][s]);
    let r5 = &replicas[5];
    assert!(f(&r5["stalled"]) > 0.0, "{r5:#}");
    assert!(
        share(r5, 3) < share(r5, 0) / 2.0 && share(r5, 3) < 0.05,
        "the stalled replica's share falls: {r5:#}"
    );
    assert_eq!(run["faults"][0]["fault"], "5=stall@1s", "{run:#}");
    assert_eq!(run["p99_per_second_ms"].as_array().map(Vec::len), Some(4));
}

#[test]
fn baselines_run_in_the_same_invocation() {
    let dir = TempDir::new("cluster-baselines");
    let (report, out) = cluster(
        &dir,
        &[
            "--replicas",
            "4",
            "-d",
            "1",
            "--rate",
            "100",
            "--fault",
            "1=503",
            "--compare-baselines",
        ],
    );
    let names: Vec<&str> = report["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        [
            "weighted health, forking3",
            "weighted health, forking3, healthy replicas",
            "round robin, no retries",
            "p2c peak EWMA, no retries, no throttling",
        ]
    );
    let runs = report["runs"].as_array().expect("runs");
    // Round robin sends a quarter of the requests to the 503 replica, and does not retry.
    let rr = f(&runs[2]["success_rate"]);
    assert!((0.6..0.9).contains(&rr), "{:#}", runs[2]);
    assert_eq!(f(&runs[2]["attempts_per_request"]), 1.0);
    assert_eq!(f(&runs[1]["success_rate"]), 1.0, "{:#}", runs[1]);
    assert!(out.contains("vs round robin, no retries: p99 x"), "{out}");
}

#[test]
fn mistakes_are_refused_before_the_run() {
    for (args, says) in [
        (&["--fault", "12=503"][..], "there are 10 replicas"),
        (&["--fault", "3=teapot"], "unknown fault `teapot`"),
        (&["--cluster-strategy", "hedging3"], "is not a strategy"),
        (
            &["--html", "x.html"],
            "--html does not apply to --scenario cluster",
        ),
    ] {
        let mut all = vec!["bench", "--scenario", "cluster", "-d", "1"];
        all.extend_from_slice(args);
        let output = courier(&all);
        let out = text(&output);
        assert!(!output.status.success(), "{args:?}: {out}");
        assert!(out.contains(says), "{args:?}: {out}");
    }
    let output = courier(&["bench", "-n", "1", "--fault", "1=503"]);
    assert!(
        text(&output).contains("--fault applies to --scenario cluster only"),
        "{}",
        text(&output)
    );
}

#[test]
fn request_flags_shape_every_request_and_the_rest_are_refused() {
    let dir = TempDir::new("cluster-request");
    let (report, out) = cluster(
        &dir,
        &[
            "--replicas",
            "3",
            "-d",
            "0.5",
            "--rate",
            "40",
            "-m",
            "POST",
            "--path",
            "/orders?x=1",
            "-H",
            "idempotency-key: k1",
            "--body-size",
            "100",
            "--fault",
            "1=503",
        ],
    );
    assert!(
        out.contains("requests: POST /orders?x=1, 1 header, 100-byte body"),
        "{out}"
    );
    let run = &report["runs"][0];
    // The idempotency key lets a POST rejected by the 503 replica go to another.
    assert_eq!(f(&run["success_rate"]), 1.0, "{run:#}");
    assert!(f(&run["replicas"][1]["unavailable"]) > 0.0, "{run:#}");
    assert_eq!(report["config"]["method"], "POST");

    let output = courier(&[
        "bench",
        "--scenario",
        "cluster",
        "--replicas",
        "2",
        "-d",
        "0.2",
        "--rate",
        "10",
        "-m",
        "POST",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("POST is not idempotent: the cluster sends each request to one"),
        "{}",
        text(&output)
    );

    for (args, says) in [
        (&["--read-bytes", "1"][..], "--read-bytes does not apply"),
        (
            &["--response-size", "4096"],
            "--response-size does not apply",
        ),
        (&["--server", "process"], "--server does not apply"),
        (
            &["--count-allocations"],
            "--count-allocations does not apply",
        ),
        (&["--insecure"], "--insecure does not apply"),
    ] {
        let mut all = vec!["bench", "--scenario", "cluster", "-d", "1"];
        all.extend_from_slice(args);
        let output = courier(&all);
        let out = text(&output);
        assert!(!output.status.success(), "{args:?}: {out}");
        assert!(out.contains(says), "{args:?}: {out}");
        let why = out.contains("--scenario cluster: the replicas")
            || out.contains("counted by the other scenarios");
        assert!(why, "says why: {args:?}: {out}");
    }
}

#[test]
fn a_huge_in_flight_cap_neither_panics_nor_abandons_requests() {
    // `-c` takes any u64. u64::MAX is above tokio's Semaphore::MAX_PERMITS (`Semaphore::new`
    // panicked); 2^32 is below it but above the u32 that the wait for every slot at the end
    // takes at once (the wait returned at once and the requests still in flight were abandoned
    // as "unfinished at the end"). 200 ms per request: the last one, due at 0.4 s, is in
    // flight when the run's 0.5 s are over.
    for cap in ["18446744073709551615", "4294967296"] {
        let dir = TempDir::new("cluster-cap");
        let (report, _) = cluster(
            &dir,
            &[
                "--replicas",
                "4",
                "--service-time",
                "200ms",
                "-d",
                "0.5",
                "--rate",
                "10",
                "-c",
                cap,
            ],
        );
        let run = &report["runs"][0];
        assert_eq!(f(&run["requests"]), 5.0, "-c {cap}: {run:#}");
        assert_eq!(run["failures"], serde_json::json!({}), "-c {cap}: {run:#}");
        assert_eq!(f(&run["success_rate"]), 1.0, "-c {cap}: {run:#}");
    }
}

#[test]
fn a_low_soft_open_file_limit_is_raised_before_the_run() {
    // Replica 0 stalls: its attempts hold their connections for a share of the budget, and
    // the replicas run in the same process (two descriptors per connection). Some 400 in
    // flight need more than a soft limit of 200; the run raises it to the hard limit, as the
    // other scenarios do, instead of failing attempts with "too many open files" (connect).
    let dir = TempDir::new("cluster-nofile");
    let json = dir.file("cluster.json");
    let run = "ulimit -Sn 200 && exec \"$0\" bench --scenario cluster --replicas 2 \
               --fault 0=stall --rate 400 -d 1 --timeout 1 --json \"$1\"";
    let output = std::process::Command::new("sh")
        .args(["-c", run, env!("CARGO_BIN_EXE_courier"), &json])
        .output()
        .expect("run sh");
    let out = text(&output);
    assert!(output.status.success(), "{out}");
    let report = crate::support::read_json(std::path::Path::new(&json));
    let run = &report["runs"][0];
    assert_eq!(run["failures"].get("connect"), None, "{run:#}\n{out}");
}
