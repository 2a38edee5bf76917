//! The connection task: [`accept`] registers an accepted socket's
//! [`ConnState`] (`state.rs`) with the server and runs the connection (see
//! `negotiate.rs`) until it ends or the server shuts down; [`accept_quic`]
//! does the same for a QUIC connection attempt.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpStream;

use crate::negotiate;
use crate::state::{ConnState, ServerContext};

/// Keeps a connection in the server's registry and open count; dropping it
/// (when the task ends, however it ends) removes it.
struct Registration(Arc<ConnState>);

impl Drop for Registration {
    fn drop(&mut self) {
        self.0.ctx().unregister(self.0.id());
    }
}

/// Sets up an accepted socket and returns the task that serves it.
///
/// The setup (id, registry entry, open count) happens synchronously here so
/// the counters are right the moment `accept` returns, even before the task
/// is first polled.
pub(crate) fn accept(stream: TcpStream, ctx: &Arc<ServerContext>) -> impl Future<Output = ()> {
    let registration = register(ctx, false);
    let id = registration.0.id();
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(conn = id, "setting TCP_NODELAY failed: {err}");
    }
    async move {
        let state = &registration.0;
        tokio::select! {
            () = negotiate::serve(stream, state) => {}
            () = state.ctx().shutdown_requested() => {
                tracing::trace!(conn = id, "closing connection for server shutdown");
            }
        }
        drop(registration);
    }
}

/// [`accept`] for a QUIC connection attempt (its handshake still to come).
///
/// On shutdown the driver closes the connection itself, so the client
/// hears CONNECTION_CLOSE rather than waiting for its idle timeout.
pub(crate) fn accept_quic(
    incoming: quinn::Incoming,
    ctx: &Arc<ServerContext>,
) -> impl Future<Output = ()> {
    let registration = register(ctx, true);
    async move {
        crate::http3::serve(incoming, &registration.0).await;
        drop(registration);
    }
}

fn register(ctx: &Arc<ServerContext>, quic: bool) -> Registration {
    let id = ctx.next_connection_id();
    let state = Arc::new(ConnState::new(id, Arc::clone(ctx), quic));
    ctx.register(Arc::clone(&state));
    Registration(state)
}
