//! Bodies on a request stream: the request body sent from courier's
//! [`Body`] as DATA frames (trailers as a last HEADERS frame), and the
//! response body read as an [`http_body::Body`] with the limits HTTP/2's
//! has (its `content-length` held to, an optional cap on its size),
//! trailers, and STOP_SENDING with H3_REQUEST_CANCELLED when it is
//! dropped unread, which frees the stream and leaves the connection usable.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body as _, Frame as BodyFrame, SizeHint};

use super::code;
use super::conn::Inner;
use super::frame::{self, kind, Frame};
use super::head::{self, ResponseHead};
use super::reader::{ReadError, StreamReader};
use super::request::{frame_error, head_error, unexpected};
use crate::body::Body;
use crate::error::{Error, ErrorKind};

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

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.inner.stream_ended(self.answered);
    }
}

/// Sends `body` on the stream and finishes it, held to `declared` (the
/// caller's Content-Length) as HTTP/1.1's and HTTP/2's uploads are, and its
/// trailers to what may go on the wire and to the server's
/// SETTINGS_MAX_FIELD_SECTION_SIZE (read from `inner` when they come).
/// `Err` only for the body's own failure or such a breach (the stream is
/// then reset with H3_REQUEST_CANCELLED, never finished: a server or a
/// proxy behind it must not take the bytes for a whole request); the
/// stream's failures end the sending quietly, since the server may have
/// stopped reading on purpose (an early answer, RFC 9114 §4.1), and the
/// response side reports what happened.
pub(crate) async fn send_body(
    tx: quinn::SendStream,
    mut body: Body,
    declared: Option<u64>,
    inner: Arc<Inner>,
) -> Result<(), Error> {
    let mut tx = Unfinished {
        tx,
        finished: false,
    };
    let mut sent = 0u64;
    loop {
        match poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) if data.is_empty() => {}
                Ok(data) => {
                    sent += data.len() as u64;
                    if declared.is_some_and(|n| sent > n) {
                        return Err(invalid("request body longer than its Content-Length"));
                    }
                    let mut head = BytesMut::with_capacity(9);
                    frame::put_head(&mut head, kind::DATA, data.len() as u64);
                    if let Err(e) = tx.tx.write_all_chunks(&mut [head.freeze(), data]).await {
                        tracing::debug!("HTTP/3 request body cut short: {e}");
                        return Ok(());
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        if !crate::validate::is_wire_safe_map(&trailers) {
                            return Err(invalid("a trailer value holds a control character"));
                        }
                        if declared.is_some_and(|n| sent != n) {
                            return Err(invalid("request body shorter than its Content-Length"));
                        }
                        let encoded = head::trailers(&trailers);
                        let peer_max = inner.peer_max_field_section.load(Ordering::Acquire);
                        if encoded.size > peer_max {
                            return Err(Error::new(
                                ErrorKind::InvalidRequest,
                                format!(
                                    "request trailer section of {} bytes over the server's {peer_max}",
                                    encoded.size
                                ),
                            ));
                        }
                        if let Err(e) = tx.tx.write_chunk(encoded.frame).await {
                            tracing::debug!("HTTP/3 request trailers not sent: {e}");
                            return Ok(());
                        }
                        break;
                    }
                }
            },
            Some(Err(e)) => {
                // Reset as it is dropped.
                return Err(Error::new(ErrorKind::Body, e));
            }
            None => {
                if declared.is_some_and(|n| sent != n) {
                    return Err(invalid("request body shorter than its Content-Length"));
                }
                break;
            }
        }
    }
    let _ = tx.tx.finish();
    tx.finished = true;
    Ok(())
}

fn invalid(what: &'static str) -> Error {
    Error::msg(ErrorKind::InvalidRequest, what)
}

/// A request stream's sending side until its body is sent. Dropped before
/// (the request past its deadline, or dropped), it is reset with
/// H3_REQUEST_CANCELLED: quinn's own drop finishes it, and the server would
/// take the body cut short for the whole of it.
struct Unfinished {
    tx: quinn::SendStream,
    finished: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.finished {
            // Stopped by the server before: quinn refuses, nothing is lost.
            let _ = self
                .tx
                .reset(quinn::VarInt::from_u32(code::REQUEST_CANCELLED as u32));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Data,
    /// The trailers are handed on; only the stream's end may follow
    /// (RFC 9114 §4.1: a DATA or HEADERS frame after them is
    /// H3_FRAME_UNEXPECTED). The next poll fails on such a frame if it has
    /// arrived, and otherwise ends the body without waiting for the FIN:
    /// hypercorn 0.18 never sends one after trailers, and a caller
    /// collecting the body would wait out its deadline.
    Trailers,
    Done,
}

/// A response body on an HTTP/3 request stream.
pub(crate) struct RecvBody {
    reader: StreamReader,
    guard: Option<StreamGuard>,
    state: State,
    /// `content-length`, when the response has a body and says it.
    length: Option<u64>,
    received: u64,
    /// Largest body accepted ([`RecvBody::limit`]).
    limit: Option<u64>,
}

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
        mut reader: StreamReader,
        guard: StreamGuard,
        head: &ResponseHead,
        expects_body: bool,
    ) -> RecvBody {
        let status = head.parts.status;
        let bodyless = !expects_body
            || status == http::StatusCode::NO_CONTENT
            || status == http::StatusCode::NOT_MODIFIED;
        let length = head.length.filter(|_| !bodyless);
        reader.set_unanswered(false);
        RecvBody {
            reader,
            guard: Some(guard),
            state: State::Data,
            length: if bodyless { Some(0) } else { length },
            received: 0,
            limit: None,
        }
    }

    /// Fails the body with [`ErrorKind::BodyTooLarge`] (and stops the
    /// stream) once more than `max` bytes arrived, or at once if its
    /// `content-length` says it will.
    #[cfg(any(test, feature = "internal-hooks"))]
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
    /// The error for a body that ends (trailers or FIN) before its
    /// content-length.
    fn short_of_its_length(&self) -> Option<Error> {
        let n = self.length.filter(|n| self.received < *n)?;
        Some(Error::new(
            ErrorKind::Body,
            format!(
                "response body ended at {} of its content-length {n}",
                self.received
            ),
        ))
    }

    fn fail(&mut self, error: Error) -> Poll<Option<Result<BodyFrame<Bytes>, Error>>> {
        self.reader.stop(code::REQUEST_CANCELLED);
        self.finish(false);
        Poll::Ready(Some(Err(error)))
    }

    fn inner(&self) -> Option<Arc<Inner>> {
        self.guard.as_ref().map(|g| Arc::clone(&g.inner))
    }
}

impl http_body::Body for RecvBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Error>>> {
        let this = self.get_mut();
        if this.state == State::Done {
            return Poll::Ready(None);
        }
        if let (Some(limit), Some(length)) = (this.limit, this.length) {
            if length > limit {
                return this.fail(Error::new(
                    ErrorKind::BodyTooLarge,
                    format!("content-length {length} over the limit of {limit}"),
                ));
            }
        }
        let Some(inner) = this.inner() else {
            return Poll::Ready(None);
        };
        if this.state == State::Trailers {
            return match this.reader.poll_frame(cx) {
                Poll::Ready(Ok(Some(frame))) => {
                    let error = unexpected(&inner, &frame, "after the trailers");
                    this.finish(false);
                    Poll::Ready(Some(Err(error)))
                }
                // The end, or not here yet: not waited for.
                _ => {
                    this.finish(true);
                    Poll::Ready(None)
                }
            };
        }
        match ready!(this.reader.poll_frame(cx)) {
            Ok(Some(Frame::Data(data))) => {
                this.received += data.len() as u64;
                // A body error, as one cut short is, and as HTTP/2's is.
                if this.length.is_some_and(|n| this.received > n) {
                    return this.fail(Error::new(
                        ErrorKind::Body,
                        format!(
                            "response body longer than its content-length ({:?})",
                            this.length
                        ),
                    ));
                }
                if this.limit.is_some_and(|max| this.received > max) {
                    return this.fail(Error::new(
                        ErrorKind::BodyTooLarge,
                        format!("response body over the limit of {:?}", this.limit),
                    ));
                }
                Poll::Ready(Some(Ok(BodyFrame::data(data))))
            }
            Ok(Some(Frame::Headers(block))) => {
                if let Some(short) = this.short_of_its_length() {
                    return this.fail(short);
                }
                match head::trailer_fields(&block, inner.config.max_field_section) {
                    Ok(trailers) => {
                        this.state = State::Trailers;
                        if let Some(guard) = &mut this.guard {
                            guard.answered = true;
                        }
                        Poll::Ready(Some(Ok(BodyFrame::trailers(trailers))))
                    }
                    Err(e) => {
                        let error = head_error(&inner, &mut this.reader, e, "trailer");
                        this.finish(false);
                        Poll::Ready(Some(Err(error)))
                    }
                }
            }
            Ok(Some(frame)) => {
                let error = unexpected(&inner, &frame, "in a response body");
                this.finish(false);
                Poll::Ready(Some(Err(error)))
            }
            Ok(None) => {
                if let Some(short) = this.short_of_its_length() {
                    return this.fail(short);
                }
                this.finish(true);
                Poll::Ready(None)
            }
            Err(ReadError::Frame(e)) => {
                let error = frame_error(&inner, &mut this.reader, e, "response body");
                this.finish(false);
                Poll::Ready(Some(Err(error)))
            }
            Err(e) => {
                let error = match inner.signals.failure() {
                    Some(why) => Error::new(ErrorKind::Protocol, why.to_owned()),
                    None => Error::new(ErrorKind::Body, format!("HTTP/3 response body: {e}")),
                };
                this.finish(false);
                Poll::Ready(Some(Err(error)))
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
        if self.state == State::Data {
            // Unread: the server stops sending, the stream is freed, the
            // connection goes on. (After the trailers the response is
            // whole: quinn's own drop stops the stream quietly.)
            self.reader.stop(code::REQUEST_CANCELLED);
        }
        // The guard (dropped with the body, if still held) frees the slot.
    }
}
