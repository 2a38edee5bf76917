//! HTTP/2 on the `h2` crate (hyper's own HTTP/2 implementation), used directly.
//!
//! hyper's HTTP/2 client puts a task and two channels between a request and
//! its stream: the request goes to a dispatcher task, which spawns one more
//! task per request to wait for the response and send it back. Here the
//! request's own task opens the stream and waits on it, so an in-flight
//! request costs its future and h2's stream state, and a response wakes the
//! request directly. What hyper's wrapper added on top of h2, courier does
//! itself: keep-alive PINGs (in the connection's driver), stripping the
//! connection-specific headers HTTP/2 forbids, and piping streamed bodies.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use h2::client::{Connection, ResponseFuture, SendRequest};
use h2::SendStream;
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, TE, TRANSFER_ENCODING, UPGRADE};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Request, Uri, Version};
use http_body::Body as _;
use tokio::sync::oneshot;

use super::conn::{Answer, Driver, HandedBack, SendError, SendResult};
use super::replay::Replay;
use super::sniff::{FrameWatch, Signals};
use crate::body::{expects_body, Body};
use crate::config::Config;
use crate::connect::Stream;
use crate::error::Error;

/// The stream limit assumed before the server's SETTINGS arrive (RFC 9113
/// recommends servers allow at least 100; most use exactly that).
pub(crate) const ASSUMED_MAX_STREAMS: usize = 100;

/// A fresh HTTP/2 connection, before the pool takes it.
pub(crate) struct Handshaken {
    pub(crate) sender: SendRequest<Bytes>,
    pub(crate) driver: Driver,
    /// SETTINGS (stream limit) and GOAWAY as read off the wire.
    pub(crate) signals: Arc<Signals>,
}

pub(crate) async fn handshake(stream: Stream, config: &Config) -> Result<Handshaken, Error> {
    let h2 = &config.http2;
    let signals = Arc::new(Signals::new(ASSUMED_MAX_STREAMS));
    let io = FrameWatch::new(stream, Arc::clone(&signals));
    let (sender, mut conn) = h2::client::Builder::new()
        .initial_max_send_streams(ASSUMED_MAX_STREAMS)
        .initial_window_size(h2.initial_stream_window_size)
        .initial_connection_window_size(h2.initial_connection_window_size)
        .max_header_list_size(u32::try_from(config.max_response_headers_size).unwrap_or(u32::MAX))
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(Error::from_h2)?;
    let keep_alive = h2.keep_alive_interval.and_then(|interval| {
        Some(KeepAlive {
            interval,
            timeout: h2.keep_alive_timeout,
            while_idle: h2.keep_alive_while_idle,
            ping_pong: conn.ping_pong()?,
            signals: Arc::clone(&signals),
        })
    });
    let driver: Driver = Box::pin(drive(conn, keep_alive, Arc::clone(&signals)));
    Ok(Handshaken {
        sender,
        driver,
        signals,
    })
}

/// Runs the connection (reading frames, writing what streams queued) until it
/// closes, or until the peer stops answering keep-alive PINGs.
async fn drive(
    conn: Connection<FrameWatch<Stream>, Bytes>,
    keep_alive: Option<KeepAlive>,
    signals: Arc<Signals>,
) {
    let conn = Coalesce {
        inner: conn,
        deferred: false,
    };
    let result = match keep_alive {
        None => conn.await,
        Some(keep_alive) => {
            tokio::pin!(conn);
            tokio::select! {
                result = &mut conn => result,
                () = keep_alive.run() => {
                    tracing::debug!("HTTP/2 peer stopped answering PINGs; closing the connection");
                    Ok(())
                }
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "HTTP/2 connection ended with an error");
    }
    // Dropping the connection fails every open stream (h2 tells each one).
    signals.close();
}

/// Polls the connection one scheduler round after it is woken, not at once.
///
/// A request's task that queues a stream wakes the connection; run straight
/// away (tokio runs a task woken by the running one next), the connection
/// would write each HEADERS frame alone: measured, 2 requests per `writev`
/// and three times the system time of hyper's client. Deferred to the back of
/// the run queue, it finds every stream the other ready tasks queued in the
/// meantime and writes them together (about 30 requests per `writev`, as with
/// hyper), and reads every response that arrived, for the cost of one extra
/// poll per wake-up.
struct Coalesce<F> {
    inner: F,
    deferred: bool,
}

impl<F: Future + Unpin> Future for Coalesce<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if !self.deferred {
            self.deferred = true;
            // Waking itself while running puts the task at the back of the queue.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.deferred = false;
        Pin::new(&mut self.inner).poll(cx)
    }
}

/// PINGs the peer every `interval` (while streams are open, or always with
/// `while_idle`) and gives up on it when a PONG takes longer than `timeout`.
struct KeepAlive {
    interval: Duration,
    timeout: Duration,
    while_idle: bool,
    ping_pong: h2::PingPong,
    signals: Arc<Signals>,
}

impl KeepAlive {
    /// Returns when the peer is considered dead.
    async fn run(mut self) {
        loop {
            tokio::time::sleep(self.interval).await;
            if !self.while_idle && self.signals.open_streams() == 0 {
                continue;
            }
            if self.ping_pong.send_ping(h2::Ping::opaque()).is_err() {
                return;
            }
            let pong = poll_fn(|cx| self.ping_pong.poll_pong(cx));
            match tokio::time::timeout(self.timeout, pong).await {
                Ok(Ok(_)) => {}
                _ => return,
            }
        }
    }
}

/// Opens one stream and waits for the response head. A buffered request is
/// handed back on failures the server guarantees it did not act on (GOAWAY
/// past the stream, REFUSED_STREAM, or a stream that could not be opened at
/// all): safe to retry.
pub(crate) fn send(
    sender: &SendRequest<Bytes>,
    req: Request<Body>,
    scheme: &Scheme,
    authority: &Authority,
    defaults: &HeaderMap,
) -> Http2Send {
    let (mut parts, body) = req.into_parts();
    // :scheme and :authority come from the URI.
    if parts.uri.scheme().is_none() || parts.uri.authority().is_none() {
        let mut uri = http::uri::Parts::default();
        uri.scheme = Some(scheme.clone());
        uri.authority = Some(authority.clone());
        uri.path_and_query = Some(
            parts
                .uri
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/")),
        );
        if let Ok(full) = Uri::from_parts(uri) {
            parts.uri = full;
        }
    }
    parts.version = Version::HTTP_2;
    // HTTP/2 carries headers in the request itself: the defaults are merged in
    // (one growth of the map, not one per header; a request with no headers of
    // its own takes a copy of the map, which rehashes nothing).
    if parts.headers.is_empty() {
        parts.headers.clone_from(defaults);
    } else {
        parts.headers.reserve(defaults.len());
        for name in defaults.keys() {
            if !parts.headers.contains_key(name) {
                for value in defaults.get_all(name) {
                    parts.headers.append(name.clone(), value.clone());
                }
            }
        }
    }
    strip_connection_headers(&mut parts.headers);
    // END_STREAM frames the body, but servers that size uploads up front (or
    // proxy them to HTTP/1.1) want Content-Length, as hyper sends it.
    if let Some(len) = body.len() {
        if (len != 0 || expects_body(&parts.method)) && !parts.headers.contains_key(CONTENT_LENGTH)
        {
            parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
    }
    // Kept to send again if the server refuses the stream unprocessed
    // (REFUSED_STREAM, GOAWAY past it): h2 takes the request itself.
    let replay = body.try_clone().map(|copy| Replay::new(&parts, copy));
    let body = body.into_bytes();
    let end_of_stream = body.as_ref().is_ok_and(Bytes::is_empty);
    let mut sender = sender.clone();
    let (response, mut stream) =
        match sender.send_request(Request::from_parts(parts, ()), end_of_stream) {
            Ok(sent) => sent,
            // Nothing went out: the connection closed or stopped taking streams.
            Err(e) => {
                return Http2Send {
                    state: Sending::Failed(Some(e)),
                    _cancel: None,
                    replay,
                }
            }
        };
    let cancel = match body {
        Ok(data) if !data.is_empty() => {
            // h2 queues what the peer's window does not take yet; the bytes
            // are the caller's, shared, not copied.
            let _ = stream.send_data(data, true);
            None
        }
        Ok(_) => None,
        Err(streamed) => Some(pipe(streamed, stream)),
    };
    Http2Send {
        state: Sending::Waiting(response),
        _cancel: cancel,
        replay,
    }
}

/// The response head of one stream, or why not.
pub(crate) struct Http2Send {
    state: Sending,
    /// Dropping it (the request given up) stops the body pipe and resets the stream.
    _cancel: Option<oneshot::Sender<()>>,
    /// A copy of a buffered request, handed back if the stream is refused unprocessed.
    replay: Option<Replay>,
}

enum Sending {
    /// The stream is open; its response head is awaited.
    Waiting(ResponseFuture),
    /// The stream could not be opened (taken when reported).
    Failed(Option<h2::Error>),
}

impl Future for Http2Send {
    type Output = SendResult;

    // The error is a failure path: not worth a box.
    #[allow(clippy::result_large_err)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SendResult> {
        let this = self.get_mut();
        let (result, opened) = match &mut this.state {
            Sending::Waiting(response) => (std::task::ready!(Pin::new(response).poll(cx)), true),
            Sending::Failed(e) => (
                Err(e.take().unwrap_or_else(|| h2::Reason::CANCEL.into())),
                false,
            ),
        };
        Poll::Ready(match result {
            Ok(res) => {
                let (head, body) = res.into_parts();
                Ok(Answer {
                    head,
                    body: Some(body),
                })
            }
            Err(e) => {
                let retry_safe = !opened || unprocessed(&e);
                Err(SendError {
                    error: Error::from_h2(e),
                    handed_back: this
                        .replay
                        .take()
                        .filter(|_| retry_safe)
                        .map(|replay| HandedBack::Unsent(replay.into_request())),
                })
            }
        })
    }
}

/// Streams a body that is not in memory on a task of its own, as the peer's
/// flow-control window allows, until it ends or the request is given up.
fn pipe(mut body: Body, mut stream: SendStream<Bytes>) -> oneshot::Sender<()> {
    let (cancel, mut canceled) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let send = async {
            loop {
                let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await else {
                    let _ = stream.send_data(Bytes::new(), true);
                    return;
                };
                let Ok(frame) = frame else {
                    stream.send_reset(h2::Reason::CANCEL);
                    return;
                };
                let frame = match frame.into_data() {
                    Ok(data) => data,
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            let _ = stream.send_trailers(trailers);
                        }
                        return;
                    }
                };
                // Wait for some window before queueing more, so a slow peer
                // holds back the body instead of the body piling up here.
                stream.reserve_capacity(frame.len());
                while stream.capacity() == 0 && !frame.is_empty() {
                    match poll_fn(|cx| stream.poll_capacity(cx)).await {
                        Some(Ok(_)) => {}
                        _ => return,
                    }
                }
                let end = body.is_end_stream();
                if stream.send_data(frame, end).is_err() || end {
                    return;
                }
            }
        };
        tokio::select! {
            () = send => {}
            _ = &mut canceled => stream.send_reset(h2::Reason::CANCEL),
        }
    });
    cancel
}

/// Removes the connection-specific headers HTTP/2 forbids (RFC 9113 §8.2.2);
/// h2 refuses a request that carries them. `Host` becomes `:authority`.
fn strip_connection_headers(headers: &mut http::HeaderMap) {
    const FORBIDDEN: [HeaderName; 6] = [
        CONNECTION,
        TRANSFER_ENCODING,
        UPGRADE,
        HOST,
        HeaderName::from_static("keep-alive"),
        HeaderName::from_static("proxy-connection"),
    ];
    // Almost never there: one pass over the request's names (each compare is
    // cheap) instead of a hashed removal of each.
    if !headers
        .keys()
        .any(|name| FORBIDDEN.contains(name) || name == TE)
    {
        return;
    }
    for name in FORBIDDEN {
        headers.remove(name);
    }
    if headers.get(TE).is_some_and(|te| te != "trailers") {
        headers.remove(TE);
    }
}

fn unprocessed(err: &h2::Error) -> bool {
    // A graceful GOAWAY fails only the streams past its last stream id; an
    // error GOAWAY fails processed streams too, so only the former (and
    // REFUSED_STREAM) prove the request was not acted on.
    (err.is_go_away() && err.is_remote() && err.reason() == Some(h2::Reason::NO_ERROR))
        || (err.is_remote() && err.reason() == Some(h2::Reason::REFUSED_STREAM))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_specific_headers_are_stripped() {
        let mut headers = http::HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive"),
            ("keep-alive", "5"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "h2c"),
            ("host", "example.com"),
            ("te", "gzip"),
            ("accept", "*/*"),
        ] {
            headers.insert(HeaderName::from_static(name), value.parse().unwrap());
        }
        strip_connection_headers(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key("accept"));
        headers.insert(TE, "trailers".parse().unwrap());
        strip_connection_headers(&mut headers);
        assert!(headers.contains_key(TE));
    }
}
