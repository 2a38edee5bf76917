//! Message heads on a request stream (RFC 9114 §4.1–4.3): the request's
//! field section encoded (pseudo-fields first, connection-specific fields
//! left out), and a response's (or trailers') field section decoded into
//! `http` types, each malformed message a typed error. A connection's last
//! response head is kept decoded ([`Replay`]), its last request head
//! encoded ([`super::template`]): a service sends the same head over and
//! over.

use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Version};

use super::frame::{self, kind};
use super::qpack::{self, encode, DecodeError};
use crate::proto::fields::{
    drop_non_trailers, is_connection_specific, left_out_of_request, Declared,
};

/// Per-field overhead in a field section's size (RFC 9114 §4.2.2).
const FIELD_OVERHEAD: u64 = 32;

/// A request head (or trailer section) ready to write: the HEADERS frame,
/// and its size as the server's SETTINGS_MAX_FIELD_SECTION_SIZE counts it.
pub(crate) struct EncodedHead {
    pub(crate) frame: Bytes,
    pub(crate) size: u64,
}

/// Encodes `request`'s head (`content_length` added when the caller
/// decided so) as a HEADERS frame: its own fields, then the client's
/// `defaults` it neither sets nor has `withheld` (as HTTP/2's encoder).
///
/// # Errors
/// A message for a URI without scheme or authority, or a CONNECT.
pub(crate) fn request<B>(
    request: &Request<B>,
    content_length: Option<u64>,
    defaults: &HeaderMap,
    withheld: &[HeaderName],
) -> Result<EncodedHead, &'static str> {
    // A CONNECT opens a tunnel (RFC 9114 §4.4), which courier's HTTP/3 does
    // not build: written as an ordinary request it would go out with a
    // `:scheme` and a `:path` the method does not have.
    if request.method() == Method::CONNECT {
        return Err(
            "CONNECT (a tunnel) is not supported over HTTP/3; send it over HTTP/1.1 or HTTP/2",
        );
    }
    let uri = request.uri();
    let scheme = uri
        .scheme_str()
        .ok_or("HTTP/3 needs an absolute URI (no scheme)")?;
    let authority = uri
        .authority()
        .ok_or("HTTP/3 needs an absolute URI (no authority)")?;
    // The caller's `Host` names the virtual host (see `validate::host`).
    let host = crate::validate::host(request.headers());
    let authority = host.as_ref().unwrap_or(authority);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let path = if path.is_empty() { "/" } else { path };
    let mut block = BytesMut::with_capacity(128);
    let mut size = 0u64;
    encode::prefix(&mut block);
    let mut field = |block: &mut BytesMut, name: &[u8], value: &[u8], sensitive: bool| {
        size += (name.len() + value.len()) as u64 + FIELD_OVERHEAD;
        encode::field(block, name, value, sensitive);
    };
    field(
        &mut block,
        b":method",
        request.method().as_str().as_bytes(),
        false,
    );
    field(&mut block, b":scheme", scheme.as_bytes(), false);
    field(
        &mut block,
        b":authority",
        authority.as_str().as_bytes(),
        false,
    );
    field(&mut block, b":path", path.as_bytes(), false);
    let headers = request.headers();
    let defaults = defaults
        .iter()
        .filter(|(name, _)| !headers.contains_key(*name) && !withheld.contains(name));
    let mut has_length = false;
    for (name, value) in headers.iter().chain(defaults) {
        has_length |= *name == header::CONTENT_LENGTH;
        if left_out_of_request(name, value.as_bytes()) {
            continue;
        }
        field(
            &mut block,
            name.as_str().as_bytes(),
            value.as_bytes(),
            value.is_sensitive(),
        );
    }
    if let Some(len) = content_length.filter(|_| !has_length) {
        field(
            &mut block,
            b"content-length",
            len.to_string().as_bytes(),
            false,
        );
    }
    Ok(EncodedHead {
        frame: framed(&block).freeze(),
        size,
    })
}

/// A trailer section as a HEADERS frame.
pub(crate) fn trailers(trailers: &HeaderMap) -> EncodedHead {
    let mut block = BytesMut::with_capacity(64);
    let mut size = 0u64;
    encode::prefix(&mut block);
    for (name, value) in trailers {
        if !left_out_of_request(name, value.as_bytes()) {
            let name = name.as_str().as_bytes();
            size += (name.len() + value.len()) as u64 + FIELD_OVERHEAD;
            encode::field(&mut block, name, value.as_bytes(), value.is_sensitive());
        }
    }
    EncodedHead {
        frame: framed(&block).freeze(),
        size,
    }
}

fn framed(block: &[u8]) -> BytesMut {
    let mut out = BytesMut::with_capacity(block.len() + 9);
    frame::put_head(&mut out, kind::HEADERS, block.len() as u64);
    out.put_slice(block);
    out
}

/// Why a received field section is refused.
#[derive(Debug)]
pub(crate) enum HeadError {
    /// Not QPACK we can read (QPACK_DECOMPRESSION_FAILED: the connection's).
    Qpack(DecodeError),
    /// Over our SETTINGS_MAX_FIELD_SECTION_SIZE (the stream's).
    TooLarge(u64),
    /// Not a valid message (H3_MESSAGE_ERROR: the stream's).
    Malformed(&'static str),
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::Qpack(e) => write!(f, "{e}"),
            HeadError::TooLarge(max) => write!(f, "field section over {max} bytes"),
            HeadError::Malformed(what) => write!(f, "malformed HTTP/3 message: {what}"),
        }
    }
}

/// Decodes `block` into `headers` (pseudo-fields to `pseudo`), held to the
/// rules HTTP/2's heads are ([`crate::proto::fields`]); returns its
/// content-length.
fn decode_into(
    block: &[u8],
    max: u64,
    mut pseudo: impl FnMut(&[u8], &[u8]) -> Result<(), HeadError>,
    headers: &mut HeaderMap,
) -> Result<Declared, HeadError> {
    let mut regular = false;
    let mut declared = Declared::Absent;
    let mut failure = None;
    let decoded = qpack::decode(block, max, |name, value| {
        let step = (|| {
            if name.first() == Some(&b':') {
                if regular {
                    return Err(HeadError::Malformed("a pseudo-field after a regular one"));
                }
                return pseudo(name, value);
            }
            regular = true;
            if name.iter().any(u8::is_ascii_uppercase) {
                return Err(HeadError::Malformed("an uppercase field name"));
            }
            let name = HeaderName::from_bytes(name)
                .map_err(|_| HeadError::Malformed("an invalid field name"))?;
            if is_connection_specific(&name, value) {
                return Err(HeadError::Malformed("a connection-specific field"));
            }
            if name == header::CONTENT_LENGTH {
                declared = declared.add(value);
            }
            let value = HeaderValue::from_bytes(value)
                .map_err(|_| HeadError::Malformed("an invalid field value"))?;
            headers.append(name, value);
            Ok(())
        })();
        step.map_err(|e| {
            failure = Some(e);
            DecodeError::Invalid("field refused")
        })
    });
    match (decoded, failure) {
        (Ok(()), _) => Ok(declared),
        (Err(_), Some(e)) => Err(e),
        (Err(DecodeError::TooLarge { max }), None) => Err(HeadError::TooLarge(max)),
        (Err(e), None) => Err(HeadError::Qpack(e)),
    }
}

/// A response's field section: its status and fields (`:status` once,
/// first; no other pseudo-field).
#[cfg(test)]
fn response(block: &[u8], max: u64) -> Result<http::response::Parts, HeadError> {
    decode_response(block, max).map(|(parts, _)| parts)
}

/// A response's field section (`:status` once, first; no other
/// pseudo-field; not 101, which HTTP/3 does not have, RFC 9114 §4.5) and
/// its content-length.
fn decode_response(
    block: &[u8],
    max: u64,
) -> Result<(http::response::Parts, Option<u64>), HeadError> {
    let mut status = None;
    let mut headers = HeaderMap::new();
    let declared = decode_into(
        block,
        max,
        |name, value| {
            if name != b":status" {
                return Err(HeadError::Malformed("a pseudo-field other than :status"));
            }
            if status.is_some() {
                return Err(HeadError::Malformed(":status twice"));
            }
            if value.len() != 3 {
                return Err(HeadError::Malformed("a :status not of three digits"));
            }
            status = Some(
                StatusCode::from_bytes(value)
                    .map_err(|_| HeadError::Malformed("an invalid :status"))?,
            );
            Ok(())
        },
        &mut headers,
    )?;
    let status = status.ok_or(HeadError::Malformed("no :status"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err(HeadError::Malformed("101 is not allowed in HTTP/3"));
    }
    // A 1xx has no content, so no length to frame it by (HTTP/2's reading
    // skips an interim head's content-length alike).
    let length = if status.is_informational() {
        None
    } else {
        declared.length().map_err(HeadError::Malformed)?
    };
    let (mut parts, ()) = http::Response::new(()).into_parts();
    parts.status = status;
    parts.version = Version::HTTP_3;
    parts.headers = headers;
    Ok((parts, length))
}

/// A response head as [`Replay`] hands it out.
pub(crate) struct ResponseHead {
    /// Status and version; the headers too, unless `shared` holds them.
    pub(crate) parts: http::response::Parts,
    /// A final head's headers, shared with the connection's [`Replay`]
    /// (`parts.headers` is empty then): a replayed head costs a reference
    /// count, not a copy of the map (two allocations and a clone of every
    /// entry). The response copies them if its caller changes them.
    pub(crate) shared: Option<Arc<HeaderMap>>,
    /// The `content-length` (its first value, if a number), read once
    /// when the head was decoded, as the client's response reads it.
    pub(crate) length: Option<u64>,
}

impl ResponseHead {
    /// The headers, wherever they are kept.
    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.shared.as_deref().unwrap_or(&self.parts.headers)
    }
}

/// The last final response head of a connection, with its encoded bytes:
/// a server sends the same head over and over (a static file's, until its
/// `date` changes), and decoding one cost more than the rest of a
/// request's QPACK (6,600 instructions, half of it Huffman), so a head of
/// the same bytes is replayed (HTTP/2's decoder replays a repeated block
/// alike), its headers shared, not copied. Bounded: one head, at most our
/// field-section bound.
#[derive(Default)]
pub(crate) struct Replay(Mutex<Option<LastHead>>);

struct LastHead {
    block: Bytes,
    status: StatusCode,
    headers: Arc<HeaderMap>,
    length: Option<u64>,
}

impl LastHead {
    fn head(&self) -> ResponseHead {
        let (mut parts, ()) = http::Response::new(()).into_parts();
        parts.status = self.status;
        parts.version = Version::HTTP_3;
        ResponseHead {
            parts,
            shared: Some(Arc::clone(&self.headers)),
            length: self.length,
        }
    }
}

impl Replay {
    /// `block` decoded as a response head, or replayed.
    pub(crate) fn response(&self, block: &[u8], max: u64) -> Result<ResponseHead, HeadError> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(last) = last.as_ref().filter(|last| last.block[..] == *block) {
            return Ok(last.head());
        }
        let (mut parts, length) = decode_response(block, max)?;
        if parts.status.is_informational() {
            return Ok(ResponseHead {
                parts,
                shared: None,
                length,
            });
        }
        let kept = LastHead {
            block: Bytes::copy_from_slice(block),
            status: parts.status,
            length,
            headers: Arc::new(std::mem::take(&mut parts.headers)),
        };
        let head = kept.head();
        *last = Some(kept);
        Ok(head)
    }
}

/// A trailer section: fields, no pseudo-field; those that cannot be
/// trailers dropped ([`drop_non_trailers`]).
pub(crate) fn trailer_fields(block: &[u8], max: u64) -> Result<HeaderMap, HeadError> {
    let mut headers = HeaderMap::new();
    decode_into(
        block,
        max,
        |_, _| Err(HeadError::Malformed("a pseudo-field in trailers")),
        &mut headers,
    )?;
    drop_non_trailers(&mut headers);
    Ok(headers)
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
