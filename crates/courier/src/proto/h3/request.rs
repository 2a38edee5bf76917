//! One request on an HTTP/3 connection, from its head to the response head:
//! the request body is sent beside the wait for the response (a server may
//! answer, or echo, before it has read the whole body), and a failure says
//! whether the request may be sent again.

use std::sync::Arc;

use h3::error::StreamError;
use http::{header, HeaderMap, Request};
use http_body::Body as _;

use super::body::{send_body, RecvBody, StreamGuard};
use super::code;
use super::conn::Inner;
use super::guard::FrameTooLarge;
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::{HandedBack, SendError, Sent};

/// Interim (1xx) responses read before the final one; more is a hostile peer.
const MAX_INTERIM: usize = 16;

/// The response head and body of an answered request.
pub(crate) struct Answer {
    pub(crate) head: http::response::Parts,
    pub(crate) body: RecvBody,
    /// The request's URI, moved out of it.
    pub(crate) uri: http::Uri,
    /// The rest of the request, for a redirect to follow.
    pub(crate) sent: Sent,
}

/// Headers HTTP/3 forbids (RFC 9114 §4.2): connection-specific ones, and
/// `host` (the authority goes in `:authority`).
fn strip_connection_headers(headers: &mut HeaderMap) {
    for name in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::HOST,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
    if headers
        .get(header::TE)
        .is_some_and(|te| !te.as_bytes().eq_ignore_ascii_case(b"trailers"))
    {
        headers.remove(header::TE);
    }
}

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
    /// server's own reasons, a request body that failed).
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

pub(super) async fn send(inner: &Arc<Inner>, request: Request<Body>) -> Result<Answer, SendError> {
    let signals = &inner.signals;
    if !signals.accepts_requests() {
        let (error, fate) = if let Some(why) = signals.failure() {
            // Closed for the server's protocol error: that is what the
            // request meets (and, sent again, meets again).
            (
                Error::new(ErrorKind::Protocol, why.to_owned()),
                Fate::Unsent,
            )
        } else if signals.is_closed() {
            (
                Error::msg(ErrorKind::ConnectionClosed, "HTTP/3 connection closed"),
                Fate::Unsent,
            )
        } else {
            (
                Error::msg(ErrorKind::Refused, "HTTP/3 connection going away (GOAWAY)"),
                Fate::Refused,
            )
        };
        return Err(SendError {
            error,
            handed_back: handed_back(fate, Some(request)),
        });
    }
    // h3 takes the head by value; the request is kept whole until answered
    // (to hand back, or for a redirect to follow).
    let mut head = Request::new(());
    *head.method_mut() = request.method().clone();
    *head.uri_mut() = request.uri().clone();
    *head.headers_mut() = request.headers().clone();
    strip_connection_headers(head.headers_mut());
    // As over HTTP/2 (`proto/h2/request.rs`): a body of known length says
    // it, and so does an empty one where the method carries a body. A
    // server proxying the request on may need it: Caddy 2.6.2 forwards an
    // HTTP/3 body without it as empty.
    let length = request
        .body()
        .len()
        .filter(|&len| len != 0 || crate::body::expects_body(request.method()));
    if let Some(len) = length {
        if !head.headers().contains_key(header::CONTENT_LENGTH) {
            head.headers_mut()
                .insert(header::CONTENT_LENGTH, http::HeaderValue::from(len));
        }
    }
    let (parts, body) = request.into_parts();
    let streamed = body.as_buffered().is_none() && !body.is_end_stream();
    let replay = body.try_clone();
    let expects_body = parts.method != http::Method::HEAD;

    let mut opener = inner.send.clone();
    let stream = match opener.send_request(head).await {
        Ok(stream) => stream,
        Err(e) => {
            inner.failed(&e);
            let (error, fate, opened) = open_error(e);
            if opened {
                inner.stream_ended(false);
            }
            signals.report();
            // Nothing of the body went: the request is whole.
            let request = Request::from_parts(parts, body);
            return Err(SendError {
                error,
                handed_back: handed_back(fate, Some(request)),
            });
        }
    };
    signals.report();
    let guard = StreamGuard::new(Arc::clone(inner));
    let (mut tx, mut rx) = stream.split();
    let id = rx.id().into_inner();

    // Sent beside the wait for the head; still sending once the head is in
    // (a server answering an upload early), it goes on in a task of its own.
    let mut sending = if body.is_end_stream() || body.size_hint().exact() == Some(0) {
        if let Err(e) = tx.finish().await {
            tracing::debug!("HTTP/3 request end not sent: {e}");
        }
        None
    } else {
        Some(Box::pin(send_body(tx, body)))
    };
    let mut interim = 0;
    let response = loop {
        let received = match sending.as_mut() {
            Some(body) => tokio::select! {
                biased;
                sent = body => {
                    sending = None;
                    if let Err(error) = sent {
                        rx.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
                        return Err(SendError { error, handed_back: None });
                    }
                    continue;
                }
                received = rx.recv_response() => received,
            },
            None => rx.recv_response().await,
        };
        match received {
            Ok(response) if response.status().is_informational() => {
                interim += 1;
                if interim > MAX_INTERIM {
                    rx.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
                    return Err(SendError {
                        error: Error::msg(ErrorKind::Protocol, "too many interim (1xx) responses"),
                        handed_back: None,
                    });
                }
            }
            Ok(response) => break response,
            Err(e) => {
                guard.failed(&e);
                let goaway = signals.goaway_id();
                let (error, fate) = response_error(e, id, goaway);
                drop(guard);
                let request = replay.map(|body| Request::from_parts(parts, body));
                return Err(SendError {
                    error,
                    handed_back: handed_back(fate, request),
                });
            }
        }
    };
    if let Some(rest) = sending {
        tokio::spawn(async move {
            if let Err(e) = rest.await {
                tracing::debug!("HTTP/3 request body after the response head: {e}");
            }
        });
    }
    let (head, ()) = response.into_parts();
    let request = Request::from_parts(parts, replay.unwrap_or_default());
    let (uri, sent) = Sent::answered(request, streamed);
    let body = RecvBody::new(rx, guard, &head, expects_body);
    Ok(Answer {
        head,
        body,
        uri,
        sent,
    })
}

/// What a failed `send_request` means: the error, the fate, and whether a
/// stream had been opened (and counted) for it.
fn open_error(e: StreamError) -> (Error, Fate, bool) {
    // The connection failed on the server's fault before this request went:
    // it may go on another connection, and if it fails there too the
    // caller learns what the server broke, not only that it closed.
    if let Some((kind, message)) = peer_fault(&e, "request") {
        return (Error::new(kind, message), Fate::Unsent, false);
    }
    match e {
        StreamError::RemoteClosing => (
            Error::msg(ErrorKind::Refused, "HTTP/3 connection going away (GOAWAY)"),
            Fate::Refused,
            false,
        ),
        // h3 checks the server's SETTINGS_MAX_FIELD_SECTION_SIZE after opening.
        StreamError::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => (
            Error::new(
                ErrorKind::InvalidRequest,
                format!(
                    "request header section of {actual_size} bytes over the server's {max_size}"
                ),
            ),
            Fate::Final,
            true,
        ),
        StreamError::RemoteTerminate { code, .. } if code.value() == code::REQUEST_REJECTED => (
            Error::msg(ErrorKind::Refused, "HTTP/3 request rejected unprocessed"),
            Fate::Refused,
            true,
        ),
        e => (
            Error::new(ErrorKind::ConnectionClosed, format!("HTTP/3: {e}")),
            Fate::Unsent,
            false,
        ),
    }
}

/// The server broke the protocol, as h3 or our [`FrameGuard`] found:
/// a frame over the bound, or a connection error h3 closed the connection
/// with (H3_FRAME_UNEXPECTED, H3_CLOSED_CRITICAL_STREAM, QPACK's...).
/// Not a lost connection: the request is not to be sent again.
///
/// [`FrameGuard`]: super::guard::FrameGuard
pub(crate) fn peer_fault(e: &StreamError, what: &str) -> Option<(ErrorKind, String)> {
    use h3::error::{ConnectionError, LocalError};
    match e {
        StreamError::Undefined(inner) => {
            let too_large = inner.downcast_ref::<FrameTooLarge>()?;
            let kind = if too_large.is_headers() {
                ErrorKind::HeadersTooLarge
            } else {
                ErrorKind::Protocol
            };
            Some((kind, format!("HTTP/3 {what}: {too_large}")))
        }
        StreamError::ConnectionError(ConnectionError::Local {
            error: LocalError::Application { code, reason, .. },
            ..
        }) if *code != h3::error::Code::H3_NO_ERROR => Some((
            ErrorKind::Protocol,
            format!("HTTP/3 {what}: the server broke the protocol ({code}: {reason})"),
        )),
        _ => None,
    }
}

/// What a failure before the response head means for request stream `id`.
pub(crate) fn response_error(e: StreamError, id: u64, goaway: Option<u64>) -> (Error, Fate) {
    if let Some((kind, message)) = peer_fault(&e, "response") {
        return (Error::new(kind, message), Fate::Final);
    }
    // RFC 9114 §5.2: streams from the GOAWAY's id on were not processed.
    let past_goaway = goaway.is_some_and(|g| id >= g);
    match e {
        StreamError::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => (
            Error::new(
                ErrorKind::HeadersTooLarge,
                format!("response header section of {actual_size} bytes over {max_size}"),
            ),
            Fate::Final,
        ),
        StreamError::RemoteTerminate { code, .. } if code.value() == code::REQUEST_REJECTED => (
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
        StreamError::RemoteTerminate { code, .. } => (
            Error::new(
                ErrorKind::ConnectionClosed,
                format!("HTTP/3 stream reset by the server: {code}"),
            ),
            Fate::Final,
        ),
        StreamError::StreamError { code, reason, .. } => (
            Error::new(
                ErrorKind::Protocol,
                format!("HTTP/3 response: {code}: {reason}"),
            ),
            Fate::Final,
        ),
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
