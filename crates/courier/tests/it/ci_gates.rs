//! The gates that keep a green run honest (issue 32): each tested where it
//! can be. A paused-time wait has an upper bound in virtual time; any yes
//! value of `CI` means CI; the MSRV check fails having checked nothing;
//! `.ci/run`'s closing summary counts what ran and shows what did not.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::ci::means_ci;
use crate::support::eventually;

/// Before: `eventually` bounded real time only, so on paused time a
/// condition that held only after a virtual hour passed.
#[tokio::test(start_paused = true)]
#[should_panic(expected = "not within 100ms of tokio's clock")]
async fn a_paused_time_wait_has_a_virtual_upper_bound() {
    let start = tokio::time::Instant::now();
    eventually(
        "a second of virtual time",
        Duration::from_millis(100),
        || start.elapsed() >= Duration::from_secs(1),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_paused_time_wait_within_its_bound_passes() {
    let start = tokio::time::Instant::now();
    eventually("50 ms of virtual time", Duration::from_millis(100), || {
        start.elapsed() >= Duration::from_millis(50)
    })
    .await;
}

/// Before: the interop suite and the proxy tests took only `true`, h2spec
/// `true` or `1`; `.ci/run` kept a caller's `CI=1`.
#[test]
fn any_yes_value_of_ci_is_ci() {
    for yes in ["true", "1", "yes", "TRUE", "on", "github"] {
        assert!(means_ci(Some(yes)), "{yes}");
    }
    for no in [
        None,
        Some(""),
        Some(" "),
        Some("0"),
        Some("false"),
        Some("No"),
        Some("off"),
    ] {
        assert!(!means_ci(no), "{no:?}");
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> bool {
    let found = Command::new("python3").arg("--version").output().is_ok();
    if !found {
        crate::support::ci::skip_unless_ci("python3 is not installed for .ci's scripts");
    }
    found
}

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("courier-ci-gates-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Before: an empty lock (or unfetched sources) printed "0 locked crates
/// checked" and passed.
#[test]
fn the_msrv_check_fails_having_checked_no_crate() {
    if !python() {
        return;
    }
    let dir = Scratch::new("msrv");
    std::fs::write(
        dir.0.join("Cargo.toml"),
        "[workspace]\nrust-version = \"1.85\"\n",
    )
    .unwrap();
    std::fs::write(dir.0.join("Cargo.lock"), "version = 4\n").unwrap();
    let out = Command::new("python3")
        .arg(repo().join(".ci/msrv-lock.py"))
        .arg(&dir.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "passed: {stdout}");
    assert!(stdout.contains("0 locked crates checked"), "{stdout}");
}

/// `.ci/summary.py` over a log with one suite missing and one failing: it
/// counts what ran, names what did not, and its last line says the run
/// failed.
#[test]
fn the_closing_summary_counts_what_ran_and_shows_what_did_not() {
    if !python() {
        return;
    }
    let dir = Scratch::new("summary");
    let logs = dir.0.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(
        logs.join("test.log"),
        "     Running unittests src/lib.rs (target/debug/deps/courier-1)\n\
         test result: ok. 300 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1.00s\n\
         \x20    Running tests/it/main.rs (target/debug/deps/it-2)\n\
         test result: FAILED. 40 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9.00s\n\
         \x20  Doc-tests courier\n\
         test result: ok. 20 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 2.00s\n\
         h2specd h2c plain: 57/57 passed\n",
    )
    .unwrap();
    std::fs::write(logs.join("steps.tsv"), "test\t120\t0\nfuzz\t60\t0\n").unwrap();
    std::fs::write(logs.join("fuzz.tsv"), "h2_frames\t1000\t15\nhpack\t0\t15\n").unwrap();
    let suites = dir.0.join("suites");
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::write(
        suites.join("corpus.txt"),
        "suite=corpus runs=10 passed=10 failed=0 seconds=3.0\n",
    )
    .unwrap();
    let out = Command::new("python3")
        .arg(repo().join(".ci/summary.py"))
        .args([&logs, &suites])
        .env(
            "COURIER_CI_FUZZ_TARGETS",
            "h2_frames hpack http2_differential",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("test binaries: 3"), "{stdout}");
    assert!(stdout.contains("h2spec: h2c plain 57/57"), "{stdout}");
    assert!(
        stdout.contains("MISSING: h2spec ran 1 of 4 modes"),
        "{stdout}"
    );
    assert!(stdout.contains("MISSING: interop"), "{stdout}");
    assert!(
        stdout.contains("MISSING: fuzz http2_differential"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAILED: fuzz hpack ran 0 executions"),
        "{stdout}"
    );
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.ends_with(" failed") && !last.ends_with(" 0 failed"),
        "{last}"
    );
}
