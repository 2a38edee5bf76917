//! HTTP/1.1 on hyper's low-level `client::conn::http1` API.

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::http1::{Builder, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::conn::{Driver, SendError, Sender};
use crate::body::Body;
use crate::config::Config;
use crate::error::Error;

/// hyper refuses read buffers smaller than this.
const MIN_BUF: usize = 8 * 1024;

/// Performs the (trivial) HTTP/1.1 handshake over an established stream,
/// returning the request sender and the future that drives the connection.
pub(crate) async fn handshake(
    stream: TcpStream,
    config: &Config,
) -> Result<(Sender, Driver), Error> {
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
    Ok((Sender::Http1(sender), driver))
}

/// Sends one request, telling apart "never sent" (safe to retry anywhere)
/// from "sent, then failed".
pub(crate) async fn send(
    sender: &mut SendRequest<Body>,
    req: Request<Body>,
) -> Result<Response<Incoming>, SendError> {
    sender.try_send_request(req).await.map_err(|mut e| {
        let unsent = e.take_message();
        SendError {
            error: Error::from_hyper(e.into_error()),
            unsent,
        }
    })
}
