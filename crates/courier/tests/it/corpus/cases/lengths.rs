//! Declared lengths that lie (issue 14, defect 1): a Content-Length of
//! 10^12 or u64::MAX with a few bytes must size no buffer (an RSS budget
//! of a few MiB), and a length shorter than what follows must not let the
//! rest reach another request.

use courier::ErrorKind::*;

use super::{block_200, cat, data, evil, h2_headers, resp, w};
use crate::corpus::case::{Case, Class::Lengths, Step, TIMEOUT};

const L200: &str = "HTTP/1.1 200 OK";

/// Past the request's deadline ([`TIMEOUT`]), with room for a slow machine.
const PAST_THE_DEADLINE: std::time::Duration = TIMEOUT.saturating_add(TIMEOUT);

fn lying(declared: &str) -> Vec<u8> {
    resp(
        L200,
        &[&format!("content-length: {declared}")],
        &[b'x'; 100 * 1024],
    )
}

pub fn cases() -> Vec<Case> {
    vec![
        Case::h1("cl-1e12-few-bytes", Lengths, lying("1000000000000"))
            .err(Body)
            .rss_mb(4)
            .tls_too(),
        Case::h1("cl-u64-max", Lengths, lying("18446744073709551615"))
            .err(Protocol)
            .rss_mb(4),
        Case::h1("cl-1e19-minus-1", Lengths, lying("9999999999999999999"))
            .err(Body)
            .rss_mb(4),
        Case::h1("cl-1e12-with-body-limit", Lengths, lying("1000000000000"))
            .client(|b| b.max_response_body_size(Some(1 << 20)))
            .err(BodyTooLarge)
            .rss_mb(4),
        Case::h1(
            "chunk-1e12-few-bytes",
            Lengths,
            resp(
                L200,
                &["transfer-encoding: chunked"],
                &cat(&[b"e8d4a51000\r\n", &[b'x'; 100 * 1024]]),
            ),
        )
        .err(Body)
        .rss_mb(4),
        Case::h1_keep(
            "cl-shorter-than-body",
            Lengths,
            cat(&[&resp(L200, &["content-length: 3"], b"hel"), b"lo", &evil()]),
        )
        .ok(200, b"hel"),
        Case::h1_steps(
            "cl-1e12-then-stall",
            Lengths,
            vec![w(lying("1000000000000"))],
        )
        .times_out()
        .rss_mb(4),
        // The body's last bytes come after the deadline. The deadline is not
        // checked on the frame that completes a body (that frame was in
        // hand), so the wait for it must be what times out.
        Case::h1_steps(
            "cl-last-bytes-after-the-deadline",
            Lengths,
            vec![
                w(resp(L200, &["content-length: 10"], b"01234")),
                Step::Pause(PAST_THE_DEADLINE),
                w(b"56789".to_vec()),
            ],
        )
        .times_out()
        .tls_too(),
        Case::h2("h2-last-data-after-the-deadline", Lengths, |s| {
            vec![
                w(cat(&[
                    &h2_headers(s, &block_200(&[("content-length", b"10")]), false),
                    &data(s, b"01234", false),
                ])),
                Step::Pause(PAST_THE_DEADLINE),
                w(data(s, b"56789", true)),
            ]
        })
        .times_out()
        .tls_too(),
        Case::h2("h2-cl-1e12-few-bytes", Lengths, |s| {
            vec![w(cat(&[
                &h2_headers(
                    s,
                    &block_200(&[("content-length", b"1000000000000")]),
                    false,
                ),
                &data(s, &[b'x'; 16_000], true),
            ]))]
        })
        .err(Body)
        .rss_mb(4)
        .tls_too(),
        Case::h2("h2-cl-u64-max-then-close", Lengths, |s| {
            vec![
                w(cat(&[
                    &h2_headers(
                        s,
                        &block_200(&[("content-length", b"18446744073709551615")]),
                        false,
                    ),
                    &data(s, &[b'x'; 16_000], false),
                ])),
                Step::Close,
            ]
        })
        .err(Body)
        .rss_mb(4),
        Case::h2("h2-cl-past-u64", Lengths, |s| {
            vec![w(cat(&[
                &h2_headers(
                    s,
                    &block_200(&[("content-length", b"99999999999999999999")]),
                    false,
                ),
                &data(s, b"x", true),
            ]))]
        })
        .err(Protocol),
        Case::h2("h2-cl-shorter-than-data", Lengths, |s| {
            vec![w(cat(&[
                &h2_headers(s, &block_200(&[("content-length", b"3")]), false),
                &data(s, b"hello", true),
            ]))]
        })
        .err(Body),
        Case::h2("h2-cl-twice-differing", Lengths, |s| {
            vec![w(cat(&[
                &h2_headers(
                    s,
                    &block_200(&[("content-length", b"5"), ("content-length", b"6")]),
                    false,
                ),
                &data(s, b"hello", true),
            ]))]
        })
        .err(Protocol),
        Case::h2("h2-cl-twice-same", Lengths, |s| {
            let head = block_200(&[("content-length", b"5"), ("content-length", b"5")]);
            vec![w(cat(&[
                &h2_headers(s, &head, false),
                &data(s, b"hello", true),
            ]))]
        })
        .ok(200, b"hello"),
    ]
}
