//! One QUIC receive stream read as HTTP/3 frames: quinn's chunks (no copy)
//! through a [`FrameReader`]. Poll-based, so a response body can read it
//! from `poll_frame`, and it never moves the stream into a future: it can
//! be stopped (STOP_SENDING with our code) at any moment.

use std::future::Future;
use std::task::{ready, Context, Poll};

use bytes::Bytes;

use super::frame::{Frame, FrameError, FrameReader};

/// Chunks read in one poll that completed no frame before it yields.
const EMPTY_READS: usize = 16;

/// Why a stream cannot be read on.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer's frames broke the rules.
    Frame(FrameError),
    /// The peer reset the stream with this code.
    Reset(u64),
    /// The connection is gone.
    Lost(quinn::ConnectionError),
    /// Stopped or finished by us already.
    Closed,
    /// Opened in early data the server rejected (the stream never existed
    /// for it).
    ZeroRttRejected,
}

impl From<quinn::ReadError> for ReadError {
    fn from(e: quinn::ReadError) -> ReadError {
        match e {
            quinn::ReadError::Reset(code) => ReadError::Reset(code.into_inner()),
            quinn::ReadError::ConnectionLost(e) => ReadError::Lost(e),
            quinn::ReadError::ZeroRttRejected => ReadError::ZeroRttRejected,
            _ => ReadError::Closed,
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Frame(e) => write!(f, "{e}"),
            ReadError::Reset(code) => write!(f, "stream reset by the server ({code:#x})"),
            ReadError::Lost(e) => write!(f, "connection lost: {e}"),
            ReadError::Closed => f.write_str("stream already closed"),
            ReadError::ZeroRttRejected => f.write_str("0-RTT rejected"),
        }
    }
}

/// Reads one chunk of `recv` (at most `max` bytes): `None` at its end.
pub(crate) fn poll_chunk(
    recv: &mut quinn::RecvStream,
    cx: &mut Context<'_>,
    max: usize,
) -> Poll<Result<Option<Bytes>, ReadError>> {
    // quinn's `read_chunk` future only borrows the stream and keeps no
    // state of its own (the waker is registered with the connection), so
    // one made afresh at each poll is the poll quinn keeps private.
    let read = std::pin::pin!(recv.read_chunk(max, true));
    let chunk = ready!(read.poll(cx))?;
    Poll::Ready(Ok(chunk.map(|c| c.bytes)))
}

/// Reads up to two chunks of `recv` into `bufs`: `Some(n)` chunks read,
/// `None` at its end. Two, because the second place lets quinn see the
/// stream's end in the same call: a response of one chunk (HEADERS, DATA
/// and FIN in one STREAM frame, the usual small response) is then read
/// with one lock of the connection instead of two, and the read that
/// finds the end costs a flag (quinn keeps `all_data_read`). quinn's
/// `read_chunks` future, like `read_chunk`'s, only borrows.
fn poll_chunks(
    recv: &mut quinn::RecvStream,
    cx: &mut Context<'_>,
    bufs: &mut [Bytes; 2],
) -> Poll<Result<Option<usize>, ReadError>> {
    let read = std::pin::pin!(recv.read_chunks(bufs));
    Poll::Ready(Ok(ready!(read.poll(cx))?))
}

/// A stream's frames.
#[derive(Debug)]
pub(crate) struct StreamReader {
    recv: quinn::RecvStream,
    frames: FrameReader,
    /// Bytes read and not yet framed.
    chunk: Bytes,
    /// A second chunk read with `chunk`, framed after it.
    next: Bytes,
    /// The stream's end was read.
    ended: bool,
    /// A request stream not answered yet: dropped before its end, it is
    /// stopped with H3_REQUEST_CANCELLED (a request past its deadline, or
    /// dropped), not with quinn's bare code 0.
    unanswered: bool,
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        if self.unanswered && !self.ended {
            self.stop(super::code::REQUEST_CANCELLED);
        }
    }
}

impl StreamReader {
    /// Frames other than DATA up to `max` bytes; `rest`: bytes already
    /// read off the stream (after a unidirectional stream's type).
    pub(crate) fn new(recv: quinn::RecvStream, max: u64, rest: Bytes) -> StreamReader {
        StreamReader {
            recv,
            frames: FrameReader::new(max),
            chunk: rest,
            next: Bytes::new(),
            ended: false,
            unanswered: false,
        }
    }

    /// A request stream whose response head has not come: see
    /// `unanswered`. `false` once the response's body owns the stream (its
    /// own drop says how it ends).
    pub(crate) fn set_unanswered(&mut self, unanswered: bool) {
        self.unanswered = unanswered;
    }

    /// The next frame; `None` at the stream's clean end.
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Frame>, ReadError>> {
        for _ in 0..EMPTY_READS {
            // An empty chunk completes no frame (a frame's header is read
            // from bytes; one completed by its last byte was returned).
            if !self.chunk.is_empty() {
                if let Some(frame) = self
                    .frames
                    .next(&mut self.chunk)
                    .map_err(ReadError::Frame)?
                {
                    return Poll::Ready(Ok(Some(frame)));
                }
            }
            if !self.next.is_empty() {
                self.chunk = std::mem::take(&mut self.next);
                continue;
            }
            if self.ended {
                self.frames.finish().map_err(ReadError::Frame)?;
                return Poll::Ready(Ok(None));
            }
            let mut bufs = [Bytes::new(), Bytes::new()];
            match ready!(poll_chunks(&mut self.recv, cx, &mut bufs))? {
                Some(_) => {
                    let [chunk, next] = bufs;
                    self.chunk = chunk;
                    self.next = next;
                }
                None => self.ended = true,
            }
        }
        // Chunks of nothing but skipped (unknown) frames: yield, so a
        // flood of them cannot hold the task.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// The next frame (async).
    pub(crate) async fn frame(&mut self) -> Result<Option<Frame>, ReadError> {
        std::future::poll_fn(|cx| self.poll_frame(cx)).await
    }

    /// Asks the server to stop sending (STOP_SENDING with `code`).
    pub(crate) fn stop(&mut self, code: u64) {
        let code = quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX);
        let _ = self.recv.stop(code);
    }

    /// The stream's id.
    pub(crate) fn id(&self) -> u64 {
        u64::from(self.recv.id())
    }
}
