//! courier's own protocols: [`h1`] (HTTP/1.1) and [`h2`] (HTTP/2).
//!
//! They know nothing of the pool. A connection reports what the pool needs
//! through what it exposes ([`h2::signals::Signals`] for HTTP/2: stream limit,
//! GOAWAY, closed, and a [`Listener`](h2::signals::Listener) the pool
//! installs), and a send ends in an [`exchange::SendResult`] that says
//! whether the request can be sent again. The pool decides what to do with
//! that; the protocols never import it.

pub(crate) mod exchange;
pub(crate) mod h1;
pub(crate) mod h2;

use tokio::io::{AsyncRead, AsyncWrite};

/// The byte stream under a connection: TCP, TLS, a Unix socket, or in memory.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Sync + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin> Io for T {}
