//! Decompression bombs through `DecompressionLayer`: a few KiB on the wire
//! that decode to far more than the limit must fail with BodyTooLarge
//! within the memory budget; corrupt and truncated streams with
//! Decompression.

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
