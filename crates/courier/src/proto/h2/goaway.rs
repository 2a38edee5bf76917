//! A GOAWAY from the server: the streams it will not answer fail as
//! unprocessed (to be sent elsewhere), what it teaches about the server's
//! requests per connection goes to the pool, and a graceful one that keeps
//! streams is probed with a PING.

use std::task::Waker;

use super::conn::State;
use super::error::StreamError;
use super::frame::Reason;
use super::signals::Served;

pub(crate) fn on_goaway(
    st: &mut State,
    last: u32,
    reason: Reason,
    data: &[u8],
    wakers: &mut Vec<Waker>,
) {
    tracing::debug!(
        last_stream = last,
        %reason,
        debug_data = %String::from_utf8_lossy(data),
        "HTTP/2 server sent GOAWAY"
    );
    st.goaway.received(last);
    if let Some(served) = served_per_connection(st, last, reason) {
        st.signals.set_served(served);
    }
    probe_after_goaway(st, last, reason);
    st.signals.set_goaway();
    let unprocessed: Vec<_> = st
        .streams
        .iter_mut()
        .filter(|(_, s)| s.id > last && !s.state().is_failed())
        .map(|(key, s)| (key, s.id))
        .collect();
    for (key, id) in unprocessed {
        // Nothing to reset: the server has forgotten the stream.
        st.fail_stream(
            key,
            id,
            StreamError::GoAway {
                reason,
                unprocessed: true,
            },
            wakers,
        );
    }
    st.counts.wake_waiters();
    st.wake_driver();
}

/// After a graceful GOAWAY that keeps streams courier still waits on, asks
/// with a PING whether the server will answer them. RFC 9113 lets it, and
/// most do (the PING is answered, nothing changes); python-h2 (hypercorn)
/// can send nothing after its own GOAWAY and closes on the next frame it
/// reads, so without a frame from courier those streams would wait for
/// their deadline; with one they fail at once as dropped unanswered, and
/// idempotent ones are sent again elsewhere. The driver closes the
/// connection if the PING goes unanswered (see `Driver::goaway_probe`).
fn probe_after_goaway(st: &mut State, last: u32, reason: Reason) {
    if reason != Reason::NO_ERROR || last == (1 << 31) - 1 || st.goaway.is_probing() {
        return; // an error closes anyway; a first-of-two GOAWAY brings its own PING
    }
    let waiting = st
        .streams
        .iter_mut()
        .any(|(_, s)| s.id <= last && !s.state().is_recv_closed());
    if waiting {
        st.send.ping(false, GOAWAY_PING);
        st.goaway.probe_sent();
        st.wake_driver();
    }
}

/// The payload of [`probe_after_goaway`]'s PING.
pub(crate) const GOAWAY_PING: [u8; 8] = *b"goaway?!";

/// How many streams the server serves on one connection, when a GOAWAY
/// says so: a graceful GOAWAY (not the first of a double one, 2^31-1) that
/// leaves work undone — its last stream still unanswered (nginx's
/// `keepalive_requests`: sent on reading the Nth request), or streams past
/// it in flight (a server that answers before it goes away, or an idle
/// close racing a new request: ambiguous, see [`Served::certain`]). A
/// GOAWAY on an idle connection (a timeout, a restart) names a stream
/// answered long ago and refuses nothing: it teaches nothing. What the pool
/// makes of it is its own business (its request budget).
fn served_per_connection(st: &mut State, last: u32, reason: Reason) -> Option<Served> {
    if reason != Reason::NO_ERROR || last == 0 || last == (1 << 31) - 1 {
        return None;
    }
    let last_unanswered = st
        .streams
        .by_id(last)
        .is_some_and(|(_, s)| !s.state().is_recv_closed());
    if !last_unanswered
        && !st
            .streams
            .iter_mut()
            .any(|(_, s)| s.id > last && !s.state().is_failed())
    {
        return None;
    }
    Some(Served {
        // Client streams are odd: 1, 3, ..., last.
        count: last.div_ceil(2) as usize,
        certain: last_unanswered,
    })
}
