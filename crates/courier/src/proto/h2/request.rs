//! A request on an HTTP/2 connection, from its head and body form to the
//! response head, and a connection's handshake as the client's
//! configuration sets it up.
//!
//! A request opens its stream from its own task and waits on it there: an
//! in-flight request costs its future and one stream slot, and a response
//! wakes the request directly. The request itself stays with its future
//! until the response head arrives, so a stream the server refuses
//! unprocessed is sent again whole, without a copy made up front; a
//! streamed body, which its pipe takes, is kept by reference as it is taken
//! (within a bound, see [`crate::body::replay`]) until the head arrives.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::uri::{Authority, Scheme};
use http::{HeaderMap, Request};

use super::conn::{Head, Outgoing};
use super::driver::{self, Handle, KeepAliveConfig};
use super::error::StreamError;
use super::grow::Adaptive;
use super::head::ResponseHead;
use super::send::{Feed, Pipe};
use super::signals::Signals;
use super::stream::{Arrived, RecvBody, StreamRef};
use super::tunnel::Tunnel;
use crate::body::{expects_body, Body};
use crate::config::Config;
use crate::error::Error;
use crate::proto::exchange::{
    Answer, Driver, HandedBack, Protocol, SendError, SendResult, Sent, Switched,
};
use crate::proto::Io;

/// The stream limit assumed before the server's SETTINGS arrive, so that
/// requests go out with the preface (RFC 9113 §3.4 lets a client send
/// before the server's SETTINGS; §6.5.2 recommends servers allow at least
/// 100, most use exactly that; Go's transport and Chromium assume 100 too).
/// Streams past what the SETTINGS then allow are refused, and sent again.
pub(crate) const ASSUMED_MAX_STREAMS: usize = 100;

/// A fresh HTTP/2 connection, before the pool takes it.
pub(crate) struct Handshaken {
    pub(crate) handle: Handle,
    pub(crate) driver: Driver,
    /// SETTINGS (stream limit) and GOAWAY as read off the wire.
    pub(crate) signals: Arc<Signals>,
}

/// Starts a connection; its driver must be spawned for anything to happen.
/// It takes requests at once; if the server's SETTINGS have not arrived by
/// `deadline`, it fails.
pub(crate) fn handshake<S: Io + 'static>(
    stream: S,
    config: &Config,
    deadline: tokio::time::Instant,
) -> Handshaken {
    let h2 = &config.http2;
    let signals = Arc::new(Signals::new(ASSUMED_MAX_STREAMS));
    let local = super::conn::Local {
        stream_window: h2.initial_stream_window_size,
        conn_window: h2.initial_connection_window_size,
        max_header_list: config.max_response_headers_size,
    };
    let keep_alive = KeepAliveConfig {
        interval: h2.keep_alive_interval,
        timeout: h2.keep_alive_timeout,
        while_idle: h2.keep_alive_while_idle,
    };
    let adaptive = h2.adaptive_window.then_some(Adaptive {
        max_stream_window: h2.max_stream_window_size,
        max_connection_window: h2.max_connection_window_size,
    });
    let (handle, driver) = driver::handshake_with(
        stream,
        local,
        adaptive,
        keep_alive,
        ASSUMED_MAX_STREAMS,
        Arc::clone(&signals),
        Some(deadline),
    );
    Handshaken {
        handle,
        driver: Box::pin(driver),
        signals,
    }
}

/// A request on its way: opens its stream on first poll, then waits for the
/// response head.
pub(crate) struct Http2Send {
    link: Link,
    /// Kept until the head arrives, to be handed back if the stream is
    /// refused unprocessed (a streamed body: see `feed`), and for its URI.
    request: Option<Request<Body>>,
    /// A streamed body, which went to its pipe: the request has it back
    /// only if the stream fails unanswered and what went out was kept.
    feed: Option<Arc<Feed>>,
    /// A CONNECT's writing side, handed to the response when the server
    /// accepts the tunnel.
    tunnel: Option<Tunnel>,
}

/// The connection until the stream opens, then the stream (which holds the
/// connection): one or the other, in the room of one.
enum Link {
    /// With the request's deadline, which the connection keeps once the
    /// stream is open ([`super::deadline`]).
    Opening {
        shared: Arc<super::conn::Shared>,
        deadline: Option<tokio::time::Instant>,
    },
    /// `kept`: the connection keeps the request's deadline.
    Open { stream: StreamRef, kept: bool },
    /// The head came, or the stream failed.
    Done,
}

/// An accepted CONNECT's writing side, in its response's extensions until
/// `Response::upgrade` takes it.
#[derive(Clone)]
pub(crate) struct TunnelWriter(pub(crate) Arc<std::sync::Mutex<Option<Tunnel>>>);

/// Starts sending `req` on the connection behind `handle`; the connection
/// keeps its `deadline` (if any) while it waits for its head.
pub(crate) fn send(
    handle: &Handle,
    req: Request<Body>,
    deadline: Option<tokio::time::Instant>,
) -> Http2Send {
    Http2Send {
        link: Link::Opening {
            shared: Arc::clone(&handle.shared),
            deadline,
        },
        request: Some(req),
        feed: None,
        tunnel: None,
    }
}

/// What the origin gives every request: where `:scheme` and `:authority`
/// come from when the URI has none, and the client's default headers.
pub(crate) struct Target<'a> {
    pub(crate) scheme: &'a Scheme,
    pub(crate) authority: &'a Authority,
    pub(crate) defaults: &'a HeaderMap,
}

impl Http2Send {
    /// The stream is open, and its connection keeps the request's deadline
    /// (and wakes it when the deadline passes).
    pub(crate) fn deadline_kept(&self) -> bool {
        matches!(self.link, Link::Open { kept: true, .. })
    }

    fn shared(&self) -> Option<&Arc<super::conn::Shared>> {
        match &self.link {
            Link::Opening { shared, .. } => Some(shared),
            Link::Open { stream, .. } => Some(stream.shared()),
            Link::Done => None,
        }
    }

    // The error hands the request back by value: a failure path, not worth a box.
    #[allow(clippy::result_large_err)]
    pub(crate) fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        target: &Target<'_>,
    ) -> Poll<SendResult<RecvBody>> {
        if !matches!(self.link, Link::Open { .. }) {
            if let Err(e) = std::task::ready!(self.poll_open(cx, target)) {
                return Poll::Ready(Err(self.failed(e)));
            }
            // Opening registered this task for the response: nothing can
            // have come yet that would not wake it.
            return Poll::Pending;
        }
        let Link::Open { stream, .. } = &mut self.link else {
            unreachable!("opened above")
        };
        match std::task::ready!(stream.poll_head(cx)) {
            Ok(Arrived {
                head:
                    ResponseHead {
                        parts: mut head,
                        shared,
                    },
                length,
                end,
            }) => {
                if let Some(tunnel) = self.tunnel.take().filter(|_| head.status.is_success()) {
                    // RFC 9113 §8.5, RFC 8441 §5: a 2xx makes the stream a tunnel.
                    head.extensions.insert(Switched);
                    head.extensions
                        .insert(TunnelWriter(Arc::new(std::sync::Mutex::new(Some(tunnel)))));
                }
                let request = self.request.take().unwrap_or_default();
                let (uri, sent) = Sent::answered(request, self.feed.is_some());
                let Link::Open { stream, .. } = std::mem::replace(&mut self.link, Link::Done)
                else {
                    unreachable!("opened above")
                };
                if let Some(feed) = self.feed.take() {
                    // The server took the request: it is not sent again.
                    feed.accepted();
                }
                Poll::Ready(Ok(Answer {
                    head,
                    body: RecvBody::new(stream, end),
                    uri,
                    sent,
                    // Read as the head was decoded (every copy the same,
                    // `1*DIGIT`): what the response would read from it.
                    length: Some(length),
                    shared,
                }))
            }
            Err(e) => Poll::Ready(Err(self.failed(e))),
        }
    }

    fn poll_open(
        &mut self,
        cx: &mut Context<'_>,
        target: &Target<'_>,
    ) -> Poll<Result<(), StreamError>> {
        let Link::Opening { shared, deadline } = &self.link else {
            return Poll::Ready(Err(StreamError::Closed("the request was sent already")));
        };
        let mark = deadline.and_then(|at| super::deadline::mark(shared.epoch(), at));
        let request = self.request.as_mut().expect("a request until opened");
        let protocol = request.extensions().get::<Protocol>().map(Protocol::as_str);
        let connect = request.method() == http::Method::CONNECT;
        if protocol.is_some() && !connect {
            return Poll::Ready(Err(StreamError::InvalidRequest(
                "a :protocol (extended CONNECT) needs the CONNECT method",
            )));
        }
        if connect && self.tunnel.is_none() {
            // The tunnel's bytes are written after the 2xx, to the
            // upgraded stream: the request's body is the tunnel.
            if !request.body().is_empty() {
                return Poll::Ready(Err(StreamError::InvalidRequest(
                    "a CONNECT request has no body: write to the upgraded stream",
                )));
            }
            let (tunnel, body) = super::tunnel::tunnel();
            *request.body_mut() = Body::wrap(body);
            self.tunnel = Some(tunnel);
        }
        let body = request.body();
        let content_length = body
            .len()
            .filter(|&len| len != 0 || expects_body(request.method()));
        let streamed = body.as_buffered().is_none();
        // What a streamed body is held to: the caller's Content-Length
        // (checked already: well formed, and equal to any length the body
        // knows). Looked up only for a streamed body, which alone needs it.
        let declared = streamed.then(|| {
            crate::validate::content_length(request.headers())
                .ok()
                .flatten()
                .or(body.len())
        });
        let mut outgoing = match body.as_buffered() {
            Some([]) => Outgoing::Empty,
            Some(_) => Outgoing::Buffered(
                body.try_clone()
                    .and_then(|b| b.into_bytes().ok())
                    .unwrap_or_default(),
            ),
            None => Outgoing::Streamed,
        };
        let uri = request.uri();
        // The caller's `Host` names the virtual host (see `validate::host`).
        let host = crate::validate::host(request.headers());
        let head = Head {
            method: request.method(),
            scheme: uri.scheme().unwrap_or(target.scheme),
            authority: host
                .as_ref()
                .or(uri.authority())
                .unwrap_or(target.authority),
            path: uri.path_and_query().map_or("/", |p| p.as_str()),
            headers: request.headers(),
            defaults: target.defaults,
            withheld: crate::config::WithheldDefaults::of(request.extensions()),
            content_length,
            protocol,
            deadline: mark,
        };
        let (key, id) = std::task::ready!(shared.lock().poll_open(cx, &head, &mut outgoing))?;
        // The stream takes the connection's handle from here.
        let Link::Opening { shared, .. } = std::mem::replace(&mut self.link, Link::Done) else {
            unreachable!("matched above")
        };
        if streamed {
            // A streamed body goes to its pipe, which keeps what it takes
            // of it (within a bound) until the server answers.
            let body = std::mem::take(self.request.as_mut().expect("checked").body_mut());
            let feed = Feed::new(body);
            Pipe::spawn(
                Arc::clone(&shared),
                key,
                id,
                Arc::clone(&feed),
                declared.flatten(),
            );
            self.feed = Some(feed);
        }
        self.link = Link::Open {
            stream: StreamRef::new(shared, key, id),
            kept: mark.is_some(),
        };
        Poll::Ready(Ok(()))
    }

    /// The error for the caller, with the request if it may be sent again.
    fn failed(&mut self, e: StreamError) -> SendError {
        let mut not_kept = false;
        if let Some(feed) = self.feed.take() {
            // A streamed body that may be sent again, and is whole, is the
            // request's again; otherwise the request cannot be resent.
            let resend = e.is_unprocessed() || e.is_connection_lost();
            match (
                self.request.as_mut(),
                resend.then(|| feed.take_back()).flatten(),
            ) {
                (Some(request), Some(body)) => *request.body_mut() = body,
                _ => {
                    // (A body that failed is `Closed`, never unprocessed.)
                    not_kept = e.is_unprocessed();
                    self.request = None;
                }
            }
        }
        if self.tunnel.take().is_some() {
            // A CONNECT's body was its tunnel, which nothing has written to
            // before the answer: sent again, it gets a new one.
            if let Some(request) = self.request.as_mut() {
                *request.body_mut() = Body::empty();
            }
        }
        // A connection lost before the head: the server may or may not have
        // processed the request, as with a stale HTTP/1.1 connection (the
        // attempt resends it only if its method is idempotent).
        let handed_back = if e.is_unprocessed() {
            self.request.take().map(HandedBack::Refused)
        } else if e.is_connection_lost() {
            let (after_goaway, spoke) = match self.shared() {
                Some(shared) => {
                    let st = shared.lock();
                    (st.goaway.is_received(), st.signals.settings_received())
                }
                None => (false, false),
            };
            // Lost before the server's SETTINGS, the connection never showed
            // it speaks HTTP/2: it failed to establish, and its requests fail
            // with it, as when the pool waited for the SETTINGS to use it
            // (a server that is no HTTP/2 server gets no second try).
            let request = self.request.take().filter(|_| spoke);
            request.map(|request| HandedBack::Lost {
                request,
                after_goaway,
            })
        } else {
            None
        };
        // Dropping the stream handle resets the stream if it is still open.
        self.link = Link::Done;
        let error = match not_kept {
            // Say why a request the server did not take is not sent again.
            true => Error::new(Error::from(e.clone()).kind(), BodyNotKept(e)),
            false => Error::from(e),
        };
        SendError { error, handed_back }
    }
}

/// A stream that could have been sent again but for its streamed body, of
/// which more went out than courier keeps (`body::replay`).
#[derive(Debug)]
struct BodyNotKept(StreamError);

impl std::fmt::Display for BodyNotKept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; the streamed request body was not sent again: more than {} KiB of it had been read",
            self.0,
            crate::body::replay::REPLAY_LIMIT / 1024
        )
    }
}

impl std::error::Error for BodyNotKept {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}
