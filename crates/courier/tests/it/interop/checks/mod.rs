//! The checks of one cell, each with an outcome: ok, flaky, tolerated,
//! FAIL(kind) or n/a. Every check runs under a deadline of its own.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::target::Target;
use super::tolerance::{rerun_worthy, Tolerance};

mod bench;
mod bodies;
mod features;
mod load;
mod tests;
mod uploads;

/// What one check came to.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Passed; the note says what was measured, if anything.
    Ok(String),
    /// Failed once (`first`: kind and detail), then, run again, came to
    /// `then` (ok, tolerated or n/a): never counted as ok.
    Flaky { first: String, then: Box<Outcome> },
    /// Passed or ended only because `tolerance` absorbed `count` of the
    /// server's faults, within its scope and per-check bound.
    Tolerated {
        tolerance: Tolerance,
        count: u64,
        note: String,
    },
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
    /// The tolerance this failure is within the scope of, decided where the
    /// typed error was at hand (the check then ends as tolerated).
    pub absorbed: Option<Tolerance>,
}

impl Failure {
    pub fn new(kind: impl Into<String>, detail: impl Into<String>) -> Failure {
        Failure {
            kind: kind.into(),
            detail: detail.into(),
            absorbed: None,
        }
    }
}

impl From<courier::Error> for Failure {
    fn from(err: courier::Error) -> Failure {
        Failure::new(err.kind().as_str(), format!("{err:#}"))
    }
}

/// A response that was not what the server was asked for.
pub fn mismatch(detail: impl Into<String>) -> Failure {
    Failure::new("mismatch", detail)
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

pub type CheckFuture<'a> = Pin<Box<dyn Future<Output = CheckResult> + Send + 'a>>;

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

pub fn check<'a>(name: &str, t: &'a Target) -> CheckFuture<'a> {
    match name {
        "1MiB" => Box::pin(bodies::body(t, "1m.bin", super::fixtures::ONE_MIB)),
        "10MiB" => Box::pin(bodies::body(t, "10m.bin", super::fixtures::TEN_MIB)),
        "HEAD" => Box::pin(bodies::head(t)),
        "204" => Box::pin(bodies::no_content(t)),
        "304" => Box::pin(bodies::not_modified(t)),
        "echo" => Box::pin(uploads::echo(t)),
        "echo-stream" => Box::pin(uploads::echo_stream(t)),
        "chunked" => Box::pin(uploads::chunked(t)),
        "expect-100" => Box::pin(uploads::expect_continue(t)),
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
    run_with(t, names(t.mode.full), check).await
}

/// Runs `names` against `t` with `check` (the suite's, or a test's fake).
pub async fn run_with<'a, F>(
    t: &'a Target,
    names: Vec<&'static str>,
    check: F,
) -> Vec<(&'static str, Outcome)>
where
    F: Fn(&str, &'a Target) -> CheckFuture<'a>,
{
    let mut out = Vec::new();
    // Longer than any check's own requests may take, so a hang is caught
    // here only when something below ignored its timeout.
    let limit = t.mode.timeout * 3 + t.mode.idle_max + t.mode.load_for + Duration::from_secs(5);
    for name in names {
        let outcome = match once(check(name, t), limit).await {
            // The short run (CI) runs a check once more after a passed
            // deadline (see `tolerance::rerun_worthy`), and says so: the
            // cell is flaky, never ok, and the matrix bounds how many. The
            // full run (the README's matrix) takes every outcome as it is.
            Outcome::Fail { kind, detail } if !t.mode.full && rerun_worthy(&kind) => {
                let first = format!("{kind}: {detail}");
                match once(check(name, t), limit).await {
                    Outcome::Fail { kind, detail } => Outcome::Fail {
                        kind,
                        detail: format!("{detail} (second run; first: {first})"),
                    },
                    then => Outcome::Flaky {
                        first,
                        then: Box::new(then),
                    },
                }
            }
            outcome => outcome,
        };
        out.push((name, outcome));
    }
    out
}

async fn once(check: CheckFuture<'_>, limit: Duration) -> Outcome {
    match tokio::time::timeout(limit, check).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(Failure {
            kind,
            detail,
            absorbed: Some(tolerance),
        })) => Outcome::Tolerated {
            tolerance,
            count: 1,
            note: format!("{kind}: {detail}"),
        },
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
