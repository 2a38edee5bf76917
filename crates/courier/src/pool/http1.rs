//! HTTP/1.1 for the pool, on courier's own connection ([`crate::h1`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderMap, HeaderValue, Request};
use pin_project_lite::pin_project;

use super::conn::{Answer, HandedBack, SendError, SendResult};
use crate::body::Body;
use crate::config::Config;
use crate::h1::{self, Io};

/// A connection over an established stream (HTTP/1.1 has no handshake).
pub(crate) fn connection<S: Io + 'static>(stream: S, config: &Config) -> h1::Connection {
    let expect = h1::ExpectContinue {
        min_size: config.expect_continue,
        wait: config.expect_continue_timeout,
    };
    h1::Connection::new(Box::new(stream), config.max_response_headers_size, expect)
}

/// Sends one request in origin form and reads its response head, telling
/// apart "never sent" (safe to retry anywhere) from "sent, no answer" (a
/// stale connection: safe to retry if idempotent) from "sent, then failed".
/// The connection travels with the future and comes back with the result.
pub(crate) fn send<C: AsMut<h1::Connection> + Send>(
    conn: C,
    req: Request<Body>,
    host: &HeaderValue,
    defaults: &HeaderMap,
) -> IntoAnswer<impl Future<Output = (C, h1::Exchanged)> + Send> {
    IntoAnswer {
        inner: h1::Connection::send(conn, req, host, defaults),
    }
}

pin_project! {
    /// Maps the connection's result to the pool's, without an `async` block
    /// that would hold the request a second time.
    pub(crate) struct IntoAnswer<F> {
        #[pin]
        inner: F,
    }
}

impl<C, F> Future for IntoAnswer<F>
where
    F: Future<Output = (C, h1::Exchanged)>,
{
    type Output = (C, SendResult);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx).map(|(conn, result)| {
            let result = match result {
                Ok((head, uri)) => {
                    let (mut parts, ()) = http::Response::new(()).into_parts();
                    parts.status = head.status;
                    parts.version = head.version;
                    parts.headers = head.headers;
                    Ok(Answer {
                        head: parts,
                        body: None,
                        uri,
                    })
                }
                Err(f) => Err(SendError {
                    error: f.error,
                    handed_back: f
                        .unsent
                        .map(HandedBack::Unsent)
                        .or(f.unanswered.map(HandedBack::Unanswered)),
                }),
            };
            (conn, result)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::body::Body;

    /// The send future holds the request (for a retry) and little else: an
    /// `async` layer that kept a second copy would show here first.
    #[tokio::test]
    async fn the_send_future_holds_the_request_once() {
        let (near, _far) = tokio::io::duplex(64);
        let mut conn = super::connection(near, &crate::config::Config::default());
        let host = http::HeaderValue::from_static("h");
        let request_size = std::mem::size_of::<http::Request<Body>>();
        let defaults = http::HeaderMap::new();
        let future = super::send(
            &mut conn,
            http::Request::new(Body::empty()),
            &host,
            &defaults,
        );
        let future_size = std::mem::size_of_val(&future);
        assert!(
            future_size < request_size + 160,
            "send future {future_size} B for a {request_size} B request"
        );
    }
}
