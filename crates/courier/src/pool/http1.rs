//! HTTP/1.1 on hyper's low-level `client::conn::http1` API.

use std::future::Future;

use http::header::HOST;
use http::{HeaderValue, Request, Uri, Version};
use hyper::client::conn::http1::{Builder, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::conn::{Driver, SendError, SendResult};
use crate::body::Body;
use crate::config::Config;
use crate::error::Error;

/// hyper refuses read buffers smaller than this.
const MIN_BUF: usize = 8 * 1024;

/// Performs the (trivial) HTTP/1.1 handshake over an established stream,
/// returning the request sender and the future that drives the connection.
pub(crate) async fn handshake<S>(
    stream: S,
    config: &Config,
) -> Result<(SendRequest<Body>, Driver), Error>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let mut builder = Builder::new();
    builder
        .max_header_size(config.max_response_headers_size)
        // The read buffer must hold a whole head; bodies stream through it.
        .max_buf_size(config.max_response_headers_size.max(64 * 1024).max(MIN_BUF));
    let (sender, conn) = builder
        .handshake(TokioIo::new(stream))
        .await
        .map_err(Error::from_hyper)?;
    let driver: Driver = Box::pin(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "http1 connection ended with an error");
        }
    });
    Ok((sender, driver))
}

/// Sends one request in origin form (path in the request line, authority in
/// `Host`), telling apart "never sent" (safe to retry anywhere) from "sent,
/// then failed".
///
/// Not an `async fn`: the request moves into hyper's dispatch queue before this
/// returns, so the future a caller holds while waiting is only hyper's small
/// response future, not the request as well.
pub(crate) fn send(
    sender: &mut SendRequest<Body>,
    mut req: Request<Body>,
    host: &HeaderValue,
) -> impl Future<Output = SendResult> + Send + 'static {
    let path = match req.uri().path_and_query() {
        Some(pq) => Uri::from(pq.clone()),
        None => Uri::from_static("/"),
    };
    *req.uri_mut() = path;
    *req.version_mut() = Version::HTTP_11;
    req.headers_mut()
        .entry(HOST)
        .or_insert_with(|| host.clone());
    let sent = sender.try_send_request(req);
    async move {
        sent.await.map_err(|mut e| {
            let unsent = e.take_message();
            SendError {
                error: Error::from_hyper(e.into_error()),
                unsent,
                unprocessed: false,
            }
        })
    }
}
