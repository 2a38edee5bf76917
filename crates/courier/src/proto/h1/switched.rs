//! A connection after it switched protocols (a `101`, a CONNECT's 2xx): a
//! plain byte stream, read first from what arrived behind the head.
//!
//! The server may send the new protocol's first bytes in the same segment
//! as the `101` head (a WebSocket server's first frame, a tunnelled
//! server's greeting); they are in the read buffer, not the socket, so
//! reads take them first.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Buf as _;
use tokio::io::{AsyncWrite, ReadBuf};

use super::Connection;

impl Connection {
    /// Reads the switched stream: what was read behind the head, then the socket.
    pub(crate) fn poll_read_switched(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let behind = self.read_buf_mut();
        if !behind.is_empty() {
            let n = behind.len().min(buf.remaining());
            buf.put_slice(&behind[..n]);
            behind.advance(n);
            return Poll::Ready(Ok(()));
        }
        tokio::io::AsyncRead::poll_read(Pin::new(self.io_mut()), cx, buf)
    }

    /// Writes to the switched stream.
    pub(crate) fn poll_write_switched(
        &mut self,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.io_mut()).poll_write(cx, data)
    }

    /// Writes several buffers to the switched stream at once.
    pub(crate) fn poll_write_vectored_switched(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.io_mut()).poll_write_vectored(cx, bufs)
    }

    /// Whether the stream writes vectors in one go.
    pub(crate) fn is_write_vectored_switched(&self) -> bool {
        self.io_ref().is_write_vectored()
    }

    /// Flushes the switched stream.
    pub(crate) fn poll_flush_switched(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.io_mut()).poll_flush(cx)
    }

    /// Shuts down the write side of the switched stream.
    pub(crate) fn poll_shutdown_switched(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.io_mut()).poll_shutdown(cx)
    }
}
