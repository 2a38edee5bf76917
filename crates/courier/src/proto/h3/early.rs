//! 0-RTT on an HTTP/3 connection: which requests may go in early data,
//! where the handshake stands, and the server's settings remembered from
//! the resumed session (RFC 9114 §7.2.4.2).
//!
//! Early data can be replayed by anyone who captured it (RFC 8446 §8,
//! RFC 8470), so only a request that is safe to repeat goes early: a safe
//! method (GET, HEAD, OPTIONS, TRACE) with no body. Everything else waits
//! for the handshake. A request sent early that the server did not take
//! (0-RTT rejected, or `425 Too Early`) is sent again once, on the same
//! connection, after the handshake (`request.rs`).

use http::{Method, Request};
use tokio::sync::watch;

use super::frame::setting;
use crate::body::Body;

/// Where a connection's handshake stands, for early data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No 0-RTT: a full handshake, done before the connection was handed on.
    Full,
    /// 0-RTT: the handshake still going; what is sent now is early data.
    Early,
    /// The handshake completed and the server took the early data.
    Accepted,
    /// The handshake completed and the server refused the early data:
    /// streams opened early are void and must be sent again.
    Rejected,
}

impl Phase {
    /// The handshake is done (or was never pending).
    pub(crate) fn settled(self) -> bool {
        self != Phase::Early
    }
}

/// The server's settings remembered from the session being resumed: the
/// initial value of each while 0-RTT is in use (RFC 9114 §7.2.4.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Remembered(pub(crate) Vec<(u64, u64)>);

/// Settings a client acts on or understands: the ones worth remembering
/// (reserved and unknown ones are not).
const UNDERSTOOD: [u64; 5] = [
    setting::QPACK_MAX_TABLE_CAPACITY,
    setting::MAX_FIELD_SECTION_SIZE,
    setting::QPACK_BLOCKED_STREAMS,
    0x08, // SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220)
    0x33, // SETTINGS_H3_DATAGRAM (RFC 9297)
];

impl Remembered {
    /// What to remember of a server's SETTINGS.
    pub(crate) fn of(pairs: &[(u64, u64)]) -> Remembered {
        Remembered(
            pairs
                .iter()
                .filter(|(id, _)| UNDERSTOOD.contains(id))
                .copied()
                .collect(),
        )
    }

    /// The remembered value of `id`, if any.
    pub(crate) fn get(&self, id: u64) -> Option<u64> {
        self.0.iter().find(|(i, _)| *i == id).map(|&(_, v)| v)
    }

    /// Why fresh SETTINGS on a connection whose 0-RTT the server accepted
    /// break the remembered ones, if they do: a server that accepts 0-RTT
    /// must not reduce a limit nor drop a value the client may already
    /// have relied on (RFC 9114 §7.2.4.2; H3_SETTINGS_ERROR). A setting's
    /// absence is its default: unlimited for the field section size, 0 for
    /// the others.
    pub(crate) fn broken_by(&self, fresh: &[(u64, u64)]) -> Option<String> {
        for &(id, remembered) in &self.0 {
            let now = fresh.iter().find(|(i, _)| *i == id).map(|&(_, v)| v);
            let reduced = match (id, now) {
                (setting::MAX_FIELD_SECTION_SIZE, None) => false,
                (_, None) => remembered != 0,
                (_, Some(now)) => now < remembered,
            };
            if reduced {
                return Some(format!(
                    "its SETTINGS after accepting 0-RTT reduce setting {id:#x} from {remembered} to {}",
                    now.unwrap_or(0)
                ));
            }
        }
        None
    }
}

/// Whether `request` may go in early data: a safe method and no body (a
/// replay of it by an attacker changes nothing on the server).
pub(crate) fn replay_safe(request: &Request<Body>) -> bool {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    );
    safe && request.body().len() == Some(0)
        && !request.headers().contains_key(http::header::CONTENT_LENGTH)
}

/// The handshake's phase, shared by a connection's requests.
pub(crate) type PhaseWatch = watch::Receiver<Phase>;

/// Waits until the handshake is settled and returns how; a closed watch
/// (the connection gone) reads as rejected, so a request waiting on it
/// goes on to find the connection closed.
pub(crate) async fn settled(mut phase: PhaseWatch) -> Phase {
    match phase.wait_for(|p| p.settled()).await {
        Ok(p) => *p,
        Err(_) => Phase::Rejected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: Method, body: Body) -> Request<Body> {
        Request::builder()
            .method(method)
            .uri("https://a.test/")
            .body(body)
            .expect("request")
    }

    #[test]
    fn only_safe_requests_without_a_body_go_early() {
        assert!(replay_safe(&req(Method::GET, Body::empty())));
        assert!(replay_safe(&req(Method::HEAD, Body::empty())));
        assert!(replay_safe(&req(Method::OPTIONS, Body::empty())));
        assert!(!replay_safe(&req(Method::POST, Body::empty())));
        assert!(!replay_safe(&req(Method::PUT, Body::empty())));
        assert!(!replay_safe(&req(Method::DELETE, Body::empty())));
        assert!(!replay_safe(&req(Method::GET, Body::from("x"))));
    }

    #[test]
    fn a_reduced_or_dropped_setting_breaks_the_remembered_ones() {
        let remembered = Remembered::of(&[
            (setting::MAX_FIELD_SECTION_SIZE, 4096),
            (setting::QPACK_MAX_TABLE_CAPACITY, 100),
            (0x21, 7), // reserved: not remembered
        ]);
        assert_eq!(remembered.0.len(), 2);
        let same = [
            (setting::MAX_FIELD_SECTION_SIZE, 4096),
            (setting::QPACK_MAX_TABLE_CAPACITY, 100),
        ];
        assert_eq!(remembered.broken_by(&same), None);
        let raised = [
            (setting::MAX_FIELD_SECTION_SIZE, 8192),
            (setting::QPACK_MAX_TABLE_CAPACITY, 200),
        ];
        assert_eq!(remembered.broken_by(&raised), None);
        // The field section size dropped: unlimited, not a reduction.
        assert_eq!(
            remembered.broken_by(&[(setting::QPACK_MAX_TABLE_CAPACITY, 100)]),
            None
        );
        let smaller = [
            (setting::MAX_FIELD_SECTION_SIZE, 1024),
            (setting::QPACK_MAX_TABLE_CAPACITY, 100),
        ];
        assert!(remembered.broken_by(&smaller).is_some());
        // The table capacity dropped: back to its default 0, a reduction.
        assert!(remembered
            .broken_by(&[(setting::MAX_FIELD_SECTION_SIZE, 4096)])
            .is_some());
    }
}
