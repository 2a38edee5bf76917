//! A request head's (or its trailers') size as the server's
//! SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 §6.5.2: each field's
//! name and value, uncompressed, plus 32), so that a head the server
//! announced it will refuse is refused here with a clear error and never
//! sent (trailers over it reset their stream). HTTP/3 does the same with
//! SETTINGS_MAX_FIELD_SECTION_SIZE (`proto/h3/request.rs`).
//!
//! Counted before the head is encoded: once encoded, its HPACK insertions
//! are in the table the server must see, and the head can no longer be
//! taken back. Only servers that announce a limit pay for the count.

use http::{HeaderMap, HeaderName, HeaderValue, Method};

use super::encode::Head;
use crate::proto::fields::left_out_of_request;

/// What RFC 9113 §6.5.2 adds to each field's name and value.
const PER_FIELD: u64 = 32;

/// The size of the header list [`super::encode::request`] writes for `head`.
pub(crate) fn size(head: &Head<'_>) -> u64 {
    let field = |name: usize, value: usize| (name + value) as u64 + PER_FIELD;
    let mut total = field(":method".len(), head.method.as_str().len());
    if let Some(protocol) = head.protocol {
        total += field(":protocol".len(), protocol.len());
    }
    let plain_connect = *head.method == Method::CONNECT && head.protocol.is_none();
    if !plain_connect {
        total += field(":scheme".len(), head.scheme.as_str().len());
        total += field(":path".len(), head.path.len());
    }
    total += field(":authority".len(), head.authority.as_str().len());
    total += fields_size(head.headers);
    total +=
        fields_size(head.defaults.iter().filter(|(name, _)| {
            !head.headers.contains_key(*name) && !head.withheld.contains(name)
        }));
    if let Some(len) = head.content_length {
        if !head.headers.contains_key(http::header::CONTENT_LENGTH) {
            total += field("content-length".len(), decimal_len(len));
        }
    }
    total
}

/// The size of the trailers [`super::encode::trailers`] writes.
pub(crate) fn trailers_size(trailers: &HeaderMap) -> u64 {
    fields_size(trailers)
}

/// The fields of `fields` that go out (what HTTP/2 forbids is left out).
fn fields_size<'a>(fields: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>) -> u64 {
    fields
        .into_iter()
        .filter(|(name, value)| !left_out_of_request(name, value.as_bytes()))
        .map(|(name, value)| (name.as_str().len() + value.len()) as u64 + PER_FIELD)
        .sum()
}

fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |digits| digits as usize + 1)
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use http::uri::{Authority, Scheme};
    use http::HeaderMap;

    use super::*;
    use crate::proto::h2::frame::HEADER_LEN;
    use crate::proto::h2::hpack::{Decoder, Encoder};
    use crate::proto::h2::template::Template;

    /// What the server counts: the block courier writes, decoded.
    fn decoded_size(head: &Head<'_>) -> u64 {
        let mut out = BytesMut::new();
        let (mut enc, mut template) = (Encoder::new(), Template::default());
        super::super::encode::request(&mut enc, &mut template, &mut out, 1, head, true, 1 << 24);
        let mut size = 0;
        Decoder::new(4096)
            .decode(&out[HEADER_LEN..], usize::MAX, |n, v| {
                size += (n.len() + v.len()) as u64 + PER_FIELD
            })
            .expect("courier's own block decodes");
        size
    }

    #[test]
    fn the_count_is_what_the_server_decodes() {
        let mut headers = HeaderMap::new();
        headers.insert("x-one", HeaderValue::from_static("1"));
        headers.append("x-one", HeaderValue::from_static("twenty-two"));
        headers.insert("connection", HeaderValue::from_static("close"));
        headers.insert("te", HeaderValue::from_static("trailers"));
        let mut defaults = HeaderMap::new();
        defaults.insert("user-agent", HeaderValue::from_static("courier"));
        defaults.insert("accept", HeaderValue::from_static("*/*"));
        defaults.insert("x-one", HeaderValue::from_static("overridden"));
        defaults.insert("keep-alive", HeaderValue::from_static("5"));
        let mut own_length = HeaderMap::new();
        own_length.insert("content-length", HeaderValue::from_static("12"));
        let withheld = [http::header::ACCEPT];
        let authority = Authority::from_static("example.com:8443");
        let empty = HeaderMap::new();
        let heads = [
            (Method::GET, "/", &headers, &defaults, &[][..], None, None),
            (
                Method::POST,
                "/a?b",
                &headers,
                &defaults,
                &withheld[..],
                Some(0),
                None,
            ),
            (
                Method::PUT,
                "/p",
                &empty,
                &empty,
                &[][..],
                Some(1_000_000),
                None,
            ),
            (
                Method::PUT,
                "/p",
                &own_length,
                &empty,
                &[][..],
                Some(12),
                None,
            ),
            (Method::CONNECT, "", &empty, &defaults, &[][..], None, None),
            (
                Method::CONNECT,
                "/ws",
                &headers,
                &empty,
                &[][..],
                None,
                Some("websocket"),
            ),
        ];
        for (method, path, headers, defaults, withheld, content_length, protocol) in heads {
            let head = Head {
                method: &method,
                scheme: &Scheme::HTTPS,
                authority: &authority,
                path,
                headers,
                defaults,
                withheld,
                content_length,
                protocol,
                deadline: None,
            };
            assert_eq!(size(&head), decoded_size(&head), "{method} {path}");
        }
    }

    #[test]
    fn trailers_count_what_goes_out() {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        trailers.insert("connection", HeaderValue::from_static("close"));
        let mut out = BytesMut::new();
        super::super::encode::trailers(&mut Encoder::new(), &mut out, 1, &trailers, 1 << 24);
        let mut decoded = 0;
        Decoder::new(4096)
            .decode(&out[HEADER_LEN..], usize::MAX, |n, v| {
                decoded += (n.len() + v.len()) as u64 + PER_FIELD
            })
            .expect("courier's own block decodes");
        assert_eq!(trailers_size(&trailers), decoded);
        assert_eq!(decoded, ("grpc-status".len() + 1) as u64 + PER_FIELD);
    }

    #[test]
    fn decimal_lengths() {
        for (n, len) in [(0, 1), (9, 1), (10, 2), (999, 3), (u64::MAX, 20)] {
            assert_eq!(decimal_len(n), len, "{n}");
        }
    }
}
