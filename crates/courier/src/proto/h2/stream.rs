//! A request's handle on its stream: waits for the response head, then
//! reads the body. Dropping the last handle before the stream ends resets it.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

use super::conn::Shared;
use super::error::StreamError;
use super::head::ResponseHead;
use super::streams::Key;

/// A response head as its stream hands it to the request.
#[derive(Debug)]
pub(crate) struct Arrived {
    pub(crate) head: ResponseHead,
    /// The Content-Length it declares, read as it was decoded.
    pub(crate) length: Option<u64>,
    /// The stream already ended with it (no body).
    pub(crate) end: bool,
}

/// A request's handle on its open stream: there is one, moved from the
/// request's future to its body.
pub(crate) struct StreamRef {
    shared: Arc<Shared>,
    key: Key,
    id: u32,
}

impl StreamRef {
    pub(crate) fn new(shared: Arc<Shared>, key: Key, id: u32) -> StreamRef {
        StreamRef { shared, key, id }
    }

    /// The connection the stream is on.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The response head, when it came.
    pub(crate) fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<Result<Arrived, StreamError>> {
        let mut st = self.shared.lock();
        let head = st.streams.take_head(self.key, self.id);
        let Some(stream) = st.streams.get(self.key, self.id) else {
            return Poll::Ready(Err(StreamError::Closed("the stream is gone")));
        };
        if let Some((head, length)) = head {
            // A stream failed after its head (reset, cut short) also has
            // a closed receiving half: its body must report the error, not end empty.
            let end = stream.state().is_recv_closed()
                && stream.data.is_empty()
                && stream.trailers.is_none()
                && !stream.state().is_failed();
            // The body's deadline is the response's to keep.
            stream.deadline = super::deadline::NONE;
            return Poll::Ready(Ok(Arrived { head, length, end }));
        }
        if let Some(e) = stream.state().error() {
            return Poll::Ready(Err(e.clone()));
        }
        if stream.deadline == super::deadline::PASSED {
            return Poll::Ready(Err(StreamError::DeadlinePassed));
        }
        set_waker(&mut stream.waker, cx);
        Poll::Pending
    }
}

fn set_waker(slot: &mut Option<std::task::Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

impl Drop for StreamRef {
    fn drop(&mut self) {
        self.shared.lock().drop_handle(self.key, self.id);
    }
}

/// The response body of a stream.
pub(crate) struct RecvBody {
    stream: StreamRef,
    /// Everything was handed out: no need to lock to know.
    done: bool,
}

impl RecvBody {
    pub(crate) fn new(stream: StreamRef, done: bool) -> RecvBody {
        RecvBody { stream, done }
    }

    /// The next DATA or trailers. Each DATA payload handed out goes back to
    /// the flow-control windows, so the server may send more.
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let (key, id) = (self.stream.key, self.stream.id);
        let mut st = self.stream.shared.lock();
        let Some(stream) = st.streams.get(key, id) else {
            self.done = true;
            return Poll::Ready(Some(Err(StreamError::Closed("the stream is gone"))));
        };
        if let Some(data) = stream.data.pop() {
            let n = data.len();
            let ended = stream.state().is_recv_closed()
                && stream.data.is_empty()
                && stream.trailers.is_none()
                && !stream.state().is_failed();
            st.release_read(key, id, n);
            self.done = ended;
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(e) = stream.state().error() {
            let e = e.clone();
            self.done = true;
            return Poll::Ready(Some(Err(e)));
        }
        if let Some(trailers) = stream.trailers.take() {
            self.done = true;
            return Poll::Ready(Some(Ok(Frame::trailers(*trailers))));
        }
        if stream.state().is_recv_closed() {
            self.done = true;
            return Poll::Ready(None);
        }
        set_waker(&mut stream.waker, cx);
        Poll::Pending
    }

    /// Everything has been read.
    pub(crate) fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl std::fmt::Debug for RecvBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBody")
            .field("stream", &self.stream.id)
            .field("done", &self.done)
            .finish()
    }
}
