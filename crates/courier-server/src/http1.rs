//! HTTP/1.1 connection driver.
//!
//! Runs hyper's HTTP/1 server on one connection while also listening for the
//! connection's control signals (see `control.rs`). A raw fault takes the
//! transport back from hyper (`Connection::into_parts`) and hands it to
//! [`crate::faults::execute`], which is why faults work on any request of a
//! kept-alive connection, not just the first.

use std::pin::Pin;
use std::sync::Arc;

use crate::control::{Control, Event};
use crate::faults;
use crate::io::{drive_until_written, ConnIo};
use crate::protocol::Protocol;
use crate::service::CourierService;
use crate::state::ConnState;
use crate::transport::Transport;

/// Serves HTTP/1.1 on `transport` until the connection ends.
pub(crate) async fn serve(transport: Transport, state: &Arc<ConnState>, control: &mut Control<'_>) {
    let io = ConnIo::new(transport, Arc::clone(state));
    let service = CourierService::new(Arc::clone(state), Protocol::Http1);
    // `Connection` is `Unpin` (our IO and service are), so it can be polled
    // by `&mut` and still be consumed by `into_parts` afterwards.
    let mut conn = state.ctx().http1.serve_connection(io, service);

    let fault = loop {
        tokio::select! {
            res = &mut conn => {
                if let Err(err) = res {
                    tracing::debug!(conn = state.id(), "http/1 connection error: {err}");
                }
                return;
            }
            event = control.next() => match event {
                Event::Fault(fault) => break fault,
                // hyper closes at once when between requests, or after the
                // response if a request is in progress or arriving.
                Event::GracefulClose => Pin::new(&mut conn).graceful_shutdown(),
            }
        }
    };

    // The fault request was dispatched while an earlier response may still
    // sit in hyper's write buffer (the socket would block). Keep driving
    // hyper until that is flushed, or the earlier response would be cut.
    if state.write_blocked() && drive_until_written(Pin::new(&mut conn), state).await {
        return;
    }
    let mut parts = conn.into_parts();
    faults::execute(fault, parts.io.transport_mut(), state).await;
    // Dropping `parts` closes the connection (with RST for `/fault/reset`).
}
