//! Where a response body's bytes come from: each protocol's own handle,
//! made from its answer by the binding, so neither the pool nor the
//! response names a protocol's body type.

use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

use super::Lease;
use crate::error::{Error, ErrorKind};
use crate::proto::h2::stream::RecvBody;

/// Where the body's bytes come from.
pub(crate) enum Source {
    /// HTTP/1.1: straight off the connection the lease holds.
    Http1,
    /// HTTP/2: the stream's receive half.
    Http2(RecvBody),
    /// HTTP/3: the request stream's receive half (boxed: h3's stream
    /// handle is large, and HTTP/2's body handle is kept small).
    #[cfg(feature = "http3")]
    Http3(Box<crate::proto::h3::body::RecvBody>),
}

/// What HTTP/3's request future makes its answer's body of, where it
/// makes the answer (`proto/h3/request.rs`).
#[cfg(feature = "http3")]
impl From<Box<crate::proto::h3::body::RecvBody>> for Source {
    fn from(body: Box<crate::proto::h3::body::RecvBody>) -> Source {
        Source::Http3(body)
    }
}

impl Source {
    pub(crate) fn poll_frame(
        &mut self,
        lease: Option<&mut Lease>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        match (self, lease) {
            (Source::Http2(body), _) => body
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(|e| Error::new(ErrorKind::Body, e)))),
            (Source::Http1, Some(lease)) => match lease.exclusive_mut() {
                Some(conn) => conn.poll_frame(cx),
                None => Poll::Ready(None),
            },
            (Source::Http1, None) => Poll::Ready(None),
            #[cfg(feature = "http3")]
            (Source::Http3(body), _) => {
                http_body::Body::poll_frame(std::pin::Pin::new(&mut **body), cx)
            }
        }
    }

    pub(crate) fn is_end(&self, lease: Option<&Lease>) -> bool {
        match self {
            Source::Http2(body) => body.is_end_stream(),
            #[cfg(feature = "http3")]
            Source::Http3(body) => http_body::Body::is_end_stream(&**body),
            Source::Http1 => {
                lease.is_none_or(|l| l.exclusive().is_none_or(|conn| conn.body_done()))
            }
        }
    }
}
