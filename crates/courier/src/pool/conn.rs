//! One pooled connection: the protocol's request sender plus the facts the
//! pool needs to decide whether it may be reused.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use http::{Request, Response};
use hyper::body::Incoming;

use super::http1;
use crate::body::Body;
use crate::error::Error;

/// The protocol-specific half of a connection that sends requests.
///
/// HTTP/2 will add a variant; everything above this type is protocol-agnostic.
pub(crate) enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Body>),
}

/// The future that runs a connection's I/O until it closes; spawned once per connection.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Why a send failed, and whether the request can be tried again as-is.
pub(crate) struct SendError {
    pub(crate) error: Error,
    /// The request, handed back when nothing of it reached the connection.
    pub(crate) unsent: Option<Request<Body>>,
}

/// A connection owned by the pool (idle) or by one request (leased).
pub(crate) struct PooledConn {
    pub(crate) id: u64,
    pub(crate) sender: Sender,
    /// When this connection must stop taking requests (lifetime + jitter).
    pub(crate) expires_at: Option<Instant>,
    /// Requests sent on it so far; > 0 means "reused", which enables the stale retry.
    pub(crate) requests: u64,
}

impl PooledConn {
    /// The connection's task has ended: it can never send again.
    pub(crate) fn is_closed(&self) -> bool {
        match &self.sender {
            Sender::Http1(s) => s.is_closed(),
        }
    }

    pub(crate) fn is_expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// Waits until the connection can take a request (an HTTP/1.1 connection
    /// that just finished a response may need a moment to become idle).
    pub(crate) async fn ready(&mut self) -> Result<(), Error> {
        match &mut self.sender {
            Sender::Http1(s) => s.ready().await.map_err(Error::from_hyper),
        }
    }

    /// Sends `req`, resolving to the response head.
    pub(crate) async fn send(
        &mut self,
        req: Request<Body>,
    ) -> Result<Response<Incoming>, SendError> {
        self.requests += 1;
        match &mut self.sender {
            Sender::Http1(s) => http1::send(s, req).await,
        }
    }
}
