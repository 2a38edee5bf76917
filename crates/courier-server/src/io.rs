//! The IO type hyper drives: a [`Transport`] that records whether its last
//! write would block (or its bytes wait in [`Coalesced`]'s buffer: HTTP/2's
//! writes are coalesced), and that can turn its close into a TCP reset.
//!
//! The write-blocked bit lets a fault endpoint know whether hyper still
//! holds bytes of an earlier response that must reach the client before the
//! raw fault behaviour starts (see [`drive_until_written`]). Reset-on-drop is how
//! `/fault/reset` works on HTTP/2, where hyper never hands the socket back:
//! the connection task just drops hyper's connection, and this type's drop
//! sets SO_LINGER 0 first.

use std::future::{poll_fn, Future};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;

use crate::coalesce::Coalesced;
use crate::state::ConnState;
use crate::transport::Transport;

pub(crate) struct ConnIo {
    inner: Coalesced<TokioIo<Transport>>,
    conn: Arc<ConnState>,
}

impl ConnIo {
    /// Writes go to the transport as hyper makes them (HTTP/1.1: hyper
    /// coalesces them itself).
    pub(crate) fn new(transport: Transport, conn: Arc<ConnState>) -> Self {
        Self {
            inner: Coalesced::new(TokioIo::new(transport), false),
            conn,
        }
    }

    /// Writes made in one go share a system call (hyper's HTTP/2 writes a
    /// frame at a time, see [`Coalesced`]).
    pub(crate) fn coalescing(transport: Transport, conn: Arc<ConnState>) -> Self {
        Self {
            inner: Coalesced::new(TokioIo::new(transport), true),
            conn,
        }
    }

    /// The transport itself, for raw faults once hyper has let go.
    pub(crate) fn transport_mut(&mut self) -> &mut Transport {
        self.inner.get_mut().inner_mut()
    }

    /// Records whether written bytes have yet to reach the socket.
    fn note<T>(&self, res: Poll<T>) -> Poll<T> {
        self.conn
            .set_write_blocked(res.is_pending() || self.inner.holds());
        res
    }
}

impl Drop for ConnIo {
    fn drop(&mut self) {
        if self.conn.reset_on_close() {
            // SO_LINGER 0 turns close() into an abortive close (RST).
            // Linger 0 never blocks, unlike other linger values.
            let socket = socket2::SockRef::from(self.inner.get_ref().inner().tcp());
            if let Err(err) = socket.set_linger(Some(Duration::ZERO)) {
                tracing::debug!(conn = self.conn.id(), "SO_LINGER for reset failed: {err}");
            }
        }
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

    /// Noted too: TLS accepts writes into its buffer and only blocks here.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let res = Pin::new(&mut self.inner).poll_flush(cx);
        self.note(res)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let res = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(res)
    }
}

/// Polls hyper's connection future `conn` until it no longer waits for
/// the socket to take its writes; returns `true` if the connection ended
/// meanwhile.
///
/// Polling makes hyper write out whatever it has queued (an earlier
/// response, or the start of a deliberately truncated one); a `Pending`
/// with the last write or flush complete means all of it reached the
/// kernel, so a fault that closes the socket next cuts exactly where
/// intended.
pub(crate) async fn drive_until_written<F: Future>(
    mut conn: Pin<&mut F>,
    state: &ConnState,
) -> bool {
    poll_fn(|cx| match conn.as_mut().poll(cx) {
        Poll::Ready(_) => Poll::Ready(true),
        Poll::Pending if state.write_blocked() => Poll::Pending,
        Poll::Pending => Poll::Ready(false),
    })
    .await
}
