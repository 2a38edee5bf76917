//! Upgrades: a response after which the connection (HTTP/1.1) or the
//! stream (HTTP/2) carries another protocol, handed to the caller as a byte
//! stream ([`Upgraded`]) by [`Response::upgrade`].
//!
//! Three ways in: a `101 Switching Protocols` to a request with `Upgrade`
//! (a WebSocket handshake), a 2xx to a `CONNECT` (a tunnel), and over
//! HTTP/2 a 200 to an extended CONNECT (RFC 8441, a WebSocket on one
//! stream). The protocol marks such a head ([`Switched`]); the response
//! then parks its connection (HTTP/1.1: the lease, which owns it) or its
//! stream in the response's extensions, so middleware that takes the
//! response apart and puts it back (`into_http`/`from_http`) keeps it.
//!
//! The pool's books: an upgraded HTTP/1.1 connection stays on loan (the
//! lease is never released, so the connection is counted open and in use,
//! against `max_connections_per_host`, and never returns to the idle
//! stack); dropping the [`Upgraded`] (or a switched response never
//! upgraded) closes it. An HTTP/2 stream holds its slot on the connection
//! until it is dropped.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::client::transport::Lease;
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::Switched;
use crate::proto::h2::stream::RecvBody;
use crate::Response;

/// A connection or stream that switched protocols, parked in a response's
/// extensions until [`Response::upgrade`] takes it (or the response drops).
#[derive(Clone)]
struct Pending(Arc<Mutex<Option<Parked>>>);

/// What an upgrade is made of.
enum Parked {
    /// The HTTP/1.1 connection, on its lease.
    Http1(Lease),
}

/// Parks the connection of a response whose head switched protocols; any
/// other response keeps its lease and body. Returns what the response's
/// body reads from: nothing, for a switched one (its body is empty).
pub(crate) fn park(
    head: &mut http::response::Parts,
    lease: Lease,
    body: Option<RecvBody>,
) -> (Option<Lease>, Option<RecvBody>) {
    if head.extensions.remove::<Switched>().is_none() {
        return (Some(lease), body);
    }
    let parked = match body {
        None => Parked::Http1(lease),
        // HTTP/2 extended CONNECT: not yet supported; the stream is
        // dropped (reset) and the lease frees its slot.
        Some(_) => return (None, None),
    };
    head.extensions
        .insert(Pending(Arc::new(Mutex::new(Some(parked)))));
    (None, None)
}

impl Response {
    /// The connection (HTTP/1.1) or stream (HTTP/2) as a byte stream, after
    /// the server switched protocols: a `101 Switching Protocols` to a
    /// request that carried `Upgrade` (a WebSocket handshake), or a 2xx to a
    /// `CONNECT` (a tunnel).
    ///
    /// Bytes the server sent right behind the head come first. The
    /// connection never returns to the pool: it counts as in use (against
    /// `max_connections_per_host`) until the [`Upgraded`] is dropped, which
    /// closes it. No request timeout applies to it.
    ///
    /// Fails with [`ErrorKind::Upgrade`] when the server did not switch
    /// (any other status), or when this was already called on a copy of
    /// the response's extensions.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use courier::http::header;
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// let client = courier::Client::new();
    /// // A WebSocket handshake (a WebSocket library, e.g. tokio-tungstenite's
    /// // `WebSocketStream::from_raw_socket`, speaks the frames).
    /// let res = client
    ///     .get("http://127.0.0.1:9001/chat")
    ///     .header(header::CONNECTION, "upgrade")
    ///     .header(header::UPGRADE, "websocket")
    ///     .header(header::SEC_WEBSOCKET_VERSION, "13")
    ///     .header(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==")
    ///     .send()
    ///     .await?;
    /// let mut stream = res.upgrade().await?;
    /// stream.write_all(&[0x81, 0x82, 0, 0, 0, 0, b'h', b'i']).await?; // a masked text frame
    /// let mut frame = [0; 4];
    /// stream.read_exact(&mut frame).await?;
    /// # Ok(()) }
    /// ```
    pub async fn upgrade(self) -> Result<Upgraded, Error> {
        let parked = self
            .extensions()
            .get::<Pending>()
            .and_then(|p| p.0.lock().ok()?.take());
        let Some(parked) = parked else {
            let why = format!(
                "the server did not switch protocols (status {})",
                self.status()
            );
            return Err(Error::new(ErrorKind::Upgrade, why).or_url(|| self.url().clone()));
        };
        let Parked::Http1(lease) = parked;
        lease.origin().shared().metrics.upgrades.inc();
        Ok(Upgraded {
            io: Io::Http1(lease),
        })
    }
}

/// A connection or stream that switched protocols: what
/// [`Response::upgrade`] gives, to read and write the new protocol's bytes
/// (a WebSocket's frames, a tunnel's traffic).
///
/// Dropping it closes the connection (HTTP/1.1) or resets the stream
/// (HTTP/2); `poll_shutdown` ends the writing side only.
pub struct Upgraded {
    io: Io,
}

enum Io {
    Http1(Lease),
}

impl Upgraded {
    fn http1(&mut self) -> &mut crate::proto::h1::Connection {
        let Io::Http1(lease) = &mut self.io;
        lease
            .exclusive_mut()
            .expect("an upgraded HTTP/1.1 lease holds its connection")
    }
}

impl AsyncRead for Upgraded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().http1().poll_read_switched(cx, buf)
    }
}

impl AsyncWrite for Upgraded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().http1().poll_write_switched(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .http1()
            .poll_write_vectored_switched(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        let Io::Http1(lease) = &self.io;
        lease
            .exclusive()
            .is_some_and(|c| c.is_write_vectored_switched())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().http1().poll_flush_switched(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().http1().poll_shutdown_switched(cx)
    }
}

impl fmt::Debug for Upgraded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let protocol = match self.io {
            Io::Http1(_) => "HTTP/1.1",
        };
        f.debug_struct("Upgraded").field("over", &protocol).finish()
    }
}
