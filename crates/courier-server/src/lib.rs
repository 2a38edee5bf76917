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
//! Protocols: HTTP/1.1 and HTTP/2, over plain TCP or TLS. With TLS, ALPN
//! picks the protocol (`h2` preferred); on plain TCP an HTTP/2 client must
//! use prior knowledge (h2c: it opens with the connection preface, which
//! the server recognises on the same port as HTTP/1.1). [`TestPki`] makes
//! certificates for tests, including broken ones. Each accepted socket goes
//! through `negotiate.rs`, which settles TLS and the protocol and then runs
//! the HTTP/1.1 (`http1.rs`) or HTTP/2 (`http2.rs`) driver.
//!
//! HTTP/3 ([`ServerConfig::http3`], with TLS) runs on QUIC (quinn) with h3
//! on a UDP socket of the TCP port's number (`http3.rs`), advertised by
//! `alt-svc` on the TCP responses.
//!
//! Every endpoint answers on every protocol; how each `/fault/...` endpoint
//! behaves over HTTP/2 is tabulated in `faults.rs` (`/fault/goaway` and
//! `/fault/rst-stream` are the HTTP/2-specific ones).

mod accept;
mod body;
mod coalesce;
mod config;
mod conn;
mod control;
mod detect;
mod endpoints;
mod faults;
mod handle;
mod http1;
mod http2;
mod http3;
mod httpbin;
mod io;
mod negotiate;
mod pki;
mod replica;
mod replica_fault;
mod replica_set;
mod request_body;
mod service;
mod tls;
mod transport;

pub use body::BYTES_ALPHABET;
pub use config::ServerConfig;
pub use handle::ServerHandle;
pub use pki::TestPki;
pub use replica_fault::{parse_duration, FaultKind, ReplicaFault, ReplicaSelector};
pub use replica_set::{ReplicaSecond, ReplicaSet, ReplicasConfig};
pub use tls::TlsConfig;

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
/// Returns the bind error (address in use, permission denied, ...), or
/// `InvalidInput` for an unusable config: neither protocol enabled, or a
/// TLS certificate and key that rustls rejects (e.g. not a pair).
///
/// # Panics
/// Panics if called outside a tokio runtime (as `tokio::spawn` does).
pub async fn start(config: ServerConfig) -> std::io::Result<ServerHandle> {
    let (ctx, signals) = handle::ServerContext::new(&config)?;
    serve(config, ctx, signals)
}

/// [`start`] for one replica of a [`ReplicaSet`]: every request goes to
/// `replica`'s queue and faults instead of the endpoints.
async fn start_replica(
    config: ServerConfig,
    replica: Arc<replica::ReplicaBehaviour>,
) -> std::io::Result<ServerHandle> {
    let (mut ctx, signals) = handle::ServerContext::new(&config)?;
    ctx.replica = Some(replica);
    serve(config, ctx, signals)
}

fn serve(
    config: ServerConfig,
    mut ctx: handle::ServerContext,
    signals: handle::Signals,
) -> std::io::Result<ServerHandle> {
    let listener = listen(config.addr)?;
    let local_addr = listener.local_addr()?;
    // HTTP/3 on the TCP port's number, which is what `alt-svc` can name.
    let quic = match ctx.quic.take() {
        Some(quic) => Some(http3::bind(quic, local_addr)?),
        None => None,
    };
    let quic_addr = match &quic {
        Some(endpoint) => Some(endpoint.local_addr()?),
        None => None,
    };
    if let Some(addr) = quic_addr {
        ctx.alt_svc = Some(http3::alt_svc(addr.port()));
    }
    let ctx = Arc::new(ctx);
    let task = tokio::spawn(accept::accept_loop(listener, quic, Arc::clone(&ctx)));
    Ok(ServerHandle::new(local_addr, quic_addr, ctx, signals, task))
}

/// Binds with a deep accept backlog: tokio's `bind` uses 128, which a burst of
/// a few hundred connects (a benchmark's start, a fleet rotating together)
/// overflows, costing each dropped SYN a one-second retransmit.
fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    const BACKLOG: u32 = 4096;
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}
