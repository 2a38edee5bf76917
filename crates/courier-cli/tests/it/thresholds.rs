//! `--fail-if` sets the exit code, as CI needs: 99 when a threshold failed, 0 when all held,
//! and a typo is refused before any request is sent.

use std::time::{Duration, Instant};

use crate::support::{courier, read_json, text, TempDir};

#[test]
fn a_failing_threshold_exits_99_and_says_which() {
    let dir = TempDir::new("fail-if");
    let json = dir.file("run.json");
    let output = courier(&[
        "bench",
        "-n",
        "300",
        "-c",
        "4",
        "--fail-if",
        "rps < 1000000000",
        "--fail-if",
        "errors > 0.1%",
        "--json",
        &json,
    ]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(99), "{out}");
    assert!(out.contains("thresholds: 1 of 2 failed"), "{out}");
    assert!(out.contains("FAIL  rps < 1000000000"), "{out}");
    assert!(out.contains("pass  errors > 0.1%"), "{out}");
    assert!(
        out.contains("error: threshold failed: --fail-if 'rps < 1000000000'"),
        "{out}"
    );
    // The report file is written all the same, with the verdicts.
    let report = read_json(std::path::Path::new(&json));
    assert_eq!(report["thresholds"][0]["failed"], true, "{report:#}");
    assert_eq!(report["thresholds"][1]["failed"], false, "{report:#}");
}

#[test]
fn thresholds_that_hold_exit_0() {
    let output = courier(&[
        "bench",
        "-n",
        "300",
        "-c",
        "4",
        "--fail-if",
        "p99 > 10s",
        "--fail-if",
        "errors > 0",
    ]);
    let out = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}");
    assert!(out.contains("thresholds: 0 of 2 failed"), "{out}");
}

#[test]
fn a_bad_expression_is_refused_before_the_run() {
    let started = Instant::now();
    // A 30 s run that must never start.
    let output = courier(&["bench", "-d", "30", "--fail-if", "p98 > 5ms"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("unknown metric `p98`"),
        "{}",
        text(&output)
    );
    // Relative thresholds need a base run: refused by bench, before the run.
    let output = courier(&["bench", "-d", "30", "--fail-if", "p99 > +10%"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("courier compare"),
        "{}",
        text(&output)
    );
}

#[test]
fn compare_fails_on_a_relative_regression() {
    let dir = TempDir::new("compare-fail-if");
    let (a, b) = (dir.file("a.json"), dir.file("b.json"));
    for (json, concurrency) in [(&a, "1"), (&b, "4")] {
        let output = courier(&["bench", "-n", "300", "-c", concurrency, "--json", json]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }
    // Both ran 300 requests: no run lost 90 % of them...
    let output = courier(&["compare", &a, &b, "--fail-if", "requests < -90%"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("pass  requests < -90%"),
        "{}",
        text(&output)
    );
    // ...and a change of 0 % is `>= +0%`, so that one fails.
    let output = courier(&["compare", &a, &b, "--fail-if", "requests >= +0%"]);
    assert_eq!(output.status.code(), Some(99), "{}", text(&output));
    assert!(
        text(&output).contains("FAIL  requests >= +0%"),
        "{}",
        text(&output)
    );
}
