//! Frames on closed streams: which the server may still send, and which are
//! its error (RFC 9113 §5.1, "closed").
//!
//! A stream courier reset may still see frames the server sent before the
//! RST_STREAM reached it: those are ignored. A stream the server closed
//! itself (END_STREAM or RST_STREAM) takes no more DATA or HEADERS: that is a
//! connection error of type STREAM_CLOSED. Normal requests are closed by the
//! server, so only courier's resets need remembering once their slot is
//! freed; they are kept in a bounded list, and the ids it has let go of are
//! given the benefit of the doubt ([`super::resets`]).

use std::task::Waker;

use super::conn::State;
use super::error::{ConnError, StreamError};
use super::frame::Reason;

/// A `what` (DATA or HEADERS) frame arrived on stream `id`, which is not
/// idle and which courier no longer reads: ignored if courier reset it, a
/// connection error if the server closed it.
pub(crate) fn late_frame(st: &mut State, id: u32, what: &'static str) -> Result<(), ConnError> {
    if st.reset_by_courier(id) {
        return Ok(());
    }
    Err(ConnError {
        reason: Reason::STREAM_CLOSED,
        what,
    })
}

/// A frame on stream `id` broke the stream's rules (a stream error, §5.4.2):
/// an open stream is failed and reset; a closed one is only told so, its
/// response (whole already) kept; an idle one cannot take a RST_STREAM (§6.4),
/// so the connection goes.
pub(crate) fn stream_error(
    st: &mut State,
    id: u32,
    reason: Reason,
    what: &'static str,
    wakers: &mut Vec<Waker>,
) -> Result<(), ConnError> {
    if st.is_idle(id) {
        return Err(ConnError { reason, what });
    }
    match st.streams.by_id(id) {
        Some((key, stream)) if !stream.is_closed() => {
            st.reset(key, id, reason, StreamError::Malformed(what), wakers);
        }
        _ => {
            st.send.rst_stream(id, reason);
            st.wake_driver();
        }
    }
    Ok(())
}
