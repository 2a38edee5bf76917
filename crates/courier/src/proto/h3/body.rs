//! Bodies on a request stream: the request body sent from courier's
//! [`Body`], and the response body read as an [`http_body::Body`] with the
//! limits HTTP/2's has (its `content-length` held to, an optional cap on
//! its size), trailers, and STOP_SENDING with H3_REQUEST_CANCELLED when it
//! is dropped unread, which frees the stream and leaves the connection
//! usable.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use h3::client::RequestStream;
use h3::error::{Code, StreamError};
use http_body::{Body as _, Frame, SizeHint};

use super::conn::Inner;
use crate::body::Body;
use crate::error::{Error, ErrorKind};

type SendHalf = RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;
type RecvHalf = RequestStream<super::quic::Reader, Bytes>;

/// Counts the request's stream as open until the response ends or is
/// dropped.
pub(crate) struct StreamGuard {
    inner: Arc<Inner>,
    answered: bool,
}

impl StreamGuard {
    pub(super) fn new(inner: Arc<Inner>) -> StreamGuard {
        StreamGuard {
            inner,
            answered: false,
        }
    }
}

impl StreamGuard {
    /// See [`Inner::failed`].
    pub(super) fn failed(&self, e: &StreamError) {
        self.inner.failed(e);
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.inner.stream_ended(self.answered);
    }
}

/// Sends `body` on the stream and finishes it. `Err` only for the body's
/// own failure (the stream is then reset with H3_REQUEST_CANCELLED); the
/// stream's failures end the sending quietly, since the server may have
/// stopped reading on purpose (an early answer, RFC 9114 §4.1), and the
/// response side reports what happened.
pub(crate) async fn send_body(mut tx: SendHalf, mut body: Body) -> Result<(), Error> {
    loop {
        match poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) if data.is_empty() => {}
                Ok(data) => {
                    if let Err(e) = tx.send_data(data).await {
                        tracing::debug!("HTTP/3 request body cut short: {e}");
                        return Ok(());
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        if let Err(e) = tx.send_trailers(trailers).await {
                            tracing::debug!("HTTP/3 request trailers not sent: {e}");
                            return Ok(());
                        }
                        break;
                    }
                }
            },
            Some(Err(e)) => {
                tx.stop_stream(Code::H3_REQUEST_CANCELLED);
                return Err(Error::new(ErrorKind::Body, e));
            }
            None => break,
        }
    }
    if let Err(e) = tx.finish().await {
        tracing::debug!("HTTP/3 request end not sent: {e}");
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Data,
    Trailers,
    Done,
}

/// A response body on an HTTP/3 request stream.
pub(crate) struct RecvBody {
    rx: RecvHalf,
    guard: Option<StreamGuard>,
    state: State,
    /// `content-length`, when the response has a body and says it.
    length: Option<u64>,
    received: u64,
    /// Largest body accepted ([`RecvBody::limit`]).
    limit: Option<u64>,
    /// "No more data" answers from h3 in a row (see [`EMPTY_DATA_FRAMES`]).
    ends: u8,
}

/// h3 0.0.8 answers "no more data" for an empty DATA frame (RFC 9114 allows
/// them; Caddy 2.6.2 sends one) as it does at the end of the data, and a
/// trailers read after it takes the next DATA frame for a connection
/// error. So the data is asked for again: at the end of the stream, or
/// after trailers, h3 answers the same at once, and a body that goes on
/// answers its data. This many answers in a row are its end: up to one
/// fewer empty DATA frames in a row are read through (a peer sending more
/// gets the connection error, never a body cut short silently).
const EMPTY_DATA_FRAMES: u8 = 4;

impl std::fmt::Debug for RecvBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBody")
            .field("state", &self.state)
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl RecvBody {
    pub(super) fn new(
        rx: RecvHalf,
        guard: StreamGuard,
        head: &http::response::Parts,
        expects_body: bool,
    ) -> RecvBody {
        let bodyless = !expects_body
            || head.status == http::StatusCode::NO_CONTENT
            || head.status == http::StatusCode::NOT_MODIFIED;
        let length = head
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .filter(|_| !bodyless);
        RecvBody {
            rx,
            guard: Some(guard),
            state: State::Data,
            length: if bodyless { Some(0) } else { length },
            received: 0,
            limit: None,
            ends: 0,
        }
    }

    /// Fails the body with [`ErrorKind::BodyTooLarge`] (and stops the
    /// stream) once more than `max` bytes arrived, or at once if its
    /// `content-length` says it will.
    pub(crate) fn limit(&mut self, max: u64) {
        self.limit = Some(max);
    }

    /// Ends the stream's life here: `answered` when read to its end.
    fn finish(&mut self, answered: bool) {
        self.state = State::Done;
        if let Some(mut guard) = self.guard.take() {
            guard.answered = answered;
        }
    }

    /// Fails the body: the stream is stopped (the server stops sending).
    fn fail(
        &mut self,
        kind: ErrorKind,
        message: String,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.rx.stop_sending(Code::H3_REQUEST_CANCELLED);
        self.finish(false);
        Poll::Ready(Some(Err(Error::new(kind, message))))
    }
}

fn body_error(e: StreamError) -> (ErrorKind, String) {
    if let Some(fault) = super::request::peer_fault(&e, "response body") {
        return fault;
    }
    match e {
        StreamError::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => (
            ErrorKind::HeadersTooLarge,
            format!("trailer section of {actual_size} bytes over {max_size}"),
        ),
        e => (ErrorKind::Body, format!("HTTP/3 response body: {e}")),
    }
}

impl http_body::Body for RecvBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        loop {
            match this.state {
                State::Done => return Poll::Ready(None),
                State::Data => {
                    if let (Some(limit), Some(length)) = (this.limit, this.length) {
                        if length > limit {
                            return this.fail(
                                ErrorKind::BodyTooLarge,
                                format!("content-length {length} over the limit of {limit}"),
                            );
                        }
                    }
                    match ready!(this.rx.poll_recv_data(cx)) {
                        Ok(Some(mut chunk)) => {
                            this.ends = 0;
                            let data = chunk.copy_to_bytes(chunk.remaining());
                            if data.is_empty() {
                                continue;
                            }
                            this.received += data.len() as u64;
                            if this.length.is_some_and(|n| this.received > n) {
                                return this.fail(
                                    ErrorKind::Protocol,
                                    format!(
                                        "response body longer than its content-length ({:?})",
                                        this.length
                                    ),
                                );
                            }
                            if this.limit.is_some_and(|max| this.received > max) {
                                return this.fail(
                                    ErrorKind::BodyTooLarge,
                                    format!("response body over the limit of {:?}", this.limit),
                                );
                            }
                            return Poll::Ready(Some(Ok(Frame::data(data))));
                        }
                        Ok(None) if this.ends + 1 < EMPTY_DATA_FRAMES => {
                            this.ends += 1;
                        }
                        Ok(None) => {
                            if let Some(n) = this.length.filter(|n| this.received < *n) {
                                return this.fail(
                                    ErrorKind::Body,
                                    format!(
                                        "response body ended at {} of its content-length {n}",
                                        this.received
                                    ),
                                );
                            }
                            this.state = State::Trailers;
                        }
                        Err(e) => {
                            if let Some(guard) = &this.guard {
                                guard.failed(&e);
                            }
                            let (kind, message) = body_error(e);
                            return this.fail(kind, message);
                        }
                    }
                }
                State::Trailers => {
                    let trailers = ready!(this.rx.poll_recv_trailers(cx));
                    return match trailers {
                        Ok(Some(trailers)) => {
                            this.finish(true);
                            Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                        }
                        Ok(None) => {
                            this.finish(true);
                            Poll::Ready(None)
                        }
                        Err(e) => {
                            if let Some(guard) = &this.guard {
                                guard.failed(&e);
                            }
                            let (kind, message) = body_error(e);
                            this.fail(kind, message)
                        }
                    };
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.state == State::Done
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n.saturating_sub(self.received)),
            None => SizeHint::default(),
        }
    }
}

impl Drop for RecvBody {
    fn drop(&mut self) {
        if self.state != State::Done {
            // Unread: the server stops sending, the stream is freed, the
            // connection goes on.
            self.rx.stop_sending(Code::H3_REQUEST_CANCELLED);
        }
        // The guard (dropped with the body, if still held) frees the slot.
    }
}
