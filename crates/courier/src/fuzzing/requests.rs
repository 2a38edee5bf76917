//! HTTP/2's and HTTP/3's encodings of the same request head, held to each
//! other: whichever protocol carries a request, the server must get the
//! same fields (`proto::fields` says which are left out), the caller's own
//! first, then the client's defaults, then the body's content-length. Each
//! protocol's count of the head (what it holds to the server's announced
//! limit) must be the size of what the server decodes.

use bytes::BytesMut;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request};

use crate::proto::h2::encode::{self, Head};
use crate::proto::h2::frame::MAX_MAX_FRAME_SIZE;
use crate::proto::h2::hpack::{Decoder, Encoder};
use crate::proto::h2::template::Template;
use crate::proto::h3::frame::{read_all, Frame};
use crate::proto::h3::head;
use crate::proto::h3::qpack;

/// Names and values a one-byte input stands for (see [`super::heads`]).
const NAMES: [&str; 10] = [
    "content-length",
    "transfer-encoding",
    "te",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "host",
    "x-a",
    "accept",
];
const VALUES: [&str; 8] = [
    "5",
    "trailers",
    "Trailers",
    "gzip",
    "chunked",
    "",
    "a.example",
    "1",
];

fn name_of(bytes: &[u8]) -> Option<HeaderName> {
    match bytes {
        [b] => Some(HeaderName::from_static(
            NAMES[usize::from(*b) % NAMES.len()],
        )),
        _ => HeaderName::from_bytes(bytes).ok(),
    }
}

fn value_of(bytes: &[u8]) -> Option<HeaderValue> {
    match bytes {
        [b] => Some(HeaderValue::from_static(
            VALUES[usize::from(*b) % VALUES.len()],
        )),
        _ => HeaderValue::from_bytes(bytes).ok(),
    }
}

/// A request's regular fields as a server reads them, in order.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A field section's size as RFC 9113 §6.5.2 and RFC 9114 §4.2.2 count it.
fn section_size(fields: &Fields) -> u64 {
    fields
        .iter()
        .map(|(n, v)| (n.len() + v.len()) as u64 + 32)
        .sum()
}

/// Encodes one request (its `headers`, the client's `defaults` as a client
/// keeps them, `withheld` of those, and a body of `length`) as HTTP/2 and as
/// HTTP/3, decodes both as the server would, and panics where the regular
/// fields differ. Inputs a request cannot be built from are skipped.
pub fn request_heads_differential(
    headers: &[(Vec<u8>, Vec<u8>)],
    defaults: &[(Vec<u8>, Vec<u8>)],
    withheld: &[Vec<u8>],
    length: Option<u64>,
) {
    let map = |fields: &[(Vec<u8>, Vec<u8>)]| {
        let mut map = HeaderMap::new();
        for (n, v) in fields {
            if let (Some(n), Some(v)) = (name_of(n), value_of(v)) {
                map.append(n, v);
            }
        }
        map
    };
    let headers = map(headers);
    // What a client keeps of its defaults (never a framing header).
    let defaults = crate::validate::defaults(map(defaults));
    let withheld: Vec<HeaderName> = withheld.iter().filter_map(|n| name_of(n)).collect();
    let mut request = Request::new(());
    *request.method_mut() = Method::POST;
    *request.uri_mut() = "https://example.com/p".parse().expect("a valid URI");
    *request.headers_mut() = headers;
    let over_h2 = h2_fields(&request, &defaults, &withheld, length);
    let over_h3 = h3_fields(&request, &defaults, &withheld, length);
    assert_eq!(over_h2, over_h3, "{request:?} defaults {defaults:?}");
}

fn regular(fields: Fields) -> Fields {
    fields
        .into_iter()
        .filter(|(n, _)| !n.starts_with(b":"))
        .collect()
}

fn h2_fields(
    request: &Request<()>,
    defaults: &HeaderMap,
    withheld: &[HeaderName],
    length: Option<u64>,
) -> Fields {
    let uri = request.uri();
    let head = Head {
        method: request.method(),
        scheme: uri.scheme().expect("absolute"),
        authority: uri.authority().expect("absolute"),
        path: uri.path(),
        headers: request.headers(),
        defaults,
        withheld,
        content_length: length,
        protocol: None,
        deadline: None,
    };
    let mut out = BytesMut::new();
    encode::request(
        &mut Encoder::new(),
        &mut Template::default(),
        &mut out,
        1,
        &head,
        false,
        MAX_MAX_FRAME_SIZE,
    );
    // One HEADERS frame: its 9-byte header, then the block.
    let mut fields = Vec::new();
    Decoder::new(4096)
        .decode(&out[9..], usize::MAX, |n, v| {
            fields.push((n.to_vec(), v.to_vec()))
        })
        .expect("our own HPACK");
    let counted = crate::proto::h2::header_list::size(&head);
    assert_eq!(
        counted,
        section_size(&fields),
        "HTTP/2's count of {fields:?}"
    );
    regular(fields)
}

fn h3_fields(
    request: &Request<()>,
    defaults: &HeaderMap,
    withheld: &[HeaderName],
    length: Option<u64>,
) -> Fields {
    let encoded = head::request(request, length, defaults, withheld).expect("absolute");
    let frames = read_all(u64::MAX, &encoded.frame, &[]).expect("our own frame");
    let [Frame::Headers(block)] = &frames[..] else {
        panic!("one HEADERS frame: {frames:?}");
    };
    let mut fields = Vec::new();
    qpack::decode::decode(block, u64::MAX, |n, v| {
        fields.push((n.to_vec(), v.to_vec()));
        Ok(())
    })
    .expect("our own QPACK");
    assert_eq!(
        encoded.size,
        section_size(&fields),
        "HTTP/3's count of {fields:?}"
    );
    regular(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair of the tables' fields, as the request's own, as a
    /// default, and both, with and without a body.
    #[test]
    fn the_two_encodings_agree_on_every_pair_of_fields() {
        for name in 0..NAMES.len() as u8 {
            for value in 0..VALUES.len() as u8 {
                let field = vec![(vec![name], vec![value])];
                let other = vec![(b"x-b".to_vec(), b"2".to_vec())];
                for length in [None, Some(3)] {
                    request_heads_differential(&field, &[], &[], length);
                    request_heads_differential(&other, &field, &[], length);
                    request_heads_differential(&field, &field, &[], length);
                    request_heads_differential(&other, &field, &[vec![name]], length);
                }
            }
        }
    }
}
