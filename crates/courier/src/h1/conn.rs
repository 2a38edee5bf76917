//! One HTTP/1.1 connection, driven by the task of the request that holds it.

use std::future::{poll_fn, Future};
use std::io::{self, IoSlice, Write as _};
use std::pin::Pin;
use std::task::{ready, Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Method, Request};
use http_body::{Body as _, Frame};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::body::{Decoder, Step};
use super::decode::{self, Head, Parsed};
use super::encode::{self, BodyFraming};
use crate::body::Body;
use crate::error::{Error, ErrorKind};

/// The byte stream under a connection: TCP, TLS, or in memory.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Sync + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin> Io for T {}

/// Reads ask for at least this much room (and the buffer starts this big).
const READ_MIN: usize = 8 * 1024;
/// A body known to be large is read this much at a time.
const READ_MAX: usize = 64 * 1024;
/// Buffered request bodies up to this size are copied behind the head, so the
/// whole request is one write; larger ones go out in one vectored write.
const INLINE_BODY: usize = 16 * 1024;

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
    /// Neither side asked to close, and nothing went wrong.
    keep_alive: bool,
    max_head: usize,
}

/// A request that failed, and what of it can be given back for a retry.
pub(crate) struct Failure {
    pub(crate) error: Error,
    /// Not a byte reached the connection: safe to send again, whatever the method.
    pub(crate) unsent: Option<Request<Body>>,
    /// Written, then the connection closed before a byte of response came
    /// back (a stale connection, most likely); its buffered body is intact.
    pub(crate) unanswered: Option<Request<Body>>,
}

/// How a step of writing a request ended.
enum Written<T> {
    Done(T),
    /// The server answered before the request was written.
    Answered(Head),
}

impl Written<()> {
    fn answer(self) -> Option<Head> {
        match self {
            Written::Done(()) => None,
            Written::Answered(head) => Some(head),
        }
    }
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

impl Failure {
    fn new(error: Error, req: Request<Body>, resend: Resend) -> Failure {
        let (unsent, unanswered) = match resend {
            Resend::No => (None, None),
            Resend::Unsent => (Some(req), None),
            Resend::Unanswered => (None, Some(req)),
        };
        Failure {
            error,
            unsent,
            unanswered,
        }
    }
}

impl Connection {
    /// A connection over `io`, refusing response heads over `max_head` bytes.
    pub(crate) fn new(io: Box<dyn Io>, max_head: usize) -> Connection {
        Connection {
            io,
            read_buf: BytesMut::with_capacity(READ_MIN),
            arena: BytesMut::new(),
            write_buf: Vec::new(),
            body: Decoder::Done,
            keep_alive: true,
            max_head: max_head.max(1),
        }
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

    /// The last response was read to its end and the connection may carry another.
    pub(crate) fn is_reusable(&self) -> bool {
        self.keep_alive && self.body.is_done() && self.read_buf.is_empty()
    }

    /// The current response's body has been read to its end.
    pub(crate) fn body_done(&self) -> bool {
        self.body.is_done()
    }

    /// Writes the request and reads the response head; the body is then read
    /// with [`poll_frame`](Connection::poll_frame).
    ///
    /// The future owns the connection (`conn`: a box, or a pooled connection
    /// that holds one) and hands it back with the result, so it borrows
    /// nothing and can sit in a hand-written future next to the lease. The
    /// request is kept (not cloned) until the head arrives, so a request the
    /// connection never answered can be handed back for a retry. The future is
    /// small: each step is one `poll_fn` over the connection's own buffers, and
    /// only a streamed body, the rare case, gets a boxed future.
    pub(crate) fn send<C>(
        mut conn: C,
        mut req: Request<Body>,
        host: &HeaderValue,
        defaults: &HeaderMap,
    ) -> impl Future<Output = (C, Result<Head, Failure>)> + Send
    where
        C: AsMut<Connection> + Send,
    {
        // The head is encoded before the future exists, so the future keeps
        // no reference to the host or the defaults.
        let this = conn.as_mut();
        this.write_buf.clear();
        let framing = encode::head(&req, host, defaults, &mut this.write_buf);
        this.keep_alive = !decode::connection_has(req.headers(), b"close");
        let head_request = req.method() == Method::HEAD;
        // The request lives here once; `exchange` works on it by reference.
        async move {
            let result = match conn
                .as_mut()
                .exchange(&mut req, framing, head_request)
                .await
            {
                Ok(head) => Ok(head),
                Err((error, resend)) => Err(Failure::new(error, req, resend)),
            };
            (conn, result)
        }
    }

    async fn exchange(
        &mut self,
        req: &mut Request<Body>,
        framing: Result<BodyFraming, Error>,
        head_request: bool,
    ) -> Result<Head, (Error, Resend)> {
        let framing = framing.map_err(|e| (e, Resend::No))?;
        let mut written = 0;
        let mut received = false;
        // Scoped, so the head it may hold is not kept in this future's state.
        let sent = {
            // `Ok(Some(head))`: the server answered before taking the whole body.
            let outcome = match req.body().as_buffered() {
                Some(body) => {
                    let rest = self.frame_buffered(body, framing);
                    poll_fn(|cx| {
                        let writing = self.poll_write(cx, rest, &mut written);
                        self.or_answer(cx, head_request, &mut received, writing)
                    })
                    .await
                    .map(Written::answer)
                }
                None => {
                    Box::pin(self.write_streamed(
                        req,
                        framing,
                        &mut written,
                        head_request,
                        &mut received,
                    ))
                    .await
                }
            };
            match outcome {
                Ok(Some(head)) => {
                    // The rest of the request was never sent: the connection is done.
                    self.keep_alive = false;
                    self.body = Decoder::new(head.framing, self.max_head);
                    return Ok(head);
                }
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            }
        };
        let sent = match sent {
            Ok(()) => poll_fn(|cx| Pin::new(&mut self.io).poll_flush(cx))
                .await
                .map_err(io_error),
            Err(e) => Err(e),
        };
        if let Err(error) = sent {
            self.keep_alive = false;
            let resend = if written == 0 {
                Resend::Unsent
            } else {
                Resend::No
            };
            return Err((error, resend));
        }
        match poll_fn(|cx| self.poll_head(cx, head_request, &mut received)).await {
            Ok(head) => {
                self.body = Decoder::new(head.framing, self.max_head);
                self.keep_alive &= head.keep_alive;
                Ok(head)
            }
            Err(error) => {
                self.keep_alive = false;
                let replayable = !received && req.body().as_buffered().is_some();
                let resend = if replayable {
                    Resend::Unanswered
                } else {
                    Resend::No
                };
                Err((error, resend))
            }
        }
    }

    /// Puts a buffered body behind the head in `write_buf` when it is small
    /// (or chunked); returns what must follow `write_buf` on the wire.
    fn frame_buffered<'b>(&mut self, body: &'b [u8], framing: BodyFraming) -> &'b [u8] {
        let out = &mut self.write_buf;
        if framing == BodyFraming::Chunked {
            if !body.is_empty() {
                chunk_prefix(out, body.len());
                out.extend_from_slice(body);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            return &[];
        }
        if body.len() <= INLINE_BODY {
            out.extend_from_slice(body);
            return &[];
        }
        body
    }

    /// Writes `write_buf` then `rest` (vectored, so a large body follows its
    /// head without a copy); `written` counts what went out across calls.
    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        rest: &[u8],
        written: &mut usize,
    ) -> Poll<Result<(), Error>> {
        let head = &self.write_buf[..];
        loop {
            let (a, b) = match written.checked_sub(head.len()) {
                None => (&head[*written..], rest),
                Some(past) => (&[][..], &rest[past..]),
            };
            let poll = match (a.is_empty(), b.is_empty()) {
                (true, true) => return Poll::Ready(Ok(())),
                (false, true) => Pin::new(&mut self.io).poll_write(cx, a),
                (true, false) => Pin::new(&mut self.io).poll_write(cx, b),
                (false, false) => Pin::new(&mut self.io)
                    .poll_write_vectored(cx, &[IoSlice::new(a), IoSlice::new(b)]),
            };
            match ready!(poll) {
                Ok(0) => return Poll::Ready(Err(io_error(io::ErrorKind::WriteZero.into()))),
                Ok(n) => *written += n,
                Err(e) => return Poll::Ready(Err(io_error(e))),
            }
        }
    }

    /// Writes the head (in `write_buf`) and then a streamed body, frame by frame.
    /// Writes a streamed body as it comes; `Ok(Some(head))` if the server
    /// answered first (see [`or_answer`](Self::or_answer)), which it may do
    /// while a write waits or while the body has nothing to give.
    async fn write_streamed(
        &mut self,
        req: &mut Request<Body>,
        framing: BodyFraming,
        written: &mut usize,
        head_request: bool,
        received: &mut bool,
    ) -> Result<Option<Head>, Error> {
        // Each wait below ends with the step done, or the server's answer.
        macro_rules! wait {
            ($step:expr) => {
                match poll_fn(|cx| {
                    let step = $step(&mut *self, cx);
                    self.or_answer(cx, head_request, received, step)
                })
                .await?
                {
                    Written::Done(value) => value,
                    Written::Answered(head) => return Ok(Some(head)),
                }
            };
        }
        wait!(|this: &mut Self, cx| this.poll_write(cx, &[], written));
        let body = req.body_mut();
        let mut sent = 0u64;
        while let Some(frame) =
            wait!(|_: &mut Self, cx| Pin::new(&mut *body).poll_frame(cx).map(Ok))
        {
            let frame = frame.map_err(|e| Error::new(ErrorKind::InvalidRequest, e))?;
            let Ok(data) = frame.into_data() else {
                continue; // request trailers are not sent over HTTP/1.1
            };
            if data.is_empty() {
                continue;
            }
            sent += data.len() as u64;
            self.write_buf.clear();
            match framing {
                BodyFraming::Length(n) if sent > n => {
                    return Err(Error::msg(
                        ErrorKind::InvalidRequest,
                        "request body longer than its Content-Length",
                    ))
                }
                BodyFraming::Length(_) => {}
                BodyFraming::Chunked => chunk_prefix(&mut self.write_buf, data.len()),
            }
            let mut done = 0;
            wait!(|this: &mut Self, cx| this.poll_write(cx, &data, &mut done));
            if framing == BodyFraming::Chunked {
                self.write_buf.clear();
                self.write_buf.extend_from_slice(b"\r\n");
                let mut done = 0;
                wait!(|this: &mut Self, cx| this.poll_write(cx, &[], &mut done));
            }
        }
        self.write_buf.clear();
        match framing {
            BodyFraming::Length(n) if sent != n => {
                return Err(Error::msg(
                    ErrorKind::InvalidRequest,
                    "request body shorter than its Content-Length",
                ))
            }
            BodyFraming::Length(_) => return Ok(None),
            BodyFraming::Chunked => self.write_buf.extend_from_slice(b"0\r\n\r\n"),
        }
        let mut done = 0;
        wait!(|this: &mut Self, cx| this.poll_write(cx, &[], &mut done));
        Ok(None)
    }

    /// `step` of writing a request, or the server's answer if it came first.
    ///
    /// A server may answer before reading the whole body (413, 401, a
    /// redirect) and stop reading: the answer is taken rather than waiting for
    /// a write, or a body, that never ends. A read error is left for the
    /// write to meet.
    fn or_answer<T>(
        &mut self,
        cx: &mut Context<'_>,
        head_request: bool,
        received: &mut bool,
        step: Poll<Result<T, Error>>,
    ) -> Poll<Result<Written<T>, Error>> {
        match step {
            Poll::Ready(result) => Poll::Ready(result.map(Written::Done)),
            Poll::Pending => match self.poll_head(cx, head_request, received) {
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
        head_request: bool,
        received: &mut bool,
    ) -> Poll<Result<Head, Error>> {
        loop {
            if !self.read_buf.is_empty() {
                *received = true;
                match decode::parse(&mut self.read_buf, head_request, &mut self.arena) {
                    Ok(Parsed::Final(head)) => return Poll::Ready(Ok(head)),
                    Ok(Parsed::Informational) => continue,
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
            match self.body.decode(&mut self.read_buf, &mut self.arena) {
                Ok(Step::Data(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Ok(Step::Trailers(trailers)) => {
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                }
                Ok(Step::End) => return Poll::Ready(None),
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
    Error::new(ErrorKind::ConnectionClosed, e)
}
