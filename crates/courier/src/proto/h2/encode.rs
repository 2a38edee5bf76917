//! Request heads and trailers into HEADERS frames.

use bytes::BytesMut;
use http::uri::{Authority, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Method};

use super::frame;
use super::hpack::Encoder;
use super::template::{Key, Template};
use crate::proto::fields::left_out_of_request;

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

/// Writes HEADERS (and CONTINUATION) for a request head into `out`: the
/// pseudo-headers, the request's headers, then the client's defaults the
/// request does not override, HPACK-encoded in place, or copied from
/// `template` when it holds this head's block (see [`super::template`]).
/// Whether it was copied.
pub(crate) fn request(
    enc: &mut Encoder,
    template: &mut Template,
    out: &mut BytesMut,
    id: u32,
    head: &Head<'_>,
    end_stream: bool,
    max_frame: u32,
) -> bool {
    let start = frame::start_headers(out);
    enc.begin(out);
    // A CONNECT's pseudo-headers differ (RFC 9113 §8.5, RFC 8441 §4): rare,
    // and not kept.
    let keepable = head.protocol.is_none() && *head.method != Method::CONNECT;
    let generation = enc.generation();
    let key = Key {
        method: head.method.as_str(),
        scheme: head.scheme.as_str(),
        authority: head.authority.as_str(),
        headers: head.headers,
        defaults: head.defaults,
        withheld: head.withheld,
    };
    let kept = match keepable.then(|| template.get(generation, &key)).flatten() {
        Some(kept) => {
            out.extend_from_slice(kept.before_path);
            path(enc, head.path.as_bytes(), out);
            out.extend_from_slice(kept.after_path);
            if !kept.own_length {
                content_length(enc, head.content_length, out);
            }
            true
        }
        None => {
            let block = out.len();
            let [path_start, path_end] = encode_fields(enc, out, head);
            let fields_end = out.len();
            if !head.headers.contains_key(http::header::CONTENT_LENGTH) {
                content_length(enc, head.content_length, out);
            }
            if keepable && enc.generation() == generation {
                // Nothing inserted: the same head encodes to these bytes
                // again while the table stands still.
                let (before, after) = (&out[block..path_start], &out[path_end..fields_end]);
                template.keep(generation, &key, before, after);
            } else {
                template.clear();
            }
            false
        }
    };
    frame::finish_headers(out, start, id, end_stream, max_frame);
    kept
}

/// Encodes the head's fields but an added content-length; where `:path`
/// starts and ends in `out`.
fn encode_fields(enc: &mut Encoder, out: &mut BytesMut, head: &Head<'_>) -> [usize; 2] {
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
    let path_start = out.len();
    if !plain_connect {
        path(enc, head.path.as_bytes(), out);
    }
    let path_end = out.len();
    fields(enc, out, head.headers);
    let defaults = head
        .defaults
        .iter()
        .filter(|(name, _)| !head.headers.contains_key(*name) && !head.withheld.contains(name));
    fields(enc, out, defaults);
    [path_start, path_end]
}

/// The content-length a request with a body of `len` gets when its headers
/// have none: a literal, never indexed (it changes with the body).
fn content_length(enc: &mut Encoder, len: Option<u64>, out: &mut BytesMut) {
    if let Some(len) = len {
        let mut buf = [0; 20];
        enc.field(b"content-length", decimal(len, &mut buf), false, out);
    }
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
        _ => enc.path_field(value, out),
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
        if !left_out_of_request(name, value.as_bytes()) {
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

    /// A request head of the steps below: (method, authority, path,
    /// headers, defaults, withheld, body length).
    type Step = (
        Method,
        &'static str,
        &'static str,
        HeaderMap,
        HeaderMap,
        Vec<HeaderName>,
        Option<u64>,
    );

    #[test]
    fn a_kept_head_is_the_bytes_a_fresh_encoding_would_write() {
        let map = |fields: &[(&'static str, &'static str, bool)]| {
            let mut map = HeaderMap::new();
            for &(name, value, sensitive) in fields {
                let mut value = HeaderValue::from_static(value);
                value.set_sensitive(sensitive);
                map.append(HeaderName::from_static(name), value);
            }
            map
        };
        let base = || map(&[("x-one", "1"), ("accept", "*/*")].map(|(n, v)| (n, v, false)));
        let defaults = || map(&[("user-agent", "courier", false)]);
        let get = |path, headers| -> Step {
            let (m, a) = (Method::GET, "example.com");
            (m, a, path, headers, defaults(), vec![], None)
        };
        let mut steps: Vec<(&str, Step, Option<usize>)> = vec![
            ("first", get("/a", base()), None),
            ("again: nothing inserted now", get("/a", base()), None),
            ("kept", get("/a", base()), None),
            ("another path", get("/b?c", base()), None),
            (
                "a value",
                get(
                    "/a",
                    map(&[("x-one", "2", false), ("accept", "*/*", false)]),
                ),
                None,
            ),
            ("back", get("/a", base()), None),
            (
                "the order",
                get(
                    "/a",
                    map(&[("accept", "*/*", false), ("x-one", "1", false)]),
                ),
                None,
            ),
            (
                "sensitive",
                get("/a", map(&[("x-one", "1", true), ("accept", "*/*", false)])),
                None,
            ),
            (
                "a field added",
                get(
                    "/a",
                    map(&[
                        ("x-one", "1", false),
                        ("accept", "*/*", false),
                        ("x-two", "2", false),
                    ]),
                ),
                None,
            ),
            ("the same two in a row", get("/a", base()), None),
            ("kept again", get("/a", base()), None),
            // The peer's SETTINGS_HEADER_TABLE_SIZE between two requests:
            // the table is emptied and the kept bytes index nothing.
            ("after a table size update to 0", get("/a", base()), Some(0)),
            ("with no table", get("/a", base()), None),
            ("the table back", get("/a", base()), Some(4096)),
            ("refilled", get("/a", base()), None),
            ("kept once more", get("/a", base()), None),
            (
                "a smaller table, same entries",
                get("/a", base()),
                Some(2048),
            ),
            ("after it", get("/a", base()), None),
        ];
        let variants: Vec<(&str, Step)> = vec![
            (
                "a POST with a body",
                (
                    Method::POST,
                    "example.com",
                    "/a",
                    base(),
                    defaults(),
                    vec![],
                    Some(5),
                ),
            ),
            (
                "its own content-length",
                (
                    Method::POST,
                    "example.com",
                    "/a",
                    map(&[("content-length", "5", false)]),
                    defaults(),
                    vec![],
                    Some(5),
                ),
            ),
            (
                "another authority",
                (
                    Method::GET,
                    "example.org:8443",
                    "/a",
                    base(),
                    defaults(),
                    vec![],
                    None,
                ),
            ),
            (
                "a default withheld",
                (
                    Method::GET,
                    "example.com",
                    "/a",
                    base(),
                    defaults(),
                    vec![http::header::USER_AGENT],
                    None,
                ),
            ),
            (
                "other defaults",
                (
                    Method::GET,
                    "example.com",
                    "/a",
                    base(),
                    map(&[("user-agent", "other", false)]),
                    vec![],
                    None,
                ),
            ),
            (
                "a default overridden",
                (
                    Method::GET,
                    "example.com",
                    "/a",
                    map(&[("user-agent", "mine", false)]),
                    defaults(),
                    vec![],
                    None,
                ),
            ),
            (
                "a default moved into the request",
                (
                    Method::GET,
                    "example.com",
                    "/a",
                    map(&[
                        ("x-one", "1", false),
                        ("accept", "*/*", false),
                        ("user-agent", "courier", false),
                    ]),
                    HeaderMap::new(),
                    vec![],
                    None,
                ),
            ),
            (
                "CONNECT",
                (
                    Method::CONNECT,
                    "example.com:443",
                    "",
                    HeaderMap::new(),
                    HeaderMap::new(),
                    vec![],
                    None,
                ),
            ),
        ];
        for (what, step) in variants {
            // Each three times (by the second, nothing is inserted and it
            // is kept), then the base head again.
            steps.push((what, step.clone(), None));
            steps.push((what, step.clone(), None));
            steps.push((what, step, None));
            steps.push(("back to the base", get("/a", base()), None));
            steps.push(("back to the base, kept", get("/a", base()), None));
        }
        let scheme = Scheme::HTTPS;
        let (mut kept, mut fresh) = (Encoder::new(), Encoder::new());
        let mut template = Template::default();
        let mut copied = Vec::new();
        for (i, (what, (method, authority, path, headers, defaults, withheld, length), resize)) in
            steps.iter().enumerate()
        {
            if let Some(size) = resize {
                kept.set_max_table_size(*size);
                fresh.set_max_table_size(*size);
            }
            let authority = Authority::from_static(authority);
            let head = Head {
                method,
                scheme: &scheme,
                authority: &authority,
                path,
                headers,
                defaults,
                withheld,
                content_length: *length,
                protocol: None,
                deadline: None,
            };
            let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
            let was_kept = request(&mut kept, &mut template, &mut a, 1, &head, true, 16_384);
            // A template of its own each time: always encoded afresh.
            let fresh_kept = request(
                &mut fresh,
                &mut Template::default(),
                &mut b,
                1,
                &head,
                true,
                16_384,
            );
            assert!(!fresh_kept);
            assert_eq!(a, b, "step {i}: {what}");
            if was_kept {
                copied.push(i);
            }
        }
        let named = |name: &str| -> Vec<usize> {
            steps
                .iter()
                .enumerate()
                .filter(|(_, s)| s.0 == name)
                .map(|(i, _)| i)
                .collect()
        };
        // Copied: a head that came twice in a row with the table standing
        // still; never one after a table change or a different head.
        for name in [
            "kept",
            "kept again",
            "kept once more",
            "back to the base, kept",
            "after it",
        ] {
            for i in named(name) {
                assert!(
                    copied.contains(&i),
                    "{name} (step {i}) was encoded afresh: {copied:?}"
                );
            }
        }
        for name in [
            "first",
            "again: nothing inserted now",
            "after a table size update to 0",
            "the table back",
            "refilled",
            "a smaller table, same entries",
            "another path",
        ] {
            for i in named(name) {
                assert_eq!(
                    copied.contains(&i),
                    name == "another path",
                    "{name} (step {i}): {copied:?}"
                );
            }
        }
        // CONNECT is never kept.
        assert!(named("CONNECT").iter().all(|i| !copied.contains(i)));
        // The other variants' third time is copied, never their first.
        for name in [
            "a POST with a body",
            "its own content-length",
            "another authority",
            "a default withheld",
            "other defaults",
            "a default overridden",
            "a default moved into the request",
        ] {
            let at = named(name);
            assert!(
                !copied.contains(&at[0]) && copied.contains(&at[2]),
                "{name}: {copied:?}"
            );
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
