//! The request body the endpoints see, whichever protocol carried it.
//!
//! hyper hands HTTP/1.1 and HTTP/2 bodies over as [`Incoming`]; h3 hands
//! out a stream to read from. Wrapping both in one [`Body`] lets every
//! endpoint (`/echo` is the one that reads) stay protocol-neutral.

use std::pin::Pin;
use std::task::{Context, Poll};

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
    /// body that echoes would carry that size.
    Http3 {
        stream: Box<H3RecvStream>,
        done: bool,
    },
}

impl RequestBody {
    pub(crate) fn http3(stream: H3RecvStream) -> Self {
        RequestBody::Http3 {
            stream: Box::new(stream),
            done: false,
        }
    }
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
            RequestBody::Http3 { stream, done } => match stream.poll_recv_data(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(Some(mut buf))) => {
                    let data = buf.copy_to_bytes(buf.remaining());
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
                Poll::Ready(Ok(None)) => {
                    *done = true;
                    Poll::Ready(None)
                }
                Poll::Ready(Err(err)) => {
                    *done = true;
                    Poll::Ready(Some(Err(Box::new(err))))
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
