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

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::client::transport::{Lease, Source};
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::Switched;
use crate::proto::h2::request::TunnelWriter;
use crate::proto::h2::stream::RecvBody;
use crate::proto::h2::tunnel::Tunnel;

pub use crate::proto::exchange::Protocol;
use crate::Response;

/// A connection or stream that switched protocols, parked in a response's
/// extensions until [`Response::upgrade`] takes it (or the response drops).
#[derive(Clone)]
struct Pending(Arc<Mutex<Option<Parked>>>);

/// What an upgrade is made of.
enum Parked {
    /// The HTTP/1.1 connection, on its lease.
    Http1(Lease),
    /// The HTTP/2 stream: its slot's lease, its DATA in and out.
    Http2 {
        lease: Lease,
        recv: RecvBody,
        tunnel: Tunnel,
    },
}

/// Parks the connection of a response whose head switched protocols; any
/// other response keeps its lease and body. Returns what the response's
/// body reads from: nothing, for a switched one (its body is empty: no
/// lease to read through).
// Inlined: most responses switch nothing, and their lease and body pass
// through without a copy into a call and out again.
#[inline]
pub(crate) fn park(
    head: &mut http::response::Parts,
    lease: Lease,
    body: Source,
) -> (Option<Lease>, Source) {
    if head.extensions.remove::<Switched>().is_none() {
        return (Some(lease), body);
    }
    park_switched(head, lease, body)
}

fn park_switched(
    head: &mut http::response::Parts,
    lease: Lease,
    body: Source,
) -> (Option<Lease>, Source) {
    let parked = match body {
        // HTTP/3 marks no head switched (extended CONNECT is not offered).
        #[cfg(feature = "http3")]
        body @ Source::Http3(_) => return (Some(lease), body),
        Source::Http1 => Parked::Http1(lease),
        Source::Http2(recv) => {
            let tunnel = head
                .extensions
                .remove::<TunnelWriter>()
                .and_then(|w| w.0.lock().ok()?.take());
            // (A switched HTTP/2 head always has its tunnel; without one
            // the stream is dropped, reset, and its slot freed.)
            let Some(tunnel) = tunnel else {
                return (None, Source::Http1);
            };
            Parked::Http2 {
                lease,
                recv,
                tunnel,
            }
        }
    };
    head.extensions
        .insert(Pending(Arc::new(Mutex::new(Some(parked)))));
    (None, Source::Http1)
}

impl Response {
    /// The connection (HTTP/1.1) or stream (HTTP/2) as a byte stream, after
    /// the server switched protocols: a `101 Switching Protocols` to a
    /// request that carried `Upgrade` (a WebSocket handshake), a 2xx to a
    /// `CONNECT` (a tunnel), or over HTTP/2 a 2xx to a CONNECT or an
    /// extended CONNECT (RFC 8441: a [`Protocol`] in the request's
    /// extensions, `websocket` for a WebSocket over one HTTP/2 stream).
    ///
    /// Bytes the server sent right behind the head come first. An HTTP/1.1
    /// connection never returns to the pool: it counts as in use (against
    /// `max_connections_per_host`) until the [`Upgraded`] is dropped, which
    /// closes it. An HTTP/2 stream holds its slot (against the server's
    /// stream limit) until then; writes go out as DATA within the
    /// flow-control windows, `poll_shutdown` sends END_STREAM, dropping
    /// resets the stream. No request timeout applies to either.
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
            return Err(Error::new(ErrorKind::Upgrade, why).or_url(|| self.uri().clone()));
        };
        let io = match parked {
            Parked::Http1(lease) => Io::Http1(lease),
            Parked::Http2 {
                lease,
                recv,
                tunnel,
            } => Io::Http2 {
                lease,
                recv,
                tunnel,
                pending: Bytes::new(),
            },
        };
        let lease = match &io {
            Io::Http1(lease) | Io::Http2 { lease, .. } => lease,
        };
        lease.origin().shared().metrics.upgrades.inc();
        Ok(Upgraded { io })
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
    Http2 {
        /// Holds the stream's slot on the connection until dropped.
        lease: Lease,
        recv: RecvBody,
        tunnel: Tunnel,
        /// What is left of the last DATA frame read.
        pending: Bytes,
    },
}

fn http1(lease: &mut Lease) -> &mut crate::proto::h1::Connection {
    lease
        .exclusive_mut()
        .expect("an upgraded HTTP/1.1 lease holds its connection")
}

/// Reads the stream's DATA into `buf`, keeping what does not fit.
fn poll_read_h2(
    recv: &mut RecvBody,
    pending: &mut Bytes,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    while pending.is_empty() {
        match std::task::ready!(recv.poll_frame(cx)) {
            // The end of the stream: EOF.
            None => return Poll::Ready(Ok(())),
            Some(Err(e)) => return Poll::Ready(Err(io::Error::other(e))),
            Some(Ok(frame)) => {
                // Trailers carry nothing for the tunnel.
                if let Ok(data) = frame.into_data() {
                    *pending = data;
                }
            }
        }
    }
    let n = pending.len().min(buf.remaining());
    buf.put_slice(&pending.split_to(n));
    Poll::Ready(Ok(()))
}

impl AsyncRead for Upgraded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Http1(lease) => http1(lease).poll_read_switched(cx, buf),
            Io::Http2 { recv, pending, .. } => poll_read_h2(recv, pending, cx, buf),
        }
    }
}

impl AsyncWrite for Upgraded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Http1(lease) => http1(lease).poll_write_switched(cx, buf),
            Io::Http2 { tunnel, .. } => tunnel.poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Http1(lease) => http1(lease).poll_write_vectored_switched(cx, bufs),
            Io::Http2 { tunnel, .. } => {
                let first = bufs
                    .iter()
                    .find(|b| !b.is_empty())
                    .map_or(&[][..], |b| &**b);
                tunnel.poll_write(cx, first)
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Http1(lease) => lease
                .exclusive()
                .is_some_and(|c| c.is_write_vectored_switched()),
            Io::Http2 { .. } => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Http1(lease) => http1(lease).poll_flush_switched(cx),
            Io::Http2 { tunnel, .. } => tunnel.poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Http1(lease) => http1(lease).poll_shutdown_switched(cx),
            Io::Http2 { tunnel, .. } => {
                std::task::ready!(tunnel.poll_flush(cx))?;
                tunnel.shutdown();
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl fmt::Debug for Upgraded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let protocol = match self.io {
            Io::Http1(_) => "HTTP/1.1",
            Io::Http2 { .. } => "HTTP/2",
        };
        f.debug_struct("Upgraded").field("over", &protocol).finish()
    }
}
