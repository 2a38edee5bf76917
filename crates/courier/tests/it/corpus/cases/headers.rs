//! Header abuse: bytes no field may hold (bare CR, NUL), obsolete line
//! folding, names that are not tokens, heads too big or trickled, and the
//! HTTP/2 rules on field names and pseudo-headers (RFC 9113 §8.2, §8.3).

use std::time::Duration;

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, resp, w};
use crate::corpus::case::{Case, Class::Headers, Step};
use crate::support::h2::{field, status, STATUS_200};

pub fn cases() -> Vec<Case> {
    let keep = |name, bytes: Vec<u8>| Case::h1_keep(name, Headers, bytes);
    let l200 = "HTTP/1.1 200 OK";
    let big = format!("x-big: {}", "a".repeat(100 * 1024));
    let many: Vec<String> = (0..200).map(|i| format!("x-h{i}: v")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let head = resp(l200, &["content-length: 5"], b"hello");
    vec![
        keep(
            "bare-cr-in-value",
            resp(l200, &["x-a: a\rb", "content-length: 5"], b"hello"),
        )
        .err(Protocol),
        keep(
            "nul-in-value",
            resp(l200, &["x-a: a\0b", "content-length: 5"], b"hello"),
        )
        .err(Protocol),
        keep(
            "obs-fold",
            resp(l200, &["x-a: a", " folded", "content-length: 5"], b"hello"),
        )
        .err(Protocol),
        keep(
            "space-before-colon",
            resp(l200, &["content-length : 5"], b"hello"),
        )
        .err(Protocol),
        keep(
            "no-colon",
            resp(l200, &["x-a", "content-length: 5"], b"hello"),
        )
        .err(Protocol),
        keep(
            "space-in-name",
            resp(l200, &["x a: b", "content-length: 5"], b"hello"),
        )
        .err(Protocol),
        keep(
            "bare-lf-lines",
            b"HTTP/1.1 200 OK\ncontent-length: 5\n\nhello".to_vec(),
        )
        .ok(200, b"hello"),
        keep(
            "obs-text-value",
            resp(l200, &["x-a: caf\u{e9}", "content-length: 5"], b"hello"),
        )
        .ok(200, b"hello"),
        keep(
            "head-100k",
            resp(l200, &[&big, "content-length: 5"], b"hello"),
        )
        .err(HeadersTooLarge)
        .tls_too(),
        keep(
            "200-fields",
            resp(
                l200,
                &[&many[..], &["content-length: 5"]].concat(),
                b"hello",
            ),
        )
        .err(HeadersTooLarge),
        keep(
            "endless-head",
            cat(&[
                b"HTTP/1.1 200 OK\r\n",
                &b"x-a: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n".repeat(60_000),
            ]),
        )
        .err(HeadersTooLarge)
        .rss_mb(24),
        Case::h1_steps(
            "trickled-head",
            Headers,
            vec![Step::Trickle {
                bytes: head.clone(),
                pieces: 20,
                gap: Duration::from_millis(10),
            }],
        )
        .ok(200, b"hello"),
        Case::h1_steps(
            "slowloris-head",
            Headers,
            vec![Step::Trickle {
                bytes: head,
                pieces: 60,
                gap: Duration::from_millis(50),
            }],
        )
        .times_out(),
        Case::h2("h2-uppercase-name", Headers, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[("X-Upper", b"1")]), false),
                &data(s, b"hello", true),
            ]))]
        })
        .err(Protocol),
        Case::h2("h2-connection-header", Headers, |s| {
            vec![w(h2_headers(
                s,
                &block_200(&[("connection", b"close")]),
                true,
            ))]
        })
        .err(Protocol),
        Case::h2("h2-te-not-trailers", Headers, |s| {
            vec![w(h2_headers(s, &block_200(&[("te", b"gzip")]), true))]
        })
        .err(Protocol),
        Case::h2("h2-pseudo-after-field", Headers, |s| {
            let mut block = field("x-a", b"1");
            block.push(STATUS_200);
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("h2-no-status", Headers, |s| {
            vec![w(h2_headers(s, &field("x-a", b"1"), true))]
        })
        .err(Protocol),
        Case::h2("h2-status-twice", Headers, |s| {
            vec![w(h2_headers(
                s,
                &[&[STATUS_200][..], &status(204)].concat(),
                true,
            ))]
        })
        .err(Protocol),
        Case::h2("h2-status-not-a-number", Headers, |s| {
            let mut block = Vec::new();
            crate::support::h2::hpack_int(0x00, 4, 8, &mut block);
            crate::support::h2::hpack_str(b"2x0", &mut block);
            vec![w(h2_headers(s, &block, true))]
        })
        .err(Protocol),
        Case::h2("h2-request-pseudo-in-response", Headers, |s| {
            vec![w(h2_headers(s, &block_200(&[(":path", b"/")]), true))]
        })
        .err(Protocol),
        Case::h2("h2-cr-lf-in-value", Headers, |s| {
            vec![w(h2_headers(
                s,
                &block_200(&[("x-a", b"a\r\nx-b: c")]),
                true,
            ))]
        })
        .err(Protocol),
        Case::h2("h2-nul-in-value", Headers, |s| {
            vec![w(h2_headers(s, &block_200(&[("x-a", b"a\0b")]), true))]
        })
        .err(Protocol),
        Case::h2("h2-empty-name", Headers, |s| {
            vec![w(h2_headers(s, &block_200(&[("", b"a")]), true))]
        })
        .err(Protocol),
        Case::h2("h2-head-100k", Headers, |s| {
            // Over CONTINUATION frames, each within the default frame size.
            let mut block = block_200(&[]);
            for i in 0..100 {
                block.extend(field(&format!("x-{i}"), &[b'a'; 1000]));
            }
            vec![w(continued(s, &block))]
        })
        .err(HeadersTooLarge)
        .tls_too(),
        // `Retry-After` is delay-seconds (`1*DIGIT`) or a date: a signed
        // number is neither, so the retry waits its own short backoff, not
        // five seconds (the case's 1.5 s timeout would see that wait).
        Case::h1_turns(
            "retry-after-signed",
            Headers,
            vec![
                vec![w(resp(
                    "HTTP/1.1 503 Service Unavailable",
                    &["content-length: 0", "retry-after: +5"],
                    b"",
                ))],
                vec![w(resp(l200, &["content-length: 2"], b"ok"))],
            ],
        )
        .stack(retrying)
        .ok(200, b"ok"),
        // All digits past u64: longer than any wait taken, so the 503 is the
        // answer (it was read as a date, failed, and retried at once).
        Case::h1_turns(
            "retry-after-past-u64",
            Headers,
            vec![
                vec![w(resp(
                    "HTTP/1.1 503 Service Unavailable",
                    &["content-length: 0", "retry-after: 99999999999999999999999"],
                    b"",
                ))],
                vec![w(resp(l200, &["content-length: 2"], b"ok"))],
            ],
        )
        .stack(retrying)
        .ok(503, b""),
    ]
}

/// One retry of a 503, after 10 ms unless `Retry-After` says otherwise; no
/// retry budget (the case's one request would not earn a retry).
fn retrying() -> courier::middleware::Stack {
    let retry = courier::middleware::RetryConfig::default()
        .max_attempts(2)
        .base_delay(Duration::from_millis(10))
        .max_delay(Duration::from_millis(10))
        .budget(None);
    courier::middleware::Stack::new().retry(retry)
}

/// `block` as HEADERS and CONTINUATION frames of at most 16 KiB each.
pub fn continued(stream: u32, block: &[u8]) -> Vec<u8> {
    use crate::support::h2::{frame, CONTINUATION, END_HEADERS, HEADERS};
    let pieces: Vec<&[u8]> = block.chunks(16 * 1024).collect();
    let mut out = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        let ty = if i == 0 { HEADERS } else { CONTINUATION };
        let flags = if i + 1 == pieces.len() {
            END_HEADERS
        } else {
            0
        };
        out.extend(frame(ty, flags, stream, piece));
    }
    out
}
