//! `courier bench`: drive load at a URL (or at the built-in server) and report what happened.
//!
//! This module wires the parts together: runtime, optional in-process server, client, run,
//! report. Each part lives in its own file so other load models (open-loop), per-second
//! timelines or report comparison can be added next to them.

pub mod args;
mod client;
pub mod json;
pub mod report;
mod runner;
mod sampler;
pub mod stats;

use http::Uri;

use self::args::{BenchArgs, Stop};
use self::json::{BenchReport, RunFacts};
use self::stats::WorkerStats;
use crate::error::{CliError, Result};

/// Runs the benchmark described by `args`, prints the table, and writes `--json` if asked.
pub fn run(args: BenchArgs) -> Result<()> {
    let threads = match args.threads {
        Some(n) => client::to_usize(n, "--threads")?,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let report = runtime.block_on(execute(&args, threads as u64))?;
    print!("{}", report::render(&report));
    if let Some(path) = &args.json {
        report.write(path)?;
    }
    Ok(())
}

async fn execute(args: &BenchArgs, threads: u64) -> Result<BenchReport> {
    // Built inside the runtime: the client may start background tasks (idle scavenging).
    let client = client::build(args)?;
    let server = match args.url {
        Some(_) => None,
        None => Some(
            courier_server::start(courier_server::ServerConfig::default())
                .await
                .map_err(|e| CliError::new(format!("cannot start the built-in server: {e}")))?,
        ),
    };
    let url = match (&args.url, &server) {
        (Some(url), _) => url.clone(),
        (None, Some(server)) => server.url(&format!("/bytes/{}", args.response_size)),
        (None, None) => unreachable!("a server is started whenever no URL is given"),
    };
    let uri: Uri = url
        .parse()
        .map_err(|e| CliError::new(format!("`{url}` is not a valid URL: {e}")))?;

    let stop = match args.stop() {
        Stop::Requests(n) => format!("{n} requests"),
        Stop::Duration(d) => format!("{} s", d.as_secs_f64()),
    };
    eprintln!(
        "courier bench: {} {url}, {} concurrent, {stop} ...",
        args.method, args.concurrency
    );

    let outcome = runner::run(args, client, uri).await;
    if let Some(server) = server {
        server.shutdown().await;
    }
    let outcome = outcome?;
    let totals = WorkerStats::merge_all(&outcome.workers)?;
    Ok(BenchReport::new(RunFacts {
        config: args,
        url: &url,
        threads,
        elapsed: outcome.elapsed,
        totals: &totals,
        pool: &outcome.pool,
    }))
}
