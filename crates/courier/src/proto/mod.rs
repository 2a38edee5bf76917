//! courier's protocols, all its own: [`h1`] (HTTP/1.1), [`h2`] (HTTP/2),
//! and `h3` (HTTP/3, feature `http3`) on quinn's QUIC streams.
//!
//! They know nothing of the pool, and the pool nothing of them: the client's
//! binding (`client/transport.rs`) makes them the pool's exclusive and shared
//! connections. A connection reports what the pool needs through what it
//! exposes ([`h2::signals::Signals`] for HTTP/2: stream limit, GOAWAY,
//! closed, and a [`Listener`](h2::signals::Listener) the binding installs,
//! which passes it on to the pool), and a send ends in an
//! [`exchange::SendResult`] that says whether the request can be sent again.
//! The retry decision (`client/attempt.rs`) reads that; the pool only passes
//! it through.

pub(crate) mod exchange;
pub(crate) mod fields;
pub(crate) mod h1;
pub(crate) mod h2;
#[cfg(feature = "http3")]
pub(crate) mod h3;

/// The byte stream under a connection: TCP, TLS, a Unix socket, or in
/// memory (the connector's trait, under the name the protocols use).
pub(crate) use crate::connect::AsyncIo as Io;
