//! The connection task's side of the control signals: faults raised by the
//! service, close/GOAWAY requests from the handle, and the idle timeout.
//!
//! Both protocol drivers (and the TLS / preface prelude before them) race
//! hyper's connection future against [`Control::next`], so the rules for
//! when a connection should wind down live here once.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::fault::RawFault;
use crate::state::ConnState;

/// What the connection task should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Abandon HTTP and act out this fault on the socket.
    Fault(RawFault),
    /// Shut down gracefully: no new requests, let the ones in progress
    /// finish. Reported at most once per connection.
    GracefulClose,
}

pub(crate) struct Control<'a> {
    state: &'a ConnState,
    /// The idle timeout and its timer; boxed, and only when configured.
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    /// Set once `GracefulClose` has been reported.
    closing: bool,
}

impl<'a> Control<'a> {
    /// Starts the idle clock: a connection that never sends a request is
    /// idle from the moment it was accepted.
    pub(crate) fn new(state: &'a ConnState) -> Self {
        let idle = state
            .ctx()
            .idle_timeout
            .map(|timeout| (timeout, Box::pin(tokio::time::sleep(timeout))));
        Self {
            state,
            idle,
            closing: false,
        }
    }

    /// Waits for the next event. Cancel-safe: the signals are flags that
    /// stay set until this function acts on them.
    pub(crate) async fn next(&mut self) -> Event {
        let state = self.state;
        loop {
            let idle_armed = self.idle.is_some() && !self.closing;
            tokio::select! {
                () = state.control_notified() => {
                    if let Some(fault) = state.take_fault() {
                        return Event::Fault(fault);
                    }
                    let goaway = state.take_goaway_request();
                    // Re-check idleness: a request may have started since
                    // the handle looked.
                    let close_idle = state.take_close_request() && state.is_idle();
                    if (goaway || close_idle) && !self.closing {
                        self.closing = true;
                        return Event::GracefulClose;
                    }
                }
                () = idle_elapsed(&mut self.idle), if idle_armed => {
                    if let Some((timeout, timer)) = &mut self.idle {
                        let now = Instant::now();
                        match state.idle_deadline(*timeout) {
                            // Busy: look again one timeout from now; by then
                            // the request's end time says how long to wait.
                            None => timer.as_mut().reset(now + *timeout),
                            Some(deadline) if deadline > now => timer.as_mut().reset(deadline),
                            Some(_) => {
                                tracing::trace!(conn = state.id(), "closing idle connection");
                                self.closing = true;
                                return Event::GracefulClose;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Runs `fut` (a handshake, the preface detection) unless the connection
    /// is asked to close first; `None` means it was, and should just be
    /// dropped: nothing is in progress on it yet.
    pub(crate) async fn unless_closed<F: Future>(&mut self, fut: F) -> Option<F::Output> {
        tokio::select! {
            out = fut => Some(out),
            _ = self.next() => None,
        }
    }
}

/// Resolves when the idle timer fires (never, without one).
async fn idle_elapsed(idle: &mut Option<(Duration, Pin<Box<Sleep>>)>) {
    match idle {
        Some((_, timer)) => timer.as_mut().await,
        None => std::future::pending().await,
    }
}
