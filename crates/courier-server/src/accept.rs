//! The accept loop: takes sockets off the listener (and QUIC connection
//! attempts off the UDP endpoint) and spawns a connection task for each,
//! until shutdown.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::conn;
use crate::state::ServerContext;

/// Pause after an accept error that signals resource exhaustion (EMFILE and
/// friends), so the loop does not spin while nothing can be accepted.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Runs until shutdown, then closes the listener and waits for every
/// connection task (which see the same shutdown signal) to finish.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    quic: Option<quinn::Endpoint>,
    ctx: Arc<ServerContext>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            Some(incoming) = accept_quic(quic.as_ref()) => {
                conns.spawn(conn::accept_quic(incoming, &ctx));
            }
            res = listener.accept() => match res {
                Ok((stream, _peer)) => {
                    conns.spawn(conn::accept(stream, &ctx));
                }
                Err(err) if is_per_connection_error(&err) => {
                    // The peer gave up before we got to it; nothing to do.
                    tracing::debug!("accept: {err}");
                }
                Err(err) => {
                    tracing::warn!("accept failed, backing off: {err}");
                    tokio::select! {
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                        () = ctx.shutdown_requested() => break,
                    }
                }
            },
            Some(done) = conns.join_next(), if !conns.is_empty() => log_task_end(done),
            () = ctx.shutdown_requested() => break,
        }
    }
    drop(listener);
    while let Some(done) = conns.join_next().await {
        log_task_end(done);
    }
    if let Some(endpoint) = quic {
        // Every connection has closed itself by now; this only refuses
        // attempts still arriving, and lets the socket go with the endpoint.
        endpoint.close(crate::http3::H3_NO_ERROR, b"server shutdown");
    }
}

/// The next QUIC connection attempt; never, without HTTP/3, and `None`
/// once the endpoint is closed (which the select above then skips).
async fn accept_quic(endpoint: Option<&quinn::Endpoint>) -> Option<quinn::Incoming> {
    match endpoint {
        Some(endpoint) => endpoint.accept().await,
        None => std::future::pending().await,
    }
}

/// Errors that concern only the one connection being accepted.
fn is_per_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

fn log_task_end(done: Result<(), tokio::task::JoinError>) {
    if let Err(err) = done {
        if err.is_panic() {
            tracing::error!("courier-server connection task panicked: {err}");
        }
    }
}
