//! What a streamed body gave so far, kept so that the request can be sent
//! again when a server turns out not to have taken it.
//!
//! A stream cannot be read twice, and its first bytes are on the wire as
//! soon as the request goes out. A server may still refuse the request
//! unprocessed after that: an HTTP/2 server closing an idle connection
//! answers the stream that raced its close with GOAWAY naming the streams
//! before it (RFC 9113 §8.7: safe to send again), and a reused HTTP/1.1
//! connection may turn out closed under the first bytes. Go's transport
//! fails such a request unless the caller gave it a way to rebuild the
//! body (`GetBody`); here the protocol keeps what it took of the body, by
//! reference count (the chunks themselves, not copies), until the response
//! head shows the server took the request, or until more than
//! [`REPLAY_LIMIT`] bytes were taken: then the request can no longer be
//! sent again, and what was kept is let go. A buffered body never uses
//! this: it is its own copy.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Frame, SizeHint};

use super::Body;
use crate::error::BoxError;

/// The most of a streamed body kept for a resend: what an HTTP/2 stream can
/// have on the wire under the protocol's default window (64 KiB) before the
/// server can answer it, plus what courier reads ahead of the window
/// (64 KiB), twice over for chunks that straddle it.
pub(crate) const REPLAY_LIMIT: usize = 256 * 1024;

/// The frames taken from a streamed body, while they are few enough to keep.
#[derive(Default)]
pub(crate) struct Replay {
    data: VecDeque<Bytes>,
    len: usize,
    trailers: Option<HeaderMap>,
    /// The body has given its last frame.
    ended: bool,
    /// More than [`REPLAY_LIMIT`] was taken: nothing is kept any more.
    overflowed: bool,
}

impl Replay {
    /// Keeps (a reference to) `frame`, taken from the body; `None` is its end.
    pub(crate) fn keep(&mut self, frame: Option<&Frame<Bytes>>) {
        if self.overflowed {
            return;
        }
        let Some(frame) = frame else {
            self.ended = true;
            return;
        };
        if let Some(data) = frame.data_ref() {
            self.len = self.len.saturating_add(data.len());
            if self.len > REPLAY_LIMIT {
                *self = Replay {
                    overflowed: true,
                    ..Replay::default()
                };
            } else if !data.is_empty() {
                self.data.push_back(data.clone());
            }
        } else if let Some(trailers) = frame.trailers_ref() {
            self.trailers = Some(trailers.clone());
            self.ended = true;
        }
    }

    /// Whether everything taken so far is kept.
    #[cfg(test)]
    fn is_whole(&self) -> bool {
        !self.overflowed
    }

    /// The body again: what was taken, then the rest of `rest` (the body
    /// itself, `None` if it is gone); `None` if what was taken is not all here.
    pub(crate) fn resume(self, rest: Option<Body>) -> Option<Body> {
        if self.overflowed || (rest.is_none() && !self.ended) {
            return None;
        }
        // A streamed body's size hint is the one it was wrapped with: the
        // whole body's, whatever was taken of it since.
        let hint = rest.as_ref().map_or_else(
            || SizeHint::with_exact(self.len as u64),
            http_body::Body::size_hint,
        );
        Some(Body::wrap(Resumed {
            data: self.data,
            trailers: self.trailers,
            rest: rest.filter(|_| !self.ended),
            hint,
        }))
    }
}

/// A body made again from the frames a [`Replay`] kept and the rest of the
/// body they were taken from.
struct Resumed {
    data: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    rest: Option<Body>,
    hint: SizeHint,
}

impl http_body::Body for Resumed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(data) = self.data.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(trailers) = self.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        match self.rest.as_mut() {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
            && self.trailers.is_none()
            && self
                .rest
                .as_ref()
                .is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn data(s: &'static str) -> Frame<Bytes> {
        Frame::data(Bytes::from_static(s.as_bytes()))
    }

    #[tokio::test]
    async fn a_body_resumes_with_what_was_taken_then_the_rest() {
        let chunks: Vec<Result<&'static str, std::io::Error>> = vec![Ok("c"), Ok("d")];
        let rest = Body::wrap_stream(futures_util::stream::iter(chunks));
        let mut replay = Replay::default();
        replay.keep(Some(&data("a")));
        replay.keep(Some(&data("b")));
        let body = replay.resume(Some(rest)).unwrap();
        assert_eq!(body.collect().await.unwrap().to_bytes(), "abcd");
    }

    #[tokio::test]
    async fn an_ended_body_resumes_whole_with_its_trailers_and_size() {
        let mut replay = Replay::default();
        replay.keep(Some(&data("ab")));
        let mut trailers = HeaderMap::new();
        trailers.insert("t", "1".parse().unwrap());
        replay.keep(Some(&Frame::trailers(trailers)));
        let body = replay.resume(None).unwrap();
        assert_eq!(body.len(), Some(2));
        let collected = body.collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["t"], "1");
        assert_eq!(collected.to_bytes(), "ab");
    }

    #[test]
    fn past_the_limit_nothing_is_kept_and_nothing_resumes() {
        let mut replay = Replay::default();
        let big = Bytes::from(vec![0u8; REPLAY_LIMIT]);
        replay.keep(Some(&Frame::data(big.clone())));
        assert!(replay.is_whole());
        replay.keep(Some(&data("x")));
        assert!(!replay.is_whole());
        assert!(replay.data.is_empty(), "what was kept is let go");
        assert!(replay.resume(Some(Body::empty())).is_none());
    }

    #[test]
    fn a_body_gone_before_its_end_does_not_resume() {
        let mut replay = Replay::default();
        replay.keep(Some(&data("a")));
        assert!(replay.resume(None).is_none());
    }
}
