//! HTTP/1.1 connection driver.
//!
//! Runs hyper's HTTP/1 server on one socket while also listening for the
//! connection's control signals: idle timeout, "close if idle" from the
//! handle, and raw faults raised by `/fault/...` requests. A raw fault takes
//! the socket back from hyper (`Connection::into_parts`) and hands it to
//! [`crate::faults::execute`], which is why faults work on any request of a
//! kept-alive connection, not just the first.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::conn::ConnState;
use crate::faults;
use crate::io::ConnIo;
use crate::service::CourierService;

/// Serves HTTP/1.1 on `stream` until the connection ends.
pub(crate) async fn serve(stream: TcpStream, state: &Arc<ConnState>) {
    let io = ConnIo::new(stream, Arc::clone(state));
    let service = CourierService::new(Arc::clone(state));
    // `Connection` is `Unpin` (our IO and service are), so it can be polled
    // by `&mut` and still be consumed by `into_parts` afterwards.
    let mut conn = state.ctx().http1.serve_connection(io, service);

    let idle_timeout = state.ctx().idle_timeout;
    // Only polled when an idle timeout is configured.
    let idle_timer = tokio::time::sleep(idle_timeout.unwrap_or(Duration::ZERO));
    tokio::pin!(idle_timer);
    // Set once hyper has been told to close; from then on just let it finish.
    let mut closing = false;

    let fault = loop {
        tokio::select! {
            res = &mut conn => {
                if let Err(err) = res {
                    tracing::debug!(conn = state.id(), "http/1 connection error: {err}");
                }
                return;
            }
            () = state.control_notified() => {
                if let Some(fault) = state.take_fault() {
                    break fault;
                }
                // Re-check idleness: a request may have started since the
                // handle looked.
                if state.take_close_request() && !closing && state.is_idle() {
                    Pin::new(&mut conn).graceful_shutdown();
                    closing = true;
                }
            }
            () = &mut idle_timer, if idle_timeout.is_some() && !closing => {
                let timeout = idle_timeout.unwrap_or_default();
                let now = Instant::now();
                match state.idle_deadline(timeout) {
                    // Busy: look again one timeout from now; by then the
                    // request's end time will say how long to really wait.
                    None => idle_timer.as_mut().reset(now + timeout),
                    Some(deadline) if deadline > now => idle_timer.as_mut().reset(deadline),
                    Some(_) => {
                        tracing::trace!(conn = state.id(), "closing idle connection");
                        // hyper closes at once when between requests, or
                        // after the response if a request head is arriving.
                        Pin::new(&mut conn).graceful_shutdown();
                        closing = true;
                    }
                }
            }
        }
    };

    // The fault request was dispatched while an earlier response may still
    // sit in hyper's write buffer (the socket would block). Keep driving
    // hyper until that is flushed, or the earlier response would be cut.
    if state.write_blocked() {
        let ended = poll_fn(|cx| match Pin::new(&mut conn).poll(cx) {
            Poll::Ready(_) => Poll::Ready(true),
            Poll::Pending if state.write_blocked() => Poll::Pending,
            Poll::Pending => Poll::Ready(false),
        })
        .await;
        if ended {
            return;
        }
    }
    let parts = conn.into_parts();
    faults::execute(fault, parts.io.into_inner(), state).await;
}
