//! Closing a connection after a GOAWAY for an error so that the peer reads
//! the GOAWAY: the write side is shut down (TLS close_notify, TCP FIN), and
//! what the peer still sends is read and thrown away until it closes too,
//! or for [`LINGER`] at most.
//!
//! Why: a socket closed with unread bytes in its receive buffer is reset
//! (RST), not closed, and a reset may erase what the peer received and had
//! not read yet (RFC 9112 §9.6 describes the same for HTTP/1.1 servers): the
//! GOAWAY that says why the connection ended is lost, and the peer sees
//! "connection reset by peer". h2spec's client tests caught it: a server
//! that sends a SETTINGS ACK with a payload must read GOAWAY
//! (FRAME_SIZE_ERROR), and about one run in ten read a reset instead, its
//! frames sent after the bad one still unread on courier's side. Go's
//! net/http lingers 500 ms the same way (`closeWriteAndWait`), nginx
//! longer (`lingering_close`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The longest a connection lingers after its GOAWAY.
pub(super) const LINGER: Duration = Duration::from_millis(500);

/// Reads one poll discards before it lets other tasks run.
const READS_PER_POLL: usize = 16;

/// A connection's close after its error GOAWAY was written and flushed.
pub(super) struct Linger {
    shut_down: bool,
    // Boxed: only a connection that failed pays for the timer.
    deadline: Pin<Box<Sleep>>,
}

impl Linger {
    /// Starts lingering now.
    pub(super) fn new() -> Linger {
        Linger {
            shut_down: false,
            deadline: Box::pin(tokio::time::sleep(LINGER)),
        }
    }

    /// Ready once the peer closed its side, the connection failed, or the
    /// time is up: the connection can be dropped.
    pub(super) fn poll<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        io: &mut S,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(());
        }
        if !self.shut_down {
            match Pin::new(&mut *io).poll_shutdown(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => self.shut_down = true,
                Poll::Ready(Err(_)) => return Poll::Ready(()),
            }
        }
        let mut scratch = [0u8; 4096];
        for _ in 0..READS_PER_POLL {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut *io).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(()),
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(_)) => return Poll::Ready(()),
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
