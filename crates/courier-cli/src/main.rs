//! `courier`: the command line of the courier HTTP client.
//!
//! - `courier bench [URL]` drives load with a real connection pool and reports latency and pool
//!   behaviour (see `bench/`).
//! - `courier serve` runs the built-in test server.

mod bench;
mod error;
mod secs;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Closed-loop HTTP load generator with latency and connection-pool report.
    Bench(Box<bench::args::BenchArgs>),
    /// Run the built-in test server until Ctrl-C.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    // Usage errors exit with clap's code 2; `--help`/`--version` exit 0.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(*args),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
