//! Decompression bombs through `DecompressionLayer`, and through a plain
//! `Client` (each case's `/client` twin): a few KiB on the wire
//! that decode to far more than the limit must fail with BodyTooLarge
//! within the memory budget, and a body of exactly the limit must not;
//! corrupt, truncated and over-long streams with Decompression; empty
//! bodies and body-less responses (HEAD, 204, 304) under an encoding are
//! empty, not errors; `Content-Encoding` is one list over all its field
//! lines (HTTP/1.1 and HTTP/2), and a list the layer does not decode is
//! left as sent.

use courier::middleware::{DecompressionConfig, Stack};
use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, resp, w};
use crate::corpus::case::{Case, Class};
use crate::support::compress;

const CLASS: Class = Class::Decompression;

/// Zeros decoded from a bomb: 16 times the limit below.
const BOMB: usize = 16 << 20;

fn limited() -> Stack {
    Stack::new().decompression(DecompressionConfig::default().max_size(1 << 20))
}

fn default_limit() -> Stack {
    Stack::new().decompression(DecompressionConfig::default())
}

/// `body` under several `Content-Encoding` field lines.
fn lines(encodings: &[&str], body: &[u8]) -> Vec<u8> {
    let mut headers: Vec<String> = encodings
        .iter()
        .map(|e| format!("content-encoding: {e}"))
        .collect();
    headers.push(format!("content-length: {}", body.len()));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    resp("HTTP/1.1 200 OK", &headers, body)
}

fn encoded(encoding: &str, body: &[u8]) -> Vec<u8> {
    resp(
        "HTTP/1.1 200 OK",
        &[
            &format!("content-encoding: {encoding}"),
            &format!("content-length: {}", body.len()),
        ],
        body,
    )
}

pub async fn cases() -> Vec<Case> {
    let zeros = vec![0u8; BOMB];
    let mut cases = Vec::new();
    for (name, encoding) in [
        ("gzip-bomb", "gzip"),
        ("deflate-bomb", "deflate"),
        ("brotli-bomb", "br"),
        ("zstd-bomb", "zstd"),
    ] {
        let body = compress(encoding, &zeros).await;
        cases.push(
            Case::h1_keep(name, CLASS, encoded(encoding, &body))
                .stack(limited)
                .err(BodyTooLarge)
                .rss_mb(8),
        );
    }
    let big = compress("zstd", &vec![0u8; 80 << 20]).await;
    cases.push(
        Case::h1_keep("zstd-bomb-default-limit", CLASS, encoded("zstd", &big))
            .stack(default_limit)
            .err(BodyTooLarge)
            .cpu(1500)
            .rss_mb(200)
            .slow(),
    );
    let hello = compress("gzip", b"hello").await;
    cases.push(
        Case::h1_keep("gzip-ok", CLASS, encoded("gzip", &hello))
            .stack(limited)
            .ok(200, b"hello")
            .tls_too(),
    );
    cases.push(
        Case::h1_keep(
            "gzip-corrupt",
            CLASS,
            encoded("gzip", b"\x1f\x8b\x08\x00garbage-garbage"),
        )
        .stack(limited)
        .err(Decompression),
    );
    let cut = hello[..hello.len() - 6].to_vec();
    cases.push(
        Case::h1_keep("gzip-truncated", CLASS, encoded("gzip", &cut))
            .stack(limited)
            .err(Decompression),
    );
    cases.push(
        Case::h1_keep(
            "gzip-twice-passed-through",
            CLASS,
            encoded("gzip, gzip", &hello),
        )
        .stack(limited)
        .ok(200, &hello),
    );
    cases.extend(limits().await);
    cases.extend(lists(&hello).await);
    cases.extend(empty_and_bodiless().await);
    let gz_bomb = compress("gzip", &zeros).await;
    cases.push(
        Case::h1_keep(
            "gzip-bomb-chunked",
            CLASS,
            resp(
                "HTTP/1.1 200 OK",
                &["content-encoding: gzip", "transfer-encoding: chunked"],
                &cat(&[
                    format!("{:x}\r\n", gz_bomb.len()).as_bytes(),
                    &gz_bomb,
                    b"\r\n0\r\n\r\n",
                ]),
            ),
        )
        .stack(limited)
        .err(BodyTooLarge)
        .rss_mb(8),
    );
    cases.push(
        h2_bomb(gz_bomb)
            .stack(limited)
            .err(BodyTooLarge)
            .rss_mb(8)
            .tls_too(),
    );
    cases
}

/// Every codec at its limit: exactly `max_size` decoded bytes is a
/// response, one more is BodyTooLarge.
async fn limits() -> Vec<Case> {
    const LIMIT: usize = 1 << 20;
    let mut cases = Vec::new();
    for (at, over, encoding) in [
        ("gzip-at-limit", "gzip-over-limit", "gzip"),
        ("deflate-at-limit", "deflate-over-limit", "deflate"),
        ("brotli-at-limit", "brotli-over-limit", "br"),
        ("zstd-at-limit", "zstd-over-limit", "zstd"),
    ] {
        let exact = compress(encoding, &vec![0u8; LIMIT]).await;
        cases.push(
            Case::h1_keep(at, CLASS, encoded(encoding, &exact))
                .stack(limited)
                .ok_len(200, LIMIT)
                .rss_mb(8),
        );
        let one_more = compress(encoding, &vec![0u8; LIMIT + 1]).await;
        cases.push(
            Case::h1_keep(over, CLASS, encoded(encoding, &one_more))
                .stack(limited)
                .err(BodyTooLarge)
                .rss_mb(8),
        );
    }
    cases
}

/// `Content-Encoding` as one list over its field lines.
async fn lists(hello: &[u8]) -> Vec<Case> {
    let twice = compress("gzip", hello).await;
    let mut cases = vec![
        // Two lines are `gzip, gzip`: left as sent, not decoded once and
        // stripped of both (issue 27).
        Case::h1_keep(
            "gzip-two-lines-passed-through",
            CLASS,
            lines(&["gzip", "gzip"], &twice),
        )
        .stack(limited)
        .ok(200, &twice),
        Case::h1_keep(
            "identity-then-gzip-lines",
            CLASS,
            lines(&["identity", "gzip"], hello),
        )
        .stack(limited)
        .ok(200, b"hello"),
        Case::h1_keep(
            "gzip-case-blanks-empty-elements",
            CLASS,
            lines(&[", GZip ,,", ""], hello),
        )
        .stack(limited)
        .ok(200, b"hello"),
        Case::h1_keep(
            "gzip-then-unknown-passed-through",
            CLASS,
            lines(&["gzip", "x-unknown"], hello),
        )
        .stack(limited)
        .ok(200, hello),
        Case::h1_keep(
            "unknown-passed-through",
            CLASS,
            lines(&["x-unknown"], hello),
        )
        .stack(limited)
        .ok(200, hello),
        Case::h1_keep(
            "gzip-trailing-garbage",
            CLASS,
            encoded("gzip", &cat(&[hello, b"GARBAGE"])),
        )
        .stack(limited)
        .err(Decompression),
        // A transfer coding the client never asked for (RFC 9112 §7): the
        // body is framed by chunked and handed over as sent, gzip and all,
        // with the header that says so.
        Case::h1_keep(
            "transfer-encoding-gzip-chunked",
            CLASS,
            resp(
                "HTTP/1.1 200 OK",
                &["transfer-encoding: gzip, chunked"],
                &cat(&[
                    format!("{:x}\r\n", hello.len()).as_bytes(),
                    hello,
                    b"\r\n0\r\n\r\n",
                ]),
            ),
        )
        .stack(limited)
        .ok(200, hello),
    ];
    let twice_h2 = twice.clone();
    cases.push(
        Case::h2("h2-gzip-two-fields-passed-through", CLASS, move |s| {
            let block = block_200(&[("content-encoding", b"gzip"), ("content-encoding", b"gzip")]);
            let mut out = h2_headers(s, &block, false);
            out.extend(data(s, &twice_h2, true));
            vec![w(out)]
        })
        .stack(limited)
        .ok(200, &twice)
        .tls_too(),
    );
    cases
}

/// Empty and truncated bodies, and responses that have no body, under an
/// encoding.
async fn empty_and_bodiless() -> Vec<Case> {
    let mut cases = Vec::new();
    for (name, encoding) in [
        ("gzip-empty-body", "gzip"),
        ("deflate-empty-body", "deflate"),
        ("brotli-empty-body", "br"),
        ("zstd-empty-body", "zstd"),
    ] {
        cases.push(
            Case::h1_keep(name, CLASS, encoded(encoding, b""))
                .stack(limited)
                .ok(200, b""),
        );
    }
    cases.push(
        Case::h1_keep(
            "gzip-empty-chunked",
            CLASS,
            resp(
                "HTTP/1.1 200 OK",
                &["content-encoding: gzip", "transfer-encoding: chunked"],
                b"0\r\n\r\n",
            ),
        )
        .stack(limited)
        .ok(200, b""),
    );
    cases.push(
        Case::h2("h2-gzip-empty-body", CLASS, |s| {
            vec![w(h2_headers(
                s,
                &block_200(&[("content-encoding", b"gzip")]),
                true,
            ))]
        })
        .stack(limited)
        .ok(200, b"")
        .tls_too(),
    );
    let hello = compress("gzip", b"hello").await;
    // Cut inside the deflate data and inside the trailer: both typed errors.
    for (name, keep) in [
        ("gzip-cut-in-data", 12),
        ("gzip-cut-in-trailer", hello.len() - 3),
    ] {
        cases.push(
            Case::h1_keep(name, CLASS, encoded("gzip", &hello[..keep]))
                .stack(limited)
                .err(Decompression),
        );
    }
    // The connection closes mid-body: the body's own error, not a short body.
    cases.push(
        Case::h1(
            "gzip-closed-mid-body",
            CLASS,
            resp(
                "HTTP/1.1 200 OK",
                &[
                    "content-encoding: gzip",
                    &format!("content-length: {}", hello.len()),
                ],
                &hello[..hello.len() / 2],
            ),
        )
        .stack(limited)
        .err(Body),
    );
    for (name, status_line) in [
        ("gzip-204", "HTTP/1.1 204 No Content"),
        ("gzip-304", "HTTP/1.1 304 Not Modified"),
    ] {
        let status: u16 = status_line[9..12].parse().expect("status");
        cases.push(
            Case::h1_keep(
                name,
                CLASS,
                resp(status_line, &["content-encoding: gzip"], b""),
            )
            .stack(limited)
            .ok(status, b""),
        );
    }
    cases.push(
        Case::h1_keep(
            "gzip-head",
            CLASS,
            resp(
                "HTTP/1.1 200 OK",
                &["content-encoding: gzip", "content-length: 25"],
                b"",
            ),
        )
        .request(crate::corpus::case::Request::Head)
        .stack(limited)
        .ok(200, b""),
    );
    cases
}

/// The gzip bomb over HTTP/2, in DATA frames of 16 KiB.
fn h2_bomb(body: Vec<u8>) -> Case {
    Case::h2("h2-gzip-bomb", CLASS, move |s| {
        let mut out = h2_headers(s, &block_200(&[("content-encoding", b"gzip")]), false);
        for piece in body.chunks(16 * 1024) {
            out.extend(data(s, piece, false));
        }
        out.extend(data(s, b"", true));
        vec![w(out)]
    })
}
