//! The hostile-server corpus (issue 14): scripted servers that misbehave on
//! purpose, over HTTP/1.1, h2c and TLS, each case with a budget. A case
//! is data (`corpus/cases/*.rs`: mostly the bytes a server writes and what
//! must come of them); the harness (`corpus/harness.rs`) runs the cases one
//! at a time and checks, for each: the outcome (a response or an error
//! kind), the wall time, CPU time and RSS growth, that a refused request
//! wrote nothing, that the same client then serves a good request that no
//! byte of the hostile response reaches, and that no connection and no
//! task is left behind.
//!
//! `cargo test -p courier-http --test it corpus::` runs the short set (every case
//! that does not wait out a timeout, on its first transport);
//! `COURIER_CORPUS=full cargo test -p courier-http --test it corpus:: -- --nocapture`
//! runs every case on every transport and prints a table per class.
//! `COURIER_CORPUS_CASE=<substring>` runs the cases whose name has it (or
//! the class so named, e.g. `Across`).
//!
//! The budgets are the whole process's CPU time and peak RSS, so the test
//! runs in a process of its own ([`alone`]), not beside the binary's others.

pub mod budget;
pub mod case;
pub mod cases;
#[cfg(all(feature = "http3", feature = "dns-srv"))]
pub mod dns;
pub mod front;
pub mod h1_server;
pub mod h2_server;
pub mod harness;
pub mod io;
pub mod probe;
pub mod report;
pub mod secrets;
pub mod server;
pub mod tasks;
pub mod tls;

use std::time::Instant;

use crate::support::alone;
use case::Case;

fn selected(case: &Case, full: bool, filter: Option<&str>) -> bool {
    match filter {
        Some(f) => case.name.contains(f) || format!("{:?}", case.class) == f,
        None => full || !case.slow,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_servers() {
    if !alone(module_path!(), "hostile_servers") {
        return;
    }
    let full = std::env::var("COURIER_CORPUS").is_ok_and(|v| v == "full");
    let filter = std::env::var("COURIER_CORPUS_CASE").ok();
    let began = Instant::now();
    let mut runs = Vec::new();
    let all = cases::all().await;
    for case in all.iter().filter(|c| selected(c, full, filter.as_deref())) {
        let transports = if full || filter.is_some() {
            &case.transports[..]
        } else {
            &case.transports[..1]
        };
        for &transport in transports {
            let run = harness::run(case, transport).await;
            println!("{}", report::line(case, &run));
            runs.push((case.class, run));
        }
    }
    println!("{}", report::table(&all, &runs, began.elapsed()));
    let failed: Vec<String> = runs
        .iter()
        .filter(|(_, r)| !r.failures.is_empty())
        .map(|(_, r)| format!("{} ({:?}): {}", r.name, r.transport, r.failures.join("; ")))
        .collect();
    crate::support::ci::write_summary(
        "corpus",
        &[
            ("runs", runs.len().to_string()),
            ("passed", (runs.len() - failed.len()).to_string()),
            ("failed", failed.len().to_string()),
            ("seconds", format!("{:.1}", began.elapsed().as_secs_f64())),
        ],
    );
    assert!(
        failed.is_empty(),
        "{} run(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
