//! An HTTP/3 connection's handle (cloned by every request on it) and its
//! driver, the task that runs h3's control-stream side until the
//! connection ends.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use http::Request;

use super::code;
use super::quic::{Conn, Opener};
use super::request::{self, Answer};
use super::signals::Signals;
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::proto::exchange::{Driver, SendError};

/// What the connection enforces on the server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    /// Largest response header section accepted (h3's
    /// SETTINGS_MAX_FIELD_SECTION_SIZE, sent to the server too): the
    /// client's `max_response_headers_size`, as HTTP/2's header list.
    pub(crate) max_field_section: u64,
    /// Slots assumed until the server's stream limit shows (HTTP/2's 100).
    pub(crate) assumed_streams: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_field_section: 64 * 1024,
            assumed_streams: 100,
        }
    }
}

/// One HTTP/3 connection; clones share it.
#[derive(Clone)]
pub(crate) struct Connection {
    pub(super) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// h3's request opener: cloned per request (h3 closes the connection
    /// when the last clone goes, so the connection lives while a handle or
    /// a request does).
    pub(super) send: h3::client::SendRequest<Opener, Bytes>,
    pub(super) quic: quinn::Connection,
    pub(super) signals: Arc<Signals>,
}

impl Inner {
    /// A request stream saw a connection error (h3 decided the server broke
    /// the protocol, RFC 9114 §8): h3 keeps the error for every later request
    /// on the connection, but does not close QUIC until the driver happens
    /// to notice, so the pool would keep sending here and each request would
    /// fail with the same error. The connection is closed now, with the
    /// error's code, and the pool told.
    pub(super) fn failed(&self, e: &h3::error::StreamError) {
        use h3::error::{ConnectionError, LocalError, StreamError};
        if let StreamError::ConnectionError(ConnectionError::Local {
            error: LocalError::Application { code, reason, .. },
            ..
        }) = e
        {
            let code_value = quinn::VarInt::from_u64(code.value()).unwrap_or(quinn::VarInt::MAX);
            self.quic.close(code_value, b"");
            if *code == h3::error::Code::H3_NO_ERROR {
                self.signals.set_closed();
            } else {
                self.signals.set_failed(protocol_failure(*code, reason));
            }
            self.signals.report();
        }
    }

    /// A request stream ended; after a GOAWAY, the last one closes the
    /// connection (the server waits for that, and it loses nothing).
    pub(super) fn stream_ended(&self, answered: bool) {
        let left = self.signals.stream_ended(answered);
        if left == 0 && self.signals.goaway_id().is_some() {
            self.quic.close(code::NO_ERROR.into(), b"");
        }
        self.signals.report();
    }
}

/// Sets HTTP/3 up over an established QUIC connection (sends our SETTINGS;
/// does not wait for the server's). The driver must be spawned.
///
/// # Errors
/// [`ErrorKind::Connect`] when the control streams cannot be opened (the
/// connection closed).
pub(crate) async fn handshake(
    quic: quinn::Connection,
    config: Config,
) -> Result<(Connection, Driver), Error> {
    let signals = Arc::new(Signals::new(config.assumed_streams));
    let mut builder = h3::client::builder();
    builder.max_field_section_size(config.max_field_section);
    let (mut h3conn, send) = builder
        .build(Conn::new(
            quic.clone(),
            Arc::clone(&signals),
            config.max_field_section,
        ))
        .await
        .map_err(|e| Error::new(ErrorKind::Connect, format!("HTTP/3 setup: {e}")))?;
    let inner = Arc::new(Inner {
        send,
        quic: quic.clone(),
        signals: Arc::clone(&signals),
    });
    let driver: Driver = Box::pin(async move {
        let ended = poll_fn(|cx| match h3conn.poll_close(cx) {
            Poll::Pending => {
                // A GOAWAY read just now (the tap runs inside poll_close)
                // on an idle connection: nothing left to wait for.
                if signals.goaway_id().is_some() && signals.open() == 0 {
                    quic.close(code::NO_ERROR.into(), b"");
                }
                signals.report();
                Poll::Pending
            }
            ready => ready,
        })
        .await;
        tracing::debug!(error = %ended, "HTTP/3 connection ended");
        // h3 closed it for the server's protocol error (a second QPACK
        // encoder stream...): kept, so a request sent after it says so.
        if let h3::error::ConnectionError::Local {
            error: h3::error::LocalError::Application { code, reason, .. },
        } = &ended
        {
            if *code != h3::error::Code::H3_NO_ERROR {
                signals.set_failed(protocol_failure(*code, reason));
            }
        }
        signals.set_closed();
        signals.report();
    });
    Ok((Connection { inner }, driver))
}

/// The message of a connection we closed for the server's protocol error.
fn protocol_failure(code: h3::error::Code, reason: &str) -> String {
    format!("HTTP/3 connection closed: the server broke the protocol ({code}: {reason})")
}

impl Connection {
    /// What the connection tells the pool.
    pub(crate) fn signals(&self) -> &Arc<Signals> {
        &self.inner.signals
    }

    /// The connection has ended (or is ending: QUIC has a close reason).
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.signals.is_closed() || self.inner.quic.close_reason().is_some()
    }

    /// The QUIC connection (its statistics, its close reason).
    pub(crate) fn quic(&self) -> &quinn::Connection {
        &self.inner.quic
    }

    /// The server's address.
    pub(crate) fn remote_addr(&self) -> SocketAddr {
        self.inner.quic.remote_address()
    }

    /// Closes the connection now (CONNECTION_CLOSE with H3_NO_ERROR);
    /// requests in flight fail.
    pub(crate) fn close(&self) {
        self.inner.quic.close(code::NO_ERROR.into(), b"");
    }

    /// Sends `request` (its URI absolute) and waits for the response head.
    ///
    /// # Errors
    /// A [`SendError`] that says whether the request may be sent again
    /// (refused after a GOAWAY, on a connection already closed, lost with
    /// the connection) and hands it back when it may.
    pub(crate) async fn send(&self, request: Request<Body>) -> Result<Answer, SendError> {
        request::send(&self.inner, request).await
    }
}
