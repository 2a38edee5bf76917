//! The byte stream under a connection: TCP, TLS over TCP, or anything else
//! (a Unix socket, a caller's connector, TLS over those).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// What a connection can run over: a tokio byte stream that can move
/// between tasks. Implemented for every such type.
pub trait AsyncIo: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> AsyncIo for T {}

/// A connected stream, ready for an HTTP handshake.
///
/// TCP and TLS over TCP, nearly every connection, are variants of their
/// own, so their reads and writes are direct calls; the rest goes through a
/// box. The TLS side is boxed too: a TLS session is ~1 KB and most of a
/// stream's life is spent inside a connection task, where the size of the
/// enum is paid for every plain connection as well.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    Other(Box<dyn AsyncIo>),
}

macro_rules! each {
    ($self:ident, $io:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Tcp($io) => $e,
            Stream::Tls($io) => $e,
            Stream::Other($io) => $e,
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, io => Pin::new(io).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, io => Pin::new(io).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, io => Pin::new(io).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(io) => io.is_write_vectored(),
            Stream::Tls(io) => io.is_write_vectored(),
            Stream::Other(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, io => Pin::new(io).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, io => Pin::new(io).poll_shutdown(cx))
    }
}
