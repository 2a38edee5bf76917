//! Starting a server: binding the listener (and the QUIC endpoint), building
//! the server-wide state and spawning the accept loop.
//!
//! Why apart from the crate root: a [`crate::ReplicaSet`] starts its replicas
//! through [`start_replica`]; here, below the root's re-exports, it does so
//! without importing the root that re-exports it.

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::accept;
use crate::config::ServerConfig;
use crate::handle::ServerHandle;
use crate::quic;
use crate::replica::ReplicaBehaviour;
use crate::state::{ServerContext, Signals};

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
    let (ctx, signals) = ServerContext::new(&config)?;
    serve(config, ctx, signals)
}

/// [`start`] for one replica of a [`ReplicaSet`]: every request goes to
/// `replica`'s queue and faults instead of the endpoints.
pub(crate) async fn start_replica(
    config: ServerConfig,
    replica: Arc<ReplicaBehaviour>,
) -> std::io::Result<ServerHandle> {
    let (mut ctx, signals) = ServerContext::new(&config)?;
    ctx.replica = Some(replica);
    serve(config, ctx, signals)
}

fn serve(
    config: ServerConfig,
    mut ctx: ServerContext,
    signals: Signals,
) -> std::io::Result<ServerHandle> {
    let listener = listen(config.addr)?;
    let local_addr = listener.local_addr()?;
    // HTTP/3 on the TCP port's number, which is what `alt-svc` can name.
    let quic = match ctx.quic.take() {
        Some(quic) => Some(quic::bind(quic, local_addr)?),
        None => None,
    };
    let quic_addr = match &quic {
        Some(endpoint) => Some(endpoint.local_addr()?),
        None => None,
    };
    if let Some(addr) = quic_addr {
        ctx.alt_svc = Some(quic::alt_svc(addr.port()));
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
