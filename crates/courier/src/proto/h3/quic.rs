//! h3's view of the QUIC connection: h3-quinn's, wrapped to observe what
//! neither h3 nor quinn exposes. A request stream open that has to wait
//! shows the peer's MAX_STREAMS was reached ([`Signals::open_blocked`]);
//! each one opened is counted; each server-initiated unidirectional stream
//! passes through a [`ControlTap`] until it shows it is not the control
//! stream. Everything else is h3-quinn's, unchanged.

use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};

use bytes::Bytes;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId};

use super::guard::FrameGuard;
use super::signals::Signals;
use super::tap::{ControlTap, Seen};

type Send = h3_quinn::SendStream<Bytes>;

/// The QUIC connection as h3 drives it.
pub(crate) struct Conn {
    inner: h3_quinn::Connection,
    signals: Arc<Signals>,
    /// The bound on a frame other than DATA ([`FrameGuard`]).
    max_frame: u64,
}

impl Conn {
    pub(crate) fn new(quic: quinn::Connection, signals: Arc<Signals>, max_frame: u64) -> Conn {
        Conn {
            inner: h3_quinn::Connection::new(quic),
            signals,
            max_frame,
        }
    }
}

/// Opens request streams, counting them and the waits.
#[derive(Clone)]
pub(crate) struct Opener {
    inner: h3_quinn::OpenStreams,
    signals: Arc<Signals>,
    max_frame: u64,
}

/// A unidirectional stream from the server, watched while it may be the
/// control stream.
pub(crate) struct Recv {
    inner: h3_quinn::RecvStream,
    tap: Option<Box<ControlTap>>,
    signals: Arc<Signals>,
    guard: FrameGuard,
}

/// A request stream: h3-quinn's halves, the receiving one in a [`Reader`].
pub(crate) struct Bidi {
    send: Send,
    recv: Reader,
}

impl Bidi {
    fn new(stream: h3_quinn::BidiStream<Bytes>, max_frame: u64) -> Bidi {
        let (send, recv) = quic::BidiStream::<Bytes>::split(stream);
        Bidi {
            send,
            recv: Reader {
                inner: recv,
                reading: false,
                guard: FrameGuard::request(max_frame),
            },
        }
    }
}

/// h3-quinn's receiving half, made safe to stop at any time: h3-quinn
/// moves its quinn stream into the read in progress, and its
/// `stop_sending` panics (an `unwrap` of the moved-out stream) when called
/// then, as dropping a response body mid-read does.
pub(crate) struct Reader {
    inner: h3_quinn::RecvStream,
    /// A read is in progress (the last poll was `Pending`).
    reading: bool,
    guard: FrameGuard,
}

/// Chunks read in one poll that left nothing for h3 (all unknown frames)
/// before the task yields, so a flood of them cannot starve it.
const EMPTY_READS: usize = 16;

/// Reads through `guard`: the bytes h3 may see, never an empty chunk; a
/// frame over the bound fails the stream.
fn guarded_read(
    guard: &mut FrameGuard,
    cx: &mut Context<'_>,
    mut read: impl FnMut(&mut Context<'_>) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>>,
) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
    for _ in 0..EMPTY_READS {
        let chunk = match guard.take_rest() {
            Some(rest) => rest,
            None => match ready!(read(cx))? {
                Some(chunk) => chunk,
                None => return Poll::Ready(Ok(None)),
            },
        };
        match guard.filter(chunk) {
            Ok(passed) if passed.is_empty() => {}
            Ok(passed) => return Poll::Ready(Ok(Some(passed))),
            Err(e) => return Poll::Ready(Err(StreamErrorIncoming::Unknown(Box::new(e)))),
        }
    }
    cx.waker().wake_by_ref();
    Poll::Pending
}

impl quic::RecvStream for Reader {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        let (inner, reading) = (&mut self.inner, &mut self.reading);
        guarded_read(&mut self.guard, cx, |cx| {
            let polled = inner.poll_data(cx);
            *reading = polled.is_pending();
            polled
        })
    }

    fn stop_sending(&mut self, error_code: u64) {
        if self.reading {
            // Settle the read without waiting: if it is done, the stream is
            // back and can be stopped with our code; if not, dropping the
            // read drops the stream, and quinn stops it then (code 0).
            let mut cx = Context::from_waker(Waker::noop());
            if self.inner.poll_data(&mut cx).is_pending() {
                return;
            }
            self.reading = false;
        }
        self.inner.stop_sending(error_code);
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}

impl quic::RecvStream for Bidi {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        self.recv.poll_data(cx)
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.recv.stop_sending(error_code);
    }

    fn recv_id(&self) -> StreamId {
        self.recv.recv_id()
    }
}

impl quic::SendStream<Bytes> for Bidi {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_ready(cx)
    }

    fn send_data<T: Into<quic::WriteBuf<Bytes>>>(
        &mut self,
        data: T,
    ) -> Result<(), StreamErrorIncoming> {
        self.send.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.send.reset(reset_code);
    }

    fn send_id(&self) -> StreamId {
        self.send.send_id()
    }
}

impl quic::BidiStream<Bytes> for Bidi {
    type SendStream = Send;
    type RecvStream = Reader;

    fn split(self) -> (Send, Reader) {
        (self.send, self.recv)
    }
}

/// `poll_open_bidi` with the wait observed: a `Pending` is the peer's
/// stream limit (or its credit still in flight; [`Signals`] says why that
/// does not mislead).
fn open_bidi<O: quic::OpenStreams<Bytes, BidiStream = h3_quinn::BidiStream<Bytes>>>(
    inner: &mut O,
    signals: &Signals,
    max_frame: u64,
    cx: &mut Context<'_>,
) -> Poll<Result<Bidi, StreamErrorIncoming>> {
    match inner.poll_open_bidi(cx) {
        Poll::Pending => {
            signals.open_blocked();
            Poll::Pending
        }
        Poll::Ready(Ok(stream)) => {
            signals.stream_opened();
            Poll::Ready(Ok(Bidi::new(stream, max_frame)))
        }
        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
    }
}

impl quic::OpenStreams<Bytes> for Opener {
    type BidiStream = Bidi;
    type SendStream = Send;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bidi, StreamErrorIncoming>> {
        open_bidi(&mut self.inner, &self.signals, self.max_frame, cx)
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Send, StreamErrorIncoming>> {
        self.inner.poll_open_send(cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        quic::OpenStreams::<Bytes>::close(&mut self.inner, code, reason);
    }
}

impl quic::OpenStreams<Bytes> for Conn {
    type BidiStream = Bidi;
    type SendStream = Send;

    fn poll_open_bidi(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bidi, StreamErrorIncoming>> {
        open_bidi(&mut self.inner, &self.signals, self.max_frame, cx)
    }

    fn poll_open_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<Send, StreamErrorIncoming>> {
        self.inner.poll_open_send(cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        quic::OpenStreams::<Bytes>::close(&mut self.inner, code, reason);
    }
}

impl quic::Connection<Bytes> for Conn {
    type RecvStream = Recv;
    type OpenStreams = Opener;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Recv, ConnectionErrorIncoming>> {
        let inner = ready!(quic::Connection::<Bytes>::poll_accept_recv(
            &mut self.inner,
            cx
        ))?;
        Poll::Ready(Ok(Recv {
            inner,
            tap: Some(Box::default()),
            signals: Arc::clone(&self.signals),
            guard: FrameGuard::unidirectional(self.max_frame),
        }))
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Bidi, ConnectionErrorIncoming>> {
        // HTTP/3 servers open none (h3 closes the connection if one does).
        let stream = ready!(quic::Connection::<Bytes>::poll_accept_bidi(
            &mut self.inner,
            cx
        ))?;
        Poll::Ready(Ok(Bidi::new(stream, self.max_frame)))
    }

    fn opener(&self) -> Opener {
        Opener {
            inner: quic::Connection::<Bytes>::opener(&self.inner),
            signals: Arc::clone(&self.signals),
            max_frame: self.max_frame,
        }
    }
}

impl quic::RecvStream for Recv {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        let inner = &mut self.inner;
        let data = ready!(guarded_read(&mut self.guard, cx, |cx| inner.poll_data(cx)))?;
        if let (Some(tap), Some(bytes)) = (self.tap.as_mut(), data.as_ref()) {
            let signals = &self.signals;
            tap.feed(bytes, &mut |seen| match seen {
                Seen::Goaway(id) => signals.set_goaway(id),
                Seen::Settings(settings) => signals.set_settings(settings),
            });
            if !tap.is_on() {
                self.tap = None;
            }
        }
        Poll::Ready(Ok(data))
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.inner.stop_sending(error_code);
    }

    fn recv_id(&self) -> StreamId {
        self.inner.recv_id()
    }
}
