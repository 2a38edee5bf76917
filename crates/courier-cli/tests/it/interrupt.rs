//! Ctrl-C during a run keeps what was measured: the partial report is printed and every file
//! asked for is written, covering the time until the signal; output paths are checked before
//! the run so a typo cannot lose one.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{command, courier, lines, read_json, text, TempDir};

/// How long the run may take to start and to finish after SIGINT.
const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn sigint_after_two_seconds_writes_a_two_second_report() {
    let dir = TempDir::new("sigint");
    let (json, html) = (dir.file("partial.json"), dir.file("partial.html"));
    let mut child = command()
        .args([
            "bench", "-d", "30", "-c", "4", "--json", &json, "--html", &html,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start courier bench");
    let stdout = lines(child.stdout.take().expect("piped stdout"));
    let stderr = lines(child.stderr.take().expect("piped stderr"));
    // The run has started when it says what it runs.
    let started = loop {
        let line = stderr.recv_timeout(LIMIT).expect("courier bench started");
        if line.starts_with("courier bench: GET") {
            break Instant::now();
        }
    };
    // By design: let the run measure for about 2 s.
    std::thread::sleep(Duration::from_secs(2));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("courier bench did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out: Vec<String> = stdout.try_iter().collect();
    let err: Vec<String> = stderr.try_iter().collect();
    let all = format!("{}\n{}", out.join("\n"), err.join("\n"));
    assert_eq!(status.code(), Some(130), "{all}");
    assert!(all.contains("INTERRUPTED: stopped by Ctrl-C"), "{all}");
    assert!(
        all.contains("Mean RPS"),
        "the partial table is printed:\n{all}"
    );

    let report = read_json(std::path::Path::new(&json));
    let duration = report["duration_s"].as_f64().expect("duration_s");
    assert!((1.5..3.5).contains(&duration), "duration_s = {duration}");
    assert_eq!(report["interrupted"], true);
    assert!(report["requests"].as_u64().unwrap_or(0) > 0, "{report:#}");
    assert_eq!(report["errors"], 0, "in-flight requests finish, not fail");
    let page = std::fs::read_to_string(&html).expect("HTML report written");
    assert!(page.contains("<svg"), "the HTML report is complete");
}

#[test]
fn an_unwritable_output_is_refused_before_the_run() {
    let started = Instant::now();
    for flag in ["--json", "--html"] {
        let output = courier(&["bench", "-d", "30", flag, "/nonexistent-courier-dir/r"]);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output));
        let out = text(&output);
        assert!(
            out.contains(&format!("{flag} /nonexistent-courier-dir/r: cannot create")),
            "{out}"
        );
        assert!(
            !out.contains("courier bench: GET"),
            "no run started:\n{out}"
        );
    }
    assert!(started.elapsed() < LIMIT);
}
