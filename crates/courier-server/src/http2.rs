//! HTTP/2 connection driver (TLS with ALPN `h2`, or h2c prior knowledge).
//!
//! hyper owns the connection for its whole life here: there is no
//! `into_parts` for HTTP/2. So control events map onto what hyper offers:
//! a graceful shutdown (GOAWAY, in-flight streams finish) or dropping the
//! connection outright, which closes the socket (`/fault/close`) or resets
//! it (`/fault/reset`, via the IO's reset-on-close flag). The mid-body
//! faults first let hyper write out the part of the response they queued.

use std::sync::Arc;

use crate::control::{Control, Event};
use crate::fault::RawFault;
use crate::io::{drive_until_written, ConnIo};
use crate::protocol::Protocol;
use crate::service::CourierService;
use crate::state::ConnState;
use crate::transport::Transport;

/// Serves HTTP/2 on `transport` until the connection ends.
pub(crate) async fn serve(transport: Transport, state: &Arc<ConnState>, control: &mut Control<'_>) {
    state.ctx().count_http2_connection();
    let io = ConnIo::coalescing(transport, Arc::clone(state));
    let service = CourierService::new(Arc::clone(state), Protocol::Http2);
    let conn = state.ctx().http2.serve_connection(io, service);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(err) = res {
                    tracing::debug!(conn = state.id(), "http/2 connection error: {err}");
                }
                return;
            }
            event = control.next() => match event {
                Event::GracefulClose => conn.as_mut().graceful_shutdown(),
                Event::Fault(fault) => {
                    match fault {
                        RawFault::Reset => state.set_reset_on_close(),
                        RawFault::CloseMidBody | RawFault::ChunkedMidBody => {
                            // Whether it ended meanwhile: the same return.
                            let _ended = drive_until_written(conn.as_mut(), state).await;
                        }
                        _ => {}
                    }
                    tracing::trace!(conn = state.id(), "dropping http/2 connection for {fault:?}");
                    // Returning drops `conn`, its streams and the socket.
                    return;
                }
            }
        }
    }
}
