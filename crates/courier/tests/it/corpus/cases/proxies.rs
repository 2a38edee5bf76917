//! Hostile proxies (issue 27): an HTTP proxy's `CONNECT` answers (refusals,
//! floods, heads that never end, bytes behind the head, silence), a
//! forwarding proxy's answers, and SOCKS5 replies that break RFC 1928 and
//! RFC 1929, each a typed error, the origin never reached (a proxy that
//! keeps silent or trickles is `proxy::a_silent_or_trickling_proxy_*`: the
//! pool's second dial of a stalled attempt would meet the honest proxy
//! here); bytes behind an answer go to the tunnel (here TLS, which
//! refuses them), never read as part of the answer. Honest proxies, with
//! credentials, show the route works.

use courier::ErrorKind::*;

use super::{cat, ok, resp, w};
use crate::corpus::case::{Case, Class, Step, Transport};
use crate::corpus::front::{Front, Kind};

const CLASS: Class = Class::Proxies;

/// The origin's answer, when a request gets through.
fn origin() -> Vec<Step> {
    vec![w(ok(b"origin"))]
}

fn case(name: &'static str, kind: Kind, steps: Vec<Step>) -> Case {
    Case::h1_steps(name, CLASS, origin()).front(Front::new(kind, steps))
}

fn with_creds(name: &'static str, kind: Kind, steps: Vec<Step>) -> Case {
    let mut front = Front::new(kind, steps);
    front.creds = Some(("user", "secret"));
    Case::h1_steps(name, CLASS, origin()).front(front)
}

/// A `CONNECT` case: https through an HTTP proxy.
fn connect(name: &'static str, steps: Vec<Step>) -> Case {
    case(name, Kind::Http, steps).over(&[Transport::TlsH1])
}

fn socks(name: &'static str, script: &[u8]) -> Case {
    case(name, Kind::Socks5, vec![w(script.to_vec())])
}

/// A SOCKS5 success reply (IPv4, bound 127.0.0.1:80).
const REPLY_OK: &[u8] = &[5, 0, 0, 1, 127, 0, 0, 1, 0, 80];

pub fn cases() -> Vec<Case> {
    let mut cases = honest();
    cases.extend(connects());
    cases.extend(forwards());
    cases.extend(socks5());
    cases
}

/// Proxies that do their job: every connection relayed.
fn honest() -> Vec<Case> {
    vec![
        case("http-forward-honest", Kind::Http, Vec::new()).ok(200, b"origin"),
        connect("http-connect-honest", Vec::new()).ok(200, b"origin"),
        with_creds("http-connect-credentials", Kind::Http, Vec::new())
            .over(&[Transport::TlsH1])
            .ok(200, b"origin"),
        case("socks5-honest", Kind::Socks5, Vec::new())
            .ok(200, b"origin")
            .tls_too(),
        with_creds("socks5-credentials", Kind::Socks5, Vec::new())
            .ok(200, b"origin")
            .tls_too(),
    ]
}

fn connects() -> Vec<Case> {
    let status = |line: &str| w(resp(line, &["content-length: 0"], b""));
    let many_fields = cat(&[
        b"HTTP/1.1 200 OK\r\n",
        &b"x-field: value\r\n".repeat(200),
        b"\r\n",
    ]);
    vec![
        connect(
            "connect-407",
            vec![status("HTTP/1.1 407 Proxy Authentication Required")],
        )
        .refused(Connect),
        with_creds(
            "connect-407-with-credentials",
            Kind::Http,
            vec![status("HTTP/1.1 407 Proxy Authentication Required")],
        )
        .over(&[Transport::TlsH1])
        .refused(Connect),
        connect("connect-502", vec![status("HTTP/1.1 502 Bad Gateway")]).refused(Connect),
        connect(
            "connect-not-http",
            vec![w(b"SSH-2.0-OpenSSH_9.2\r\n\r\n".to_vec())],
        )
        .refused(Connect),
        connect(
            "connect-head-flood",
            vec![
                w(b"HTTP/1.1 200 OK\r\n".to_vec()),
                Step::Flood(
                    b"x-flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".to_vec(),
                    100_000,
                ),
            ],
        )
        .refused(Connect)
        .rss_mb(4),
        connect("connect-many-fields", vec![w(many_fields)]).refused(Connect),
        connect(
            "connect-closes-mid-head",
            vec![w(b"HTTP/1.1 200 OK\r\nx-a:".to_vec()), Step::Close],
        )
        .refused(Connect),
        connect("connect-closes-at-once", vec![Step::Close]).refused(Connect),
        // Bytes behind the 200 are the tunnel's: TLS reads (and refuses)
        // them; they are neither dropped nor taken for part of the head.
        connect(
            "connect-early-bytes",
            vec![w(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nEARLY-NOT-TLS".to_vec(),
            )],
        )
        .refused(Tls),
    ]
}

/// A forwarding proxy's answer is the response: a 407 reaches the caller
/// once (no loop), a lie about the body is the body's error.
fn forwards() -> Vec<Case> {
    vec![
        case(
            "forward-407",
            Kind::Http,
            vec![
                w(resp(
                    "HTTP/1.1 407 Proxy Authentication Required",
                    &["proxy-authenticate: Basic", "content-length: 0"],
                    b"",
                )),
                Step::Close,
            ],
        )
        .ok(407, b""),
        case(
            "forward-short-body",
            Kind::Http,
            vec![
                w(resp("HTTP/1.1 200 OK", &["content-length: 10"], b"short")),
                Step::Close,
            ],
        )
        .err(Body),
    ]
}

fn socks5() -> Vec<Case> {
    vec![
        // RFC 1929: the username/password reply has version 1 (issue 27).
        with_creds(
            "socks5-auth-reply-version-5",
            Kind::Socks5,
            vec![w(cat(&[&[5, 2, 5, 0], REPLY_OK]))],
        )
        .refused(Connect),
        with_creds(
            "socks5-auth-refused",
            Kind::Socks5,
            vec![w(cat(&[&[5, 2, 1, 1], REPLY_OK]))],
        )
        .refused(Connect),
        socks("socks5-no-acceptable-method", &[5, 0xff]).refused(Connect),
        socks("socks5-method-not-offered", &[5, 2]).refused(Connect),
        socks("socks5-not-socks", b"HTTP/1.1 400 Bad Request\r\n\r\n").refused(Connect),
        socks(
            "socks5-reply-version-4",
            &[5, 0, 4, 0, 0, 1, 127, 0, 0, 1, 0, 80],
        )
        .refused(Connect),
        socks(
            "socks5-reserved-byte",
            &[5, 0, 5, 0, 1, 1, 127, 0, 0, 1, 0, 80],
        )
        .refused(Connect),
        socks(
            "socks5-unknown-atyp",
            &[5, 0, 5, 0, 0, 9, 127, 0, 0, 1, 0, 80],
        )
        .refused(Connect),
        socks("socks5-empty-domain", &[5, 0, 5, 0, 0, 3, 0, 0, 80]).refused(Connect),
        socks(
            "socks5-connect-refused",
            &[5, 0, 5, 5, 0, 1, 127, 0, 0, 1, 0, 80],
        )
        .refused(Connect),
        case(
            "socks5-closes-mid-reply",
            Kind::Socks5,
            vec![w(vec![5, 0, 5, 0, 0, 1, 127]), Step::Close],
        )
        .refused(Connect),
        // A domain reply longer than announced, then junk: the reply is read
        // to its announced end, and the rest is the tunnel's (not HTTP).
        socks(
            "socks5-reply-longer-than-announced",
            &cat(&[&[5, 0, 5, 0, 0, 3, 2], b"ab", &[0, 80], b"cd\x00\x50junk"]),
        )
        .err(Protocol),
        case(
            "socks5-flood-after-reply",
            Kind::Socks5,
            vec![
                w(cat(&[&[5, 0], REPLY_OK])),
                Step::Flood(b"junkjunkjunkjunk".to_vec(), 100_000),
            ],
        )
        .err(Protocol)
        .rss_mb(4),
        socks(
            "socks5-early-bytes-tls",
            &cat(&[&[5, 0], REPLY_OK, b"EARLY-NOT-TLS"]),
        )
        .over(&[Transport::TlsH1])
        .refused(Tls),
    ]
}
