//! Writing a request (its head, then its body) as a state machine that can
//! stop at any point and be resumed by whoever polls the connection next.
//!
//! A server may answer before it has read the whole request body: `/echo`
//! streams back what it reads, a proxy forwards the head it got. Over
//! HTTP/1.1 the request's task both writes and reads, so the rest of the
//! body cannot be left to a separate writer: it is kept here, in the
//! connection, and each poll of the response body writes a little more of it
//! (see `Connection::poll_frame`). Written in pieces of at most [`BUDGET`]
//! bytes a poll, so that an always-ready body and a server that reads as fast
//! as it comes cannot keep the caller from seeing the answer.
//!
//! A head that says `Expect: 100-continue` holds its body back until the
//! connection says the server answered (a `100`, or a final head) or for
//! the client's `expect_continue_timeout` (1 s by default, as curl waits): a
//! proxy may lose a body that comes before the `100` it is relaying (HAProxy
//! 2.6 does).

use std::future::Future as _;
use std::io::{self, IoSlice, Write as _};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body as _;
use tokio::time::Sleep;

use super::encode::BodyFraming;
use crate::body::replay::Replay;
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::proto::Io;

/// Bytes written in one poll before giving the reader a turn.
const BUDGET: usize = 256 * 1024;

/// A request on its way out: what is queued (the connection's `write_buf`,
/// then `data`, then `suffix`), and the streamed body the rest comes from.
pub(crate) struct Upload {
    /// A request is being written (or its flush is pending).
    active: bool,
    framing: BodyFraming,
    /// Frames still to come; `None` for a buffered body or once taken to the end.
    body: Option<Body>,
    /// Body bytes taken so far, held to a Content-Length.
    sent: u64,
    /// What was taken of a streamed body, kept (within a bound) until the
    /// response head, to send the request again if the connection turns
    /// out dead (see [`crate::body::replay`]). Boxed: only streams have
    /// one, and every connection carries the field.
    replay: Option<Box<Replay>>,
    /// A piece of body after `write_buf` (a framing prefix, or the head).
    data: Bytes,
    /// What closes a chunk after `data`.
    suffix: &'static [u8],
    /// How much of `write_buf` + `data` + `suffix` went out.
    at: usize,
    /// Every byte of the request is queued (what is queued is the last of it).
    queued_all: bool,
    /// Bytes of this request that reached the connection.
    written: usize,
    /// The head asked for a `100 Continue`: the length of the head at the
    /// front of `write_buf`, what may go out before the server answers.
    held: Option<usize>,
    /// Until when the body is held, from the head's flush.
    wait: Option<Pin<Box<Sleep>>>,
    /// How long a held body waits for the server (a server that ignores the
    /// expectation costs this much once per request).
    continue_wait: Duration,
}

/// Where a request's bytes go: the connection's stream and its write buffer.
pub(crate) struct Out<'a> {
    pub(crate) io: &'a mut Box<dyn Io>,
    pub(crate) buf: &'a mut Vec<u8>,
}

impl Upload {
    pub(crate) fn idle() -> Upload {
        Upload {
            active: false,
            framing: BodyFraming::Length(0),
            body: None,
            sent: 0,
            replay: None,
            data: Bytes::new(),
            suffix: b"",
            at: 0,
            queued_all: true,
            written: 0,
            held: None,
            wait: None,
            continue_wait: Duration::ZERO,
        }
    }

    /// Starts a request whose head is in `write_buf` (and, for a small or
    /// chunked buffered body, the body behind it): `data` follows it, and a
    /// streamed `body` after that.
    pub(crate) fn start(&mut self, framing: BodyFraming, data: Bytes, body: Option<Body>) {
        let held = self.held.take();
        *self = Upload {
            held,
            wait: None,
            continue_wait: self.continue_wait,
            active: true,
            framing,
            queued_all: body.is_none(),
            replay: body.as_ref().map(|_| Box::default()),
            body,
            sent: 0,
            data,
            suffix: b"",
            at: 0,
            written: 0,
        };
    }

    /// Whether the next request's head (the first `head_len` bytes of
    /// `write_buf`) asked for a `100 Continue`, so that its body waits (see
    /// [`Upload::proceed`]). Called before [`Upload::start`].
    pub(crate) fn hold_body(&mut self, head_len: Option<usize>, wait: Duration) {
        self.held = head_len;
        self.continue_wait = wait;
    }

    /// The server answered (a `100 Continue`, or a final head): a body held
    /// for it goes out.
    pub(crate) fn proceed(&mut self) {
        self.held = None;
        self.wait = None;
    }

    /// Still writing (or flushing) a request.
    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// Bytes of the request that reached the connection.
    pub(crate) fn written(&self) -> usize {
        self.written
    }

    /// Everything the request's framing promised is on the wire (flushed or
    /// not): all of it, or a Content-Length's worth whose body has yet to
    /// say it ended.
    pub(crate) fn wire_complete(&self, buf: &[u8]) -> bool {
        let drained = self.at >= buf.len() + self.data.len() + self.suffix.len();
        drained
            && (self.queued_all || matches!(self.framing, BodyFraming::Length(n) if self.sent == n))
    }

    /// The server answered: what was kept of a streamed body is let go.
    pub(crate) fn answered(&mut self) {
        self.replay = None;
    }

    /// Stops writing; hands back a streamed body whole: none of it taken,
    /// or all that was taken kept.
    pub(crate) fn stop(&mut self) -> Option<Body> {
        self.active = false;
        self.proceed();
        self.data = Bytes::new();
        let body = self.body.take();
        let replay = self.replay.take();
        if self.sent == 0 && self.written == 0 {
            return body;
        }
        replay?.resume(body)
    }

    /// Writes what it can. `Ready(Ok)` once the request is written and
    /// flushed; `Pending` also when [`BUDGET`] was spent (the task is woken
    /// to go on), so the caller can look for an answer in between.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, out: Out<'_>) -> Poll<Result<(), Error>> {
        let Out { io, buf } = out;
        let mut spent = 0;
        while self.active {
            if let Some(head_len) = self.held {
                ready!(self.poll_held(cx, io, &buf[..head_len.min(buf.len())]))?;
                continue;
            }
            let (a, rest) = split_at(buf, self.at);
            let (b, rest) = split_at(&self.data, rest);
            let (c, _) = split_at(self.suffix, rest);
            if !(a.is_empty() && b.is_empty() && c.is_empty()) {
                if spent >= BUDGET {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let n = ready!(write(io, cx, [a, b, c]))?;
                self.at += n;
                self.written += n;
                spent += n;
                continue;
            }
            if self.queued_all {
                ready!(Pin::new(&mut **io).poll_flush(cx)).map_err(io_error)?;
                self.active = false;
                break;
            }
            ready!(self.next_piece(cx, buf))?;
        }
        Poll::Ready(Ok(()))
    }

    /// Writes and flushes the head, then waits for the server's answer or
    /// its wait; `Ready` once the body may go.
    fn poll_held(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut Box<dyn Io>,
        head: &[u8],
    ) -> Poll<Result<(), Error>> {
        while let Some(rest) = head.get(self.at..).filter(|r| !r.is_empty()) {
            let n = ready!(write(io, cx, [rest, &[], &[]]))?;
            self.at += n;
            self.written += n;
        }
        if self.wait.is_none() {
            ready!(Pin::new(&mut **io).poll_flush(cx)).map_err(io_error)?;
            self.wait = Some(Box::pin(tokio::time::sleep(self.continue_wait)));
        }
        if let Some(wait) = self.wait.as_mut() {
            ready!(wait.as_mut().poll(cx));
        }
        self.proceed();
        Poll::Ready(Ok(()))
    }

    /// Queues the next frame of the streamed body (its framing in `buf`), or
    /// the end of the body.
    fn next_piece(&mut self, cx: &mut Context<'_>, buf: &mut Vec<u8>) -> Poll<Result<(), Error>> {
        buf.clear();
        self.data = Bytes::new();
        self.suffix = b"";
        self.at = 0;
        let Some(body) = self.body.as_mut() else {
            self.queued_all = true;
            return Poll::Ready(Ok(()));
        };
        let frame = ready!(Pin::new(body).poll_frame(cx));
        match (&frame, self.replay.as_mut()) {
            // A body that failed is not sent again.
            (Some(Err(_)), _) => self.replay = None,
            (frame, Some(replay)) => replay.keep(frame.as_ref().and_then(|f| f.as_ref().ok())),
            (_, None) => {}
        }
        let Some(frame) = frame else {
            self.body = None;
            self.queued_all = true;
            return Poll::Ready(match self.framing {
                BodyFraming::Length(n) if self.sent != n => Err(Error::msg(
                    ErrorKind::InvalidRequest,
                    "request body shorter than its Content-Length",
                )),
                BodyFraming::Length(_) => Ok(()),
                BodyFraming::Chunked => {
                    buf.extend_from_slice(b"0\r\n\r\n");
                    Ok(())
                }
            });
        };
        let frame = frame.map_err(|e| Error::new(ErrorKind::InvalidRequest, e))?;
        // Request trailers are not sent over HTTP/1.1; an empty piece is
        // nothing: the loop comes back for the next frame.
        let Some(data) = frame.into_data().ok().filter(|d| !d.is_empty()) else {
            return Poll::Ready(Ok(()));
        };
        self.sent += data.len() as u64;
        match self.framing {
            BodyFraming::Length(n) if self.sent > n => {
                return Poll::Ready(Err(Error::msg(
                    ErrorKind::InvalidRequest,
                    "request body longer than its Content-Length",
                )))
            }
            BodyFraming::Length(_) => {}
            BodyFraming::Chunked => {
                // Writing into a Vec cannot fail.
                let _ = write!(buf, "{:x}\r\n", data.len());
                self.suffix = b"\r\n";
            }
        }
        self.data = data;
        Poll::Ready(Ok(()))
    }
}

/// `bytes[at..]` (empty if `at` is past it), and how far past it `at` is.
fn split_at(bytes: &[u8], at: usize) -> (&[u8], usize) {
    match at.checked_sub(bytes.len()) {
        Some(past) => (&[][..], past),
        None => (&bytes[at..], 0),
    }
}

/// One write of the non-empty slices among `parts` (vectored when several).
fn write(
    io: &mut Box<dyn Io>,
    cx: &mut Context<'_>,
    parts: [&[u8]; 3],
) -> Poll<Result<usize, Error>> {
    let mut slices = [IoSlice::new(&[]); 3];
    let mut n = 0;
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        slices[n] = IoSlice::new(part);
        n += 1;
    }
    let io = Pin::new(&mut **io);
    let poll = if n == 1 {
        io.poll_write(cx, &slices[0])
    } else {
        io.poll_write_vectored(cx, &slices[..n])
    };
    Poll::Ready(match ready!(poll) {
        Ok(0) => Err(io_error(io::ErrorKind::WriteZero.into())),
        Ok(n) => Ok(n),
        Err(e) => Err(io_error(e)),
    })
}

fn io_error(e: io::Error) -> Error {
    // A TLS alert after the handshake (a refused client certificate) is TLS's.
    let kind = crate::connect::tls::io_error_kind(&e, ErrorKind::ConnectionClosed);
    Error::new(kind, e)
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use tokio::io::AsyncReadExt;

    use super::*;

    /// A streamed body of `pieces`, each after one `Pending`.
    fn stream(pieces: &[&'static str]) -> Body {
        Body::wrap(Pieces {
            pieces: pieces.to_vec(),
            ready: false,
        })
    }

    struct Pieces {
        pieces: Vec<&'static str>,
        ready: bool,
    }

    impl http_body::Body for Pieces {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
            self.ready = !self.ready;
            if !self.ready {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if self.pieces.is_empty() {
                return Poll::Ready(None);
            }
            let piece = self.pieces.remove(0);
            Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(
                piece.as_bytes(),
            )))))
        }
    }

    /// Writes a request with `head`, `data` and `body` through a pipe far
    /// smaller than it (so writes wait), returning what came out or the error.
    async fn run(
        framing: BodyFraming,
        head: &str,
        data: &'static [u8],
        body: Option<Body>,
    ) -> Result<Vec<u8>, Error> {
        let (near, mut far) = tokio::io::duplex(7);
        let mut io: Box<dyn Io> = Box::new(near);
        let mut buf = head.as_bytes().to_vec();
        let mut upload = Upload::idle();
        upload.start(framing, Bytes::from_static(data), body);
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            far.read_to_end(&mut out).await.map(|_| out)
        });
        let result = poll_fn(|cx| {
            upload.poll(
                cx,
                Out {
                    io: &mut io,
                    buf: &mut buf,
                },
            )
        })
        .await;
        assert!(!upload.is_active() || result.is_err());
        drop(io);
        let out = reader.await.unwrap().unwrap();
        result.map(|()| out)
    }

    #[tokio::test]
    async fn heads_buffered_and_streamed_bodies_go_out_framed() {
        let out = run(BodyFraming::Length(5), "HEAD\r\n", b"hello", None).await;
        assert_eq!(out.unwrap(), b"HEAD\r\nhello");
        let body = stream(&["ab", "", "cde"]);
        let out = run(BodyFraming::Chunked, "H\r\n", b"", Some(body)).await;
        assert_eq!(out.unwrap(), b"H\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n");
        let body = stream(&["ab", "cde"]);
        let out = run(BodyFraming::Length(5), "H\r\n", b"", Some(body)).await;
        assert_eq!(out.unwrap(), b"H\r\nabcde");
    }

    #[tokio::test]
    async fn a_body_that_breaks_its_content_length_is_refused() {
        for (n, pieces) in [(4, &["ab", "cde"][..]), (6, &["ab", "cde"][..])] {
            let err = run(BodyFraming::Length(n), "H\r\n", b"", Some(stream(pieces)))
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{n}");
        }
    }
}
