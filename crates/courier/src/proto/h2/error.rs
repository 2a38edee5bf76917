//! Why a stream failed, as its request sees it.

use std::fmt;
use std::io;
use std::sync::Arc;

use super::frame::Reason;
use crate::error::{ClosedAfterGoaway, Error, ErrorKind};

/// A connection error: courier sends GOAWAY with `reason` and closes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnError {
    pub(crate) reason: Reason,
    pub(crate) what: &'static str,
}

impl ConnError {
    pub(crate) fn new(reason: Reason, what: &'static str) -> ConnError {
        ConnError { reason, what }
    }

    pub(crate) fn protocol(what: &'static str) -> ConnError {
        ConnError::new(Reason::PROTOCOL_ERROR, what)
    }

    /// The server is flooding: courier ends the connection.
    pub(crate) fn flooded(what: &'static str) -> ConnError {
        ConnError::new(Reason::ENHANCE_YOUR_CALM, what)
    }
}

/// A stream's failure: of the stream alone, or of the whole connection.
///
/// Cloned to every stream a connection failure reaches, hence the `Arc`
/// around the I/O error.
#[derive(Clone, Debug)]
pub(crate) enum StreamError {
    /// The server reset the stream (RST_STREAM).
    Reset(Reason),
    /// The server sent GOAWAY. `unprocessed`: the stream was past its last
    /// stream id, so the server promises it did not act on it.
    GoAway { reason: Reason, unprocessed: bool },
    /// The response was malformed (RFC 9113 §8.1.1); courier reset the stream.
    Malformed(&'static str),
    /// The response's header list exceeded `max_response_headers_size`.
    HeadersTooLarge,
    /// The server broke the protocol; courier closed the connection with
    /// GOAWAY carrying this reason.
    Protocol { reason: Reason, what: &'static str },
    /// The connection failed or was closed under the stream.
    Io(Arc<io::Error>),
    /// The connection was closed (by the server, or for keep-alive PINGs
    /// left unanswered) before the stream finished.
    Closed(&'static str),
    /// The server closed the connection (end of stream) after its own
    /// GOAWAY, with this stream unfinished: it dropped a stream its GOAWAY
    /// may have kept (python-h2 can send nothing after its GOAWAY). Apart
    /// from [`StreamError::Closed`] so callers can tell the server's cut
    /// from courier's own close (see `Error::is_closed_after_goaway`).
    ClosedAfterGoaway,
    /// The request body broke its own framing (more or fewer bytes than its
    /// Content-Length, trailers that cannot go on the wire); courier reset
    /// the stream.
    InvalidRequest(&'static str),
    /// The stream was never opened: the connection had stopped taking
    /// streams (closed, GOAWAY, stream ids used up). Nothing was sent.
    NotOpened(&'static str),
    /// The server's SETTINGS did not arrive within the connect timeout: the
    /// connection was never established.
    NoSettings,
    /// The request's head (nothing was sent) or trailers (the stream was
    /// reset) are larger than the server's SETTINGS_MAX_HEADER_LIST_SIZE
    /// ([`super::header_list`]).
    FieldsOverPeerLimit { size: u64, max: u32 },
    /// An extended CONNECT (`:protocol`) to a server whose SETTINGS did not
    /// enable it (RFC 8441 §3). Nothing was sent.
    NoExtendedConnect,
    /// The request's deadline, kept by the connection, passed before the
    /// response head came ([`super::deadline`]); courier reset the stream.
    DeadlinePassed,
}

impl StreamError {
    /// The server cannot have acted on the request: safe to send again
    /// whatever its method.
    pub(crate) fn is_unprocessed(&self) -> bool {
        match self {
            StreamError::Reset(reason) => *reason == Reason::REFUSED_STREAM,
            StreamError::GoAway { unprocessed, .. } => *unprocessed,
            StreamError::NotOpened(_) => true,
            _ => false,
        }
    }

    /// The connection is gone (as opposed to a refusal or a protocol error).
    pub(crate) fn is_connection_lost(&self) -> bool {
        matches!(
            self,
            StreamError::Io(_) | StreamError::Closed(_) | StreamError::ClosedAfterGoaway
        )
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Reset(reason) => write!(f, "stream reset by the server: {reason}"),
            StreamError::GoAway {
                reason,
                unprocessed,
            } => {
                write!(f, "the server sent GOAWAY ({reason})")?;
                if *unprocessed {
                    f.write_str(" before processing the stream")?;
                }
                Ok(())
            }
            StreamError::Malformed(what) => write!(f, "malformed HTTP/2 response: {what}"),
            StreamError::HeadersTooLarge => {
                f.write_str("response header list larger than max_response_headers_size")
            }
            StreamError::Protocol { reason, what } => {
                write!(f, "HTTP/2 protocol error ({reason}): {what}")
            }
            StreamError::Io(e) => write!(f, "HTTP/2 connection failed: {e}"),
            StreamError::Closed(why) => write!(f, "HTTP/2 connection closed: {why}"),
            // The rest of the sentence is the source's (error::ClosedAfterGoaway).
            StreamError::ClosedAfterGoaway => f.write_str("HTTP/2 connection closed"),
            StreamError::NotOpened(why) => write!(f, "HTTP/2 stream not opened: {why}"),
            StreamError::InvalidRequest(what) => write!(f, "invalid request: {what}"),
            StreamError::FieldsOverPeerLimit { size, max } => write!(
                f,
                "request field section of {size} bytes over the server's SETTINGS_MAX_HEADER_LIST_SIZE {max}"
            ),
            StreamError::NoExtendedConnect => f.write_str(
                "the server did not enable extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL)",
            ),
            StreamError::NoSettings => f.write_str(
                "HTTP/2 connection not established: no SETTINGS from the server within connect_timeout",
            ),
            StreamError::DeadlinePassed => f.write_str("no response head by the request's deadline"),
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Io(e) => Some(&**e),
            StreamError::ClosedAfterGoaway => Some(&ClosedAfterGoaway),
            _ => None,
        }
    }
}

/// Classifies an HTTP/2 stream failure: an oversized header list, a
/// request the server did not process (refused, or never written), a
/// connection whose server never sent its SETTINGS (a connect timeout),
/// the connection lost, or a protocol error (a reset or GOAWAY from the
/// server after it took the request, a malformed response, a frame
/// courier would not accept).
impl From<StreamError> for Error {
    fn from(err: StreamError) -> Error {
        let kind = match &err {
            StreamError::HeadersTooLarge => ErrorKind::HeadersTooLarge,
            StreamError::InvalidRequest(_) | StreamError::FieldsOverPeerLimit { .. } => {
                ErrorKind::InvalidRequest
            }
            StreamError::NoSettings => ErrorKind::ConnectTimeout,
            StreamError::NoExtendedConnect => ErrorKind::Upgrade,
            StreamError::DeadlinePassed => ErrorKind::Timeout,
            e if e.is_unprocessed() => ErrorKind::Refused,
            // A TLS alert after the handshake (a refused client certificate).
            StreamError::Io(e) if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) => {
                ErrorKind::Tls
            }
            e if e.is_connection_lost() => ErrorKind::ConnectionClosed,
            _ => ErrorKind::Protocol,
        };
        Error::new(kind, err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_close_after_its_goaway_is_closed_after_goaway() {
        let cut = Error::new(ErrorKind::Body, StreamError::ClosedAfterGoaway);
        assert!(cut.is_closed_after_goaway());
        assert_eq!(
            format!("{cut:#}"),
            "error reading response body: HTTP/2 connection closed: the server closed the connection after its GOAWAY"
        );
        assert_eq!(cut.to_string(), "error reading response body");
        // Wrapped by a layer that keeps the source (a middleware's error).
        assert!(Error::new(ErrorKind::Body, cut).is_closed_after_goaway());
        // courier's own close, whose message also says "after its GOAWAY".
        let silent = StreamError::Closed("the server went silent after its GOAWAY");
        assert!(!Error::new(ErrorKind::Body, silent).is_closed_after_goaway());
        let closed = StreamError::Closed("the server closed the connection");
        assert!(!Error::new(ErrorKind::Body, closed).is_closed_after_goaway());
        assert!(!Error::msg(ErrorKind::Body, "x").is_closed_after_goaway());
    }
}
