//! `courier-server`: the built-in HTTP test and benchmark server for courier.
//!
//! It exists so that courier's integration tests, `courier bench` and
//! `courier serve` all talk to one server whose behaviour is known exactly:
//! fast, allocation-light endpoints for throughput measurements, plus fault
//! endpoints (`/fault/...`) that misbehave in precise, repeatable ways so the
//! client's error handling can be tested against real sockets.
//!
//! The server runs in-process on the caller's tokio runtime:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let server = courier_server::start(courier_server::ServerConfig::default()).await?;
//! let url = server.url("/bytes/1024");
//! // ... drive requests at `url` ...
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! Every response produced by the server's own handlers carries an
//! `x-connection-id` header (sequential per accepted connection, starting at
//! 1) so tests can observe whether the client reused a connection.
//!
//! Only HTTP/1.1 over plain TCP is served today; the connection driver is
//! chosen per accepted socket in `conn.rs`, which is where HTTP/2, h2c and
//! TLS will plug in.

mod accept;
mod body;
mod config;
mod conn;
mod endpoints;
mod faults;
mod handle;
mod http1;
mod io;
mod service;

pub use body::BYTES_ALPHABET;
pub use config::ServerConfig;
pub use handle::ServerHandle;

use std::sync::Arc;

use tokio::net::TcpListener;

/// Namespace for starting a server, for callers that prefer
/// `Server::start(config)` over the free function [`start`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Server;

impl Server {
    /// Same as [`start`].
    pub async fn start(config: ServerConfig) -> std::io::Result<ServerHandle> {
        start(config).await
    }
}

/// Binds `config.addr` and spawns the accept loop on the current tokio
/// runtime, returning as soon as the socket is listening.
///
/// Returning only after the bind means the caller can immediately connect to
/// [`ServerHandle::local_addr`] without racing the server's startup.
///
/// # Errors
/// Returns the bind error (address in use, permission denied, ...).
///
/// # Panics
/// Panics if called outside a tokio runtime (as `tokio::spawn` does).
pub async fn start(config: ServerConfig) -> std::io::Result<ServerHandle> {
    let listener = TcpListener::bind(config.addr).await?;
    let local_addr = listener.local_addr()?;
    let (ctx, signals) = handle::ServerContext::new(&config);
    let ctx = Arc::new(ctx);
    let task = tokio::spawn(accept::accept_loop(listener, Arc::clone(&ctx)));
    Ok(ServerHandle::new(local_addr, ctx, signals, task))
}
