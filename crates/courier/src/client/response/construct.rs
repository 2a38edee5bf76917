//! Responses and response bodies built by the caller rather than read off a
//! connection: what a mock service answers with, what a tower layer of the
//! caller's returns, and how an `http::Response` out of a tower-http layer
//! (whose body wraps courier's) becomes a courier [`Response`] again.
//!
//! Such a body holds no connection: there is nothing to drain or give back
//! when it is dropped.

use std::any::Any;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use super::{Response, ResponseBody};
use crate::body::{Body, StreamBody};
use crate::error::{BoxError, Error, ErrorKind};

impl ResponseBody {
    /// A body of no bytes.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let res = courier::Response::from(http::Response::new(courier::ResponseBody::empty()));
    /// assert!(res.bytes().await.unwrap().is_empty());
    /// # }
    /// ```
    pub fn empty() -> ResponseBody {
        ResponseBody::detached(None)
    }

    /// Wraps any [`http_body::Body`] whose data converts into [`Bytes`] and
    /// whose error into a [`BoxError`]: a body a mock or a tower layer makes,
    /// or one a tower-http layer wrapped around courier's. Its errors become
    /// courier [`Error`]s: a courier `Error` as it was, a timeout
    /// (`tower::timeout`'s or tokio's `Elapsed`) as [`ErrorKind::Timeout`],
    /// anything else as [`ErrorKind::Body`]. A `ResponseBody` is returned as
    /// it is, not wrapped again.
    ///
    /// `bytes()`, `text()` and `json()` read such a body whole, without the
    /// client's `max_response_body_size` (there is no client).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let body = courier::ResponseBody::wrap(http_body_util::Full::new(&b"hello"[..]));
    /// let res = courier::Response::from(http::Response::new(body));
    /// assert_eq!(res.text().await.unwrap(), "hello");
    /// # }
    /// ```
    pub fn wrap<B>(body: B) -> ResponseBody
    where
        B: http_body::Body + Send + Sync + 'static,
        B::Data: Into<Bytes>,
        B::Error: Into<BoxError>,
    {
        let mut slot = Some(body);
        if let Some(ours) = (&mut slot as &mut dyn Any).downcast_mut::<Option<ResponseBody>>() {
            return ours.take().expect("just put there");
        }
        let body = slot.expect("not taken");
        ResponseBody::detached(Some(Box::pin(Foreign { body })))
    }

    /// Wraps a stream of byte chunks, as [`Body::wrap_stream`] does for a
    /// request; an error from the stream is the body's error (as for
    /// [`wrap`](Self::wrap)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let chunks: Vec<Result<&'static str, std::io::Error>> = vec![Ok("hello, "), Ok("world")];
    /// let body = courier::ResponseBody::wrap_stream(futures_util::stream::iter(chunks));
    /// let res = courier::Response::from(http::Response::new(body));
    /// assert_eq!(res.text().await.unwrap(), "hello, world");
    /// # }
    /// ```
    pub fn wrap_stream<S, T, E>(stream: S) -> ResponseBody
    where
        S: futures_core::Stream<Item = Result<T, E>> + Send + Sync + 'static,
        T: Into<Bytes>,
        E: Into<BoxError>,
    {
        ResponseBody::wrap(StreamBody::new(stream))
    }

    /// A body holding no connection, forwarding to `wrapped` (or empty).
    fn detached(
        wrapped: Option<Pin<Box<dyn http_body::Body<Data = Bytes, Error = Error> + Send + Sync>>>,
    ) -> ResponseBody {
        ResponseBody {
            source: None,
            lease: None,
            deadline: None,
            timer: None,
            remaining: None,
            drain: None,
            max_body: None,
            wrapped,
        }
    }

    /// The `max_response_body_size` that `bytes()` applies, if any.
    pub(crate) fn max_body(&self) -> Option<u64> {
        self.max_body
    }

    /// Applies `max_body` to `bytes()` (a body rebuilt around a client's,
    /// which must keep the client's limit).
    pub(crate) fn set_max_body(&mut self, max_body: Option<u64>) {
        self.max_body = max_body;
    }
}

impl Response {
    /// The response, answering `url` if it names no absolute URL of its own
    /// (one built without a [`ResponseUrl`](crate::ResponseUrl)).
    pub(crate) fn or_url(mut self, url: Option<http::Uri>) -> Response {
        if let (None, Some(url)) = (self.url.scheme(), url) {
            self.url = url;
        }
        self
    }

    /// The `max_response_body_size` its body's `bytes()` applies.
    pub(crate) fn body_limit(&self) -> Option<u64> {
        self.body.max_body()
    }
}

impl Default for ResponseBody {
    fn default() -> ResponseBody {
        ResponseBody::empty()
    }
}

/// A buffered body: `Bytes`, `Vec<u8>`, `String`, `&'static str`,
/// `&'static [u8]`, `()`; and a request [`Body`] (a mock echoing a request).
macro_rules! from_buffered {
    ($($ty:ty),*) => {$(
        impl From<$ty> for ResponseBody {
            fn from(value: $ty) -> ResponseBody {
                ResponseBody::from(Body::from(value))
            }
        }
    )*};
}
from_buffered!(Bytes, Vec<u8>, String, &'static str, &'static [u8], ());

impl From<Body> for ResponseBody {
    fn from(body: Body) -> ResponseBody {
        if body.is_empty() {
            return ResponseBody::empty();
        }
        ResponseBody::wrap(body)
    }
}

/// A response built from an `http::Response`, as reqwest's
/// `From<http::Response<T>>`: the body is anything that converts into a
/// [`ResponseBody`] (text, bytes, a request [`Body`], a `ResponseBody`); the
/// URL and the server's address are taken from the [`ResponseUrl`](crate::ResponseUrl)
/// and [`RemoteAddr`](crate::RemoteAddr) extensions when there (the URL is
/// `/` otherwise). For another [`http_body::Body`], map it with
/// [`ResponseBody::wrap`] first.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let res: courier::Response = http::Response::builder()
///     .status(201)
///     .header("content-type", "text/plain")
///     .body("created")
///     .unwrap()
///     .into();
/// assert_eq!(res.status(), 201);
/// assert_eq!(res.text().await.unwrap(), "created");
/// # }
/// ```
impl<T: Into<ResponseBody>> From<http::Response<T>> for Response {
    fn from(res: http::Response<T>) -> Response {
        Response::from_http(res.map(Into::into))
    }
}

pin_project_lite::pin_project! {
    /// A caller's body, its data made `Bytes` and its errors courier's.
    struct Foreign<B> {
        #[pin]
        body: B,
    }
}

impl<B> http_body::Body for Foreign<B>
where
    B: http_body::Body,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.project().body.poll_frame(cx).map(|frame| {
            frame.map(|r| {
                r.map(|f| f.map_data(Into::into))
                    .map_err(|e| Error::from_boxed(e.into(), ErrorKind::Body))
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;

    fn failing(err: BoxError) -> ResponseBody {
        let frames: Vec<Result<Bytes, BoxError>> = vec![Ok(Bytes::from_static(b"ab")), Err(err)];
        ResponseBody::wrap_stream(futures_util::stream::iter(frames))
    }

    /// `content_length` reads `1*DIGIT` as every protocol's framing does:
    /// a response built by hand (a mock, a layer) gets no length from `+5`.
    #[test]
    fn content_length_is_digits_only() {
        let with = |value: &str| {
            let res = http::Response::builder()
                .header("content-length", value)
                .body(ResponseBody::empty())
                .unwrap();
            Response::from(res).content_length()
        };
        assert_eq!(with("5"), Some(5));
        for bad in ["+5", "-5", " 5", "5, 5", ""] {
            assert_eq!(with(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_foreign_bodys_errors_become_courier_errors() {
        let io: BoxError = Box::new(std::io::Error::other("cut"));
        let err = Response::from(http::Response::new(failing(io)))
            .bytes()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Body, "{err:#}");
        assert_eq!(format!("{err:#}"), "error reading response body: cut");

        let elapsed: BoxError = Box::new(tower::timeout::error::Elapsed::new());
        let mut res = Response::from(http::Response::new(failing(elapsed)));
        assert_eq!(res.chunk().await.unwrap().unwrap(), "ab");
        assert!(res.chunk().await.unwrap_err().is_timeout());

        let ours: BoxError = Box::new(Error::new(ErrorKind::Decompression, "bad gzip"));
        let err = Response::from(http::Response::new(failing(ours)))
            .text()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decompression, "kept, not wrapped");
    }

    #[tokio::test]
    async fn buffered_bodies_and_the_head_carry_over() {
        let mut head = http::Response::builder()
            .status(404)
            .header("x-a", "1")
            .body(Bytes::from_static(b"gone"))
            .unwrap();
        let url: http::Uri = "http://h.test/x".parse().unwrap();
        head.extensions_mut()
            .insert(crate::ResponseUrl(url.clone()));
        let res = Response::from(head);
        assert_eq!(res.status(), 404);
        assert_eq!(res.headers()["x-a"], "1");
        assert_eq!(res.uri(), &url);
        assert_eq!(res.content_length(), None);
        assert!(res.error_for_status_ref().unwrap_err().is_status());
        assert_eq!(res.text().await.unwrap(), "gone");

        let body = ResponseBody::from(String::from("abc"));
        assert_eq!(body.size_hint().exact(), Some(3));
        assert!(ResponseBody::empty().is_end_stream());
        assert!(ResponseBody::from(()).is_end_stream());
        let res = Response::from(http::Response::new(Body::from(vec![1u8, 2])));
        assert_eq!(res.uri(), "/", "no ResponseUrl: the URL is /");
        assert_eq!(&res.bytes().await.unwrap()[..], &[1, 2]);
    }

    #[test]
    fn a_response_body_is_not_wrapped_again() {
        let body = ResponseBody::wrap(ResponseBody::from("x"));
        // One level: the wrap of a `Full`, not a wrap of a wrap.
        let again = ResponseBody::wrap(body);
        let inner = again.wrapped.as_ref().expect("a buffered body is wrapped");
        assert_eq!(inner.size_hint().exact(), Some(1));
        assert!(format!("{again:?}").contains("wrapped: true"));
        let mut once = ResponseBody::from("x");
        once.set_max_body(Some(7));
        assert_eq!(
            ResponseBody::wrap(once).max_body(),
            Some(7),
            "the same body"
        );
    }
}
