//! Runs the real `courier` binary against its built-in server and checks the JSON report.
//!
//! These go through the whole path a user takes (argument parsing, runtime, server, pool,
//! report file), so they catch wiring mistakes that unit tests of the parts cannot. Each run
//! is kept to a few seconds.

use std::time::{Duration, Instant};

use crate::support::{assert_success, bench_json, courier, TempDir};
use serde_json::Value;

fn f64_at(value: &Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} is not a number in {value:#}"))
}

#[test]
fn fixed_request_count_against_the_built_in_server() {
    let dir = TempDir::new("count");
    let (report, stdout) = bench_json(
        &dir,
        "report",
        &["-n", "2000", "-c", "16", "--read-bytes", "0"],
    );
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
    assert_eq!(report["load"]["concurrency"], 16);
    assert_eq!(report["load"]["model"], "closed");
    assert_eq!(report["config"]["read_bytes"], 0);
    assert!(report["latency_headers_ms"]["p50"].as_f64().unwrap_or(-1.0) > 0.0);

    assert!(stdout.contains("Requests"), "{stdout}");
    assert!(stdout.contains("2,000"), "{stdout}");
    assert!(
        stdout.contains("Time to response headers (ms) - p99"),
        "{stdout}"
    );
}

/// Each slot's first request waits for the pool's connections to open: the bench reports those
/// apart, warmup or not (here all of them fall in the warmup, which the run's figures leave out).
/// So does the open loop, for the requests sent before the first response (it used to report
/// none).
#[test]
fn the_first_request_of_each_slot_is_reported_apart_warmup_or_not() {
    let dir = TempDir::new("first");
    let (report, stdout) = bench_json(&dir, "first", &["-n", "200", "-c", "8", "--warmup", "1"]);
    assert_eq!(report["requests"], 200, "{report:#}");
    let first = &report["first_requests"];
    assert_eq!(first["failed"], 0, "{report:#}");
    assert_eq!(first["latency_last_byte_ms"]["count"], 8, "{report:#}");
    let (p50, max) = (
        f64_at(first, "/latency_last_byte_ms/p50"),
        f64_at(first, "/latency_last_byte_ms/max"),
    );
    assert!(0.0 < p50 && p50 <= max, "{first:#}");
    assert!(
        stdout.contains("First request of each slot (ms) - p50"),
        "{stdout}"
    );
    assert!(!stdout.contains("First requests failed"), "{stdout}");

    // The open loop has no slots: its first requests are those sent before the first
    // response (one at least; at 200 a second, 5 ms apart, seldom more).
    let (open, stdout) = bench_json(&dir, "first-open", &["--rate", "200", "-d", "1"]);
    let first = &open["first_requests"];
    assert_eq!(first["failed"], 0, "{open:#}");
    let count = first["latency_last_byte_ms"]["count"].as_u64().unwrap_or(0);
    assert!(
        (1..=200).contains(&count),
        "{count} first requests: {open:#}"
    );
    assert!(
        stdout.contains("Requests before the first response (ms) - p50"),
        "{stdout}"
    );
    assert!(!stdout.contains("First request of each slot"), "{stdout}");
}

#[test]
fn duration_run_stops_on_time() {
    let dir = TempDir::new("duration");
    let started = Instant::now();
    let (report, _) = bench_json(&dir, "report", &["--duration", "1", "-c", "8"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(6), "a 1 s run took {took:?}");

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

#[test]
fn open_loop_holds_the_asked_rate() {
    let dir = TempDir::new("rate");
    let (report, stdout) = bench_json(&dir, "rate", &["--rate", "500", "-d", "2"]);
    let rps = f64_at(&report, "/rps");
    assert!(
        (490.0..=510.0).contains(&rps),
        "asked 500 req/s, got {rps}: {report:#}"
    );
    let sent = f64_at(&report, "/open_loop/sent_per_s");
    assert!((490.0..=510.0).contains(&sent), "sent {sent}/s");
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["open_loop"]["intended"], 1000);
    assert_eq!(report["open_loop"]["not_sent"], 0);
    assert!(stdout.contains("Corrected time to last response content byte (ms) - p99"));
    // Roughly one sample per second; the timeline adds up to the total.
    let timeline = report["timeline"].as_array().expect("timeline is an array");
    assert!((1..=3).contains(&timeline.len()), "{timeline:?}");
    let summed: u64 = timeline
        .iter()
        .map(|s| s["requests"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(Some(summed), report["requests"].as_u64());
}

#[test]
fn with_a_tick_the_open_loop_holds_its_rate_and_counts_the_tick_as_on_time() {
    let dir = TempDir::new("tick");
    let (report, _) = bench_json(
        &dir,
        "tick",
        &["--rate", "500", "-d", "2", "--tick", "10ms"],
    );
    let sent = f64_at(&report, "/open_loop/sent_per_s");
    assert!((490.0..=510.0).contains(&sent), "sent {sent}/s: {report:#}");
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["config"]["tick"], 0.01, "{report:#}");
    // Held up to a tick: late only beyond the tick and the usual 5 ms.
    assert_eq!(report["open_loop"]["late_after_ms"], 15.0, "{report:#}");
    // Five requests come due in each 10 ms tick and go out together.
    let max_in_flight = report["open_loop"]["max_in_flight"].as_u64().unwrap_or(0);
    assert!(max_in_flight >= 5, "{report:#}");
    let lag_p50 = f64_at(&report, "/open_loop/send_lag_ms/p50");
    assert!(
        lag_p50 >= 2.0,
        "sent {lag_p50} ms after due: no tick? {report:#}"
    );
}

#[test]
fn a_stalled_server_shows_coordinated_omission() {
    // 2 connections to a server that takes 50 ms: at most 40 req/s get through, 200 are due.
    let dir = TempDir::new("stalled");
    let (report, _) = bench_json(
        &dir,
        "stalled",
        &[
            "--path",
            "/delay/50",
            "--rate",
            "200",
            "-d",
            "2",
            "--max-connections-per-host",
            "2",
        ],
    );
    let corrected = f64_at(&report, "/open_loop/latency_corrected_last_byte_ms/p99");
    let uncorrected = f64_at(&report, "/latency_last_byte_ms/p99");
    assert!(
        corrected > 2.0 * uncorrected,
        "corrected p99 {corrected} ms should far exceed uncorrected {uncorrected} ms"
    );
    assert!(uncorrected >= 50.0, "{uncorrected}");
    assert_eq!(report["open_loop"]["in_flight_cap"], 2);
    assert!(
        report["open_loop"]["not_sent"].as_u64().unwrap_or(0) > 0,
        "{report:#}"
    );
    assert!(
        report["open_loop"]["late"].as_u64().unwrap_or(0) > 0,
        "{report:#}"
    );
}

#[test]
fn compare_prints_side_by_side_with_marked_deltas() {
    let dir = TempDir::new("compare");
    for (name, concurrency) in [("base", "2"), ("tuned", "8")] {
        bench_json(&dir, name, &["-n", "400", "-c", concurrency]);
    }
    let a = dir.0.join("base.json");
    let b = dir.0.join("tuned.json");
    let output = courier(&[
        "compare",
        a.to_str().expect("temp path is UTF-8"),
        b.to_str().expect("temp path is UTF-8"),
    ]);
    assert_success(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let header = stdout
        .lines()
        .find(|l| l.starts_with("figure"))
        .unwrap_or_default();
    for column in ["base", "tuned", "delta"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(stdout.contains("configuration differs:"), "{stdout}");
    assert!(stdout.contains("concurrency"), "{stdout}");
    let connections = stdout
        .lines()
        .find(|l| l.starts_with("Connections established"))
        .unwrap_or_else(|| panic!("no connections row in\n{stdout}"));
    // 2 slots need at most 2 connections, 8 need more: that follows from -c, and is neither
    // better nor worse.
    assert!(
        !connections.ends_with("worse") && !connections.ends_with("better"),
        "{connections}"
    );
    // Latency and throughput rows keep their marks (which way they go depends on the run).
    let p50 = stdout
        .lines()
        .find(|l| l.starts_with("Time to response headers (ms) - p50"))
        .expect("p50 row");
    assert!(
        p50.ends_with("better") || p50.ends_with("worse") || p50.ends_with("0.00%"),
        "{p50}"
    );

    let output = courier(&["compare", a.to_str().expect("UTF-8")]);
    assert!(!output.status.success(), "one report is not a comparison");
    let output = courier(&["compare", a.to_str().expect("UTF-8"), "/nonexistent/x.json"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/x.json"));
}

#[test]
fn compare_of_http1_and_http2_names_the_differing_keys() {
    let dir = TempDir::new("compare-h2");
    bench_json(&dir, "h1", &["-n", "300", "-c", "8", "--http", "1.1"]);
    bench_json(&dir, "h2", &["-n", "300", "-c", "8", "--http", "2"]);
    let output = courier(&[
        "compare",
        dir.0.join("h1.json").to_str().expect("UTF-8"),
        dir.0.join("h2.json").to_str().expect("UTF-8"),
    ]);
    assert_success(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Each run is titled with its own protocol...
    assert!(stdout.contains("h1  HTTP/1.1 GET 128B x 8"), "{stdout}");
    assert!(stdout.contains("h2  HTTP/2 GET 128B x 8"), "{stdout}");
    // ...and the keys that differ are named, with their values in run order.
    let differs = stdout
        .split("configuration differs:")
        .nth(1)
        .unwrap_or_else(|| panic!("no differences listed in\n{stdout}"));
    let http = differs
        .lines()
        .find(|l| l.trim_start().starts_with("http "))
        .unwrap_or_else(|| panic!("no http line in\n{stdout}"));
    assert!(http.ends_with("1.1 → 2"), "{http}");
    assert!(differs.contains("protocol (negotiated)"), "{stdout}");
    // Config-driven figures carry no better/worse mark; normalised CPU does.
    let current = stdout
        .lines()
        .find(|l| l.starts_with("Current connections - Max"))
        .expect("connections row");
    assert!(
        !current.contains("better") && !current.contains("worse"),
        "{current}"
    );
    assert!(
        stdout.contains("CPU time per successful request (us)"),
        "{stdout}"
    );
}

#[test]
fn long_polls_are_all_held_in_flight() {
    let dir = TempDir::new("longpoll");
    let started = Instant::now();
    let (report, stdout) = bench_json(
        &dir,
        "longpoll",
        &["--scenario", "longpoll", "-c", "200", "--delay", "1"],
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["requests"], 200, "{report:#}");
    assert_eq!(report["longpoll"]["peak_in_flight"], 200, "{report:#}");
    assert_eq!(report["server"], "process");
    let wake_up = f64_at(&report, "/longpoll/wake_up_ms/p50");
    assert!((0.0..500.0).contains(&wake_up), "wake-up {wake_up} ms");
    assert!(f64_at(&report, "/longpoll/memory_per_request_bytes") >= 0.0);
    // The run's highest resident set, the opening phase's included, is at least the peak's.
    let highest = f64_at(&report, "/longpoll/rss_high_water_mb");
    assert!(
        highest >= f64_at(&report, "/longpoll/rss_peak_mb") && highest > 0.0,
        "{report:#}"
    );
    assert!(
        stdout.contains("Memory per in-flight request (bytes)"),
        "{stdout}"
    );
}

#[test]
fn counts_allocations_with_browser_headers() {
    let dir = TempDir::new("alloc");
    let (report, stdout) = bench_json(
        &dir,
        "alloc",
        &["-n", "500", "-c", "4", "--count-allocations"],
    );
    assert_eq!(report["allocations"]["request_headers"], 11, "{report:#}");
    let per_request = f64_at(&report, "/allocations/allocations_per_request");
    assert!(per_request > 0.0, "{report:#}");
    assert!(stdout.contains("Allocations per request"), "{stdout}");
}

#[test]
fn warmup_chart_and_html() {
    let dir = TempDir::new("html");
    let html = dir.0.join("report.html");
    let (report, stdout) = bench_json(
        &dir,
        "warm",
        &[
            "-d",
            "1",
            "--warmup",
            "0.5",
            "-c",
            "4",
            "--chart",
            "--html",
            html.to_str().expect("temp path is UTF-8"),
        ],
    );
    assert_eq!(f64_at(&report, "/warmup_s"), 0.5);
    let duration = f64_at(&report, "/duration_s");
    assert!((0.9..1.5).contains(&duration), "{duration}");
    assert!(stdout.contains("timeline:"), "{stdout}");
    assert!(stdout.contains("requests/s"), "{stdout}");
    let page = std::fs::read_to_string(&html).expect("HTML report written");
    assert!(page.contains("<svg") && page.contains("Mean RPS"));
}

#[test]
fn connections_and_streams_model() {
    let dir = TempDir::new("h2load");
    let (report, _) = bench_json(
        &dir,
        "h2load",
        &["--connections", "3", "--streams", "2", "-n", "300"],
    );
    assert_eq!(report["load"]["clients"], 3);
    assert_eq!(report["load"]["max_connections_per_host"], 1);
    assert_eq!(report["connections_established"], 3, "{report:#}");
    assert_eq!(report["requests"], 300);
}

#[test]
fn http3_against_the_built_in_server() {
    let dir = TempDir::new("http3");
    // The built-in server serves TLS and HTTP/3 for `--http 3`, in this
    // process and as a child process alike.
    for server in ["in-process", "process"] {
        let (h3, _) = bench_json(
            &dir,
            &format!("h3-{server}"),
            &["-n", "300", "-c", "16", "--http", "3", "--server", server],
        );
        assert_eq!(h3["errors"], 0, "{h3:#}");
        assert_eq!(h3["requests"], 300);
        assert_eq!(h3["protocol"], "HTTP/3");
        assert_eq!(h3["connections_established_by_version"]["HTTP/3"], 1);
        assert_eq!(h3["connections_established_by_version"]["HTTP/1.1"], 0);
        assert_eq!(h3["connections_established_by_version"]["HTTP/2"], 0);
    }
}

#[test]
fn alt_svc_moves_a_bench_to_http3() {
    let dir = TempDir::new("alt-svc");
    // `--alt-svc`: the built-in server serves TLS and HTTP/3, offered by
    // `alt-svc` on its TCP responses; the run starts over TCP (HTTP/2 by
    // ALPN) and moves to one HTTP/3 connection.
    let (run, _) = bench_json(&dir, "alt-svc", &["-n", "300", "-c", "16", "--alt-svc"]);
    assert_eq!(run["errors"], 0, "{run:#}");
    assert_eq!(run["requests"], 300);
    assert_eq!(
        run["connections_established_by_version"]["HTTP/3"], 1,
        "{run:#}"
    );
    assert!(
        run["connections_established_by_version"]["HTTP/2"].as_u64() >= Some(1),
        "{run:#}"
    );
}

#[test]
fn http2_and_tls_against_the_built_in_server() {
    let dir = TempDir::new("protocols");
    // h2c: 64 streams fit on one connection.
    let (h2c, _) = bench_json(&dir, "h2c", &["-n", "500", "-c", "64", "--http", "2"]);
    assert_eq!(h2c["errors"], 0);
    assert_eq!(h2c["protocol"], "HTTP/2");
    assert_eq!(h2c["connections_established_by_version"]["HTTP/2"], 1);
    assert_eq!(h2c["connections_established_by_version"]["HTTP/1.1"], 0);
    // Past the server's stream limit, a second connection opens...
    let (two, _) = bench_json(
        &dir,
        "h2c-limit",
        &[
            "-n",
            "500",
            "-c",
            "64",
            "--http",
            "2",
            "--server-max-concurrent-streams",
            "40",
        ],
    );
    assert_eq!(two["connections_established"], 2);
    // ...unless multiple connections are off.
    let (one, _) = bench_json(
        &dir,
        "h2c-single",
        &[
            "-n",
            "500",
            "-c",
            "64",
            "--http",
            "2",
            "--server-max-concurrent-streams",
            "40",
            "--no-multiple-http2-connections",
        ],
    );
    assert_eq!(one["connections_established"], 1);
    // TLS with ALPN: HTTP/2, one handshake, and the seed's TLS rows in the table.
    let (tls, table) = bench_json(&dir, "tls", &["-n", "500", "-c", "16", "--tls"]);
    assert_eq!(tls["errors"], 0);
    assert_eq!(tls["protocol"], "HTTP/2");
    assert_eq!(tls["tls_handshakes"], 1);
    assert_eq!(tls["tls"]["handshakes_total"], 1);
    assert!(table.contains("Total TLS handshakes completed"), "{table}");
    // TLS forced to HTTP/1.1: one handshake per connection.
    let (h1, _) = bench_json(
        &dir,
        "tls-h1",
        &["-n", "500", "-c", "8", "--tls", "--http", "1.1"],
    );
    assert_eq!(h1["protocol"], "HTTP/1.1");
    assert_eq!(h1["tls_handshakes"], h1["connections_established"]);
}

/// Connections opened before measuring starts (the long polls' opening phase, the warmup) are
/// the run's connections: the connection counters cover the clients' whole life, while the
/// request counters still leave the warmup out.
#[test]
fn connection_counters_include_connections_opened_before_measuring() {
    let dir = TempDir::new("opened-before");
    // Long polls over HTTP/1.1 open one connection per slot before measuring.
    let (plain, _) = bench_json(
        &dir,
        "longpoll",
        &["--scenario", "longpoll", "-c", "20", "--delay", "0.2"],
    );
    assert_eq!(plain["requests"], 20, "{plain:#}");
    assert_eq!(plain["connections_established"], 20, "{plain:#}");
    assert_eq!(
        plain["connections_established_by_version"]["HTTP/1.1"], 20,
        "{plain:#}"
    );
    assert_eq!(plain["connect_failures"], 0, "{plain:#}");
    // Over HTTP/2 (issue 30's case: 1,000 connections open, 0 reported), one connection per
    // 100 streams (the built-in server's limit): 250 long polls open 3.
    let (h2, _) = bench_json(
        &dir,
        "longpoll-h2",
        &[
            "--scenario",
            "longpoll",
            "-c",
            "250",
            "--delay",
            "0.2",
            "--http",
            "2",
        ],
    );
    assert_eq!(h2["requests"], 250, "{h2:#}");
    assert_eq!(h2["longpoll"]["peak_in_flight"], 250, "{h2:#}");
    assert_eq!(h2["connections_established"], 3, "{h2:#}");
    assert_eq!(
        h2["connections_established_by_version"]["HTTP/2"], 3,
        "{h2:#}"
    );
    assert_eq!(
        h2["connections_established_by_version"]["HTTP/1.1"], 0,
        "{h2:#}"
    );
    assert_eq!(h2["connections_open_max"], 3, "{h2:#}");
    assert_eq!(h2["connect_failures"], 0, "{h2:#}");
    // The same over TLS: a handshake per connection, and the TLS section says so.
    let (tls, _) = bench_json(
        &dir,
        "longpoll-tls",
        &[
            "--scenario",
            "longpoll",
            "-c",
            "20",
            "--delay",
            "0.2",
            "--tls",
            "--http",
            "1.1",
        ],
    );
    assert_eq!(tls["connections_established"], 20, "{tls:#}");
    assert_eq!(tls["tls_handshakes"], 20, "{tls:#}");
    assert_eq!(tls["tls"]["handshakes_total"], 20, "{tls:#}");
    // A warmup opens the connections the measured requests reuse; its requests stay out.
    let (warm, _) = bench_json(
        &dir,
        "warm",
        &[
            "-d", "0.5", "--warmup", "0.3", "-c", "4", "--tls", "--http", "1.1",
        ],
    );
    let established = warm["connections_established"].as_u64().unwrap_or(0);
    assert!((1..=4).contains(&established), "{warm:#}");
    assert_eq!(warm["tls_handshakes"], established, "{warm:#}");
    let timeline_requests: u64 = warm["timeline"]
        .as_array()
        .expect("timeline is an array")
        .iter()
        .map(|s| s["requests"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(
        warm["requests"].as_u64(),
        Some(timeline_requests),
        "{warm:#}"
    );
}

/// `--threads 1` runs on a current-thread runtime (the generator's one-core mode): the whole run
/// — requests, the run's deadline, the sampler's seconds, long polls, HTTP/2 — on one thread,
/// with the report a multi-thread run gives.
#[test]
fn one_thread_runs_everything_on_one_runtime_thread() {
    let dir = TempDir::new("one-thread");
    let started = Instant::now();
    let (report, _) = bench_json(
        &dir,
        "timed",
        &["--threads", "1", "-d", "1.5", "-c", "8", "--http", "2"],
    );
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(report["threads"], 1, "{report:#}");
    assert_eq!(report["errors"], 0, "{report:#}");
    assert!(
        report["responses"].as_u64().unwrap_or(0) > 100,
        "{report:#}"
    );
    let duration = f64_at(&report, "/duration_s");
    assert!(
        (1.4..3.0).contains(&duration),
        "a 1.5 s run took {duration} s"
    );
    let seconds = report["timeline"].as_array().map_or(0, Vec::len);
    assert!(seconds >= 1, "the sampler recorded no second: {report:#}");
    assert!(f64_at(&report, "/process/cpu_seconds") > 0.0, "{report:#}");

    let (report, _) = bench_json(
        &dir,
        "longpoll",
        &[
            "--threads",
            "1",
            "--scenario",
            "longpoll",
            "-c",
            "100",
            "--delay",
            "300ms",
        ],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["longpoll"]["peak_in_flight"], 100, "{report:#}");
}
