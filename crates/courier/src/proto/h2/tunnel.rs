//! The sending half of an HTTP/2 stream that became a tunnel (a CONNECT,
//! an extended CONNECT): the stream's request body is a [`TunnelBody`] fed
//! by the caller's writes through a [`Tunnel`], so its DATA goes out by the
//! same pipe as any streamed upload, within the peer's flow-control
//! windows. One chunk waits at a time: a writer meets the windows' back
//! pressure as soon as the pipe stops taking.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::Frame;

/// The most one write hands over: a few DATA frames' worth.
const CHUNK_MAX: usize = 64 * 1024;

#[derive(Default)]
struct Slot {
    chunk: Option<Bytes>,
    /// The writer shut down or went away: the body ends (END_STREAM).
    closed: bool,
    /// The stream's pipe dropped the body (the stream ended or failed).
    gone: bool,
    body: Option<Waker>,
    writer: Option<Waker>,
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// The caller's side: writes become the stream's DATA.
pub(crate) struct Tunnel {
    slot: Arc<Mutex<Slot>>,
}

/// The stream's request body, fed by its [`Tunnel`].
pub(crate) struct TunnelBody {
    slot: Arc<Mutex<Slot>>,
}

/// A tunnel and the body it feeds.
pub(crate) fn tunnel() -> (Tunnel, TunnelBody) {
    let slot = Arc::new(Mutex::new(Slot::default()));
    let body = TunnelBody {
        slot: Arc::clone(&slot),
    };
    (Tunnel { slot }, body)
}

fn broken() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the HTTP/2 stream has ended")
}

impl Tunnel {
    /// Hands over up to [`CHUNK_MAX`] bytes once the last chunk was taken.
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let mut slot = lock(&self.slot);
        if slot.gone || slot.closed {
            return Poll::Ready(Err(broken()));
        }
        if slot.chunk.is_some() {
            slot.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = data.len().min(CHUNK_MAX);
        slot.chunk = Some(Bytes::copy_from_slice(&data[..n]));
        let body = slot.body.take();
        drop(slot);
        if let Some(w) = body {
            w.wake();
        }
        Poll::Ready(Ok(n))
    }

    /// Ready once the pipe took the last chunk.
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut slot = lock(&self.slot);
        if slot.chunk.is_some() && !slot.gone {
            slot.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Ends the body: END_STREAM after what was written.
    pub(crate) fn shutdown(&self) {
        let mut slot = lock(&self.slot);
        slot.closed = true;
        let body = slot.body.take();
        drop(slot);
        if let Some(w) = body {
            w.wake();
        }
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl http_body::Body for TunnelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let mut slot = lock(&self.slot);
        if let Some(chunk) = slot.chunk.take() {
            let writer = slot.writer.take();
            drop(slot);
            if let Some(w) = writer {
                w.wake();
            }
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        slot.body = Some(cx.waker().clone());
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        let slot = lock(&self.slot);
        slot.closed && slot.chunk.is_none()
    }
}

impl Drop for TunnelBody {
    fn drop(&mut self) {
        let mut slot = lock(&self.slot);
        slot.gone = true;
        let writer = slot.writer.take();
        drop(slot);
        if let Some(w) = writer {
            w.wake();
        }
    }
}
