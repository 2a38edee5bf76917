//! The request body.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use sync_wrapper::SyncWrapper;

use crate::error::BoxError;

pub(crate) mod replay;

/// A request body: empty, a buffer sent in one piece, or a stream.
///
/// Buffered bodies can be replayed, which is what lets the pool retry an
/// idempotent request whose reused connection turned out to be closed, or
/// any request a server refused unprocessed. A streamed body is read once;
/// what courier has taken of it is kept (by reference, up to 256 KiB)
/// until the response head arrives, so that it too can be sent again when
/// the server did not take it (an HTTP/2 server closing an idle connection
/// as the request arrives, a stale HTTP/1.1 connection).
///
/// ```
/// let empty = courier::Body::empty();
/// let text: courier::Body = "hello".into();
/// assert_eq!(text.len(), Some(5));
/// assert_eq!(empty.len(), Some(0));
/// ```
pub struct Body {
    kind: Kind,
}

/// 32 B: a request keeps its body in its future, and a long poll keeps its
/// request (for a resend) while it waits. `Full`'s bytes are empty once
/// taken, or for no body; a stream's state is boxed (with its size hint it
/// was 48 B, and every buffered body paid for it).
enum Kind {
    Full(Bytes),
    Stream(Box<Streamed>),
}

type DynBody = Pin<Box<dyn http_body::Body<Data = Bytes, Error = BoxError> + Send>>;

/// A streamed body. Held in a [`SyncWrapper`] so that a body need only be
/// `Send` (a `Pin<Box<dyn Stream + Send>>` is not `Sync`) while `Body`
/// stays `Sync`; what `&self` methods need is kept beside it.
struct Streamed {
    body: SyncWrapper<DynBody>,
    /// The size hint it gave when wrapped.
    hint: SizeHint,
    /// It returned its last frame.
    ended: bool,
}

impl Body {
    /// A body with no bytes.
    pub fn empty() -> Body {
        Body {
            kind: Kind::Full(Bytes::new()),
        }
    }

    /// Wraps any [`http_body::Body`], for streaming uploads. Such a body is
    /// read once; it is sent again only from what courier kept of it (see
    /// above): a request refused after more than 256 KiB of it went out
    /// fails. Its size hint is read once, here: an exact one sets
    /// `Content-Length`. Its data may be any type that converts into
    /// [`Bytes`] (`&'static [u8]`, `Bytes`).
    ///
    /// ```
    /// let body = courier::Body::wrap(http_body_util::Full::new(&b"hello"[..]));
    /// assert_eq!(body.len(), Some(5));
    /// ```
    pub fn wrap<B>(body: B) -> Body
    where
        B: http_body::Body + Send + 'static,
        B::Data: Into<Bytes>,
        B::Error: Into<BoxError>,
    {
        use http_body_util::BodyExt;
        let hint = body.size_hint();
        let ended = body.is_end_stream();
        let body = body
            .map_frame(|frame| frame.map_data(Into::into))
            .map_err(Into::into);
        Body {
            kind: Kind::Stream(Box::new(Streamed {
                body: SyncWrapper::new(Box::pin(body)),
                hint,
                ended,
            })),
        }
    }

    /// Wraps a stream of byte chunks, for streaming uploads of unknown
    /// length (sent chunked over HTTP/1.1). Read once, as [`Body::wrap`].
    ///
    /// ```
    /// let chunks: Vec<Result<&'static str, std::io::Error>> = vec![Ok("hello, "), Ok("world")];
    /// let stream = futures_util::stream::iter(chunks);
    /// let body = courier::Body::wrap_stream(stream);
    /// assert_eq!(body.len(), None);
    /// ```
    pub fn wrap_stream<S, T, E>(stream: S) -> Body
    where
        S: futures_core::Stream<Item = Result<T, E>> + Send + 'static,
        T: Into<Bytes>,
        E: Into<BoxError>,
    {
        Body::wrap(StreamBody::new(stream))
    }

    /// The length, when known up front.
    pub fn len(&self) -> Option<u64> {
        match &self.kind {
            Kind::Full(b) => Some(b.len() as u64),
            Kind::Stream(s) => s.hint.exact(),
        }
    }

    /// True for a buffered body of zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The bytes of a buffered body (empty for none), or `None` for a stream.
    pub(crate) fn as_buffered(&self) -> Option<&[u8]> {
        match &self.kind {
            Kind::Full(b) => Some(&b[..]),
            Kind::Stream(_) => None,
        }
    }

    /// The bytes of a buffered body (a reference count, not a copy), or `None` for a stream.
    pub(crate) fn buffered(&self) -> Option<Bytes> {
        match &self.kind {
            Kind::Full(b) => Some(b.clone()),
            Kind::Stream(_) => None,
        }
    }

    /// The buffered bytes (empty for none), or the body itself if it is a stream.
    pub(crate) fn into_bytes(self) -> Result<Bytes, Body> {
        match self.kind {
            Kind::Full(b) => Ok(b),
            Kind::Stream(_) => Err(self),
        }
    }

    /// A copy, if the body is buffered (a stream is read once).
    pub(crate) fn try_clone(&self) -> Option<Body> {
        match &self.kind {
            Kind::Full(b) => Some(Body {
                kind: Kind::Full(b.clone()),
            }),
            Kind::Stream(_) => None,
        }
    }
}

impl Default for Body {
    fn default() -> Self {
        Body::empty()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Full(b) => f.debug_struct("Body").field("len", &b.len()).finish(),
            Kind::Stream(_) => f.write_str("Body(stream)"),
        }
    }
}

impl From<Bytes> for Body {
    fn from(b: Bytes) -> Body {
        Body {
            kind: Kind::Full(b),
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Bytes::from(v).into()
    }
}

impl From<String> for Body {
    fn from(s: String) -> Body {
        Bytes::from(s).into()
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Body {
        Bytes::from_static(s.as_bytes()).into()
    }
}

impl From<&'static [u8]> for Body {
    fn from(s: &'static [u8]) -> Body {
        Bytes::from_static(s).into()
    }
}

impl From<()> for Body {
    fn from(_: ()) -> Body {
        Body::empty()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().kind {
            Kind::Full(b) if b.is_empty() => Poll::Ready(None),
            Kind::Full(b) => Poll::Ready(Some(Ok(Frame::data(std::mem::take(b))))),
            Kind::Stream(s) if s.ended => Poll::Ready(None),
            Kind::Stream(s) => {
                let body = s.body.get_mut();
                let frame = std::task::ready!(body.as_mut().poll_frame(cx));
                s.ended = frame.is_none() || body.is_end_stream();
                Poll::Ready(frame)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(b) => b.is_empty(),
            Kind::Stream(s) => s.ended,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(b) => SizeHint::with_exact(b.len() as u64),
            Kind::Stream(s) => s.hint,
        }
    }
}

pin_project_lite::pin_project! {
    /// A stream of chunks as an [`http_body::Body`] of data frames.
    pub(crate) struct StreamBody<S> {
        #[pin]
        stream: S,
    }
}

impl<S> StreamBody<S> {
    pub(crate) fn new(stream: S) -> StreamBody<S> {
        StreamBody { stream }
    }
}

impl<S, T, E> http_body::Body for StreamBody<S>
where
    S: futures_core::Stream<Item = Result<T, E>>,
    T: Into<Bytes>,
{
    type Data = Bytes;
    type Error = E;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, E>>> {
        self.project()
            .stream
            .poll_next(cx)
            .map(|item| item.map(|r| r.map(|chunk| Frame::data(chunk.into()))))
    }
}

/// Whether a request with this method announces its length even when the
/// body is empty: methods that carry one say 0, or some servers wait for a
/// body that never comes. GET and friends without a body say nothing.
pub(crate) fn expects_body(method: &http::Method) -> bool {
    use http::Method;
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn full_body_is_replayable_and_sized() {
        let body: Body = "abc".into();
        let copy = body.try_clone().unwrap();
        assert_eq!(body.size_hint().exact(), Some(3));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "abc");
        assert_eq!(copy.collect().await.unwrap().to_bytes(), "abc");
    }

    #[tokio::test]
    async fn stream_body_is_not_cloned() {
        let body = Body::wrap(http_body_util::Full::new(Bytes::from_static(b"xy")));
        assert!(body.try_clone().is_none());
        assert_eq!(body.len(), Some(2));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "xy");
    }

    #[test]
    fn empty_bodies() {
        assert!(Body::empty().is_end_stream());
        assert!(Body::from(Bytes::new()).is_end_stream());
        assert!(Body::from(()).is_empty());
    }

    /// A request in flight keeps its body (and a long poll its request, for
    /// a resend): a buffered body is its bytes and nothing more. With a
    /// stream's size hint inline it was 48 B, and a request 272 B.
    #[test]
    fn a_body_is_its_bytes_handle() {
        assert!(std::mem::size_of::<Body>() <= 32);
        let request = std::mem::size_of::<http::Request<Body>>();
        assert!(request <= 256, "a request is {request} B");
    }

    #[tokio::test]
    async fn a_buffered_body_is_one_frame_then_ends() {
        let mut body = Body::from("abc");
        assert!(!body.is_end_stream());
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "abc");
        assert!(body.is_end_stream());
        assert_eq!(body.len(), Some(0));
        assert!(body.frame().await.is_none());
    }
}
