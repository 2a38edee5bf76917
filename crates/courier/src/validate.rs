//! A request's checks before any byte of it is written, on either protocol.
//!
//! Framing headers set by the caller must agree with the body: a
//! `Content-Length: 2` in front of a 40-byte body puts 38 bytes on the wire
//! that the server (or anything forwarding the header) reads as a second
//! request — request smuggling. The rules:
//!
//! - `Content-Length`: one value, ASCII digits only. With a buffered body (or
//!   a stream whose size is known) it must equal the body's length, and is
//!   then written once; with a stream of unknown size the stream is held to
//!   it while it is sent (too few or too many bytes fail the request, and
//!   the connection is not reused).
//! - `Transfer-Encoding`: only `chunked`, alone (courier applies no other
//!   coding), and never with `Content-Length`. HTTP/1.1 then sends the body
//!   chunked; HTTP/2 frames it in DATA and leaves the header out.
//! - At most one `Host`, and that a host with an optional port (RFC 9110
//!   §7.2): HTTP/2 and HTTP/3 send it as `:authority` ([`host`]).
//! - Default headers (a client's, a service client's) never hold `Host`,
//!   `Content-Length`, `Transfer-Encoding` or `Connection`: they are left
//!   out when the defaults are set ([`defaults`]).
//! - No header value with a control character (CR, LF, NUL, ...; tab is
//!   fine): `http`'s unchecked constructors let them through in release
//!   builds, and on the wire they end the header line early (RFC 9113 §8.2.1
//!   forbids them in HTTP/2 values too).
//!
//! Names, methods and request targets need no check here: `http` validates
//! them in every (safe) constructor.

use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::uri::Authority;
use http::{HeaderMap, HeaderValue, Request};

use crate::body::Body;
use crate::error::{Error, ErrorKind};

/// Checks `req` (see the module docs); an [`ErrorKind::InvalidRequest`] if
/// it may not be sent.
pub(crate) fn request(req: &Request<Body>) -> Result<(), Error> {
    let headers = req.headers();
    // Most requests carry no header of their own (the client's defaults
    // are added as the head is written): nothing to check, and the three
    // lookups below cost about 100 instructions even on an empty map.
    if headers.is_empty() {
        return Ok(());
    }
    header_values(headers)?;
    let mut hosts = headers.get_all(HOST).iter();
    if let Some(first) = hosts.next() {
        if hosts.next().is_some() {
            return Err(invalid("more than one Host header"));
        }
        if as_authority(first).is_none() {
            return Err(invalid("Host is not a host with an optional port"));
        }
    }
    let mut encodings = headers.get_all(TRANSFER_ENCODING).iter();
    if let Some(first) = encodings.next() {
        if encodings.next().is_some() || !first.as_bytes().eq_ignore_ascii_case(b"chunked") {
            return Err(invalid(
                "Transfer-Encoding may only be `chunked`, alone (courier applies no other coding)",
            ));
        }
        if headers.contains_key(CONTENT_LENGTH) {
            return Err(invalid("both Transfer-Encoding and Content-Length"));
        }
        return Ok(());
    }
    let Some(declared) = content_length(headers)? else {
        return Ok(());
    };
    match req.body().len() {
        Some(len) if len != declared => Err(invalid(
            "Content-Length does not match the length of the body",
        )),
        _ => Ok(()),
    }
}

/// The caller's `Content-Length`: `None` if not set, an error if set more
/// than once or not a plain decimal number.
pub(crate) fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Error> {
    let mut values = headers.get_all(CONTENT_LENGTH).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(invalid("more than one Content-Length header"));
    }
    parse_length(value.as_bytes())
        .map(Some)
        .ok_or_else(|| invalid("Content-Length is not a decimal number of bytes"))
}

/// ASCII digits that fit in a `u64` (no sign, space, list or radix prefix):
/// `1*DIGIT` (RFC 9110 §8.6). Also read off HTTP/2 responses.
pub(crate) fn parse_length(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The caller's `Host` (a virtual host, checked by [`request`]) as the
/// authority HTTP/2 and HTTP/3 send in its place: `:authority` is what
/// they address a request by (RFC 9113 §8.3.1, RFC 9114 §4.3.1), so the
/// request reaches the same virtual host over every protocol, as with
/// curl, Go and .NET. `None` without one.
pub(crate) fn host(headers: &HeaderMap) -> Option<Authority> {
    headers.get(HOST).and_then(as_authority)
}

/// `host [":" port]`: an authority without userinfo, not empty.
fn as_authority(value: &HeaderValue) -> Option<Authority> {
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.contains(&b'@') {
        return None;
    }
    let authority = Authority::try_from(bytes).ok()?;
    // `http` takes any text after the colon; a port is a number.
    let bare = authority.as_str().len() == authority.host().len();
    (bare || authority.port_u16().is_some()).then_some(authority)
}

/// Headers that frame a message or address its connection: each request's
/// own, never a default (a client's or a service client's). A default
/// `Content-Length` would misstate every body it is not the size of; a
/// default `Host` would send every origin's requests to one virtual host.
const NOT_DEFAULTS: [http::HeaderName; 4] = [
    HOST,
    CONTENT_LENGTH,
    TRANSFER_ENCODING,
    http::header::CONNECTION,
];

/// `headers` without the names in [`NOT_DEFAULTS`].
pub(crate) fn defaults(mut headers: HeaderMap) -> HeaderMap {
    for name in NOT_DEFAULTS {
        headers.remove(name);
    }
    headers
}

/// Every value in `headers` is one that can go on the wire as is.
pub(crate) fn header_values(headers: &HeaderMap) -> Result<(), Error> {
    if is_wire_safe_map(headers) {
        Ok(())
    } else {
        Err(invalid(
            "a header value holds a control character (CR, LF, NUL...)",
        ))
    }
}

/// [`header_values`] as a predicate.
pub(crate) fn is_wire_safe_map(headers: &HeaderMap) -> bool {
    headers.values().all(is_wire_safe)
}

/// No control character but tab: what `HeaderValue::from_bytes` accepts.
pub(crate) fn is_wire_safe(value: &HeaderValue) -> bool {
    bytes_are_wire_safe(value.as_bytes())
}

fn bytes_are_wire_safe(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|&b| (b >= 0x20 && b != 0x7f) || b == b'\t')
}

fn invalid(what: &'static str) -> Error {
    Error::msg(ErrorKind::InvalidRequest, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(headers: &[(&str, &str)], body: Body) -> Request<Body> {
        let mut req = Request::post("http://h/").body(body).unwrap();
        for (name, value) in headers {
            req.headers_mut().append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        req
    }

    #[test]
    fn lengths_are_plain_decimal_numbers() {
        assert_eq!(parse_length(b"0"), Some(0));
        assert_eq!(parse_length(b"40"), Some(40));
        assert_eq!(parse_length(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"+4",
            b"-4",
            b" 4",
            b"4 ",
            b"4,4",
            b"0x4",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_length(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn control_characters_are_not_wire_safe() {
        assert!(bytes_are_wire_safe(b"text/html; q=0.9\t\x80\xff"));
        for bad in [
            &b"a\r\nb"[..],
            b"a\rb",
            b"a\nb",
            b"a\0b",
            b"\x7f",
            b"\x1b[0m",
        ] {
            assert!(!bytes_are_wire_safe(bad), "{bad:?}");
        }
    }

    #[test]
    fn framing_headers_must_agree_with_the_body() {
        let ok = [
            post(&[("content-length", "3")], "abc".into()),
            post(&[("transfer-encoding", "chunked")], "abc".into()),
            post(&[("transfer-encoding", "Chunked")], Body::empty()),
            post(&[("host", "a.test")], "abc".into()),
            post(&[], "abc".into()),
        ];
        for req in ok {
            request(&req).unwrap();
        }
        let refused = [
            post(&[("content-length", "2")], "abc".into()),
            post(
                &[("content-length", "3"), ("content-length", "3")],
                "abc".into(),
            ),
            post(
                &[("content-length", "3"), ("transfer-encoding", "chunked")],
                "abc".into(),
            ),
            post(&[("transfer-encoding", "gzip")], "abc".into()),
            post(&[("transfer-encoding", "chunked, chunked")], "abc".into()),
            post(&[("host", "a.test"), ("host", "b.test")], "abc".into()),
        ];
        for req in refused {
            let err = request(&req).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{:?}", req.headers());
        }
    }

    /// A `Host` is what HTTP/2 and HTTP/3 send as `:authority`: a host and
    /// an optional port, or the request is refused before a byte is written.
    #[test]
    fn a_host_is_a_host_with_an_optional_port() {
        for good in [
            "a.test",
            "a.test:8080",
            "127.0.0.1:1",
            "[::1]:443",
            "A.Test",
        ] {
            let req = post(&[("host", good)], Body::empty());
            request(&req).unwrap();
            assert_eq!(host(req.headers()).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "user@a.test",
            "a test",
            "a.test/path",
            "[::1",
            "a.test:port",
            "a?b",
        ] {
            let req = post(&[("host", bad)], Body::empty());
            let err = request(&req).expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{bad:?}");
            assert!(host(req.headers()).is_none(), "{bad:?}");
        }
        assert!(host(post(&[], Body::empty()).headers()).is_none());
    }
}
