//! Request heads and trailers into HEADERS frames.

use bytes::BytesMut;
use http::uri::{Authority, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Method};

use super::frame;
use super::hpack::Encoder;

/// What a request needs to open its stream. Borrowed: the request stays with
/// its future, to be sent again if the server refuses it unprocessed.
pub(crate) struct Head<'a> {
    pub(crate) method: &'a Method,
    pub(crate) scheme: &'a Scheme,
    pub(crate) authority: &'a Authority,
    pub(crate) path: &'a str,
    pub(crate) headers: &'a HeaderMap,
    /// Client-wide headers, sent when the request has none of the same name.
    pub(crate) defaults: &'a HeaderMap,
    /// Defaults this request goes without ([`crate::config::WithheldDefaults`]).
    pub(crate) withheld: &'a [http::HeaderName],
    pub(crate) content_length: Option<u64>,
    /// An extended CONNECT's `:protocol` (RFC 8441).
    pub(crate) protocol: Option<&'a str>,
    /// The request's deadline, for the connection to keep: its mark
    /// ([`super::deadline::mark`]).
    pub(crate) deadline: Option<u32>,
}

/// Connection-specific headers HTTP/2 forbids (RFC 9113 §8.2.2). `Host`
/// becomes `:authority`; `te` is allowed only as "trailers".
pub(crate) const FORBIDDEN: [HeaderName; 6] = [
    http::header::CONNECTION,
    http::header::TRANSFER_ENCODING,
    http::header::UPGRADE,
    http::header::HOST,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
];

/// Whether a request header is left out of an HTTP/2 request.
pub(crate) fn is_forbidden(name: &HeaderName, value: &http::HeaderValue) -> bool {
    FORBIDDEN.contains(name) || (name == http::header::TE && value != "trailers")
}

/// Writes HEADERS (and CONTINUATION) for a request head into `out`: the
/// pseudo-headers, the request's headers, then the client's defaults the
/// request does not override, HPACK-encoded in place.
pub(crate) fn request(
    enc: &mut Encoder,
    out: &mut BytesMut,
    id: u32,
    head: &Head<'_>,
    end_stream: bool,
    max_frame: u32,
) {
    let start = frame::start_headers(out);
    enc.begin(out);
    match method_index(head.method) {
        Some(index) => enc.static_field(index, out),
        None => enc.field(b":method", head.method.as_str().as_bytes(), false, out),
    }
    if let Some(protocol) = head.protocol {
        enc.field(b":protocol", protocol.as_bytes(), false, out);
    }
    // A plain CONNECT has only `:authority` (RFC 9113 §8.5); an extended
    // one all four (RFC 8441 §4).
    let plain_connect = *head.method == http::Method::CONNECT && head.protocol.is_none();
    if !plain_connect {
        match scheme_index(head.scheme) {
            Some(index) => enc.static_field(index, out),
            None => enc.field(b":scheme", head.scheme.as_str().as_bytes(), false, out),
        }
    }
    authority(enc, head.authority.as_str().as_bytes(), out);
    if !plain_connect {
        path(enc, head.path.as_bytes(), out);
    }
    fields(enc, out, head.headers);
    let defaults = head
        .defaults
        .iter()
        .filter(|(name, _)| !head.headers.contains_key(*name) && !head.withheld.contains(name));
    fields(enc, out, defaults);
    if let Some(len) = head.content_length {
        if !head.headers.contains_key(http::header::CONTENT_LENGTH) {
            let mut buf = [0; 20];
            enc.field(b"content-length", decimal(len, &mut buf), false, out);
        }
    }
    frame::finish_headers(out, start, id, end_stream, max_frame);
}

/// The static table index of `:method` with this method, for the two the
/// table has (RFC 7541 Appendix A): every request writes one, and looking
/// it up by name and value was a tenth of encoding a request's head.
fn method_index(method: &Method) -> Option<usize> {
    match *method {
        Method::GET => Some(2),
        Method::POST => Some(3),
        _ => None,
    }
}

/// The static table index of `:scheme` with this scheme, as `method_index`.
fn scheme_index(scheme: &Scheme) -> Option<usize> {
    if *scheme == Scheme::HTTP {
        Some(6)
    } else if *scheme == Scheme::HTTPS {
        Some(7)
    } else {
        None
    }
}

/// `:authority` (static name 1, whose static value is empty) as
/// `Encoder::field` writes it, without the name lookup: the same bytes.
fn authority(enc: &mut Encoder, value: &[u8], out: &mut BytesMut) {
    match value {
        b"" => enc.static_field(1, out),
        _ => enc.static_name_field(1, b":authority", value, out),
    }
}

/// `:path` (static name 4, values "/" and "/index.html"), as `authority`.
fn path(enc: &mut Encoder, value: &[u8], out: &mut BytesMut) {
    match value {
        b"/" => enc.static_field(4, out),
        b"/index.html" => enc.static_field(5, out),
        _ => enc.static_name_field(4, b":path", value, out),
    }
}

/// Writes a request's trailers: HEADERS with END_STREAM.
pub(crate) fn trailers(
    enc: &mut Encoder,
    out: &mut BytesMut,
    id: u32,
    trailers: &HeaderMap,
    max_frame: u32,
) {
    let start = frame::start_headers(out);
    enc.begin(out);
    fields(enc, out, trailers);
    frame::finish_headers(out, start, id, true, max_frame);
}

/// HPACK-encodes `fields`, leaving out what HTTP/2 forbids.
fn fields<'a>(
    enc: &mut Encoder,
    out: &mut BytesMut,
    fields: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>,
) {
    for (name, value) in fields {
        if !is_forbidden(name, value) {
            let name = name.as_str().as_bytes();
            enc.field(name, value.as_bytes(), value.is_sensitive(), out);
        }
    }
}

/// A number's decimal digits, written into `buf` without going through `fmt`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_pseudo_fields_are_written_as_a_lookup_would() {
        use crate::proto::h2::hpack::static_table::STATIC;
        let methods = [Method::GET, Method::POST, Method::PUT, Method::HEAD];
        let pseudo = methods
            .iter()
            .map(|m| (&b":method"[..], m.as_str().to_owned(), method_index(m)));
        let schemes = [Scheme::HTTP, Scheme::HTTPS, "ftp".parse().unwrap()];
        let pseudo = pseudo.chain(
            schemes
                .iter()
                .map(|s| (&b":scheme"[..], s.as_str().to_owned(), scheme_index(s))),
        );
        let mut known = 0;
        for (name, value, index) in pseudo {
            let mut looked_up = BytesMut::new();
            Encoder::new().field(name, value.as_bytes(), false, &mut looked_up);
            match index {
                Some(index) => {
                    known += 1;
                    assert_eq!(STATIC[index - 1], (name, value.as_bytes()));
                    let mut direct = BytesMut::new();
                    Encoder::new().static_field(index, &mut direct);
                    assert_eq!(direct, looked_up, "{value}");
                }
                // Not in the table: a literal, as before.
                None => assert!(looked_up.len() > 1, "{value}"),
            }
        }
        assert_eq!(known, 4);
    }

    #[test]
    fn authority_and_path_are_written_as_a_lookup_would() {
        let authorities = ["", "example.com", "127.0.0.1:8080", "a", "user@host:1"];
        let paths = ["/", "/index.html", "/128.bin", "/a?b=c", "*", "/index.htm"];
        // Twice each, into the same encoders: the second time finds the
        // first's table entries (an `:authority` is indexed, a `:path` not).
        let (mut looked_up, mut direct) = (Encoder::new(), Encoder::new());
        for round in 0..2 {
            for value in authorities {
                let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
                looked_up.field(b":authority", value.as_bytes(), false, &mut a);
                authority(&mut direct, value.as_bytes(), &mut b);
                assert_eq!(a, b, "authority {value:?}");
                // The second time, one byte: the entry the first inserted.
                assert_eq!(round == 1 || value.is_empty(), b.len() == 1, "{value:?}");
            }
            for value in paths {
                let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
                looked_up.field(b":path", value.as_bytes(), false, &mut a);
                path(&mut direct, value.as_bytes(), &mut b);
                assert_eq!(a, b, "path {value:?}");
            }
        }
    }

    #[test]
    fn decimal_digits() {
        let mut buf = [0; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(1_048_576, &mut buf), b"1048576");
        assert_eq!(decimal(u64::MAX, &mut buf), u64::MAX.to_string().as_bytes());
    }
}
