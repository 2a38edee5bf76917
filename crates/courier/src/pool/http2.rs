//! HTTP/2 on hyper's low-level `client::conn::http2` API.

use std::future::Future;
use std::sync::Arc;

use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Request, Uri, Version};
use hyper::client::conn::http2::{Builder, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use super::conn::{Answer, Driver, SendError, SendResult};
use super::sniff::{FrameWatch, Signals};
use crate::body::Body;
use crate::config::Config;
use crate::connect::Stream;
use crate::error::Error;

/// The stream limit assumed before the server's SETTINGS arrive (RFC 9113
/// recommends servers allow at least 100; most use exactly that).
pub(crate) const ASSUMED_MAX_STREAMS: usize = 100;

/// A fresh HTTP/2 connection, before the pool takes it.
pub(crate) struct Handshaken {
    pub(crate) sender: SendRequest<Body>,
    pub(crate) driver: Driver,
    /// SETTINGS (stream limit) and GOAWAY as read off the wire.
    pub(crate) signals: Arc<Signals>,
}

pub(crate) async fn handshake(stream: Stream, config: &Config) -> Result<Handshaken, Error> {
    let h2 = &config.http2;
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .initial_max_send_streams(ASSUMED_MAX_STREAMS)
        .initial_stream_window_size(h2.initial_stream_window_size)
        .initial_connection_window_size(h2.initial_connection_window_size)
        .adaptive_window(h2.adaptive_window)
        .max_header_list_size(u32::try_from(config.max_response_headers_size).unwrap_or(u32::MAX))
        .keep_alive_interval(h2.keep_alive_interval)
        .keep_alive_timeout(h2.keep_alive_timeout)
        .keep_alive_while_idle(h2.keep_alive_while_idle);
    let signals = Arc::new(Signals::new(ASSUMED_MAX_STREAMS));
    let io = TokioIo::new(FrameWatch::new(stream, Arc::clone(&signals)));
    let (sender, conn) = builder.handshake(io).await.map_err(Error::from_hyper)?;
    // hyper runs the socket in a task of its own (spawned on the executor);
    // this future dispatches requests and ends when the connection does.
    let driver: Driver = Box::pin(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "http2 connection ended with an error");
        }
    });
    Ok(Handshaken {
        sender,
        driver,
        signals,
    })
}

/// Opens one stream. `unprocessed` marks failures the server guarantees it
/// did not act on (GOAWAY past the stream, REFUSED_STREAM): safe to retry.
pub(crate) fn send(
    sender: &SendRequest<Body>,
    mut req: Request<Body>,
    scheme: &Scheme,
    authority: &Authority,
) -> impl Future<Output = SendResult> {
    // :scheme and :authority come from the URI; a request that was first
    // shaped for HTTP/1.1 (origin form) gets them back.
    if req.uri().scheme().is_none() || req.uri().authority().is_none() {
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(scheme.clone());
        parts.authority = Some(authority.clone());
        parts.path_and_query = Some(
            req.uri()
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/")),
        );
        if let Ok(uri) = Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
    *req.version_mut() = Version::HTTP_2;
    let mut sender = sender.clone();
    let sent = sender.try_send_request(req);
    async move {
        match sent.await {
            Ok(res) => {
                let (head, body) = res.into_parts();
                Ok(Answer {
                    head,
                    body: Some(body),
                })
            }
            Err(mut e) => {
                let unsent = e.take_message();
                let error = e.into_error();
                let unprocessed = unprocessed(&error);
                Err(SendError {
                    error: Error::from_hyper(error),
                    unsent,
                    unanswered: None,
                    unprocessed,
                })
            }
        }
    }
}

fn unprocessed(err: &hyper::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            // A graceful GOAWAY fails only the streams past its last stream
            // id; an error GOAWAY fails processed streams too, so only the
            // former (and REFUSED_STREAM) prove the request was not acted on.
            return (h2.is_go_away()
                && h2.is_remote()
                && h2.reason() == Some(h2::Reason::NO_ERROR))
                || h2.reason() == Some(h2::Reason::REFUSED_STREAM);
        }
        cur = e.source();
    }
    false
}
