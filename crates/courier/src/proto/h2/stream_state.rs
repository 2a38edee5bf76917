//! A stream's state (RFC 9113 §5.1) as one enum with its transitions, so no
//! combination of flags can say something the protocol cannot (an error on
//! a stream still open, a reset sent on one that ended cleanly, DATA taken
//! before the response head).
//!
//! Courier is a client without push, so a stream is idle until courier
//! sends its HEADERS, and has no slot while idle ([`super::conn::State::is_idle`]
//! answers for those ids): a slot starts open, or half-closed (local) when
//! the HEADERS carry END_STREAM, with the server's side awaiting its final
//! response head ([`Remote`], as h2's `Peer::AwaitingHeaders`). Each side's
//! END_STREAM closes its half; a reset (by either side) or the connection's
//! failure closes both, with the cause the request will see.
//!
//! Whether a stream counts against the server's stream limit is not kept
//! beside it: it does while it is not closed, and the one function that
//! changes a stream's state ([`super::streams::Stream::transition`]) settles
//! the connection's count ([`super::counts`]). Beside it, the stream slot
//! keeps whether courier sent RST_STREAM (frames already in flight are then
//! ignored; h2's `reset_at`). Kept out of the enum, the cause fits in the
//! error's niche and the slot does not grow.
//!
//! Transitions the protocol does not allow from the current state return
//! [`Illegal`] and change nothing; the connection checks the frame first, so
//! one of those is a bug in courier, not something a server can cause.

use super::error::StreamError;

/// Where a stream is in its life.
#[derive(Debug)]
pub(crate) enum StreamState {
    /// Both sides may send.
    Open(Remote),
    /// Courier sent END_STREAM; the server may still send.
    HalfClosedLocal(Remote),
    /// The server sent END_STREAM; courier may still send.
    HalfClosedRemote,
    /// Neither side sends anything more.
    Closed(Cause),
}

/// The server's side of a stream it may still send on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Remote {
    /// No final response head yet (1xx heads may come): DATA is an error.
    AwaitingHeaders,
    /// The final head arrived: DATA, then trailers, may follow.
    Streaming,
}

/// Why a stream closed.
#[derive(Debug)]
pub(crate) enum Cause {
    /// Both sides sent END_STREAM (or the server reset it with NO_ERROR once
    /// its response was whole, which leaves the response standing).
    Ended,
    /// It failed: reset by either side, refused by a GOAWAY, or its
    /// connection failed; the request sees this error.
    Failed(StreamError),
}

/// A transition the stream's state does not allow; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Illegal {
    pub(crate) event: &'static str,
    pub(crate) state: &'static str,
}

/// A transition the caller checked is allowed: one that is not is a bug in
/// courier, caught by the tests; the state is then left as it was.
pub(crate) fn legal<T: std::fmt::Debug>(result: Result<T, Illegal>) {
    debug_assert!(result.is_ok(), "{result:?}");
}

impl StreamState {
    /// Courier sent the stream's HEADERS (idle → open), with END_STREAM or not.
    pub(crate) fn opened(end_stream: bool) -> StreamState {
        if end_stream {
            StreamState::HalfClosedLocal(Remote::AwaitingHeaders)
        } else {
            StreamState::Open(Remote::AwaitingHeaders)
        }
    }

    /// The server's final response head arrived (awaiting → streaming).
    pub(crate) fn recv_head(&mut self) -> Result<(), Illegal> {
        *self = match self {
            StreamState::Open(Remote::AwaitingHeaders) => StreamState::Open(Remote::Streaming),
            StreamState::HalfClosedLocal(Remote::AwaitingHeaders) => {
                StreamState::HalfClosedLocal(Remote::Streaming)
            }
            _ => return Err(self.illegal("response head received")),
        };
        Ok(())
    }

    /// Courier sent END_STREAM.
    pub(crate) fn send_end(&mut self) -> Result<(), Illegal> {
        *self = match self {
            StreamState::Open(remote) => StreamState::HalfClosedLocal(*remote),
            StreamState::HalfClosedRemote => StreamState::Closed(Cause::Ended),
            _ => return Err(self.illegal("END_STREAM sent")),
        };
        Ok(())
    }

    /// The server sent END_STREAM, after its final head.
    pub(crate) fn recv_end(&mut self) -> Result<(), Illegal> {
        *self = match self {
            StreamState::Open(Remote::Streaming) => StreamState::HalfClosedRemote,
            StreamState::HalfClosedLocal(Remote::Streaming) => StreamState::Closed(Cause::Ended),
            _ => return Err(self.illegal("END_STREAM received")),
        };
        Ok(())
    }

    /// Courier resets the stream with `error` as its cause. Returns whether
    /// RST_STREAM goes on the wire: not for a stream both sides had ended,
    /// which only takes the cause (what the request sees). A failed stream
    /// cannot fail again.
    pub(crate) fn reset(&mut self, error: StreamError) -> Result<bool, Illegal> {
        let send_rst = match self {
            StreamState::Closed(Cause::Failed(_)) => return Err(self.illegal("reset")),
            StreamState::Closed(Cause::Ended) => false,
            _ => true,
        };
        *self = StreamState::Closed(Cause::Failed(error));
        Ok(send_rst)
    }

    /// The stream fails with `error` and nothing goes on the wire: the server
    /// reset it or forgot it (GOAWAY), or the connection is gone.
    pub(crate) fn fail(&mut self, error: StreamError) -> Result<(), Illegal> {
        if self.is_failed() {
            return Err(self.illegal("failure"));
        }
        *self = StreamState::Closed(Cause::Failed(error));
        Ok(())
    }

    /// Courier sends nothing more on it.
    pub(crate) fn is_send_closed(&self) -> bool {
        matches!(
            self,
            StreamState::HalfClosedLocal(_) | StreamState::Closed(_)
        )
    }

    /// The server may still send, and has not sent its final head.
    pub(crate) fn is_awaiting_head(&self) -> bool {
        matches!(
            self,
            StreamState::Open(Remote::AwaitingHeaders)
                | StreamState::HalfClosedLocal(Remote::AwaitingHeaders)
        )
    }

    /// The server sends nothing more on it.
    pub(crate) fn is_recv_closed(&self) -> bool {
        matches!(self, StreamState::HalfClosedRemote | StreamState::Closed(_))
    }

    /// Closed both ways, cleanly or not.
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self, StreamState::Closed(_))
    }

    pub(crate) fn is_failed(&self) -> bool {
        self.error().is_some()
    }

    /// Why it failed, if it did.
    pub(crate) fn error(&self) -> Option<&StreamError> {
        match self {
            StreamState::Closed(Cause::Failed(error)) => Some(error),
            _ => None,
        }
    }

    fn illegal(&self, event: &'static str) -> Illegal {
        let state = match self {
            StreamState::Open(Remote::AwaitingHeaders) => "open (awaiting headers)",
            StreamState::Open(Remote::Streaming) => "open",
            StreamState::HalfClosedLocal(Remote::AwaitingHeaders) => {
                "half-closed (local, awaiting headers)"
            }
            StreamState::HalfClosedLocal(Remote::Streaming) => "half-closed (local)",
            StreamState::HalfClosedRemote => "half-closed (remote)",
            StreamState::Closed(Cause::Ended) => "closed",
            StreamState::Closed(Cause::Failed(_)) => "closed (failed)",
        };
        Illegal { event, state }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::h2::frame::Reason;

    fn cancel() -> StreamError {
        StreamError::Reset(Reason::CANCEL)
    }

    #[test]
    fn the_state_takes_no_more_room_than_its_error() {
        // The stream slot's size test counts on it.
        assert_eq!(
            std::mem::size_of::<StreamState>(),
            std::mem::size_of::<StreamError>()
        );
    }

    #[test]
    fn each_side_closes_its_half() {
        let mut s = StreamState::opened(false);
        assert!(!s.is_send_closed() && !s.is_recv_closed());
        s.send_end().unwrap();
        s.recv_head().unwrap();
        assert!(s.is_send_closed() && !s.is_recv_closed());
        s.recv_end().unwrap();
        assert!(s.is_closed() && !s.is_failed());

        let mut s = StreamState::opened(false);
        s.recv_head().unwrap();
        s.recv_end().unwrap();
        assert!(s.is_recv_closed() && !s.is_send_closed());
        s.send_end().unwrap();
        assert!(matches!(s, StreamState::Closed(Cause::Ended)));
    }

    #[test]
    fn headers_with_end_stream_open_half_closed() {
        let s = StreamState::opened(true);
        assert!(matches!(
            s,
            StreamState::HalfClosedLocal(Remote::AwaitingHeaders)
        ));
    }

    #[test]
    fn a_closed_half_cannot_end_again() {
        let mut s = StreamState::opened(true);
        let err = s.send_end().unwrap_err();
        assert_eq!(err.state, "half-closed (local, awaiting headers)");
        assert!(matches!(s, StreamState::HalfClosedLocal(_)), "unchanged");
        s.recv_head().unwrap();
        s.recv_end().unwrap();
        assert!(s.recv_end().is_err());
        assert!(s.send_end().is_err());
    }

    #[test]
    fn a_reset_sends_rst_stream_only_while_a_side_is_open() {
        for mut s in [
            StreamState::Open(Remote::AwaitingHeaders),
            StreamState::HalfClosedLocal(Remote::Streaming),
            StreamState::HalfClosedRemote,
        ] {
            assert_eq!(s.reset(cancel()), Ok(true));
            assert!(s.is_closed());
            assert!(matches!(
                s.error(),
                Some(StreamError::Reset(Reason::CANCEL))
            ));
        }
        let mut ended = StreamState::Closed(Cause::Ended);
        assert_eq!(ended.reset(cancel()), Ok(false));
        assert!(ended.is_failed());
    }

    #[test]
    fn a_failed_stream_cannot_fail_again() {
        let mut s = StreamState::opened(false);
        s.reset(cancel()).unwrap();
        assert!(s.reset(StreamError::HeadersTooLarge).is_err());
        assert!(s.fail(StreamError::Closed("gone")).is_err());
        assert!(
            matches!(s.error(), Some(StreamError::Reset(_))),
            "first cause kept"
        );
        assert!(s.send_end().is_err() && s.recv_end().is_err());
    }

    #[test]
    fn a_failure_from_the_server_sends_nothing() {
        for mut s in [
            StreamState::Open(Remote::Streaming),
            StreamState::HalfClosedLocal(Remote::AwaitingHeaders),
            StreamState::HalfClosedRemote,
            StreamState::Closed(Cause::Ended),
        ] {
            s.fail(StreamError::Reset(Reason::REFUSED_STREAM)).unwrap();
            assert!(s.is_closed() && s.is_failed());
        }
    }

    #[test]
    fn the_server_ends_a_stream_only_after_its_final_head() {
        for mut s in [StreamState::opened(false), StreamState::opened(true)] {
            assert!(s.is_awaiting_head());
            assert!(s.recv_end().is_err(), "END_STREAM before the head");
            s.recv_head().unwrap();
            assert!(!s.is_awaiting_head());
            assert!(s.recv_head().is_err(), "a second final head");
            s.recv_end().unwrap();
            assert!(s.is_recv_closed());
        }
        let mut s = StreamState::opened(false);
        s.send_end().unwrap();
        assert!(s.is_awaiting_head(), "sending keeps the server's side");
    }
}
