//! One request on an HTTP/3 connection, from its head to the response head:
//! the request body is sent beside the wait for the response (a server may
//! answer, or echo, before it has read the whole body), and a failure says
//! whether the request may be sent again.

use std::future::Future;
use std::pin::pin;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;

use super::body::{send_body, RecvBody, StreamGuard};
use super::code;
use super::conn::Inner;
use super::deadline::{timed_out, Kept, Within};
use super::early::{self, Phase};
use super::frame::{Frame, FrameError};
use super::head::HeadError;
use super::reader::{ReadError, StreamReader};
use super::send_head::{take_body, Outgoing, SendHead};
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::{HandedBack, SendError, Sent};
use crate::proto::fields::MAX_INTERIM;

/// RFC 8470's `425 Too Early`.
const TOO_EARLY: http::StatusCode = match http::StatusCode::from_u16(425) {
    Ok(status) => status,
    Err(_) => http::StatusCode::BAD_REQUEST,
};

/// The response head and body of an answered request, its body as the
/// caller holds it (`B`: the transport's `Source`, made here where the
/// answer is made: a conversion of its own, above, moved the whole answer
/// once more per request). The body is boxed where it is made: the answer
/// is moved up through the request's futures, and the body was most of its
/// size in every move.
pub(crate) type Answer<B = Box<RecvBody>> = crate::proto::exchange::Answer<B>;

/// How far a failed request got, so whether it may go again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Nothing of it reached the connection.
    Unsent,
    /// The server did not process it (past its GOAWAY, H3_REQUEST_REJECTED).
    Refused,
    /// Sent on a connection that then broke before the response head.
    Lost { after_goaway: bool },
    /// Not to be sent again (a header section over a limit, a reset for the
    /// server's own reasons, the server's protocol error, a request body
    /// that failed).
    Final,
}

fn handed_back(fate: Fate, request: Option<Request<Body>>) -> Option<HandedBack> {
    let request = request?;
    Some(match fate {
        Fate::Unsent => HandedBack::Unsent(request),
        Fate::Refused => HandedBack::Refused(request),
        Fate::Lost { after_goaway } => HandedBack::Lost {
            request,
            after_goaway,
        },
        Fate::Final => return None,
    })
}

fn fail(error: Error, fate: Fate, request: Option<Request<Body>>) -> SendError {
    SendError {
        error,
        handed_back: handed_back(fate, request),
    }
}

/// What a request that found the connection closed (or closing) meets:
/// the server's protocol error we closed it for, or a bare "closed".
fn closed_error(inner: &Inner) -> Error {
    match inner.signals.failure() {
        Some(why) => Error::new(ErrorKind::Protocol, why.to_owned()),
        None => Error::msg(ErrorKind::ConnectionClosed, "HTTP/3 connection closed"),
    }
}

/// What one try of a request came to. Not boxed: it lives for one match,
/// and boxing the answer would cost every request an allocation.
#[allow(clippy::large_enum_variant)]
enum Once<B> {
    Answered(Answer<B>),
    /// `425 Too Early` to a request sent in early data: the request, to
    /// send again after the handshake (RFC 8470 §5.2).
    TooEarly(Request<Body>),
}

/// Sends `request` and waits for its response head. On a connection still
/// in its 0-RTT handshake, a request safe to replay goes at once (in early
/// data), any other waits for the handshake; one sent early that the
/// server did not take (0-RTT rejected, `425 Too Early`) is sent again
/// once, after the handshake, on this connection (`early.rs`).
///
/// Not an `async fn`, and the connection owned, not borrowed: each layer
/// of `async fn` keeps its own copy of the request beside the future it
/// awaits, and each layer's whole future is copied when it is made (a
/// request's future was made and copied four times, 2 KB each). A settled
/// connection's request is `send_once`'s future itself; the handshake's
/// few go through a boxed future of their own.
///
/// `kept`: the request's deadline, kept by the connection: past it the
/// request's future is dropped and it fails with the request timeout's
/// error. Kept in the outermost future, not in a wrapper around it: each
/// wrapper was one more copy of the whole future, and of its answer.
pub(super) fn send<B: From<Box<RecvBody>> + Send + 'static>(
    inner: Arc<Inner>,
    request: Request<Body>,
    kept: Option<Kept>,
) -> impl Future<Output = Result<Answer<B>, SendError>> + Send + 'static {
    if inner.settled() {
        Sending::Settled {
            once: Some(send_once(inner, request, false)),
            kept,
        }
    } else {
        Sending::Early {
            within: Box::pin(Within::new(send_early(inner, request), kept)),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request to its response head. On a settled connection: a try not
    /// sent early, its outcome read as [`answered`] reads it, held to the
    /// request's deadline (`None` once passed). An enum of ours, polled
    /// inline, not tokio-util's `Either`: its poll, not inlined, moved the
    /// whole answer once more.
    #[project = SendingProj]
    enum Sending<F, G> {
        Settled {
            #[pin]
            once: Option<F>,
            kept: Option<Kept>,
        },
        Early { within: Pin<Box<Within<G>>> },
    }
}

impl<B, F, G> Future for Sending<F, G>
where
    F: Future<Output = Result<Once<B>, SendError>>,
    G: Future<Output = Result<Answer<B>, SendError>>,
{
    type Output = Result<Answer<B>, SendError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            // `poll_within` written out, the answer matched straight out of
            // the try's output: its combinators (`and_then`, a `Poll` of
            // each step) each moved the whole answer through a temporary.
            SendingProj::Settled { mut once, kept } => {
                let Some(running) = once.as_mut().as_pin_mut() else {
                    return Poll::Ready(Err(timed_out()));
                };
                let output = match running.poll(cx) {
                    Poll::Ready(output) => output,
                    Poll::Pending => {
                        let Some(kept) = kept else {
                            return Poll::Pending;
                        };
                        if !kept.passed(cx) {
                            return Poll::Pending;
                        }
                        kept.leave();
                        // Dropped now, not with the request's future: its
                        // stream is stopped and its slot freed at the deadline.
                        once.set(None);
                        return Poll::Ready(Err(timed_out()));
                    }
                };
                if let Some(kept) = kept {
                    kept.leave();
                }
                match output {
                    Ok(Once::Answered(answer)) => Poll::Ready(Ok(answer)),
                    Ok(too_early) => Poll::Ready(answered(too_early)),
                    Err(e) => Poll::Ready(Err(e)),
                }
            }
            SendingProj::Early { within } => within.as_mut().poll(cx),
        }
    }
}

/// [`send`] on a connection still in its handshake.
async fn send_early<B: From<Box<RecvBody>>>(
    inner: Arc<Inner>,
    request: Request<Body>,
) -> Result<Answer<B>, SendError> {
    let early = early::replay_safe(&request);
    let request = if early {
        match send_once(Arc::clone(&inner), request, true).await {
            Ok(Once::Answered(answer)) => return Ok(answer),
            Ok(Once::TooEarly(again)) => {
                tracing::debug!("HTTP/3: 425 Too Early; sent again after the handshake");
                early::settled(inner.phase_watch()).await;
                again
            }
            Err(SendError {
                error,
                handed_back: Some(HandedBack::Unsent(again)),
            }) => {
                if early::settled(inner.phase_watch()).await != Phase::Rejected {
                    return Err(fail(error, Fate::Unsent, Some(again)));
                }
                tracing::debug!("HTTP/3: 0-RTT rejected; request sent again after the handshake");
                again
            }
            Err(e) => return Err(e),
        }
    } else {
        early::settled(inner.phase_watch()).await;
        request
    };
    answered(send_once(inner, request, false).await?)
}

/// The answer of a try not sent early (which is never handed back for a
/// 425: that is the server's final word then). `SendError` is what every
/// send returns (as `send` itself).
#[allow(clippy::result_large_err)]
fn answered<B>(once: Once<B>) -> Result<Answer<B>, SendError> {
    match once {
        Once::Answered(answer) => Ok(answer),
        Once::TooEarly(_) => Err(fail(
            Error::msg(
                ErrorKind::Protocol,
                "HTTP/3: 425 Too Early after the handshake",
            ),
            Fate::Final,
            None,
        )),
    }
}

/// One try of `request`; `early`: it goes in early data (a `425 Too Early`
/// then hands it back rather than answering).
///
/// An `async` block, not an `async fn`, and the request kept whole (its
/// body taken out, its parts taken apart only after the last wait): an
/// `async fn` keeps each argument twice (as given and as its local), and
/// the request beside its parts made this future 1,408 bytes, past the
/// sizes glibc's allocator serves from its per-thread cache (1,032) for
/// the box the pool keeps it in; 1,408 bytes were also copied at each move.
///
/// A long poll holds this future for its whole wait, so what it keeps
/// then is counted per request (`a_request_future_holds_little_while_it_waits`).
/// rustc keeps room for a local from its first borrow to the end of its
/// scope, across every later `await`, even once it is moved or dropped,
/// and a local kept across two `await`s has room in every state: the head,
/// the body and the send half are therefore borrowed only in helpers and in
/// [`SendHead`], the reader is made after the head's write, and the wait
/// for the response is one `await`. A buffered body's copy for a resend
/// waits in the request's own body slot.
#[inline]
#[allow(clippy::manual_async_fn)] // on purpose: see above
fn send_once<B: From<Box<RecvBody>>>(
    inner: Arc<Inner>,
    mut request: Request<Body>,
    early: bool,
) -> impl Future<Output = Result<Once<B>, SendError>> {
    async move {
        if !inner.signals.accepts_requests() {
            // Closed for the server's protocol error: that is what the
            // request meets (and, sent again, meets again).
            let (error, fate) = if inner.signals.is_closed() {
                (closed_error(&inner), Fate::Unsent)
            } else {
                (
                    Error::msg(ErrorKind::Refused, "HTTP/3 connection going away (GOAWAY)"),
                    Fate::Refused,
                )
            };
            return Err(fail(error, fate, Some(request)));
        }
        let head = encode_head(&inner, &request)?;

        let (tx, rx) = match open(&inner).await {
            Ok(stream) => stream,
            Err(e) => {
                inner.signals.report();
                let error = match inner.signals.failure() {
                    Some(why) => Error::new(ErrorKind::Protocol, why.to_owned()),
                    None => Error::new(ErrorKind::ConnectionClosed, format!("HTTP/3: {e}")),
                };
                return Err(fail(error, Fate::Unsent, Some(request)));
            }
        };
        inner.signals.report();
        let guard = StreamGuard::new(Arc::clone(&inner));
        let Outgoing {
            body,
            streamed,
            replayable,
        } = take_body(&mut request);
        let expects_body = request.method() != http::Method::HEAD;

        // The head, and a buffered body with it, in one write; then the end.
        // The receiving side waits in the write (which stops it as an
        // unanswered reader would, if dropped), and its reader is made after:
        // the future keeps room for the one or the other, not both.
        let (rx, streaming) = SendHead::new(tx, rx, head, body).await;
        let mut sending = streaming.map(|(tx, body)| {
            // Checked already: well formed, and equal to any length the
            // body knows (a stream's own is not known).
            let declared = crate::validate::content_length(request.headers())
                .ok()
                .flatten();
            Box::pin(send_body(tx, body, declared, Arc::clone(&inner)))
        });
        let mut reader = StreamReader::new(rx, inner.config.max_field_section, Bytes::new());
        reader.set_unanswered(true);

        let mut interim = 0u8;
        let response = loop {
            // One wait for the response's next frame and the body's sending
            // together (the body's failure ends the request, the response
            // head may come before the body is all sent): a local kept
            // across two waits has room in every state of the future.
            let received = std::future::poll_fn(|cx| {
                if let Some(sent) = sending.as_mut() {
                    if let Poll::Ready(result) = sent.as_mut().poll(cx) {
                        return Poll::Ready(Err(result));
                    }
                }
                reader.poll_frame(cx).map(Ok)
            })
            .await;
            let received = match received {
                Ok(received) => received,
                Err(Ok(())) => {
                    sending = None;
                    continue;
                }
                Err(Err(error)) => {
                    reader.stop(code::REQUEST_CANCELLED);
                    return Err(fail(error, Fate::Final, None));
                }
            };
            match received {
                Ok(Some(Frame::Headers(block))) => match inner.response_head(&block) {
                    Ok(head) if head.parts.status.is_informational() => {
                        interim += 1;
                        if interim > MAX_INTERIM {
                            reader.stop(code::REQUEST_CANCELLED);
                            return Err(fail(
                                Error::msg(ErrorKind::Protocol, "too many interim (1xx) responses"),
                                Fate::Final,
                                None,
                            ));
                        }
                    }
                    Ok(head) => break head,
                    Err(e) => {
                        let error = head_error(&inner, &mut reader, e, "response");
                        return Err(fail(error, Fate::Final, None));
                    }
                },
                Ok(Some(frame)) => {
                    let error = unexpected(&inner, &frame, "before the response head");
                    return Err(fail(error, Fate::Final, None));
                }
                Ok(None) => {
                    return Err(fail(
                        Error::msg(
                            ErrorKind::Protocol,
                            "HTTP/3 request stream ended before a response head",
                        ),
                        Fate::Final,
                        None,
                    ))
                }
                Err(e) => {
                    let (error, fate) = response_error(&inner, &mut reader, e);
                    drop(guard);
                    return Err(fail(error, fate, replayable.then_some(request)));
                }
            }
        };
        if early && response.parts.status == TOO_EARLY && replayable {
            // Nothing of this answer is wanted: the stream is let go.
            reader.stop(code::REQUEST_CANCELLED);
            drop(guard);
            return Ok(Once::TooEarly(request));
        }
        if let Some(rest) = sending {
            tokio::spawn(async move {
                if let Err(e) = rest.await {
                    tracing::debug!("HTTP/3 request body after the response head: {e}");
                }
            });
        }
        // The body slot holds the copy kept for a resend (an empty body
        // when there is none): the parts go on with it as they are.
        let (parts, replay) = request.into_parts();
        let (uri, sent) = Sent::from_parts(parts, replay, streamed);
        let body = Box::new(RecvBody::new(reader, guard, &response, expects_body));
        Ok(Once::Answered(Answer {
            head: response.parts,
            shared: response.shared,
            length: Some(response.length),
            body: B::from(body),
            uri,
            sent,
        }))
    }
}

/// `request`'s head as a HEADERS frame, within the server's bound. A
/// function of its own, so the encoded head (borrowed for the error's
/// message) takes no room in the request's future.
#[allow(clippy::result_large_err)] // `SendError` is what every send returns
fn encode_head(inner: &Inner, request: &Request<Body>) -> Result<Bytes, SendError> {
    // As over HTTP/2 (`proto/h2/request.rs`): a body of known length says
    // it, and so does an empty one where the method carries a body. A
    // server proxying the request on may need it: Caddy 2.6.2 forwards an
    // HTTP/3 body without it as empty.
    let length = request
        .body()
        .len()
        .filter(|&len| len != 0 || crate::body::expects_body(request.method()));
    let encoded = inner.request_head(request, length).map_err(|why| {
        fail(
            Error::msg(ErrorKind::InvalidRequest, why),
            Fate::Final,
            None,
        )
    })?;
    let peer_max = inner.peer_max_field_section.load(Ordering::Acquire);
    if encoded.size > peer_max {
        return Err(fail(
            Error::new(
                ErrorKind::InvalidRequest,
                format!(
                    "request header section of {} bytes over the server's {peer_max}",
                    encoded.size
                ),
            ),
            Fate::Final,
            None,
        ));
    }
    Ok(encoded.frame)
}

/// Opens a request stream, counting it and any wait for the server's
/// credit (the one sign of its MAX_STREAMS quinn gives, see `signals`).
async fn open(
    inner: &Inner,
) -> Result<(quinn::SendStream, quinn::RecvStream), quinn::ConnectionError> {
    let mut opening = pin!(inner.quic.open_bi());
    // Held while the open waits for credit: the connection keeps itself
    // alive for it (`quic_idle`'s PINGs), as for an open stream.
    let mut waiting = None;
    let stream = std::future::poll_fn(|cx| {
        let polled = opening.as_mut().poll(cx);
        if polled.is_pending() && waiting.is_none() {
            waiting = Some(inner.signals.blocked_open());
            inner.signals.open_blocked();
            inner.signals.report();
        }
        polled
    })
    .await;
    drop(waiting);
    let stream = stream?;
    inner.signals.stream_opened();
    Ok(stream)
}

/// A frame that has no place on a request stream where it came: the
/// server's connection error (RFC 9114 §4.1, §7.2.5: a PUSH_PROMISE we
/// never allowed is H3_ID_ERROR).
pub(super) fn unexpected(inner: &Inner, frame: &Frame, when: &str) -> Error {
    let (code, what) = match frame {
        Frame::PushPromise(_) => (code::ID_ERROR, "PUSH_PROMISE, with no push allowed"),
        Frame::Data(_) => (code::FRAME_UNEXPECTED, "DATA"),
        Frame::Headers(_) => (code::FRAME_UNEXPECTED, "HEADERS"),
        Frame::Settings(_) => (code::FRAME_UNEXPECTED, "SETTINGS"),
        Frame::Goaway(_) => (code::FRAME_UNEXPECTED, "GOAWAY"),
        Frame::CancelPush(_) => (code::FRAME_UNEXPECTED, "CANCEL_PUSH"),
        Frame::MaxPushId(_) => (code::FRAME_UNEXPECTED, "MAX_PUSH_ID"),
    };
    let why = format!("HTTP/3: the server broke the protocol ({what} {when} on a request stream)");
    inner.fail(code, why.clone());
    Error::new(ErrorKind::Protocol, why)
}

/// A field section refused: over our bound (the stream's: stopped, the
/// connection goes on), malformed (the stream's), or QPACK we cannot read
/// (the connection's).
pub(super) fn head_error(
    inner: &Inner,
    reader: &mut StreamReader,
    e: HeadError,
    what: &str,
) -> Error {
    match e {
        HeadError::TooLarge(max) => {
            reader.stop(code::EXCESSIVE_LOAD);
            Error::new(
                ErrorKind::HeadersTooLarge,
                format!("{what} header section over {max} bytes"),
            )
        }
        HeadError::Malformed(_) => {
            reader.stop(code::MESSAGE_ERROR);
            Error::new(ErrorKind::Protocol, format!("HTTP/3 {what}: {e}"))
        }
        HeadError::Qpack(_) => {
            let why = format!("HTTP/3 {what}: the server broke the protocol ({e})");
            inner.fail(code::QPACK_DECOMPRESSION_FAILED, why.clone());
            Error::new(ErrorKind::Protocol, why)
        }
    }
}

/// A frame error: a HEADERS frame over the bound is the stream's (stopped),
/// anything else the connection's.
pub(super) fn frame_error(
    inner: &Inner,
    reader: &mut StreamReader,
    e: FrameError,
    what: &str,
) -> Error {
    if e.is_headers_too_large() {
        reader.stop(code::EXCESSIVE_LOAD);
        return Error::new(ErrorKind::HeadersTooLarge, format!("HTTP/3 {what}: {e}"));
    }
    let why = format!("HTTP/3 {what}: the server broke the protocol ({e})");
    inner.fail(e.code(), why.clone());
    Error::new(ErrorKind::Protocol, why)
}

/// What a failure before the response head means for `reader`'s request
/// stream.
fn response_error(inner: &Inner, reader: &mut StreamReader, e: ReadError) -> (Error, Fate) {
    let id = reader.id();
    let goaway = inner.signals.goaway_id();
    // RFC 9114 §5.2: streams from the GOAWAY's id on were not processed.
    let past_goaway = goaway.is_some_and(|g| id >= g);
    match e {
        ReadError::Frame(e) => (frame_error(inner, reader, e, "response"), Fate::Final),
        // Sent in early data the server refused: it never saw the request.
        ReadError::ZeroRttRejected => (
            Error::msg(ErrorKind::ConnectionClosed, "HTTP/3: 0-RTT rejected"),
            Fate::Unsent,
        ),
        ReadError::Reset(c) if c == code::REQUEST_REJECTED => (
            Error::msg(ErrorKind::Refused, "HTTP/3 request rejected unprocessed"),
            Fate::Refused,
        ),
        _ if past_goaway => (
            Error::msg(
                ErrorKind::Refused,
                "HTTP/3 request past the server's GOAWAY: not processed",
            ),
            Fate::Refused,
        ),
        ReadError::Reset(c) => (
            Error::new(
                ErrorKind::ConnectionClosed,
                format!("HTTP/3 stream reset by the server: {c:#x}"),
            ),
            Fate::Final,
        ),
        ReadError::Lost(_) | ReadError::Closed if inner.signals.failure().is_some() => {
            (closed_error(inner), Fate::Final)
        }
        e => (
            Error::new(
                ErrorKind::ConnectionClosed,
                format!("HTTP/3 connection lost before the response head: {e}"),
            ),
            Fate::Lost {
                after_goaway: goaway.is_some(),
            },
        ),
    }
}
