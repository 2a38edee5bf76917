//! A request's head on its stream: the body taken out of the request (a
//! copy left in its place for a resend), then the head and a buffered body
//! written in one go, the stream finished or handed on for a streamed body.
//!
//! Why a struct and helpers, not lines of the request's `async` block: a
//! long poll keeps that block's future for its whole wait, and rustc keeps
//! room in it for a local from its first borrow to the end of its scope,
//! across every later `await`. What is borrowed here (the body, the
//! chunks, the send half) is then kept in this one write's state, which
//! the wait for the response reuses (`request.rs`).

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::Request;
use http_body::Body as _;

use super::code;
use super::frame::{self, kind};
use crate::body::Body;

/// A request's body as it goes out.
pub(super) enum Outbound {
    /// Whole: written with the head.
    Buffered(Bytes),
    /// A stream: sent beside the wait for the response.
    Streamed(Body),
}

/// What [`take_body`] took.
pub(super) struct Outgoing {
    pub(super) body: Outbound,
    /// The body was a stream (not sent again by a redirect).
    pub(super) streamed: bool,
    /// A copy of the body was put back in the request, which may then be
    /// sent again (a stream cannot).
    pub(super) replayable: bool,
}

/// Takes `request`'s body out to send it, and puts a copy in its place
/// when it has one (a buffered body shares its bytes).
#[inline]
pub(super) fn take_body(request: &mut Request<Body>) -> Outgoing {
    let body = std::mem::take(request.body_mut());
    let streamed = body.as_buffered().is_none() && !body.is_end_stream();
    let replayable = match body.try_clone() {
        Some(copy) => {
            *request.body_mut() = copy;
            true
        }
        None => false,
    };
    let body = match body.buffered() {
        Some(bytes) => Outbound::Buffered(bytes),
        None => Outbound::Streamed(body),
    };
    Outgoing {
        body,
        streamed,
        replayable,
    }
}

/// Writes the request's head, and a buffered body with it, as quinn's
/// `write_all_chunks` would, then finishes the stream (a buffered body) or
/// hands it back with the body, to be sent beside the wait (a streamed
/// one). quinn's `write_chunks` future is made afresh at each poll: it only
/// borrows the stream (the waker is registered with the connection), so
/// this holds no write future of its own.
///
/// The receiving side waits here too, and comes back with the rest: the
/// reader is 200 bytes, the stream 40. Dropped before it is done (the
/// request past its deadline, or dropped), the receiving side is stopped
/// with H3_REQUEST_CANCELLED, as an unanswered reader is (`reader.rs`), and
/// the sending side reset with it.
pub(super) struct SendHead {
    /// Both `None` once done.
    tx: Option<quinn::SendStream>,
    rx: Option<quinn::RecvStream>,
    chunks: [Bytes; 3],
    written: usize,
    streamed: Option<Body>,
}

impl SendHead {
    #[inline]
    pub(super) fn new(
        tx: quinn::SendStream,
        rx: quinn::RecvStream,
        head: Bytes,
        body: Outbound,
    ) -> SendHead {
        let (chunks, streamed) = match body {
            Outbound::Buffered(bytes) if bytes.is_empty() => ([head, Bytes::new(), bytes], None),
            Outbound::Buffered(bytes) => {
                let mut data_head = BytesMut::with_capacity(9);
                frame::put_head(&mut data_head, kind::DATA, bytes.len() as u64);
                ([head, data_head.freeze(), bytes], None)
            }
            Outbound::Streamed(body) => ([head, Bytes::new(), Bytes::new()], Some(body)),
        };
        SendHead {
            tx: Some(tx),
            rx: Some(rx),
            chunks,
            written: 0,
            streamed,
        }
    }
}

impl Future for SendHead {
    /// The receiving side, and the sending side with a streamed body.
    type Output = (quinn::RecvStream, Option<(quinn::SendStream, Body)>);

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(tx) = this.tx.as_mut() {
            while this.written < this.chunks.len() {
                let write = pin!(tx.write_chunks(&mut this.chunks[this.written..]));
                match write.poll(cx) {
                    Poll::Ready(Ok(w)) => this.written += w.chunks,
                    Poll::Ready(Err(e)) => {
                        // The server stopped the stream or the connection
                        // went: the response side says which.
                        tracing::debug!("HTTP/3 request head not sent whole: {e}");
                        break;
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
        // Polled again after it was done: there is nothing more to give.
        let Some(rx) = this.rx.take() else {
            return Poll::Pending;
        };
        // A streamed body goes on with the stream. Without one, the stream
        // is dropped here: quinn's drop finishes it (or resets it with the
        // server's code if it was stopped), one lock of the connection where
        // `finish` and then the drop took two.
        Poll::Ready((rx, this.tx.take().zip(this.streamed.take())))
    }
}

impl Drop for SendHead {
    fn drop(&mut self) {
        let code = quinn::VarInt::from_u64(code::REQUEST_CANCELLED).unwrap_or(quinn::VarInt::MAX);
        if let Some(rx) = self.rx.as_mut() {
            let _ = rx.stop(code);
        }
        // Not all written: reset, as a cut body is (`body::Unfinished`).
        // quinn's drop would finish the stream after what went out, and a
        // head that went out whole, with a streamed body not begun, would
        // then be a whole request with an empty body.
        if let Some(tx) = self.tx.as_mut() {
            let _ = tx.reset(code);
        }
    }
}
