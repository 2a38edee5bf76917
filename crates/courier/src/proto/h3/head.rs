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
use http::{Request, StatusCode, Version};

use super::frame::{self, kind};
use super::qpack::{self, encode, DecodeError};

/// Per-field overhead in a field section's size (RFC 9114 §4.2.2).
const FIELD_OVERHEAD: u64 = 32;

/// Headers HTTP/3 forbids (RFC 9114 §4.2): connection-specific ones, and
/// `host` (its value goes in `:authority`). `te` is allowed only as
/// "trailers".
fn forbidden(name: &HeaderName, value: &HeaderValue) -> bool {
    match *name {
        header::CONNECTION | header::TRANSFER_ENCODING | header::UPGRADE | header::HOST => true,
        header::TE => !value.as_bytes().eq_ignore_ascii_case(b"trailers"),
        _ => matches!(name.as_str(), "keep-alive" | "proxy-connection"),
    }
}

/// A request head ready to write: the HEADERS frame, and its size as the
/// server's SETTINGS_MAX_FIELD_SECTION_SIZE counts it.
pub(crate) struct EncodedHead {
    pub(crate) frame: Bytes,
    pub(crate) size: u64,
}

/// Encodes `request`'s head (`content_length` added when the caller
/// decided so) as a HEADERS frame: its own fields, then the client's
/// `defaults` it neither sets nor has `withheld` (as HTTP/2's encoder).
///
/// # Errors
/// A message for a URI without scheme or authority.
pub(crate) fn request<B>(
    request: &Request<B>,
    content_length: Option<u64>,
    defaults: &HeaderMap,
    withheld: &[HeaderName],
) -> Result<EncodedHead, &'static str> {
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
        if forbidden(name, value) {
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
pub(crate) fn trailers(trailers: &HeaderMap) -> BytesMut {
    let mut block = BytesMut::with_capacity(64);
    encode::prefix(&mut block);
    for (name, value) in trailers {
        if !forbidden(name, value) {
            encode::field(
                &mut block,
                name.as_str().as_bytes(),
                value.as_bytes(),
                value.is_sensitive(),
            );
        }
    }
    framed(&block)
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

fn decode_into(
    block: &[u8],
    max: u64,
    mut pseudo: impl FnMut(&[u8], &[u8]) -> Result<(), HeadError>,
    headers: &mut HeaderMap,
) -> Result<(), HeadError> {
    let mut regular = false;
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
        (Ok(()), _) => Ok(()),
        (Err(_), Some(e)) => Err(e),
        (Err(DecodeError::TooLarge { max }), None) => Err(HeadError::TooLarge(max)),
        (Err(e), None) => Err(HeadError::Qpack(e)),
    }
}

/// A response's field section: its status and fields (`:status` once,
/// first; no other pseudo-field).
pub(crate) fn response(block: &[u8], max: u64) -> Result<http::response::Parts, HeadError> {
    let mut status = None;
    let mut headers = HeaderMap::new();
    decode_into(
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
    let (mut parts, ()) = http::Response::new(()).into_parts();
    parts.status = status;
    parts.version = Version::HTTP_3;
    parts.headers = headers;
    Ok(parts)
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
    #[cfg(test)]
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.shared.as_deref().unwrap_or(&self.parts.headers)
    }
}

/// The `content-length` a head declares, if one parses (the client's
/// response reads it alike).
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
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
        let mut parts = response(block, max)?;
        if parts.status.is_informational() {
            let length = declared_length(&parts.headers);
            return Ok(ResponseHead {
                parts,
                shared: None,
                length,
            });
        }
        let kept = LastHead {
            block: Bytes::copy_from_slice(block),
            status: parts.status,
            length: declared_length(&parts.headers),
            headers: Arc::new(std::mem::take(&mut parts.headers)),
        };
        let head = kept.head();
        *last = Some(kept);
        Ok(head)
    }
}

/// A trailer section: fields, no pseudo-field.
pub(crate) fn trailer_fields(block: &[u8], max: u64) -> Result<HeaderMap, HeadError> {
    let mut headers = HeaderMap::new();
    decode_into(
        block,
        max,
        |_, _| Err(HeadError::Malformed("a pseudo-field in trailers")),
        &mut headers,
    )?;
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::h3::frame::{Frame, FrameReader};

    fn block_of(frame: &Bytes) -> Vec<u8> {
        let mut reader = FrameReader::new(1 << 20);
        let mut bytes = frame.clone();
        match reader.next(&mut bytes) {
            Ok(Some(Frame::Headers(block))) => block.to_vec(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_request_head_has_its_pseudo_fields_first_and_no_connection_fields() {
        let req = Request::post("https://example.com:8443/a?b=c")
            .header("connection", "keep-alive")
            .header("host", "virtual.example")
            .header("te", "gzip")
            .header("x-one", "1")
            .body(())
            .unwrap();
        let head = request(&req, Some(5), &HeaderMap::new(), &[]).expect("encodes");
        let fields = fields_of(&head);
        // The caller's Host is the virtual host: `:authority`, not a field.
        let want: Vec<(String, String)> = [
            (":method", "POST"),
            (":scheme", "https"),
            (":authority", "virtual.example"),
            (":path", "/a?b=c"),
            ("x-one", "1"),
            ("content-length", "5"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(fields, want);
        let size: u64 = want
            .iter()
            .map(|(n, v)| (n.len() + v.len()) as u64 + 32)
            .sum();
        assert_eq!(head.size, size);
        let relative = Request::get("/relative").body(()).unwrap();
        assert!(request(&relative, None, &HeaderMap::new(), &[]).is_err());
    }

    fn fields_of(head: &EncodedHead) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        qpack::decode(&block_of(&head.frame), 1 << 20, |n, v| {
            fields.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ));
            Ok(())
        })
        .expect("decodes");
        fields
    }

    /// The client's defaults follow the request's own fields, each name
    /// the request sets or withholds left out (all of a name's values
    /// otherwise), as when they were added to the request; a default
    /// content-length stands for the one the body's size would add.
    #[test]
    fn defaults_follow_the_request_fields_unless_set_or_withheld() {
        let mut defaults = HeaderMap::new();
        defaults.append("user-agent", HeaderValue::from_static("courier"));
        defaults.append("accept", HeaderValue::from_static("a/b"));
        defaults.append("accept", HeaderValue::from_static("c/d"));
        defaults.append("x-key", HeaderValue::from_static("secret"));
        defaults.append("connection", HeaderValue::from_static("close"));
        let req = Request::get("https://example.com/")
            .header("user-agent", "mine")
            .header("x-one", "1")
            .body(())
            .unwrap();
        let withheld = [HeaderName::from_static("x-key")];
        let head = request(&req, None, &defaults, &withheld).expect("encodes");
        let regular: Vec<(String, String)> = fields_of(&head)
            .into_iter()
            .filter(|(n, _)| !n.starts_with(':'))
            .collect();
        let want: Vec<(String, String)> = [
            ("user-agent", "mine"),
            ("x-one", "1"),
            ("accept", "a/b"),
            ("accept", "c/d"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(regular, want);

        let mut sized = HeaderMap::new();
        sized.append("content-length", HeaderValue::from_static("7"));
        let head = request(&req, Some(5), &sized, &[]).expect("encodes");
        let lengths: Vec<_> = fields_of(&head)
            .into_iter()
            .filter(|(n, _)| n == "content-length")
            .collect();
        assert_eq!(lengths, [("content-length".to_string(), "7".to_string())]);
    }

    fn section(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut block = BytesMut::new();
        encode::prefix(&mut block);
        for (n, v) in fields {
            encode::field(&mut block, n, v, false);
        }
        block.to_vec()
    }

    #[test]
    fn a_repeated_head_is_replayed_and_a_new_one_decoded() {
        let replay = Replay::default();
        let a = section(&[(b":status", b"200"), (b"x-a", b"1")]);
        let b = section(&[(b":status", b"404"), (b"x-a", b"2")]);
        let interim = section(&[(b":status", b"103"), (b"link", b"</a>")]);
        for (block, status, x) in [
            (&a, 200, "1"),
            (&a, 200, "1"),
            (&b, 404, "2"),
            (&a, 200, "1"),
        ] {
            let head = replay.response(block, 1024).expect("decodes");
            assert_eq!(head.parts.status.as_u16(), status);
            assert_eq!(head.headers()["x-a"], x);
            assert_eq!(head.parts.version, Version::HTTP_3);
        }
        // A replayed head shares the kept headers (no copy), with the
        // content-length read when it was decoded.
        let sized = section(&[(b":status", b"200"), (b"content-length", b"128")]);
        let first = replay.response(&sized, 1024).expect("decodes");
        let again = replay.response(&sized, 1024).expect("replayed");
        let (first_map, again_map) = (first.shared.unwrap(), again.shared.unwrap());
        assert!(Arc::ptr_eq(&first_map, &again_map));
        assert!(again.parts.headers.is_empty());
        assert_eq!((first.length, again.length), (Some(128), Some(128)));
        // A 1xx is not kept (its headers its own); a refused head is
        // refused each time.
        let early_hints = replay.response(&interim, 1024).expect("interim");
        assert!(early_hints.shared.is_none());
        assert_eq!(early_hints.parts.headers["link"], "</a>");
        assert_eq!(replay.0.lock().unwrap().as_ref().unwrap().status, 200);
        let bad = section(&[(b"x-a", b"no status")]);
        for _ in 0..2 {
            assert!(matches!(
                replay.response(&bad, 1024),
                Err(HeadError::Malformed(_))
            ));
        }
    }

    #[test]
    fn response_heads_are_checked() {
        let ok = response(&section(&[(b":status", b"204"), (b"x-a", b"b")]), 1024).expect("ok");
        assert_eq!(ok.status, 204);
        assert_eq!(ok.headers["x-a"], "b");
        assert_eq!(ok.version, Version::HTTP_3);
        let bad: &[&[(&[u8], &[u8])]] = &[
            &[(b"x-a", b"b")],
            &[(b":status", b"200"), (b":status", b"200")],
            &[(b":status", b"20")],
            &[(b":status", b"abc")],
            &[(b":path", b"/")],
            &[(b"x-a", b"b"), (b":status", b"200")],
            &[(b":status", b"200"), (b"X-Upper", b"b")],
            &[(b":status", b"200"), (b"x-a", b"b\r\nc")],
        ];
        for fields in bad {
            assert!(
                matches!(
                    response(&section(fields), 1024),
                    Err(HeadError::Malformed(_))
                ),
                "{fields:?}"
            );
        }
        assert!(matches!(
            response(
                &section(&[(b":status", b"200"), (b"x-a", &[b'v'; 100])]),
                100
            ),
            Err(HeadError::TooLarge(100))
        ));
        assert!(matches!(
            response(&[0x02, 0x00], 100),
            Err(HeadError::Qpack(_))
        ));
        assert!(matches!(
            trailer_fields(&section(&[(b":status", b"200")]), 100),
            Err(HeadError::Malformed(_))
        ));
        let t = trailer_fields(&section(&[(b"grpc-status", b"0")]), 100).expect("trailers");
        assert_eq!(t["grpc-status"], "0");
    }
}
