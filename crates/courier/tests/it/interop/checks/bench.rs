//! `courier bench` (the CLI's load generator, a child process) against the
//! server for a few seconds: 0 errors, every response a 200. Full mode
//! only; the binary is courier-cli's (`cargo build -p courier-cli`).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use super::super::target::Target;
use super::load::worded_as_idle_stall;
use super::{ok, CheckResult, Failure};

/// `COURIER_BIN`, else `courier` in the target directory's debug profile.
fn binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("COURIER_BIN") {
        return Some(bin.into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let bin = target.join("debug/courier");
    bin.exists().then_some(bin)
}

fn failure(kind: &str, detail: impl Into<String>) -> Failure {
    Failure::new(kind, detail)
}

/// How `courier bench` words a response the server cut by closing the
/// connection after its GOAWAY (`Error::is_closed_after_goaway`; its text
/// is pinned by courier's unit test of it), before the origin it appends.
/// The report gives no error types, only kinds and messages; the whole
/// message must be this one, so courier's own close after a GOAWAY ("the
/// server went silent after its GOAWAY") or any other body error fails.
const CUT_MESSAGE: &str = "error reading response body: HTTP/2 connection closed: the server closed the connection after its GOAWAY";

pub async fn bench(t: &Target) -> CheckResult {
    let Some(bin) = binary() else {
        return Err(failure(
            "missing",
            "courier binary not found: cargo build -p courier-cli (or set COURIER_BIN)",
        ));
    };
    let (http, c) = if t.proto == super::super::target::Proto::H3 {
        ("3", t.mode.load_concurrency_h2)
    } else if t.proto.is_h2() {
        ("2", t.mode.load_concurrency_h2)
    } else {
        ("1.1", t.mode.load_concurrency_h1)
    };
    let secs = t.mode.load_for.as_secs().max(1);
    let json = std::env::temp_dir().join(format!(
        "courier-interop-bench-{}-{}.json",
        std::process::id(),
        fastrand::u64(..)
    ));
    let mut cmd = tokio::process::Command::new(&bin);
    cmd.arg("bench")
        .arg(t.url("/static/small.txt"))
        .args(["--http", http, "-c", &c.to_string()])
        .args(["-d", &secs.to_string(), "--warmup", "0"])
        .args(["--timeout", &t.mode.timeout.as_secs().to_string()])
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if t.base.starts_with("https") {
        // The bench takes no CA file; the other checks verify the chain.
        cmd.arg("--insecure");
    }
    let limit = Duration::from_secs(secs) + t.mode.timeout + Duration::from_secs(20);
    let out = match tokio::time::timeout(limit, cmd.output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(err)) => return Err(failure("spawn", format!("{}: {err}", bin.display()))),
        Err(_) => return Err(failure("hang", format!("courier bench ran over {limit:?}"))),
    };
    let report = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(failure(
            "exit",
            format!("{}: {}", out.status, stderr.trim()),
        ));
    }
    let report: serde_json::Value = report
        .ok()
        .and_then(|r| serde_json::from_str(&r).ok())
        .ok_or_else(|| failure("report", "no readable --json report"))?;
    let requests = report["requests"].as_u64().unwrap_or(0);
    let errors = report["errors"].as_u64().unwrap_or(u64::MAX);
    let statuses = &report["status_codes"];
    let only_200 = statuses
        .as_object()
        .is_some_and(|s| s.keys().all(|k| k == "200"));
    let note = format!(
        "courier bench --http {http} -c {c} -d {secs}: {requests} requests, {errors} errors {}, statuses {statuses}",
        report["errors_by_kind"]
    );
    // Where the server cuts responses after its GOAWAY whatever the client
    // does (`Tolerance::GoawayCut`), errors that are all such cuts are
    // counted for it, and bounded.
    if errors > 0
        && requests > 0
        && only_200
        && super::load::cuts_expected(t)
        && all_cuts(t, &report, errors)
    {
        return super::load::with_cuts(t, note, errors);
    }
    // Where the server leaves busy HTTP/3 connections silent under load
    // (`Tolerance::H3IdleStall`), errors that are all QUIC idle timeouts
    // are counted for it, and bounded.
    if errors > 0
        && requests > 0
        && only_200
        && t.caps.h3_idle_stall.is_some()
        && all_idle_stalls(&report, errors)
    {
        return super::load::with_stalls(t, note, errors);
    }
    if errors != 0 || requests == 0 || !only_200 {
        let kind = report["errors_by_kind"]
            .as_object()
            .and_then(|k| k.keys().next().cloned())
            .unwrap_or_else(|| "mismatch".into());
        return Err(failure(&kind, note));
    }
    ok().map(|_| super::Outcome::Ok(note))
}

/// Every one of the report's `errors` is a `connection_closed` error
/// worded as a QUIC idle timeout ([`worded_as_idle_stall`]), as
/// [`super::load::idle_stalled`] reads them.
fn all_idle_stalls(report: &serde_json::Value, errors: u64) -> bool {
    let by_kind = report["errors_by_kind"].as_object();
    let only_closed = by_kind.is_some_and(|m| {
        m.len() == 1 && m.get("connection_closed").and_then(|n| n.as_u64()) == Some(errors)
    });
    let Some(messages) = report["error_messages"].as_object() else {
        return false;
    };
    let idle: u64 = messages
        .iter()
        .filter(|(message, _)| worded_as_idle_stall(message))
        .filter_map(|(_, n)| n.as_u64())
        .sum();
    only_closed && idle == errors
}

/// Every one of the report's `errors` is a `body` error worded as a cut
/// after the server's GOAWAY ([`CUT_MESSAGE`]) for this target's origin.
fn all_cuts(t: &Target, report: &serde_json::Value, errors: u64) -> bool {
    let origin = t.base.split_once("://").map_or(t.base.as_str(), |(_, o)| o);
    let cut = format!("{CUT_MESSAGE} ({origin})");
    let by_kind = report["errors_by_kind"].as_object();
    let messages = report["error_messages"].as_object();
    let only = |map: Option<&serde_json::Map<String, serde_json::Value>>, key: &str| {
        map.is_some_and(|m| m.len() == 1 && m.get(key).and_then(|n| n.as_u64()) == Some(errors))
    };
    only(by_kind, "body") && only(messages, &cut)
}
