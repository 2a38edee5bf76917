//! `courier serve`: the built-in test server as a standalone process.
//!
//! Useful to benchmark against a server in another process (so client and server do not share
//! a runtime) or to poke at the test endpoints with curl.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use clap::Args;

use crate::error::{CliError, Result};
use crate::secs::Secs;

/// Runs the built-in HTTP server until Ctrl-C.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub addr: IpAddr,

    /// Port to listen on (0 picks a free one).
    #[arg(short = 'p', long, default_value_t = 8080)]
    pub port: u16,

    /// Close connections idle for this many seconds [default: never].
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<Secs>,

    /// Close each connection after one response instead of keeping it alive.
    #[arg(long)]
    pub no_keep_alive: bool,
}

/// Starts the server, prints its URL, and serves until Ctrl-C.
pub fn run(args: ServeArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> Result<()> {
    let addr = SocketAddr::new(args.addr, args.port);
    let config = courier_server::ServerConfig {
        addr,
        keep_alive: !args.no_keep_alive,
        idle_timeout: args.idle_timeout.map(Secs::as_duration),
    };
    let server = courier_server::start(config)
        .await
        .map_err(|e| CliError::new(format!("cannot listen on {addr}: {e}")))?;
    println!("courier serve: listening on {}", server.url("/"));
    println!("endpoints: /bytes/{{n}} /json/{{n}} /delay/{{ms}} /echo /status/{{code}} /headers /close /fault/...");
    println!("press Ctrl-C to stop");
    let signal = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    signal.map_err(|e| CliError::new(format!("cannot wait for Ctrl-C: {e}")))
}
