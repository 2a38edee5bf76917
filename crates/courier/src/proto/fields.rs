//! The rules a message's fields are held to over HTTP/2 and HTTP/3 alike,
//! in one place so that the protocols cannot drift apart (they had:
//! HTTP/3's reading took `+5` as a length and let `transfer-encoding`
//! through to a caller who might forward it over HTTP/1.1).
//!
//! - A response head is malformed with a connection-specific field (RFC
//!   9113 §8.2.2, RFC 9114 §4.2), or a content-length that is not `1*DIGIT`
//!   in every copy, every copy the same (RFC 9110 §8.6; RFC 9113 §8.1.1,
//!   RFC 9114 §4.1.2).
//! - A request leaves out the connection-specific fields it was given.
//! - A server's trailers lose the fields that cannot be trailers (over
//!   HTTP/1.1 too).
//! - A response has at most [`MAX_INTERIM`] interim heads (over HTTP/1.1
//!   too: HTTP/3 used to stop at 16, the others at 32).

use http::header::{self, HeaderMap, HeaderName};

/// Interim (1xx) heads one response may have before its final head. A real
/// server sends a few (100 Continue, 102 Processing, 103 Early Hints); each
/// costs a parse, and a server that sends them in a loop would hold the
/// request, and a core, for ever.
pub(crate) const MAX_INTERIM: u8 = 32;

/// Names HTTP/2 and HTTP/3 forbid in a request's fields (`host`'s value goes
/// in `:authority`); `te` is allowed only as "trailers".
const FORBIDDEN: [HeaderName; 6] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::HOST,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
];

/// A request field HTTP/2 and HTTP/3 leave out of the request they send.
/// `te` other than exactly "trailers" is left out rather than sent in
/// another case (`Trailers`), which a strict server rejects as malformed.
pub(crate) fn left_out_of_request(name: &HeaderName, value: &[u8]) -> bool {
    FORBIDDEN.contains(name) || (name == header::TE && value != b"trailers")
}

/// A field a response (or trailer section) may not carry: HTTP/1.1's
/// connection management, meaningless here and dangerous forwarded.
pub(crate) fn is_connection_specific(name: &HeaderName, value: &[u8]) -> bool {
    (FORBIDDEN.contains(name) && name != header::HOST)
        || (name == header::TE && value != b"trailers")
}

/// Fields that cannot be trailers (RFC 9110 §6.5.1: they frame, route,
/// authenticate or describe the content; hyper's list plus the
/// connection-specific fields). A server's are dropped, not rejected, over
/// every protocol: the body they follow is whole, and the rest of the
/// trailers may be what the caller wants.
const NOT_TRAILERS: [HeaderName; 16] = [
    header::AUTHORIZATION,
    header::CACHE_CONTROL,
    header::CONNECTION,
    header::CONTENT_ENCODING,
    header::CONTENT_LENGTH,
    header::CONTENT_RANGE,
    header::CONTENT_TYPE,
    header::HOST,
    HeaderName::from_static("keep-alive"),
    header::MAX_FORWARDS,
    HeaderName::from_static("proxy-connection"),
    header::SET_COOKIE,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// A field a server's trailers may not carry (see [`NOT_TRAILERS`]).
pub(crate) fn cannot_be_a_trailer(name: &HeaderName) -> bool {
    NOT_TRAILERS.contains(name)
}

/// `trailers` without the fields that cannot be trailers.
pub(crate) fn drop_non_trailers(trailers: &mut HeaderMap) {
    for name in &NOT_TRAILERS {
        trailers.remove(name);
    }
}

/// A response head's content-length, read as the head is decoded, so that
/// neither the stream's framing nor the response parse it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Declared {
    Absent,
    /// Every copy is `1*DIGIT` (RFC 9110 §8.6) and reads as this number.
    Length(u64),
    /// Not a number, or copies that disagree: the head is malformed.
    Invalid,
}

impl Declared {
    /// One more copy of the header: every copy must read the same.
    pub(crate) fn add(self, value: &[u8]) -> Declared {
        // `1*DIGIT`: `str::parse` would also take a sign (`+5`).
        match (self, crate::validate::parse_length(value)) {
            (Declared::Absent, Some(n)) => Declared::Length(n),
            (Declared::Length(m), Some(n)) if m == n => Declared::Length(n),
            _ => Declared::Invalid,
        }
    }

    /// The length, `Ok(None)` if absent; `Err` if the head is malformed.
    pub(crate) fn length(self) -> Result<Option<u64>, &'static str> {
        match self {
            Declared::Absent => Ok(None),
            Declared::Length(n) => Ok(Some(n)),
            Declared::Invalid => Err("invalid content-length"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn te_is_trailers_exactly_or_left_out() {
        let te = http::header::TE;
        assert!(!left_out_of_request(&te, b"trailers"));
        for other in [b"Trailers".as_slice(), b"gzip", b"trailers, gzip", b""] {
            assert!(left_out_of_request(&te, other), "{other:?}");
            assert!(is_connection_specific(&te, other), "{other:?}");
        }
        // `host` is a request's `:authority`, not a response's concern.
        assert!(left_out_of_request(&http::header::HOST, b"a"));
        assert!(!is_connection_specific(&http::header::HOST, b"a"));
    }

    #[test]
    fn copies_of_a_length_must_agree() {
        let read = |copies: &[&[u8]]| {
            copies
                .iter()
                .fold(Declared::Absent, |d, v| d.add(v))
                .length()
        };
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(read(&[b"7", b"007"]), Ok(Some(7)));
        for bad in [
            &[b"+7".as_slice()][..],
            &[b"7", b"8"],
            &[b"7, 7"],
            &[b""],
            &[b"7", b"x"],
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
    }
}
