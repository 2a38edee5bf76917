//! The sending half of a request stream, h3-quinn's, wrapped so that a
//! request known whole when it opens (no body, an empty one, a buffered
//! one) ends with its last frame: its frames are held until h3 finishes
//! the stream, then written and finished in one go, so the FIN travels in
//! the same QUIC STREAM frame as the HEADERS (and the DATA), as quic-go
//! and curl send it. Written as h3 hands them over, the HEADERS leave at
//! once and the FIN follows alone in a later packet, which servers handle
//! badly (hypercorn with aioquic raises `KeyError` on it and its QUIC
//! listener dies). A streamed body is not held: its HEADERS must not wait
//! for a body that may itself wait for the response.
//!
//! h3 says nothing about which stream is which, so the choice is made
//! where the request is sent ([`whole`]) and read where the stream is
//! opened, inside that send ([`Sender::new`]).
//!
//! What is held is already in memory (the head h3 encoded, the buffered
//! body's bytes, shared, not copied), so holding costs no bound of its
//! own; quinn's stream window still paces the writing at the finish.
//! quinn writes and finishes under two locks (it has no write-with-FIN:
//! quinn-rs/quinn#1492), so its connection task, woken by the write, could
//! send the frames before the FIN is set. Inside a task of the runtime it
//! runs only after the caller yields, after the FIN; outside (`block_on`
//! on a multi-threaded runtime) it would run at once on another worker, so
//! there the flush and finish are done by a task ([`outside_a_worker`]).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h3::quic::{self, StreamErrorIncoming, StreamId, WriteBuf};
use tokio::task::JoinHandle;

tokio::task_local! {
    /// The request stream opened in this scope is known whole.
    static WHOLE: bool;
}

/// Runs `open` (h3's `send_request`) with the stream it opens held until
/// its finish when `whole`.
pub(crate) async fn whole<F: Future>(whole: bool, open: F) -> F::Output {
    WHOLE.scope(whole, open).await
}

/// h3-quinn's sending half, holding a whole request's frames until the
/// finish.
pub(crate) struct Sender {
    /// `None` once handed to a task that finishes it ([`flush_and_finish`]).
    inner: Option<h3_quinn::SendStream<Bytes>>,
    id: StreamId,
    /// `Some` while holding: frames not yet given to quinn, in order.
    held: Option<Held>,
    /// The task finishing the stream, when one does.
    finishing: Option<JoinHandle<Result<(), StreamErrorIncoming>>>,
}

impl Sender {
    /// Holds when opened inside [`whole`]`(true, …)`.
    pub(crate) fn new(inner: h3_quinn::SendStream<Bytes>) -> Sender {
        let hold = WHOLE.try_with(|whole| *whole).unwrap_or(false);
        Sender {
            id: quic::SendStream::send_id(&inner),
            inner: Some(inner),
            held: hold.then(Held::default),
            finishing: None,
        }
    }
}

/// Held frames up to this many bytes in all are copied into one write, so
/// quinn takes them in one go (each write of its own wakes its connection
/// task); larger ones are written as they are, and span packets anyway.
const ONE_WRITE: usize = 16 * 1024;

/// Frames held, and those joined into one write ([`ONE_WRITE`]) not yet
/// taken by quinn.
#[derive(Default)]
struct Held {
    frames: VecDeque<WriteBuf<Bytes>>,
    joined: Bytes,
}

/// Writes `held` and finishes `stream`, with no yield between the last
/// write and the FIN (a wait here is quinn's flow control).
fn flush_and_finish(
    stream: &mut h3_quinn::SendStream<Bytes>,
    held: &mut Held,
    cx: &mut Context<'_>,
) -> Poll<Result<(), StreamErrorIncoming>> {
    let total: usize = held.frames.iter().map(Buf::remaining).sum();
    if held.frames.len() > 1 && total <= ONE_WRITE {
        let mut one = BytesMut::with_capacity(total);
        for frame in held.frames.drain(..) {
            one.put(frame);
        }
        held.joined = one.freeze();
    }
    while held.joined.has_remaining() {
        ready!(quic::SendStreamUnframed::poll_send(
            stream,
            cx,
            &mut held.joined
        ))?;
    }
    loop {
        ready!(quic::SendStream::poll_ready(stream, cx))?;
        match held.frames.pop_front() {
            Some(frame) => quic::SendStream::send_data(stream, frame)?,
            None => return quic::SendStream::poll_finish(stream, cx),
        }
    }
}

/// Whether the caller runs outside the runtime's tasks on a multi-threaded
/// runtime (the future `block_on` drives, as a program's `main`). quinn's
/// write there wakes its connection task onto an idle worker at once, and
/// that one may send the frames before the FIN is set. Inside a task the
/// woken connection task waits in the worker's own slot until the caller
/// yields, after the FIN.
fn outside_a_worker() -> bool {
    tokio::task::try_id().is_none()
        && tokio::runtime::Handle::try_current().is_ok_and(|handle| {
            handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread
        })
}

impl quic::SendStream<Bytes> for Sender {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        match self.inner.as_mut() {
            Some(inner) if self.held.is_none() => inner.poll_ready(cx),
            // Holding (or finishing): nothing waits to be written.
            _ => Poll::Ready(Ok(())),
        }
    }

    fn send_data<T: Into<WriteBuf<Bytes>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        match (self.held.as_mut(), self.inner.as_mut()) {
            (Some(held), _) => {
                held.frames.push_back(data.into());
                Ok(())
            }
            (None, Some(inner)) => inner.send_data(data),
            (None, None) => Err(StreamErrorIncoming::Unknown(Box::new(
                std::io::Error::other("HTTP/3 request stream already finished"),
            ))),
        }
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        if let Some(task) = self.finishing.as_mut() {
            let done = ready!(Pin::new(task).poll(cx));
            self.finishing = None;
            return Poll::Ready(done.unwrap_or(Ok(())));
        }
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let Some(held) = self.held.as_mut() else {
            return inner.poll_finish(cx);
        };
        if outside_a_worker() {
            let (mut stream, mut held) = (self.inner.take(), self.held.take());
            self.finishing = Some(tokio::spawn(std::future::poll_fn(move |cx| {
                match (stream.as_mut(), held.as_mut()) {
                    (Some(stream), Some(held)) => flush_and_finish(stream, held, cx),
                    _ => Poll::Ready(Ok(())),
                }
            })));
            return self.poll_finish(cx);
        }
        let done = ready!(flush_and_finish(inner, held, cx));
        self.held = None;
        Poll::Ready(done)
    }

    fn reset(&mut self, reset_code: u64) {
        self.held = None;
        if let Some(inner) = self.inner.as_mut() {
            inner.reset(reset_code);
        }
    }

    fn send_id(&self) -> StreamId {
        self.id
    }
}

impl Drop for Sender {
    /// A request dropped with its frames still held never went: the stream
    /// is reset, not finished empty (quinn finishes a dropped stream).
    fn drop(&mut self) {
        if let (Some(_), Some(inner)) = (self.held.as_ref(), self.inner.as_mut()) {
            quic::SendStream::reset(inner, h3::error::Code::H3_REQUEST_CANCELLED.value());
        }
    }
}
