//! h2c "prior knowledge" detection on plain TCP, and [`Rewind`], the stream
//! that gives the inspected bytes back.
//!
//! An HTTP/2 client that knows the server speaks h2c opens with the fixed
//! connection preface; an HTTP/1.1 request can never start that way. So the
//! first bytes decide, and they are then replayed to whichever protocol
//! driver takes over. Reading (not `MSG_PEEK`) keeps this independent of how
//! the kernel happens to split segments.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::protocol::Protocol;

/// The HTTP/2 client connection preface (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Capacity of the first read: enough for a typical first request (or the
/// preface and the client's first frames) in one syscall, so detection
/// rarely costs an extra read.
const FIRST_READ: usize = 4096;

/// Reads until the first bytes either match the preface (HTTP/2) or
/// diverge from it (HTTP/1.1). Decides on the first byte for every HTTP/1.1
/// request. `Ok(None)` means the client closed before saying enough.
pub(crate) async fn sniff(mut stream: TcpStream) -> io::Result<Option<(Rewind, Protocol)>> {
    let mut buf = Vec::with_capacity(FIRST_READ);
    let protocol = loop {
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(None);
        }
        let seen = buf.len().min(PREFACE.len());
        if buf[..seen] != PREFACE[..seen] {
            break Protocol::Http1;
        }
        if seen == PREFACE.len() {
            break Protocol::Http2;
        }
    };
    Ok(Some((Rewind::new(Bytes::from(buf), stream), protocol)))
}

/// A `TcpStream` that first yields `prefix`, bytes already read from it.
pub(crate) struct Rewind {
    prefix: Bytes,
    inner: TcpStream,
}

impl Rewind {
    pub(crate) fn new(prefix: Bytes, inner: TcpStream) -> Self {
        Self { prefix, inner }
    }

    /// No replay: for connections whose protocol needed no detection.
    pub(crate) fn plain(inner: TcpStream) -> Self {
        Self::new(Bytes::new(), inner)
    }

    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.inner
    }
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.is_empty() {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        let n = self.prefix.len().min(buf.remaining());
        buf.put_slice(&self.prefix[..n]);
        self.prefix.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    /// Connects a pair, writes `first` from the client, sniffs on the server.
    async fn sniff_bytes(first: &[u8]) -> Option<(Vec<u8>, Protocol)> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        client.write_all(first).await.expect("write");
        client.shutdown().await.expect("shutdown");
        let (mut rewind, protocol) = sniff(server).await.expect("sniff")?;
        let mut replayed = Vec::new();
        rewind.read_to_end(&mut replayed).await.expect("replay");
        Some((replayed, protocol))
    }

    #[tokio::test]
    async fn preface_means_http2_and_is_replayed() {
        let mut first = PREFACE.to_vec();
        first.extend_from_slice(b"\0\0\0\x04\0\0\0\0\0");
        let (replayed, protocol) = sniff_bytes(&first).await.expect("decided");
        assert_eq!(protocol, Protocol::Http2);
        assert_eq!(replayed, first);
    }

    #[tokio::test]
    async fn a_short_http1_request_is_http1() {
        let first = b"GET / HTTP/1.0\r\n\r\n";
        let (replayed, protocol) = sniff_bytes(first).await.expect("decided");
        assert_eq!(protocol, Protocol::Http1);
        assert_eq!(replayed, first);
    }

    #[tokio::test]
    async fn pri_that_is_not_the_preface_is_http1() {
        let first = b"PRI * HTTP/1.1\r\n\r\n";
        let (_, protocol) = sniff_bytes(first).await.expect("decided");
        assert_eq!(protocol, Protocol::Http1);
    }

    #[tokio::test]
    async fn eof_inside_the_preface_decides_nothing() {
        assert!(sniff_bytes(&PREFACE[..10]).await.is_none());
    }
}
