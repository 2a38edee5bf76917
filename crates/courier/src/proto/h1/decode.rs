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
#[path = "decode_tests.rs"]
mod tests;
