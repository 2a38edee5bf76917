//! Request-side injection (issue 14, defect 2): what a caller puts in a
//! request must not become a second request on the wire. Values with CR,
//! LF or NUL, names that are not tokens, framing headers that disagree
//! with the body: all refused before a byte is written, which the
//! server's log proves (no request, no stray byte). (`http`'s unchecked
//! `HeaderValue` constructor is `unsafe`, outside what these tests may
//! use; `src/validate.rs` unit-tests the encoder's own check.)

use courier::ErrorKind::*;

use crate::corpus::case::{Case, Class::Injection, Request, Script, Transport::*};

fn case(name: &'static str, build: fn(&courier::Client, &str) -> courier::RequestBuilder) -> Case {
    Case::h1_keep(name, Injection, super::ok(b"hello"))
        .request(Request::Build(build))
        .refused(InvalidRequest)
}

pub fn cases() -> Vec<Case> {
    let both = [H1, H2c];
    let h2 = |c: Case| Case {
        script: Script::H2(std::sync::Arc::new(|s| {
            vec![super::w(crate::support::h2::response(s, b"hello"))]
        })),
        ..c
    };
    vec![
        case("crlf-in-value", |c, u| {
            c.get(u).header("x-a", "a\r\nx-injected: 1")
        }),
        case("lf-in-value", |c, u| {
            c.get(u).header("x-a", "a\nx-injected: 1")
        }),
        case("cr-in-value", |c, u| c.get(u).header("x-a", "a\rb")),
        case("nul-in-value", |c, u| c.get(u).header("x-a", "a\0b")),
        case("crlf-in-name", |c, u| c.get(u).header("x-a\r\nx-b", "1")),
        case("colon-in-name", |c, u| c.get(u).header("x-a:", "1")),
        case("cl-shorter-than-body", |c, u| {
            c.post(u).header("content-length", "2").body(vec![b'u'; 40])
        })
        .tls_too(),
        case("cl-longer-than-body", |c, u| {
            c.post(u)
                .header("content-length", "41")
                .body(vec![b'u'; 40])
        }),
        case("cl-twice", |c, u| {
            c.post(u)
                .header("content-length", "40")
                .header("content-length", "40")
                .body(vec![b'u'; 40])
        }),
        case("cl-not-a-number", |c, u| {
            c.post(u)
                .header("content-length", "forty")
                .body(vec![b'u'; 40])
        }),
        case("cl-and-chunked", |c, u| {
            c.post(u)
                .header("content-length", "40")
                .header("transfer-encoding", "chunked")
                .body(vec![b'u'; 40])
        }),
        case("te-gzip", |c, u| {
            c.post(u)
                .header("transfer-encoding", "gzip")
                .body(vec![b'u'; 40])
        }),
        case("two-hosts", |c, u| {
            c.get(u).header("host", "a.test").header("host", "b.test")
        }),
        Case {
            expect: crate::corpus::case::Expect::Refused(InvalidUrl),
            ..case("crlf-in-path", |c, u| {
                c.get(format!("{u}\r\nx-injected: 1").as_str())
            })
        },
        h2(case("h2-cl-shorter-than-body", |c, u| {
            c.post(u).header("content-length", "2").body(vec![b'u'; 40])
        }))
        .over(&[H2c, TlsH2]),
        h2(case("h2-cl-twice", |c, u| {
            c.post(u)
                .header("content-length", "40")
                .header("content-length", "40")
                .body(vec![b'u'; 40])
        }))
        .over(&[H2c]),
        h2(case("h2-transfer-encoding", |c, u| {
            c.post(u)
                .header("transfer-encoding", "chunked")
                .body(vec![b'u'; 40])
        }))
        .over(&[H2c])
        .ok(200, b"hello"),
        h2(case("h2-connection-header", |c, u| {
            c.get(u).header("connection", "close")
        }))
        .over(&[H2c])
        .ok(200, b"hello"),
        h2(case("h2-crlf-in-value", |c, u| {
            c.get(u).header("x-a", "a\r\nb")
        }))
        .over(&both[1..]),
    ]
}
