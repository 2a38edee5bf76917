//! Informational responses (1xx) and 101: a few are normal, an endless
//! stream of them is a way to keep a client busy for ever, and a 101 the
//! client never asked for is a protocol switch it must not follow.

use std::time::Duration;

use courier::ErrorKind::*;

use super::{block_200, cat, data, h2_headers, ok, resp, times, w};
use crate::corpus::case::{Case, Class::Interim, Step};
use crate::support::h2::status;

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

pub fn cases() -> Vec<Case> {
    let keep = |name, bytes: Vec<u8>| Case::h1_keep(name, Interim, bytes);
    vec![
        keep("100-then-200", cat(&[CONTINUE, &ok(b"hello")])).ok(200, b"hello"),
        keep("twenty-100s", cat(&[&CONTINUE.repeat(20), &ok(b"hello")])).ok(200, b"hello"),
        keep(
            "endless-100s",
            cat(&[&CONTINUE.repeat(5000), &ok(b"hello")]),
        )
        .err(Protocol)
        .tls_too(),
        keep(
            "103-early-hints",
            cat(&[
                &resp(
                    "HTTP/1.1 103 Early Hints",
                    &["link: </a.css>; rel=preload"],
                    b"",
                ),
                &ok(b"hello"),
            ]),
        )
        .ok(200, b"hello"),
        keep(
            "101-unasked",
            resp(
                "HTTP/1.1 101 Switching Protocols",
                &["upgrade: websocket", "connection: upgrade"],
                b"\x81\x05hello",
            ),
        )
        .err(Protocol),
        keep(
            "100-with-a-body",
            cat(&[
                &resp("HTTP/1.1 100 Continue", &["content-length: 4"], b"EVIL"),
                &ok(b"hello"),
            ]),
        )
        .err(Protocol),
        Case::h1_steps(
            "trickled-100s",
            Interim,
            vec![
                Step::Trickle {
                    bytes: CONTINUE.repeat(10),
                    pieces: 10,
                    gap: Duration::from_millis(20),
                },
                w(ok(b"hello")),
            ],
        )
        .ok(200, b"hello"),
        Case::h1_steps("100-then-close", Interim, vec![w(CONTINUE), Step::Close])
            .err(ConnectionClosed),
        Case::h1_steps(
            "100s-until-timeout",
            Interim,
            vec![Step::Trickle {
                bytes: CONTINUE.repeat(30),
                pieces: 30,
                gap: Duration::from_millis(100),
            }],
        )
        .times_out(),
        Case::h2("h2-103-then-200", Interim, |s| {
            vec![w(cat(&[
                &h2_headers(s, &status(103), false),
                &h2_headers(s, &block_200(&[]), false),
                &data(s, b"hello", true),
            ]))]
        })
        .ok(200, b"hello"),
        Case::h2("h2-endless-1xx", Interim, |s| {
            vec![
                w(times(&h2_headers(s, &status(100), false), 5000)),
                w(h2_headers(s, &block_200(&[]), true)),
            ]
        })
        .err(Protocol)
        .cpu(600)
        .tls_too(),
        Case::h2("h2-101", Interim, |s| {
            vec![w(h2_headers(s, &status(101), false))]
        })
        .err(Protocol),
        Case::h2("h2-1xx-ending-the-stream", Interim, |s| {
            vec![w(h2_headers(s, &status(100), true))]
        })
        .err(Protocol),
    ]
}
