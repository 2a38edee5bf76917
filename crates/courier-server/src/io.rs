//! The transport type hyper drives: a `TcpStream` that records whether its
//! last write would block.
//!
//! That one bit lets a fault endpoint know whether hyper still holds bytes
//! of an earlier response that must reach the client before the raw fault
//! behaviour starts (see `http1::serve`).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::conn::ConnState;

pub(crate) struct ConnIo {
    inner: TokioIo<TcpStream>,
    conn: Arc<ConnState>,
}

impl ConnIo {
    pub(crate) fn new(stream: TcpStream, conn: Arc<ConnState>) -> Self {
        Self {
            inner: TokioIo::new(stream),
            conn,
        }
    }

    pub(crate) fn into_inner(self) -> TcpStream {
        self.inner.into_inner()
    }

    fn note<T>(&self, res: Poll<T>) -> Poll<T> {
        self.conn.set_write_blocked(res.is_pending());
        res
    }
}

impl Read for ConnIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl Write for ConnIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(res)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note(res)
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
