//! What a run shows while it runs, when stderr is not a terminal (as under `cargo test`): nothing
//! by default, one plain line per second with `--progress lines`. (The panel drawn on a terminal
//! is checked by the unit tests of `bench::progress`.)

use crate::support::{assert_success, courier, Server};

#[test]
fn progress_lines_print_one_line_per_second_and_auto_prints_none_off_a_terminal() {
    let server = Server::start(&[]);
    let url = format!("{}bytes/16", server.url);
    let output = courier(&["bench", &url, "-d", "3.5", "-c", "2", "--progress", "lines"]);
    assert_success(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let seconds: Vec<&str> = stderr.lines().filter(|l| l.contains(" req/s")).collect();
    // Seconds 1, 2 and 3 (the last half second is the report's); a tick delayed past the end
    // on a busy machine is skipped, so at least two.
    assert!((2..=3).contains(&seconds.len()), "{stderr}");
    for line in &seconds {
        assert!(line.contains("p99") && line.contains("in flight"), "{line}");
        assert!(
            !line.contains('\r') && !line.contains('\x1b'),
            "plain lines: {line:?}"
        );
    }
    assert!(seconds[0].contains(" / 3.5 s "), "{}", seconds[0]);
    // stdout is the report alone.
    assert!(!String::from_utf8_lossy(&output.stdout).contains("in flight  "));

    let output = courier(&["bench", &url, "-d", "1.5", "-c", "2"]);
    assert_success(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains(" req/s"),
        "no progress off a terminal: {stderr}"
    );
}

/// The cluster scenario shows the same lines, from its own open loop: what finished each
/// second against the target rate.
#[test]
fn the_cluster_scenario_prints_progress_lines_too() {
    let output = courier(&[
        "bench",
        "--scenario",
        "cluster",
        "-d",
        "3",
        "--rate",
        "200",
        "--progress",
        "lines",
    ]);
    assert_success(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let seconds: Vec<&str> = stderr.lines().filter(|l| l.contains("in flight")).collect();
    assert!((2..=3).contains(&seconds.len()), "{stderr}");
    for line in &seconds {
        assert!(
            line.contains(" / 3 s ") && line.contains("(target 200)"),
            "{line}"
        );
    }
    // Requests finished: a second's throughput is not 0 (the first may be partial).
    let last = seconds.last().expect("a line");
    assert!(!last.contains(" 0 req/s"), "{last}");
}
