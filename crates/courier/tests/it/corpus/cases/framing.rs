//! HTTP/1.1 message framing (RFC 9112 §6): where a response ends must be
//! decided one way only, and a connection whose framing is in doubt must
//! never carry another request.

use courier::ErrorKind::*;

use super::{cat, evil, ok, resp};
use crate::corpus::case::{Case, Class::Framing, Request, Step};

pub fn cases() -> Vec<Case> {
    let h = |name, bytes: Vec<u8>| Case::h1(name, Framing, bytes);
    let keep = |name, bytes: Vec<u8>| Case::h1_keep(name, Framing, bytes);
    let l200 = "HTTP/1.1 200 OK";
    vec![
        // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3); what
        // matters is that the rest is not read as the next response.
        keep(
            "te-and-cl",
            resp(
                l200,
                &["content-length: 3", "transfer-encoding: chunked"],
                b"5\r\nhello\r\n0\r\n\r\n",
            ),
        )
        .ok(200, b"hello")
        .tls_too(),
        keep(
            "cl-twice-differing",
            resp(l200, &["content-length: 5", "content-length: 6"], b"hello!"),
        )
        .err(Protocol),
        keep(
            "cl-twice-same",
            resp(l200, &["content-length: 5", "content-length: 5"], b"hello"),
        )
        .ok(200, b"hello"),
        keep(
            "cl-list-same",
            resp(l200, &["content-length: 5, 5"], b"hello"),
        )
        .ok(200, b"hello"),
        keep(
            "cl-list-differing",
            resp(l200, &["content-length: 5, 6"], b"hello!"),
        )
        .err(Protocol),
        keep("cl-negative", resp(l200, &["content-length: -1"], b"hello")).err(Protocol),
        keep(
            "cl-plus-sign",
            resp(l200, &["content-length: +5"], b"hello"),
        )
        .err(Protocol),
        keep("cl-hex", resp(l200, &["content-length: 0x5"], b"hello")).err(Protocol),
        keep(
            "cl-inner-space",
            resp(l200, &["content-length: 5 5"], b"hello"),
        )
        .err(Protocol),
        keep("cl-empty", resp(l200, &["content-length: "], b"hello")).err(Protocol),
        keep(
            "cl-past-u64",
            resp(l200, &["content-length: 184467440737095516160"], b"hello"),
        )
        .err(Protocol),
        h(
            "te-unknown-until-close",
            resp(l200, &["transfer-encoding: gzip"], b"hello"),
        )
        .ok(200, b"hello"),
        h(
            "te-chunked-not-last",
            resp(l200, &["transfer-encoding: chunked, gzip"], b"hello"),
        )
        .ok(200, b"hello"),
        // The outer chunked coding still delimits the message: the framing
        // is not in doubt, only the server's coding (read as one).
        keep(
            "te-chunked-twice",
            resp(
                l200,
                &["transfer-encoding: chunked, chunked"],
                b"5\r\nhello\r\n0\r\n\r\n",
            ),
        )
        .ok(200, b"hello"),
        keep(
            "chunk-size-overflow",
            resp(
                l200,
                &["transfer-encoding: chunked"],
                b"fffffffffffffffffff\r\nhello\r\n",
            ),
        )
        .err(Body)
        .tls_too(),
        keep(
            "chunk-size-negative",
            resp(
                l200,
                &["transfer-encoding: chunked"],
                b"-5\r\nhello\r\n0\r\n\r\n",
            ),
        )
        .err(Body),
        keep(
            "chunk-size-garbage",
            resp(
                l200,
                &["transfer-encoding: chunked"],
                b"zz\r\nhello\r\n0\r\n\r\n",
            ),
        )
        .err(Body),
        keep(
            "chunk-size-leading-plus",
            resp(
                l200,
                &["transfer-encoding: chunked"],
                b"+5\r\nhello\r\n0\r\n\r\n",
            ),
        )
        .err(Body),
        keep(
            "chunk-data-overruns",
            resp(
                l200,
                &["transfer-encoding: chunked"],
                b"5\r\nhelloEVIL\r\n0\r\n\r\n",
            ),
        )
        .err(Body),
        keep(
            "chunk-extension-endless",
            cat(&[
                &resp(l200, &["transfer-encoding: chunked"], b"5;"),
                &vec![b'x'; 256 * 1024],
            ]),
        )
        .err(Body),
        keep(
            "chunk-trailers-endless",
            cat(&[
                &resp(
                    l200,
                    &["transfer-encoding: chunked"],
                    b"5\r\nhello\r\n0\r\n",
                ),
                &b"x-t: 1\r\n".repeat(20_000),
                b"\r\n",
            ]),
        )
        .err(HeadersTooLarge),
        h(
            "chunked-cut-mid-chunk",
            resp(l200, &["transfer-encoding: chunked"], b"a\r\nhel"),
        )
        .err(Body),
        keep("bytes-after-cl-body", cat(&[&ok(b"hello"), &evil()]))
            .ok(200, b"hello")
            .tls_too(),
        keep(
            "bytes-after-chunked-body",
            cat(&[
                &resp(
                    l200,
                    &["transfer-encoding: chunked"],
                    b"5\r\nhello\r\n0\r\n\r\n",
                ),
                &evil(),
            ]),
        )
        .ok(200, b"hello"),
        // The stray response arrives on the idle connection (the harness waits
        // for the script to finish): checkout must see it and not reuse.
        Case::h1_steps(
            "bytes-after-body-later",
            Framing,
            vec![
                Step::Write(ok(b"hello")),
                Step::Pause(std::time::Duration::from_millis(50)),
                Step::Write(evil()),
            ],
        )
        .ok(200, b"hello"),
        keep("head-with-body", cat(&[&ok(b"hello"), &evil()]))
            .request(Request::Head)
            .ok(200, b"")
            .tls_too(),
        keep(
            "204-with-body",
            resp("HTTP/1.1 204 No Content", &["content-length: 4"], b"EVIL"),
        )
        .ok(204, b""),
        keep(
            "304-with-body",
            resp("HTTP/1.1 304 Not Modified", &["content-length: 4"], b"EVIL"),
        )
        .ok(304, b""),
        keep(
            "204-with-chunked-body",
            resp(
                "HTTP/1.1 204 No Content",
                &["transfer-encoding: chunked"],
                b"4\r\nEVIL\r\n0\r\n\r\n",
            ),
        )
        .ok(204, b""),
        h("no-length-until-close", resp(l200, &[], b"hello")).ok(200, b"hello"),
        h(
            "http10-keep-alive-no-length",
            resp("HTTP/1.0 200 OK", &["connection: keep-alive"], b"hello"),
        )
        .ok(200, b"hello"),
        keep(
            "status-four-digits",
            resp("HTTP/1.1 2000 OK", &["content-length: 0"], b""),
        )
        .err(Protocol),
        keep(
            "version-9",
            resp("HTTP/9.9 200 OK", &["content-length: 0"], b""),
        )
        .err(Protocol),
        keep("not-http", resp("ICY 200 OK", &["content-length: 0"], b"")).err(Protocol),
        Case::h1_steps("closed-without-answer", Framing, vec![Step::Close]).err(ConnectionClosed),
        Case::h1_steps("silent-server", Framing, vec![]).times_out(),
    ]
}
