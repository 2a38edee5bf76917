//! The request body the endpoints see, whichever protocol carried it.
//!
//! hyper hands HTTP/1.1 and HTTP/2 bodies over as [`Incoming`]; h3 hands
//! out a stream to read from. Wrapping both in one [`Body`] lets every
//! endpoint (`/echo` is the one that reads) stay protocol-neutral.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

/// Errors a request body can end with (hyper's, h3's).
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The receiving half of an HTTP/3 request stream.
pub(crate) type H3RecvStream = h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

/// A request body from any of the three protocols.
pub(crate) enum RequestBody {
    /// HTTP/1.1 or HTTP/2, from hyper.
    Hyper(Incoming),
    /// HTTP/3: DATA frames read off the request stream; `done` once the
    /// client finished it (trailers, if any, are not read). Boxed: the
    /// stream is several times the size of hyper's body, and every response
    /// body that echoes would carry that size. `None` once handed to a task
    /// that waits for its end (see the drop).
    Http3 {
        stream: Option<Box<H3RecvStream>>,
        done: bool,
        /// "No more data" answers from h3 in a row.
        ends: u8,
        /// The request's content-length, and the bytes read so far: a
        /// body longer or shorter fails (RFC 9114 §4.1.2).
        declared: Option<u64>,
        received: u64,
    },
}

/// h3 0.0.8 answers "no more data" for an empty DATA frame (RFC 9114
/// allows them) as it does at the end of the data, so an upload with one
/// was cut there. The data is asked for again: at the end of the stream,
/// or before trailers, h3 answers the same at once; a body that goes on
/// answers its data. This many answers in a row are the end, as the
/// client's response body reads them (`courier`'s `proto/h3/body.rs`): a
/// client sending as many empty frames in a row gets its body cut there.
const ENDS: u8 = 4;

impl RequestBody {
    pub(crate) fn http3(stream: H3RecvStream, declared: Option<u64>) -> Self {
        RequestBody::Http3 {
            stream: Some(Box::new(stream)),
            done: false,
            ends: 0,
            declared,
            received: 0,
        }
    }
}

/// An HTTP/3 body dropped unread whose end has already come is read to its
/// end here, without waiting: quinn stops (STOP_SENDING) every request
/// stream dropped before its end was read, even one the client had
/// finished, so each bodiless request cost a frame each way. One whose end
/// has not come yet (a bodiless request whose FIN follows its head in a
/// later packet, often answered before it arrives) is left to a task that
/// waits for it, boundedly ([`LATE_END`]). A body whose data comes is
/// stopped as before: the server does not want the rest.
impl Drop for RequestBody {
    fn drop(&mut self) {
        let RequestBody::Http3 {
            stream: Some(stream),
            done: false,
            ..
        } = self
        else {
            return;
        };
        let mut cx = Context::from_waker(Waker::noop());
        if read_end(stream, &mut cx).is_pending() {
            if let (Ok(runtime), RequestBody::Http3 { stream, .. }) =
                (tokio::runtime::Handle::try_current(), self)
            {
                if let Some(stream) = stream.take() {
                    runtime.spawn(late_end(stream));
                }
            }
        }
    }
}

/// How long a request stream dropped before its end waits for it: a
/// client finishes a bodiless request within a round trip or so.
const LATE_END: Duration = Duration::from_secs(1);

/// Reads a stream to its end if it has come, without data: `Ready(true)`
/// at the end, `Ready(false)` on data or an error (the stream is then
/// stopped as it is dropped). "No more data" may be an empty DATA frame
/// (see `ENDS`); the end answers it again at once.
fn read_end(stream: &mut H3RecvStream, cx: &mut Context<'_>) -> Poll<bool> {
    for _ in 0..ENDS {
        match stream.poll_recv_data(cx) {
            Poll::Ready(Ok(None)) => {}
            Poll::Ready(Ok(Some(_)) | Err(_)) => return Poll::Ready(false),
            Poll::Pending => return Poll::Pending,
        }
    }
    Poll::Ready(true)
}

/// Waits (at most [`LATE_END`]) for the end of a request stream dropped
/// before it: read, the stream goes without STOP_SENDING; data, or no end
/// in time, and it is stopped as it is dropped.
async fn late_end(mut stream: Box<H3RecvStream>) {
    let end = std::future::poll_fn(|cx| read_end(&mut stream, cx));
    let _ = tokio::time::timeout(LATE_END, end).await;
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Hyper(incoming) => Pin::new(incoming)
                .poll_frame(cx)
                .map(|frame| frame.map(|f| f.map_err(BoxError::from))),
            RequestBody::Http3 { done: true, .. } => Poll::Ready(None),
            RequestBody::Http3 { stream: None, .. } => Poll::Ready(None),
            RequestBody::Http3 {
                stream: Some(stream),
                done,
                ends,
                declared,
                received,
            } => loop {
                match stream.poll_recv_data(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(Some(mut buf))) => {
                        *ends = 0;
                        let data = buf.copy_to_bytes(buf.remaining());
                        *received += data.len() as u64;
                        if declared.is_some_and(|n| *received > n) {
                            *done = true;
                            return Poll::Ready(Some(Err(
                                "request body longer than its content-length".into(),
                            )));
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    // Maybe an empty DATA frame: asked again (see `ENDS`).
                    Poll::Ready(Ok(None)) if *ends + 1 < ENDS => *ends += 1,
                    Poll::Ready(Ok(None)) => {
                        *done = true;
                        if declared.is_some_and(|n| *received < n) {
                            return Poll::Ready(Some(Err(
                                "request body shorter than its content-length".into(),
                            )));
                        }
                        return Poll::Ready(None);
                    }
                    Poll::Ready(Err(err)) => {
                        *done = true;
                        return Poll::Ready(Some(Err(Box::new(err))));
                    }
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Hyper(incoming) => incoming.is_end_stream(),
            RequestBody::Http3 { done, .. } => *done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Hyper(incoming) => incoming.size_hint(),
            RequestBody::Http3 { .. } => SizeHint::new(),
        }
    }
}
