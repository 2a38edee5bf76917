//! Frames on closed streams: which the server may still send, and which are
//! its error (RFC 9113 §5.1, "closed").
//!
//! A stream courier reset may still see frames the server sent before the
//! RST_STREAM reached it: those are ignored. A stream the server closed
//! itself (END_STREAM or RST_STREAM) takes no more DATA or HEADERS: that is a
//! connection error of type STREAM_CLOSED. Normal requests are closed by the
//! server, so only courier's resets need remembering once their slot is
//! freed; they are kept in a bounded list, and the ids it has let go of are
//! given the benefit of the doubt.

use std::collections::VecDeque;
use std::task::Waker;

use super::conn::State;
use super::error::StreamError;
use super::frame::{self, Reason};
use super::recv::ConnError;

/// Resets remembered after their slot is freed: 4 KiB at most, and only on a
/// connection whose requests were cancelled while the server was sending.
const REMEMBERED: usize = 1024;

/// Streams courier reset, once their slots are gone.
#[derive(Debug, Default)]
pub(crate) struct Resets {
    recent: VecDeque<u32>,
    /// The highest id let go of: frames on streams up to it are tolerated.
    forgotten_up_to: u32,
}

impl Resets {
    /// Stream `id`, which courier reset, leaves the slab.
    pub(crate) fn remember(&mut self, id: u32) {
        if self.recent.len() == REMEMBERED {
            if let Some(old) = self.recent.pop_front() {
                self.forgotten_up_to = self.forgotten_up_to.max(old);
            }
        }
        self.recent.push_back(id);
    }

    fn tolerates(&self, id: u32) -> bool {
        id <= self.forgotten_up_to || self.recent.contains(&id)
    }
}

/// A `what` (DATA or HEADERS) frame arrived on stream `id`, which is not
/// idle and which courier no longer reads: ignored if courier reset it, a
/// connection error if the server closed it.
pub(crate) fn late_frame(st: &mut State, id: u32, what: &'static str) -> Result<(), ConnError> {
    let tolerated = match st.streams.by_id(id) {
        Some((_, stream)) => stream.rst_sent,
        None => st.resets.tolerates(id),
    };
    if tolerated {
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
            frame::encode_rst_stream(&mut st.out, id, reason);
            st.wake_driver();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_are_remembered_within_the_bound_and_older_ones_tolerated() {
        let mut resets = Resets::default();
        assert!(!resets.tolerates(1));
        for id in (1..).step_by(2).take(REMEMBERED) {
            resets.remember(id);
        }
        assert!(resets.tolerates(1) && resets.tolerates(2047));
        assert!(!resets.tolerates(2), "a stream the server closed");
        resets.remember(5001);
        assert_eq!(resets.recent.len(), REMEMBERED, "bounded");
        assert!(
            resets.tolerates(1),
            "forgotten: given the benefit of the doubt"
        );
        assert!(resets.tolerates(5001));
        assert!(!resets.tolerates(4001));
    }
}
