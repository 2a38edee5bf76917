//! One HTTP/1.1 connection, driven by the task of the request that holds it.

use std::future::{poll_fn, Future};
use std::io::{self, Write as _};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use http_body::Frame;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::Instant;

use super::body::{Decoder, Step};
use super::deadline::{self, Deadline};
use super::decode::{self, Asked, Head, Parsed};
use super::encode::{self, BodyFraming, ExpectContinue, Forward};
use super::upload::{Out, Upload};
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::{Answer, HandedBack, SendError, SendResult, Sent};
use crate::proto::Io;

/// Reads ask for at least this much room (and the buffer starts this big).
const READ_MIN: usize = 8 * 1024;
/// A body known to be large is read this much at a time.
const READ_MAX: usize = 64 * 1024;
/// Buffered request bodies up to this size are copied behind the head, so the
/// whole request is one write; larger ones go out in one vectored write.
pub(crate) const INLINE_BODY: usize = 16 * 1024;

/// An HTTP/1.1 client connection: one request at a time, written and read by
/// whoever holds it.
pub(crate) struct Connection {
    io: Box<dyn Io>,
    /// Kept across responses: after the first one, reading allocates nothing.
    read_buf: BytesMut,
    /// Where heads and small body pieces are copied to (see [`super::arena`]).
    arena: BytesMut,
    write_buf: Vec<u8>,
    /// Where the current response's body stands.
    body: Decoder,
    /// The request being written; its body may go on after the response
    /// head (see [`super::upload`]).
    upload: Upload,
    /// Neither side asked to close, and nothing went wrong.
    pub(super) keep_alive: bool,
    max_head: usize,
    /// When a body asks for `100 Continue`, and how long it waits for it.
    expect: ExpectContinue,
    /// The current response's 1xx heads, bounded.
    interim: decode::Interim,
    /// The last responses' header names (see [`decode::Names`]).
    names: decode::Names,
    /// Requests go through an HTTP forward proxy.
    forward: Option<Arc<Forward>>,
    /// The current request's deadline, on one timer (see [`super::deadline`]).
    deadline: Deadline,
}

/// A request whose head [`Connection::prepare`] encoded, ready for its exchange.
pub(crate) struct Prepared {
    framing: Result<BodyFraming, Error>,
    asked: Asked,
}

/// How a step of writing a request ended.
enum Written<T> {
    Done(T),
    /// The server answered before the request was written.
    Answered(Head),
}

/// Whether a failed exchange hands its request back, and as what.
enum Resend {
    No,
    /// Not a byte of it was written.
    Unsent,
    /// Written, and no byte of response came back.
    Unanswered,
}

impl AsMut<Connection> for Connection {
    fn as_mut(&mut self) -> &mut Connection {
        self
    }
}

impl Resend {
    /// The failure for the caller, with the request when it may be sent again.
    fn failure(self, error: Error, req: Request<Body>) -> SendError {
        let handed_back = match self {
            Resend::No => None,
            Resend::Unsent => Some(HandedBack::Unsent(req)),
            Resend::Unanswered => Some(HandedBack::Unanswered(req)),
        };
        SendError { error, handed_back }
    }
}

impl Connection {
    /// A connection over `io`, refusing response heads over `max_head`
    /// bytes, its request bodies asking for `100 Continue` as `expect` says.
    pub(crate) fn new(io: Box<dyn Io>, max_head: usize, expect: ExpectContinue) -> Connection {
        Connection {
            io,
            read_buf: BytesMut::with_capacity(READ_MIN),
            arena: BytesMut::new(),
            write_buf: Vec::new(),
            body: Decoder::Done,
            upload: Upload::idle(),
            keep_alive: true,
            max_head: max_head.max(1),
            expect,
            interim: decode::Interim::default(),
            names: decode::Names::default(),
            forward: None,
            deadline: Deadline::default(),
        }
    }

    /// The next exchange (writing the request, reading its head) fails with
    /// [`deadline::DeadlinePassed`] at `deadline`, on the connection's timer.
    pub(crate) fn keep_deadline(&mut self, deadline: Instant) {
        self.deadline.keep(deadline);
    }

    /// Writes every request for an HTTP forward proxy (absolute form,
    /// `Proxy-Authorization`).
    pub(crate) fn via_proxy(&mut self, forward: Arc<Forward>) {
        self.forward = Some(forward);
    }

    /// Whether an idle connection still looks open: one non-blocking read
    /// that must find nothing to read. The server closing it (or sending
    /// anything unasked) makes it unusable.
    pub(crate) fn is_open(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        Pin::new(&mut self.io)
            .poll_read(&mut cx, &mut buf)
            .is_pending()
    }

    /// The last response was read to its end, its request was written to
    /// its end, and the connection may carry another.
    pub(crate) fn is_reusable(&self) -> bool {
        self.keep_alive
            && self.body.is_done()
            && self.read_buf.is_empty()
            && !self.upload.is_active()
    }

    /// The current response's body has been read to its end.
    pub(crate) fn body_done(&self) -> bool {
        self.body.is_done()
    }

    /// The byte stream under the connection (after a switch of protocols).
    pub(super) fn io_mut(&mut self) -> &mut Box<dyn Io> {
        &mut self.io
    }

    /// The byte stream under the connection.
    pub(super) fn io_ref(&self) -> &dyn Io {
        &*self.io
    }

    /// What was read and not taken as response bytes (after a switch of
    /// protocols: the new protocol's first bytes).
    pub(super) fn read_buf_mut(&mut self) -> &mut BytesMut {
        &mut self.read_buf
    }

    /// What was read from the stream and not (yet) taken as response bytes.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn unread(&self) -> &[u8] {
        &self.read_buf
    }

    /// Writes the request and reads the response head; the body is then read
    /// with [`poll_frame`](Connection::poll_frame).
    ///
    /// The future owns the connection (`conn`: a box, or a pooled connection
    /// that holds one) and hands it back with the result, so it borrows
    /// nothing and can sit in a hand-written future next to the lease. The
    /// request is kept (not cloned) until the head arrives, so a request the
    /// connection never answered can be handed back for a retry. The future is
    /// small: each step is one `poll_fn` over the connection's own state; the
    /// request's writing is in the connection (see [`super::upload`]), which
    /// lets it go on after the head when the server answers early.
    // The pool sends in two steps (`prepare`, then `send_prepared`); this is
    // the one-step form for the tests and the fuzzing hooks.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn send<C>(
        mut conn: C,
        req: Request<Body>,
        host: &HeaderValue,
        defaults: &HeaderMap,
    ) -> impl Future<Output = (C, SendResult)> + Send
    where
        C: AsMut<Connection> + Send,
    {
        // The head is encoded before the future exists, so the future keeps
        // no reference to the host or the defaults.
        let prepared = conn.as_mut().prepare(&req, host, defaults);
        Connection::send_prepared(conn, req, prepared, || ())
    }

    /// The first half of [`send`](Connection::send): encodes the request head (the only
    /// step that needs the host and the default headers), readies the connection.
    pub(crate) fn prepare(
        &mut self,
        req: &Request<Body>,
        host: &HeaderValue,
        defaults: &HeaderMap,
    ) -> Prepared {
        self.write_buf.clear();
        let (min, forward) = (self.expect.min_size, self.forward.as_deref());
        let present = encode::Present::of(req.headers());
        let out = &mut self.write_buf;
        let framing = encode::head(req, present, host, defaults, min, forward, out);
        let held = matches!(framing, Ok(f) if encode::asks_continue(req, f, defaults, min));
        let held_at = held.then_some(self.write_buf.len());
        self.upload.hold_body(held_at, self.expect.wait);
        self.keep_alive = !(present.connection && decode::connection_has(req.headers(), b"close"));
        Prepared {
            framing,
            asked: Asked::of(req, present.upgrade),
        }
    }

    /// The second half of [`send`](Connection::send): the exchange of the request
    /// [`prepare`](Connection::prepare)d, a future that borrows nothing. `body` makes the
    /// answer's body handle: the answer is built once as the caller's type, not moved into it.
    pub(crate) fn send_prepared<C: AsMut<Connection> + Send, B>(
        mut conn: C,
        mut req: Request<Body>,
        prepared: Prepared,
        body: impl FnOnce() -> B + Send,
    ) -> impl Future<Output = (C, SendResult<B>)> + Send {
        let Prepared { framing, asked } = prepared;
        // The request lives here once; `exchange` works on it by reference.
        async move {
            let streamed = req.body().as_buffered().is_none();
            let exchanged = conn.as_mut().exchange(&mut req, framing, asked).await;
            conn.as_mut().deadline.clear();
            let result = match exchanged {
                // Answered: the request is handed back (moved, not cloned):
                // its URI is the response's, the rest a redirect's.
                Ok(mut head) => {
                    let (uri, sent) = Sent::answered(req, streamed);
                    Ok(Answer {
                        length: head.declared_length,
                        shared: head.shared.take(),
                        head: head.into_parts(),
                        body: body(),
                        uri,
                        sent,
                    })
                }
                Err((error, resend)) => Err(resend.failure(error, req)),
            };
            (conn, result)
        }
    }

    async fn exchange(
        &mut self,
        req: &mut Request<Body>,
        framing: Result<BodyFraming, Error>,
        asked: Asked,
    ) -> Result<Head, (Error, Resend)> {
        let framing = framing.map_err(|e| (e, Resend::No))?;
        let buffered = req.body().as_buffered().is_some();
        self.start_upload(req, framing);
        let mut received = false;
        // Matched in place: a local holding the answer would stay in the
        // future's state across the next await.
        match poll_fn(|cx| {
            let writing = self.poll_upload(cx);
            let step = self.or_answer(cx, asked, &mut received, writing);
            if step.is_pending() && self.deadline.passed(cx) {
                return Poll::Ready(Err(deadline::passed_error()));
            }
            step
        })
        .await
        {
            // A switch before the whole request went out would mix the
            // rest of its body with the new protocol's bytes.
            Ok(Written::Answered(head)) if head.switched => {
                let error = Error::msg(
                    ErrorKind::Protocol,
                    "the server switched protocols before the request was sent",
                );
                return Err(self.failed(req, error, buffered, true));
            }
            Ok(Written::Answered(head)) => return Ok(self.early_answer(head)),
            Ok(Written::Done(())) => {}
            Err(error) => return Err(self.failed(req, error, buffered, received)),
        }
        match poll_fn(|cx| {
            let head = self.poll_head(cx, asked, &mut received);
            if head.is_pending() && self.deadline.passed(cx) {
                return Poll::Ready(Err(deadline::passed_error()));
            }
            head
        })
        .await
        {
            Ok(head) => {
                self.upload.answered();
                self.body = Decoder::new(head.framing, self.max_head);
                self.keep_alive &= head.keep_alive;
                Ok(head)
            }
            Err(error) => Err(self.failed(req, error, buffered, received)),
        }
    }

    /// The exchange failed before a response head: what of the request can
    /// be sent again.
    fn failed(
        &mut self,
        req: &mut Request<Body>,
        error: Error,
        buffered: bool,
        received: bool,
    ) -> (Error, Resend) {
        self.keep_alive = false;
        let written = self.upload.written();
        let mut whole = buffered;
        if let Some(body) = self.upload.stop() {
            // A streamed body none of which went out, or all of what went
            // out kept: whole, handed back.
            *req.body_mut() = body;
            whole = true;
        }
        let resend = if deadline::is_passed(&error) {
            // Out of time: not to be sent again.
            Resend::No
        } else if written == 0 {
            Resend::Unsent
        } else if whole && !received {
            Resend::Unanswered
        } else {
            Resend::No
        };
        (error, resend)
    }

    /// Queues the request (its head is in `write_buf`): a buffered body
    /// goes behind the head when small (or chunked), else is written right
    /// after it in one vectored write, without a copy; a streamed body is
    /// taken from the request, to be written as it comes.
    fn start_upload(&mut self, req: &mut Request<Body>, framing: BodyFraming) {
        let Some(body) = req.body().as_buffered() else {
            let stream = std::mem::take(req.body_mut());
            self.upload.start(framing, Bytes::new(), Some(stream));
            return;
        };
        let out = &mut self.write_buf;
        let rest = if framing == BodyFraming::Chunked {
            if !body.is_empty() {
                chunk_prefix(out, body.len());
                out.extend_from_slice(body);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            Bytes::new()
        } else if body.len() <= INLINE_BODY {
            out.extend_from_slice(body);
            Bytes::new()
        } else {
            // The same bytes by reference count: the request keeps its body
            // for a retry.
            req.body().buffered().unwrap_or_default()
        };
        self.upload.start(framing, rest, None);
    }

    /// Writes what it can of the request.
    fn poll_upload(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let out = Out {
            io: &mut self.io,
            buf: &mut self.write_buf,
        };
        self.upload.poll(cx, out)
    }

    /// The server answered before the whole request was written. RFC 9112
    /// §9.3 (and RFC 9110 §15.5.14 for 413): a client SHOULD stop sending
    /// the body when the response says the server will not read it and is
    /// closing the connection; otherwise the server may well be reading it
    /// (`/echo` streams it back, a proxy forwards it), so it keeps going out
    /// while the response is read, driven by [`poll_frame`](Self::poll_frame).
    /// Like Go's transport and curl, an error status alone does not stop it:
    /// a server that stops reading without saying so only stalls the upload,
    /// never the response, and the connection is reused only if both ended.
    /// Nor does `Connection: close` on a success: it says the connection
    /// ends after this exchange, not that the body is unwanted. Go's server
    /// (Caddy, any Go proxy) says it on every response whose handler
    /// answered before reading a body sent with `Expect: 100-continue`,
    /// and reads on: stopping would leave its response waiting forever.
    fn early_answer(&mut self, head: Head) -> Head {
        self.upload.answered();
        self.body = Decoder::new(head.framing, self.max_head);
        self.keep_alive &= head.keep_alive;
        if head.closing && !head.status.is_success() {
            self.upload.stop();
        }
        head
    }

    /// Writes more of a request body the server answered before it ended;
    /// an error in the caller's body is returned, one of the connection's
    /// only stops the upload (the response may still come whole).
    fn drive_upload(&mut self, cx: &mut Context<'_>) -> Option<Error> {
        if !self.upload.is_active() {
            return None;
        }
        match self.poll_upload(cx) {
            Poll::Ready(Ok(())) | Poll::Pending => None,
            Poll::Ready(Err(e)) => {
                self.upload.stop();
                self.keep_alive = false;
                (e.kind() == ErrorKind::InvalidRequest).then_some(e)
            }
        }
    }

    /// The response ended: an upload still going is stopped, and the
    /// connection is only reusable if all of the request reached the wire.
    fn response_ended(&mut self, cx: &mut Context<'_>) {
        // One more go: what is left may fit in the socket now.
        let _ = self.drive_upload(cx);
        if self.upload.is_active() {
            if !self.upload.wire_complete(&self.write_buf) {
                self.keep_alive = false;
            }
            self.upload.stop();
        }
    }

    /// `step` of writing a request, or the server's answer if it came first.
    ///
    /// A server may answer before reading the whole body (413, 401, a
    /// redirect) and stop reading: the answer is taken rather than waiting for
    /// a write, or a body, that never ends. A server that answered and closed
    /// with the body unread resets the connection, which fails the write: an
    /// answer already received is still the answer (as in Go's transport).
    /// A read error is left for the write to meet.
    fn or_answer<T>(
        &mut self,
        cx: &mut Context<'_>,
        asked: Asked,
        received: &mut bool,
        step: Poll<Result<T, Error>>,
    ) -> Poll<Result<Written<T>, Error>> {
        match step {
            Poll::Ready(Ok(value)) => Poll::Ready(Ok(Written::Done(value))),
            // Nothing written: whatever is there cannot answer this request.
            Poll::Ready(Err(e))
                if e.kind() == ErrorKind::ConnectionClosed && self.upload.written() > 0 =>
            {
                match self.poll_head(cx, asked, received) {
                    Poll::Ready(Ok(head)) => Poll::Ready(Ok(Written::Answered(head))),
                    _ => Poll::Ready(Err(e)),
                }
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.poll_head(cx, asked, received) {
                Poll::Ready(Ok(head)) => Poll::Ready(Ok(Written::Answered(head))),
                _ => Poll::Pending,
            },
        }
    }

    /// Reads until a final response head is complete; `received` records
    /// whether any byte of response arrived.
    fn poll_head(
        &mut self,
        cx: &mut Context<'_>,
        asked: Asked,
        received: &mut bool,
    ) -> Poll<Result<Head, Error>> {
        loop {
            if !self.read_buf.is_empty() {
                *received = true;
                match decode::parse(&mut self.read_buf, asked, &mut self.arena, &mut self.names) {
                    Ok(Parsed::Final(head)) => {
                        self.interim = decode::Interim::default();
                        // A body still held for a `100` is early_answer's to decide.
                        self.upload.proceed();
                        return Poll::Ready(Ok(head));
                    }
                    Ok(Parsed::Informational(len, status)) => {
                        self.interim.count(len, self.max_head)?;
                        if status == StatusCode::CONTINUE {
                            // The body the head held back may go: the
                            // exchange polls the upload again.
                            self.upload.proceed();
                            cx.waker().wake_by_ref();
                        }
                        continue;
                    }
                    Ok(Parsed::Partial) if self.read_buf.len() >= self.max_head => {
                        return Poll::Ready(Err(Error::msg(
                            ErrorKind::HeadersTooLarge,
                            "response head exceeds max_response_headers_size",
                        )))
                    }
                    Ok(Parsed::Partial) => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            match ready!(self.poll_fill(cx, READ_MIN)) {
                Ok(0) => {
                    let message = if *received {
                        "connection closed in the middle of the response head"
                    } else {
                        "connection closed before the response"
                    };
                    return Poll::Ready(Err(Error::msg(ErrorKind::ConnectionClosed, message)));
                }
                Ok(_) => {}
                Err(e) => return Poll::Ready(Err(io_error(e))),
            }
        }
    }

    /// The next piece of the current response's body, or its trailers;
    /// `None` at its end.
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        loop {
            if let Some(e) = self.drive_upload(cx) {
                self.keep_alive = false;
                return Poll::Ready(Some(Err(e)));
            }
            match self.body.decode(&mut self.read_buf, &mut self.arena) {
                Ok(Step::Data(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Ok(Step::Trailers(trailers)) => {
                    self.response_ended(cx);
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                }
                Ok(Step::End) => {
                    self.response_ended(cx);
                    return Poll::Ready(None);
                }
                Ok(Step::NeedMore) => {}
                Err(e) => {
                    self.keep_alive = false;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            let want = self.body.remaining().map_or(READ_MIN, |left| {
                usize::try_from(left).map_or(READ_MAX, |l| l.clamp(READ_MIN, READ_MAX))
            });
            match ready!(self.poll_fill(cx, want)) {
                Ok(0) => {
                    // Whatever the framing, nothing more can come on this connection.
                    self.keep_alive = false;
                    self.response_ended(cx);
                    return Poll::Ready(match self.body.eof() {
                        Ok(_) => None,
                        Err(e) => Some(Err(e)),
                    });
                }
                Ok(_) => {}
                Err(e) => {
                    self.keep_alive = false;
                    return Poll::Ready(Some(Err(Error::new(ErrorKind::Body, e))));
                }
            }
        }
    }

    /// Reads what the socket has into the buffer, with room for `want` bytes.
    fn poll_fill(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<usize>> {
        self.read_buf.reserve(want);
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read_buf)
    }
}

fn chunk_prefix(out: &mut Vec<u8>, len: usize) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{len:x}\r\n");
}

fn io_error(e: io::Error) -> Error {
    // A TLS alert after the handshake (a refused client certificate) is TLS's.
    let kind = crate::connect::tls::io_error_kind(&e, ErrorKind::ConnectionClosed);
    Error::new(kind, e)
}
