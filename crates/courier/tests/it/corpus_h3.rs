//! The hostile HTTP/3 peers (issue 31): a class of the hostile-server
//! corpus (`corpus.rs`) for HTTP/3, feature `http3`. A raw QUIC server
//! (quinn's server side, rustls, a test certificate) writes HTTP/3 frames,
//! streams and QPACK bytes itself, so it can misbehave: QPACK encoder-stream
//! and field-section bombs, unknown and reserved frame and stream types,
//! control-stream faults, SETTINGS and GOAWAY abuse, stream floods,
//! MAX_STREAMS 0, a handshake never finished, request-stream framing, a
//! server that stops reading, trailers bombs. Each case gets the corpus's
//! budgets (time past the request deadline, CPU, peak RSS) and its checks
//! (a typed error or a correct answer, a good follow-up, no request stream,
//! connection or task left behind).
//!
//! `cargo test -p courier-http --features http3 --test it corpus_h3::`;
//! `COURIER_CORPUS_CASE=<substring>` runs the cases whose name has it.
//! The class runs in a process of its own ([`alone`]): its budgets are the
//! whole process's CPU and RSS. Its counts go to CI's summary as the suite
//! `corpus_h3`.

mod case;
mod cases;
mod driver;
mod harness;
mod server;
mod wire;

use std::fmt::Write;
use std::time::Instant;

use crate::support::alone;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_http3_peers() {
    if !alone(module_path!(), "hostile_http3_peers") {
        return;
    }
    let filter = std::env::var("COURIER_CORPUS_CASE").ok();
    let began = Instant::now();
    let all = cases::all();
    let mut runs = Vec::new();
    let mut pended = Vec::new();
    for case in all
        .iter()
        .filter(|c| filter.as_deref().is_none_or(|f| c.name.contains(f)))
    {
        let mut run = harness::run(case).await;
        let pending = case.pending.filter(|_| !run.failures.is_empty());
        println!(
            "{:<5} Http3          {:<40} wall {:>5} ms  cpu {:>4} ms  rss +{:>6} KiB{}",
            match (run.failures.is_empty(), pending.is_some()) {
                (true, _) => "ok",
                (false, true) => "PEND",
                (false, false) => "FAIL",
            },
            run.name,
            run.cost.wall.as_millis(),
            run.cost.cpu.as_millis(),
            run.cost.rss >> 10,
            if run.failures.is_empty() {
                String::new()
            } else {
                format!("\n      {}", run.failures.join("\n      "))
            }
        );
        if let Some(why) = pending {
            // A known defect: printed and counted, not failed.
            pended.push(format!("{}: {} ({why})", run.name, run.failures.join("; ")));
            run.failures.clear();
        }
        runs.push(run);
    }
    for p in &pended {
        println!("pending (a known defect, counted): {p}");
    }
    let failed: Vec<String> = runs
        .iter()
        .filter(|r| !r.failures.is_empty())
        .map(|r| format!("{}: {}", r.name, r.failures.join("; ")))
        .collect();
    let max = |f: fn(&harness::Run) -> u64| runs.iter().map(f).max().unwrap_or(0);
    let mut table = String::new();
    let _ = writeln!(
        table,
        "\nclass          cases  runs passed  max cpu   max rss max wall\n\
         Http3          {:>5} {:>5} {:>6}  {:>4} ms {:>5} KiB {:>5} ms\n\
         {} cases, {}/{} runs passed in {:.1?}",
        all.len(),
        runs.len(),
        runs.len() - failed.len(),
        max(|r| r.cost.cpu.as_millis() as u64),
        max(|r| r.cost.rss >> 10),
        max(|r| r.cost.wall.as_millis() as u64),
        all.len(),
        runs.len() - failed.len(),
        runs.len(),
        began.elapsed(),
    );
    println!("{table}");
    crate::support::ci::write_summary(
        "corpus_h3",
        &[
            ("cases", all.len().to_string()),
            ("runs", runs.len().to_string()),
            ("passed", (runs.len() - failed.len()).to_string()),
            ("failed", failed.len().to_string()),
            ("pending", pended.len().to_string()),
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
