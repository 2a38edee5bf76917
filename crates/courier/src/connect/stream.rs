//! The byte stream under a connection: plain TCP or TLS over TCP.

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

/// A connected stream, ready for an HTTP handshake. `Either` forwards reads,
/// (vectored) writes and shutdown to whichever side it holds.
///
/// The TLS side is boxed: a TLS session is ~1 KB and most of a stream's life
/// is spent inside a connection task, where the size of the enum is paid for
/// every plain connection too.
pub(crate) type Stream = Either<TcpStream, Box<TlsStream<TcpStream>>>;
