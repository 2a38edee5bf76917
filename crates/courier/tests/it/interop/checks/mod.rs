//! The checks of one cell, each with an outcome: ok, FAIL(kind) or n/a.
//! Every check runs under a deadline of its own.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::target::Target;

mod bench;
mod bodies;
mod features;
mod load;
mod uploads;

/// What one check came to.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Passed; the note says what was measured, if anything.
    Ok(String),
    /// Failed: `kind` is courier's `ErrorKind` (or `mismatch`, `hang`).
    Fail { kind: String, detail: String },
    /// Does not apply to this server or protocol, and why.
    Na(String),
}

/// A failed check.
#[derive(Debug)]
pub struct Failure {
    pub kind: String,
    pub detail: String,
}

impl From<courier::Error> for Failure {
    fn from(err: courier::Error) -> Failure {
        Failure {
            kind: err.kind().as_str().to_owned(),
            detail: err.to_string(),
        }
    }
}

/// A response that was not what the server was asked for.
pub fn mismatch(detail: impl Into<String>) -> Failure {
    Failure {
        kind: "mismatch".into(),
        detail: detail.into(),
    }
}

/// Fails with `mismatch` unless `cond`.
pub fn ensure(cond: bool, detail: impl FnOnce() -> String) -> Result<(), Failure> {
    if cond {
        Ok(())
    } else {
        Err(mismatch(detail()))
    }
}

pub type CheckResult = Result<Outcome, Failure>;

pub fn ok() -> CheckResult {
    Ok(Outcome::Ok(String::new()))
}

pub fn na(why: impl Into<String>) -> CheckResult {
    Ok(Outcome::Na(why.into()))
}

type CheckFuture<'a> = Pin<Box<dyn Future<Output = CheckResult> + Send + 'a>>;

/// The checks of a mode, in matrix order.
pub fn names(full: bool) -> Vec<&'static str> {
    let mut names = vec!["1MiB"];
    if full {
        names.push("10MiB");
    }
    names.extend([
        "HEAD",
        "204",
        "304",
        "echo",
        "echo-stream",
        "chunked",
        "trailers",
        "expect-100",
        "103",
        "gzip",
        "redirect",
        "200-conc",
        "idle-gap",
        "req-limit",
        "load",
    ]);
    if full {
        names.push("bench");
    }
    names
}

fn check<'a>(name: &str, t: &'a Target) -> CheckFuture<'a> {
    match name {
        "1MiB" => Box::pin(bodies::body(t, "1m.bin", super::fixtures::ONE_MIB)),
        "10MiB" => Box::pin(bodies::body(t, "10m.bin", super::fixtures::TEN_MIB)),
        "HEAD" => Box::pin(bodies::head(t)),
        "204" => Box::pin(bodies::no_content(t)),
        "304" => Box::pin(bodies::not_modified(t)),
        "echo" => Box::pin(uploads::unless_stalled(t, uploads::echo(t))),
        "echo-stream" => Box::pin(uploads::unless_stalled(t, uploads::echo_stream(t))),
        "chunked" => Box::pin(uploads::unless_stalled(t, uploads::chunked(t))),
        "expect-100" => Box::pin(uploads::unless_stalled(t, uploads::expect_continue(t))),
        "trailers" => Box::pin(features::trailers(t)),
        "103" => Box::pin(features::early_hints(t)),
        "gzip" => Box::pin(features::gzip(t)),
        "redirect" => Box::pin(features::redirect(t)),
        "200-conc" => Box::pin(load::concurrent(t)),
        "idle-gap" => Box::pin(load::idle_gap(t)),
        "req-limit" => Box::pin(load::request_limit(t)),
        "load" => Box::pin(load::load(t)),
        "bench" => Box::pin(bench::bench(t)),
        other => panic!("unknown check {other}"),
    }
}

/// Runs every check of the mode against `t`, one after another.
pub async fn run(t: &Target) -> Vec<(&'static str, Outcome)> {
    let mut out = Vec::new();
    // Longer than any check's own requests may take, so a hang is caught
    // here only when something below ignored its timeout.
    let limit = t.mode.timeout * 3 + t.mode.idle_max + t.mode.load_for + Duration::from_secs(5);
    for name in names(t.mode.full) {
        let mut outcome = once(name, t, limit).await;
        // The short run (CI) checks a failure once more: third-party servers
        // on a loaded 2-core machine have failed a cell once in hundreds of
        // runs for no fault found. A failure that repeats fails the suite; one
        // that does not is printed, never hidden. The full run (the README's
        // matrix) takes every first outcome as it is.
        if let (false, Outcome::Fail { kind, detail }) = (t.mode.full, &outcome) {
            let first = format!("{kind}: {detail}");
            outcome = match once(name, t, limit).await {
                Outcome::Ok(note) => {
                    eprintln!(
                        "FLAKY {} {name}: passed on a second run; first: {first}",
                        t.base
                    );
                    Outcome::Ok(format!("{note} (second run; first: {first})"))
                }
                again => again,
            };
        }
        out.push((name, outcome));
    }
    out
}

async fn once(name: &str, t: &Target, limit: Duration) -> Outcome {
    match tokio::time::timeout(limit, check(name, t)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(f)) => Outcome::Fail {
            kind: f.kind,
            detail: f.detail,
        },
        Err(_) => Outcome::Fail {
            kind: "hang".into(),
            detail: format!("no outcome within {limit:?}"),
        },
    }
}
