//! `courier`: the command line of the courier HTTP client.
//!
//! - `courier bench [URL]` drives load with real connection pools and reports latency, pool
//!   behaviour and the process's own cost (see `bench/`).
//! - `courier compare A.json B.json …` puts bench reports side by side.
//! - `courier merge A.json B.json …` combines the reports of agents that ran together.
//! - `courier serve` runs the built-in test server.

mod alloc;
mod banner;
mod bench;
mod compare;
mod error;
mod merge;
mod secs;
mod serve;
mod serve_replicas;
mod threshold;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Counts allocations for `courier bench --count-allocations`; costs one relaxed load per
/// allocation while counting is off.
#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

/// A high-performance HTTP client with a real connection pool: benchmark and test server.
#[derive(Debug, Parser)]
#[command(name = "courier", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    // Boxed: the bench flags are large and the enum lives once, so the box costs nothing.
    /// HTTP load generator (closed loop, open loop, long polls) with latency, connection-pool
    /// and process report.
    #[command(
        after_help = "Durations: 250ms, 5s, 1m (a bare number is seconds). \
                      -h shows the common flags; --help shows all of them, with details.",
        after_long_help = "Durations: every time flag takes 250us, 250ms, 5s, 1m, 1h, or a bare \
                           number of seconds. Examples:\n  \
                           courier bench -c 64 -d 10s\n  \
                           courier bench https://host/api -n 10000 --http 2 --json run.json\n  \
                           courier bench --rate 5000 -d 1m --fail-if 'p99 > 5ms'"
    )]
    Bench(Box<bench::args::BenchArgs>),
    /// Compare `courier bench --json` reports side by side, with % deltas from the first.
    Compare(compare::CompareArgs),
    /// Merge `courier bench --json` reports of agents that ran together into one report
    /// (counts summed, percentiles from the merged histograms).
    Merge(merge::MergeArgs),
    /// Run the built-in test server until Ctrl-C.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    // Usage errors exit with clap's code 2; `--help`/`--version` exit 0.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(*args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.code())
        }
    }
}
