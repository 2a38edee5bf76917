//! Parsing a response head with `httparse`, and deciding how its body is framed
//! (RFC 9112 §6.3) and whether the connection survives it.

use std::mem::MaybeUninit;

use bytes::{Buf, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version};

use super::arena::copy_out;
use crate::error::{Error, ErrorKind};

/// More header lines than this is a malformed (or hostile) response; hyper uses the same bound.
const MAX_HEADERS: usize = 100;

/// Interim (1xx) heads one response may have before its final head. A real
/// server sends a few (100 Continue, 102 Processing, 103 Early Hints); each
/// costs a parse, and a server that sends them in a loop would hold the
/// request, and a core, for ever (the HTTP/2 side bounds them per stream
/// alike).
pub(crate) const MAX_INTERIM: u32 = 32;

/// How the body after a head ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body: HEAD, 1xx, 204, 304, `Content-Length: 0`.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// What the request asked of the response, as far as reading its head goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// An ordinary request: a `101` is a protocol error.
    Plain,
    /// HEAD: no body, whatever the head says.
    Head,
    /// The request carried `Upgrade`: a `101` switches the connection to the
    /// protocol the server names, from the byte after its head.
    Upgrade,
    /// CONNECT: a 2xx makes the connection a tunnel (RFC 9110 §9.3.6).
    Connect,
}

impl Asked {
    /// What `req` asks for.
    pub(crate) fn of<B>(req: &http::Request<B>) -> Asked {
        match *req.method() {
            http::Method::HEAD => Asked::Head,
            http::Method::CONNECT => Asked::Connect,
            _ if req.headers().contains_key(http::header::UPGRADE) => Asked::Upgrade,
            _ => Asked::Plain,
        }
    }
}

/// A parsed final (non-1xx) response head.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) version: Version,
    pub(crate) headers: HeaderMap,
    pub(crate) framing: Framing,
    /// The connection may carry another request after this response.
    pub(crate) keep_alive: bool,
    /// The server says it closes the connection after this response
    /// (`Connection: close`, or HTTP/1.0 without keep-alive): an error
    /// answer that came before the whole request means it will not read the
    /// rest (a success one does not: see `Connection::early_answer`).
    pub(crate) closing: bool,
    /// The connection switched protocols (a `101` to an `Upgrade` request,
    /// a 2xx to a CONNECT): what follows the head is no longer HTTP/1.1.
    pub(crate) switched: bool,
}

impl Head {
    /// The head as the `http` crate's response parts (the framing and
    /// keep-alive stay with the connection).
    pub(crate) fn into_parts(self) -> http::response::Parts {
        let (mut parts, ()) = http::Response::new(()).into_parts();
        parts.status = self.status;
        parts.version = self.version;
        parts.headers = self.headers;
        if self.switched {
            parts.extensions.insert(crate::proto::exchange::Switched);
        }
        parts
    }
}

/// What [`parse`] found at the start of the buffer.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Not a whole head yet: read more.
    Partial,
    /// An interim 1xx response of this many bytes (consumed), and its
    /// status: the final one follows.
    Informational(usize, StatusCode),
    Final(Head),
}

/// Parses the head at the start of `buf` and consumes it when complete
/// (`asked`: what the request asked for, which decides what a `101`, a
/// CONNECT's 2xx and a HEAD's framing mean).
///
/// Header values are slices of one copy of the head (made in `arena`), so
/// their number costs no allocations, and the read buffer stays the
/// connection's own, to be reused for the next response.
pub(crate) fn parse(
    buf: &mut BytesMut,
    asked: Asked,
    arena: &mut BytesMut,
    names: &mut Names,
) -> Result<Parsed, Error> {
    // Uninitialised slots: httparse fills what it finds, and 100 empty
    // headers (3.2 KB) are not zeroed on every parse.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut res, buf, &mut slots)
    {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Error::msg(
                ErrorKind::HeadersTooLarge,
                "response has more than 100 header lines",
            ))
        }
        Err(e) => return Err(Error::new(ErrorKind::Protocol, e)),
    };
    let code = res.code.unwrap_or_default();
    let status = StatusCode::from_u16(code)
        .map_err(|_| Error::msg(ErrorKind::Protocol, "invalid response status code"))?;
    let switched = match (status, asked) {
        (StatusCode::SWITCHING_PROTOCOLS, Asked::Upgrade) => true,
        (StatusCode::SWITCHING_PROTOCOLS, _) => {
            return Err(Error::msg(
                ErrorKind::Protocol,
                "101 Switching Protocols to a request that asked for no upgrade",
            ))
        }
        (s, Asked::Connect) => s.is_success(),
        _ => false,
    };
    if status.is_informational() && !switched {
        buf.advance(len);
        return Ok(Parsed::Informational(len, status));
    }
    let version = if res.version == Some(0) {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };

    let copy = copy_out(arena, &buf[..len]);
    let base = buf.as_ptr() as usize;
    let mut headers = HeaderMap::with_capacity(res.headers.len());
    let mut seen = Seen::default();
    for (at, h) in res.headers.iter().enumerate() {
        let name = names.name(at, h.name.as_bytes())?;
        seen.note(&name);
        let start = h.value.as_ptr() as usize - base;
        let value = HeaderValue::from_maybe_shared(copy.slice(start..start + h.value.len()))
            .map_err(|e| Error::new(ErrorKind::Protocol, e))?;
        headers.append(name, value);
    }
    buf.advance(len);

    if switched {
        if status == StatusCode::SWITCHING_PROTOCOLS {
            no_content_framing(&headers)?;
        }
        // RFC 9110 §9.3.6: a 2xx to CONNECT has no content, whatever its
        // framing headers say; nor has a 101. The connection is the
        // caller's now, never the pool's again.
        return Ok(Parsed::Final(Head {
            status,
            version,
            headers,
            framing: Framing::Empty,
            keep_alive: false,
            closing: true,
            switched,
        }));
    }
    let request_was_head = asked == Asked::Head;
    let (framing, framing_allows_reuse) = framing(&headers, seen, status, request_was_head)?;
    // Without a `Connection` header: HTTP/1.1 persists, HTTP/1.0 does not.
    let closing = if seen.connection {
        !persistent(&headers, version)
    } else {
        version == Version::HTTP_10
    };
    // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing; the
    // message is read, then the connection closed, keep-alive or not.
    let te_in_http10 = version == Version::HTTP_10 && seen.transfer_encoding;
    let keep_alive = framing_allows_reuse && !te_in_http10 && !closing;
    Ok(Parsed::Final(Head {
        status,
        version,
        headers,
        framing,
        keep_alive,
        closing,
        switched: false,
    }))
}

/// Which of the headers that decide framing and persistence a head has, noted
/// while it is read: a head without them is not looked up again.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    connection: bool,
    content_length: bool,
    transfer_encoding: bool,
}

impl Seen {
    fn note(&mut self, name: &HeaderName) {
        if *name == CONNECTION {
            self.connection = true;
        } else if *name == CONTENT_LENGTH {
            self.content_length = true;
        } else if *name == TRANSFER_ENCODING {
            self.transfer_encoding = true;
        }
    }
}

/// Header name positions remembered per connection.
const NAMES: usize = 16;

/// The header names of the last responses on one connection, by position. A
/// server sends the same names in the same order on every response, and
/// comparing a name's bytes with the last one's costs less than parsing and
/// validating it again; the same bytes always make the same name. Bounded:
/// the first [`NAMES`] positions, each keeping its bytes' buffer (a miss
/// reuses it, so a server that varies its names costs no allocation per head).
#[derive(Debug, Default)]
pub(crate) struct Names {
    seen: Vec<(Vec<u8>, HeaderName)>,
}

impl Names {
    /// The name for the bytes `raw` of the header at position `at`.
    fn name(&mut self, at: usize, raw: &[u8]) -> Result<HeaderName, Error> {
        if let Some((bytes, name)) = self.seen.get(at) {
            if bytes.as_slice() == raw {
                return Ok(name.clone());
            }
        }
        let name = HeaderName::from_bytes(raw).map_err(|e| Error::new(ErrorKind::Protocol, e))?;
        if let Some((bytes, cached)) = self.seen.get_mut(at) {
            bytes.clear();
            bytes.extend_from_slice(raw);
            *cached = name.clone();
        } else if at == self.seen.len() && at < NAMES {
            self.seen.push((raw.to_vec(), name.clone()));
        }
        Ok(name)
    }
}

/// A `101` has no content (RFC 9110 §15.2): one that declares a body's
/// framing (`Transfer-Encoding`, a non-zero `Content-Length`) leaves it
/// unclear where the new protocol's bytes begin, so it is refused.
fn no_content_framing(headers: &HeaderMap) -> Result<(), Error> {
    let length = content_length(headers)?;
    if headers.contains_key(TRANSFER_ENCODING) || length.is_some_and(|n| n > 0) {
        return Err(Error::msg(
            ErrorKind::Protocol,
            "101 Switching Protocols with a body's framing headers",
        ));
    }
    Ok(())
}

/// The interim heads of one response so far: more than [`MAX_INTERIM`] of
/// them, or more bytes than a head may have, fail the request.
#[derive(Debug, Default)]
pub(crate) struct Interim {
    heads: u32,
    bytes: usize,
}

impl Interim {
    /// Counts one interim head of `len` bytes; `max_head` bounds their total.
    pub(crate) fn count(&mut self, len: usize, max_head: usize) -> Result<(), Error> {
        self.heads += 1;
        self.bytes = self.bytes.saturating_add(len);
        if self.heads > MAX_INTERIM {
            return Err(Error::msg(
                ErrorKind::Protocol,
                "peer flooded interim (1xx) responses: more than 32 before the final one",
            ));
        }
        if self.bytes > max_head {
            return Err(Error::msg(
                ErrorKind::HeadersTooLarge,
                "interim (1xx) responses exceed max_response_headers_size together",
            ));
        }
        Ok(())
    }
}

/// The body's framing, and whether the connection can outlive it.
fn framing(
    headers: &HeaderMap,
    seen: Seen,
    status: StatusCode,
    request_was_head: bool,
) -> Result<(Framing, bool), Error> {
    if request_was_head || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        return Ok((Framing::Empty, true));
    }
    let length = if seen.content_length {
        content_length(headers)?
    } else {
        None
    };
    if seen.transfer_encoding {
        // A coding that is no token is no coding: readers that skip it and
        // readers that choke on it (hyper reads to the close) end the body
        // in different places, so the response is refused.
        if !codings_are_tokens(headers) {
            return Err(Error::msg(
                ErrorKind::Protocol,
                "malformed Transfer-Encoding in response",
            ));
        }
        let chunked = last_token(headers, TRANSFER_ENCODING)
            .is_some_and(|t| t.eq_ignore_ascii_case(b"chunked"));
        // Both headers at once is how request smuggling starts: the encoding
        // wins (RFC 9112 §6.3), and the connection is not trusted afterwards.
        let reusable = chunked && length.is_none();
        return Ok(if chunked {
            (Framing::Chunked, reusable)
        } else {
            (Framing::UntilClose, false)
        });
    }
    Ok(match length {
        Some(0) => (Framing::Empty, true),
        Some(n) => (Framing::Length(n), true),
        None => (Framing::UntilClose, false),
    })
}

/// The Content-Length, if any; several that disagree are an error.
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Error> {
    let mut found: Option<u64> = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let n = parse_decimal(part.trim_ascii()).ok_or_else(|| {
                Error::msg(ErrorKind::Protocol, "invalid Content-Length in response")
            })?;
            if found.is_some_and(|f| f != n) {
                return Err(Error::msg(
                    ErrorKind::Protocol,
                    "conflicting Content-Length values in response",
                ));
            }
            found = Some(n);
        }
    }
    Ok(found)
}

fn parse_decimal(digits: &[u8]) -> Option<u64> {
    // Leading zeros are valid and change nothing: only the others can overflow.
    let zeros = digits.iter().take_while(|&&b| b == b'0').count();
    if digits.is_empty() || digits.len() - zeros > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}

/// Whether every `Transfer-Encoding` element names its coding with a token
/// (RFC 9112 §6.1: `transfer-coding = token *( OWS ";" OWS transfer-parameter )`);
/// empty elements are allowed (RFC 9110 §5.6.1).
fn codings_are_tokens(headers: &HeaderMap) -> bool {
    let tchar = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    headers
        .get_all(TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(|element| element.split(|&b| b == b';').next().unwrap_or_default())
        .all(|coding| coding.trim_ascii().iter().all(tchar))
}

/// The last comma-separated token over every value of `name`.
fn last_token(headers: &HeaderMap, name: HeaderName) -> Option<&[u8]> {
    headers
        .get_all(name)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .rfind(|t| !t.is_empty())
}

/// Whether the server lets the connection persist: HTTP/1.1 unless it says
/// `close`, HTTP/1.0 only if it says `keep-alive`.
fn persistent(headers: &HeaderMap, version: Version) -> bool {
    if version == Version::HTTP_10 {
        connection_has(headers, b"keep-alive")
    } else {
        !connection_has(headers, b"close")
    }
}

/// Whether a `Connection` header lists `token` (case-insensitively).
pub(crate) fn connection_has(headers: &HeaderMap, token: &[u8]) -> bool {
    headers.get_all(CONNECTION).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Result<Parsed, Error> {
        parse(
            &mut BytesMut::from(raw),
            Asked::Plain,
            &mut BytesMut::new(),
            &mut Names::default(),
        )
    }

    fn final_head(raw: &str) -> Head {
        match head(raw).unwrap() {
            Parsed::Final(h) => h,
            other => panic!("expected a final head, got {other:?}"),
        }
    }

    /// Names remembered by position must never stand in for other bytes: the
    /// same connection's next head with other names (or the same names in
    /// another order or case) is read as if nothing were remembered.
    #[test]
    fn remembered_header_names_follow_the_bytes() {
        let mut names = Names::default();
        let mut next = |raw: &str| {
            let parsed = parse(
                &mut BytesMut::from(raw),
                Asked::Plain,
                &mut BytesMut::new(),
                &mut names,
            );
            match parsed.unwrap() {
                Parsed::Final(h) => h,
                other => panic!("expected a final head, got {other:?}"),
            }
        };
        let h = next("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Length(3), true));
        let h = next("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-A: 1\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(4));
        assert_eq!(h.headers["x-a"], "1");
        let h = next("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        assert!(!h.headers.contains_key(CONTENT_LENGTH));
        let h = next("HTTP/1.1 200 OK\r\nX-A: 2\r\ncontent-length: 5\r\nX-B: 3\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Length(5), true));
        let names: Vec<&str> = h.headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-a", "content-length", "x-b"]);
        let h = next("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Length(1), false));
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Length(12), true));
        let h = final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, true));
        let h = final_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        let h = final_head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        );
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        let h = final_head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        let h = final_head("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n");
        assert_eq!((h.framing, h.keep_alive), (Framing::Empty, true));
        let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.framing, Framing::Empty);
        let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(3));
        let h = final_head("HTTP/1.1 200 OK\r\nContent-Length: 000000000000000000003\r\n\r\n");
        assert_eq!(h.framing, Framing::Length(3));
    }

    #[test]
    fn a_head_request_has_no_body_whatever_the_headers_say() {
        let mut buf = BytesMut::from("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n");
        let Parsed::Final(h) = parse(
            &mut buf,
            Asked::Head,
            &mut BytesMut::new(),
            &mut Names::default(),
        )
        .unwrap() else {
            panic!("final head expected")
        };
        assert_eq!(h.framing, Framing::Empty);
    }

    #[test]
    fn persistence_depends_on_version_and_connection() {
        assert!(
            !final_head("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n")
                .keep_alive
        );
        assert!(!final_head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keep_alive);
        let h =
            final_head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
        assert!(h.keep_alive);
        assert_eq!(h.version, Version::HTTP_10);
        let h = final_head(
            "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
    }

    #[test]
    fn the_head_is_consumed_and_the_body_left() {
        let mut buf =
            BytesMut::from("HTTP/1.1 200 OK\r\nX-Custom: a b\r\nContent-Length: 2\r\n\r\nhi");
        let Parsed::Final(h) = parse(
            &mut buf,
            Asked::Plain,
            &mut BytesMut::new(),
            &mut Names::default(),
        )
        .unwrap() else {
            panic!("final head expected")
        };
        assert_eq!(&buf[..], b"hi");
        assert_eq!(h.headers["x-custom"], "a b");
        assert_eq!(h.status, StatusCode::OK);
    }

    #[test]
    fn partial_informational_and_malformed_heads() {
        assert!(matches!(
            head("HTTP/1.1 200 OK\r\nContent-Le"),
            Ok(Parsed::Partial)
        ));
        let mut buf = BytesMut::from("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n");
        assert!(matches!(
            parse(
                &mut buf,
                Asked::Plain,
                &mut BytesMut::new(),
                &mut Names::default()
            ),
            Ok(Parsed::Informational(25, StatusCode::CONTINUE))
        ));
        assert_eq!(&buf[..], b"HTTP/1.1 200 OK\r\n");
        for bad in [
            "HTTP/1.1 200 OK\r\nnot a header\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: x y, chunked\r\n\r\n",
            "HTTP/1.1 099 Too Low\r\n\r\n",
            "SSH-2.0-OpenSSH\r\n\r\n",
        ] {
            let kind = head(bad).unwrap_err().kind();
            assert_eq!(kind, ErrorKind::Protocol, "{bad:?}");
        }
        let many: String = (0..101).map(|i| format!("x-{i}: v\r\n")).collect();
        let err = head(&format!("HTTP/1.1 200 OK\r\n{many}\r\n")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::HeadersTooLarge);
    }

    #[test]
    fn a_switch_is_final_only_when_the_request_asked_for_it() {
        let parse_as = |raw: &str, asked| {
            parse(
                &mut BytesMut::from(raw),
                asked,
                &mut BytesMut::new(),
                &mut Names::default(),
            )
        };
        let switch = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: ws\r\n\r\nframe";
        let mut buf = BytesMut::from(switch);
        let Ok(Parsed::Final(h)) = parse(
            &mut buf,
            Asked::Upgrade,
            &mut BytesMut::new(),
            &mut Names::default(),
        ) else {
            panic!("a 101 to an Upgrade request is final");
        };
        assert!(h.switched && !h.keep_alive);
        assert_eq!(&buf[..], b"frame", "the new protocol's bytes stay");
        for asked in [Asked::Plain, Asked::Head, Asked::Connect] {
            let err = parse_as(switch, asked).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Protocol, "{asked:?}");
        }
        // A CONNECT's 2xx is a tunnel whatever it says of a body; its
        // other answers are ordinary responses.
        let ok = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let Ok(Parsed::Final(h)) = parse_as(ok, Asked::Connect) else {
            panic!("final")
        };
        assert!(h.switched && h.framing == Framing::Empty);
        let refused = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 3\r\n\r\n";
        let Ok(Parsed::Final(h)) = parse_as(refused, Asked::Connect) else {
            panic!("final")
        };
        assert!(!h.switched && h.framing == Framing::Length(3));
        let Ok(Parsed::Final(h)) = parse_as(ok, Asked::Upgrade) else {
            panic!("final")
        };
        assert!(!h.switched, "an upgrade declined is an ordinary response");
        for framed in [
            "HTTP/1.1 101 Switching Protocols\r\nContent-Length: 4\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            let err = parse_as(framed, Asked::Upgrade).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Protocol, "{framed:?}");
        }
        let zero = "HTTP/1.1 101 Switching Protocols\r\nContent-Length: 0\r\n\r\n";
        assert!(matches!(
            parse_as(zero, Asked::Upgrade),
            Ok(Parsed::Final(_))
        ));
    }

    #[test]
    fn interim_heads_are_bounded_in_number_and_bytes() {
        let mut interim = Interim::default();
        for _ in 0..MAX_INTERIM {
            interim.count(25, 64 * 1024).unwrap();
        }
        let err = interim.count(25, 64 * 1024).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol);
        let mut interim = Interim::default();
        interim.count(600, 1000).unwrap();
        let err = interim.count(600, 1000).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::HeadersTooLarge);
    }
}
