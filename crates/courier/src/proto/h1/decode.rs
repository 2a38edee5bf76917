//! Parsing a response head with `httparse`, and deciding how its body is framed
//! (RFC 9112 §6.3) and whether the connection survives it.

use std::mem::MaybeUninit;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version};

use super::arena::copy_out;
use super::names::Changed;
pub(crate) use super::names::Names;
#[cfg(test)]
use super::seen::FirstLength;
pub(super) use super::seen::Seen;
use crate::error::{Error, ErrorKind};
use crate::proto::fields::MAX_INTERIM;

/// More header lines than this is a malformed (or hostile) response; hyper uses the same bound.
const MAX_HEADERS: usize = 100;

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
    /// What `req` asks for (`upgrade`: it carries an `Upgrade` header).
    pub(crate) fn of<B>(req: &http::Request<B>, upgrade: bool) -> Asked {
        match *req.method() {
            http::Method::HEAD => Asked::Head,
            http::Method::CONNECT => Asked::Connect,
            _ if upgrade => Asked::Upgrade,
            _ => Asked::Plain,
        }
    }
}

/// A parsed final (non-1xx) response head.
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) version: Version,
    /// Empty when `shared` holds the headers.
    pub(crate) headers: HeaderMap,
    /// The headers, when they are the connection's template's (the head
    /// was the last one's bytes): shared, not copied.
    pub(crate) shared: Option<Arc<HeaderMap>>,
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
    /// The Content-Length as `Response` reads it (see `Seen::declared`),
    /// read here so that the response need not look it up again.
    pub(crate) declared_length: Option<Option<u64>>,
}

impl Head {
    /// The head's headers, wherever they are kept.
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.shared.as_deref().unwrap_or(&self.headers)
    }

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

/// The headers shown wherever they are kept: a head read from the shared
/// template reads as the same head parsed afresh.
impl std::fmt::Debug for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Head")
            .field("status", &self.status)
            .field("version", &self.version)
            .field("headers", self.headers())
            .field("framing", &self.framing)
            .field("keep_alive", &self.keep_alive)
            .field("closing", &self.closing)
            .field("switched", &self.switched)
            .field("declared_length", &self.declared_length)
            .finish()
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
    // A head laid out as the last one is read without httparse; one of its
    // values that httparse might read otherwise sends it to httparse. The
    // last head's bytes again (values and all) read as they read then.
    let exact = names.layout.exact(buf);
    let laid_out = match exact {
        Some((len, code, minor, _)) => Some((len, code, minor)),
        None => names.layout.matches(buf),
    };
    if let Some((len, code, minor)) = laid_out {
        let exact = exact.map(|(.., seen)| seen);
        if let Some(parsed) = parse_from(buf, asked, arena, names, len, code, minor, None, exact)? {
            buf.advance(len);
            return Ok(parsed);
        }
    }
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
    let minor = res.version.unwrap_or(1);
    let parsed = parse_from(
        buf,
        asked,
        arena,
        names,
        len,
        code,
        minor,
        Some(res.headers),
        None,
    )?;
    let parsed = parsed.expect("a head httparse read is never sent back to it");
    buf.advance(len);
    Ok(parsed)
}

/// The head of `len` bytes at the start of `buf`, with status `code` and
/// minor version `minor`: its headers are `parsed` (httparse's), or, when
/// `None`, the values at the offsets of the head `names.layout` keeps.
/// `Ok(None)`: a value of the latter may not read as httparse would read it.
/// `exact`: the head is the last one's bytes, which the template's values
/// and this reading of its framing headers are. The caller consumes the head.
#[allow(clippy::too_many_arguments)]
fn parse_from(
    buf: &[u8],
    asked: Asked,
    arena: &mut BytesMut,
    names: &mut Names,
    len: usize,
    code: u16,
    minor: u8,
    parsed: Option<&[httparse::Header<'_>]>,
    exact: Option<Seen>,
) -> Result<Option<Parsed>, Error> {
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
        return Ok(Some(Parsed::Informational(len, status)));
    }
    let version = if minor == 0 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };

    let base = buf.as_ptr() as usize;
    let head = &buf[..len];
    let count = parsed.map_or(names.layout.headers(), <[_]>::len);
    // The head is copied out only when a value is not last time's.
    let mut copy = None;
    let mut seen = Seen::default();
    let mut value = |v: &[u8]| {
        let copy: &Bytes = copy.get_or_insert_with(|| copy_out(arena, head));
        let start = v.as_ptr() as usize - base;
        HeaderValue::from_maybe_shared(copy.slice(start..start + v.len()))
            .map_err(|e| Error::new(ErrorKind::Protocol, e))
    };
    // The same names as last time, in the same order: the last head's map
    // is cloned (names, and the values last kept) and the values that
    // differ filled in, which skips hashing and placing every name again,
    // and checking (and copying) every value that did not change.
    // The template's values are this head's now (the layout may say so).
    let mut synced = false;
    // The last head's bytes again: its map is the template, shared.
    let mut shared = exact.and_then(|_| names.shared(count));
    let template = match shared {
        Some(_) => None,
        None => names.template(count),
    };
    let filled = match template {
        _ if shared.is_some() => {
            seen = exact.unwrap_or_default();
            names.template_used(&HeaderMap::new(), None);
            Some(HeaderMap::new())
        }
        Some(mut map) => {
            let mut filled = true;
            let mut changed = None;
            for (at, slot) in map.values_mut().enumerate() {
                let (role, v) = match parsed {
                    Some(headers) => {
                        let h = &headers[at];
                        let Some(role) = names.remembered(at, h.name.as_bytes()) else {
                            filled = false;
                            break;
                        };
                        (role, h.value)
                    }
                    // Laid out as the last head: its names are the template's.
                    None => (names.role(at), names.layout.value(head, at)),
                };
                seen.note(role, v);
                if slot.as_bytes() != v {
                    if parsed.is_none() && !super::repeated::plain_value(v) {
                        return Ok(None);
                    }
                    *slot = value(v)?;
                    changed.get_or_insert_with(Changed::new).add(at, v);
                }
            }
            if filled {
                synced = names.template_used(&map, changed.as_ref());
                if parsed.is_none() {
                    names.layout.synced(synced.then_some((head, seen)));
                }
            }
            filled.then_some(map)
        }
        // No template, no layout: only httparse's heads come here.
        None if parsed.is_none() => return Ok(None),
        None => None,
    };
    let headers = match (filled, parsed) {
        (Some(map), _) => map,
        (None, parsed) => {
            let parsed = parsed.expect("a layout is kept only with a template");
            seen = Seen::default();
            let mut map = HeaderMap::with_capacity(parsed.len());
            for (at, h) in parsed.iter().enumerate() {
                let name = names.name(at, h.name.as_bytes())?;
                seen.note(Role::of(&name), h.value);
                map.append(name, value(h.value)?);
            }
            names.keep_template(&map, parsed.len());
            map
        }
    };
    if let Some(parsed) = parsed {
        // httparse's head: kept as the layout the next head may have,
        // while the template holds its names.
        if names.has_template(count) {
            let offsets = parsed.iter().map(|h| {
                let start = h.value.as_ptr() as usize - base;
                (start, start + h.value.len())
            });
            names.layout.keep(head, offsets, code, minor);
            names.layout.synced(synced.then_some((head, seen)));
        }
    }
    if switched {
        // The connection is the caller's now: no template to share.
        let headers = match shared.take() {
            Some(map) => HeaderMap::clone(&map),
            None => headers,
        };
        if status == StatusCode::SWITCHING_PROTOCOLS {
            no_content_framing(&seen)?;
        }
        // RFC 9110 §9.3.6: a 2xx to CONNECT has no content, whatever its
        // framing headers say; nor has a 101. The connection is the
        // caller's now, never the pool's again.
        return Ok(Some(Parsed::Final(Head {
            status,
            version,
            headers,
            shared: None,
            framing: Framing::Empty,
            keep_alive: false,
            closing: true,
            switched,
            declared_length: seen.declared(),
        })));
    }
    let request_was_head = asked == Asked::Head;
    let view = shared.as_deref().unwrap_or(&headers);
    let (framing, framing_allows_reuse) = framing(view, seen, status, request_was_head)?;
    // Without a `Connection` header: HTTP/1.1 persists, HTTP/1.0 does not.
    let closing = if seen.connection {
        !seen.persistent(version)
    } else {
        version == Version::HTTP_10
    };
    // RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing; the
    // message is read, then the connection closed, keep-alive or not.
    let te_in_http10 = version == Version::HTTP_10 && seen.transfer_encoding;
    let keep_alive = framing_allows_reuse && !te_in_http10 && !closing;
    Ok(Some(Parsed::Final(Head {
        status,
        version,
        headers,
        shared,
        framing,
        keep_alive,
        closing,
        switched: false,
        declared_length: seen.declared(),
    })))
}

/// What a header name says to [`Seen`]: worked out once per remembered
/// name, so a remembered head's names are not compared again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Connection,
    ContentLength,
    TransferEncoding,
    Other,
}

impl Role {
    pub(super) fn of(name: &HeaderName) -> Role {
        if *name == CONNECTION {
            Role::Connection
        } else if *name == CONTENT_LENGTH {
            Role::ContentLength
        } else if *name == TRANSFER_ENCODING {
            Role::TransferEncoding
        } else {
            Role::Other
        }
    }
}

/// A `101` has no content (RFC 9110 §15.2): one that declares a body's
/// framing (`Transfer-Encoding`, a non-zero `Content-Length`) leaves it
/// unclear where the new protocol's bytes begin, so it is refused.
fn no_content_framing(seen: &Seen) -> Result<(), Error> {
    let length = seen.content_length()?;
    if seen.transfer_encoding || length.is_some_and(|n| n > 0) {
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
        if self.heads > u32::from(MAX_INTERIM) {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("peer flooded interim (1xx) responses: more than {MAX_INTERIM} before the final one"),
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
    let length = seen.content_length()?;
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
