//! Redirect abuse through `FollowRedirectLayer`, and through a plain
//! `Client` (each case's `/client` twin, `cases::through_the_client`): loops, chains past the
//! limit, schemes that are not HTTP, a downgrade from HTTPS, Locations
//! that are missing or not URLs, and the Location forms parsers read
//! differently (credentials, backslashes, whitespace and control bytes,
//! fields that disagree). Where credentials go across origins and proxies
//! is the secrets check's (`corpus/secrets`), which needs several servers.

use courier::middleware::{RedirectConfig, Stack};
use courier::ErrorKind::*;

use super::{cat, resp};
use crate::corpus::case::{Case, Class::Redirects, Transport::*};

fn follow() -> Stack {
    Stack::new().redirect(RedirectConfig::default())
}

fn follow_3() -> Stack {
    Stack::new().redirect(RedirectConfig::default().max_redirects(3))
}

fn to(status: &str, location: &str) -> Vec<u8> {
    resp(
        status,
        &[&format!("location: {location}"), "content-length: 0"],
        b"",
    )
}

pub fn cases() -> Vec<Case> {
    let keep = |name, bytes: Vec<u8>| Case::h1_keep(name, Redirects, bytes).stack(follow);
    vec![
        keep("loop-to-self", to("HTTP/1.1 302 Found", "/hostile"))
            .err(TooManyRedirects)
            .tls_too(),
        keep(
            "loop-307",
            to("HTTP/1.1 307 Temporary Redirect", "/hostile?again"),
        )
        .err(TooManyRedirects),
        Case::h1_keep(
            "chain-past-a-limit-of-3",
            Redirects,
            to("HTTP/1.1 301 Moved Permanently", "/hostile/next"),
        )
        .stack(follow_3)
        .err(TooManyRedirects),
        keep("to-ftp", to("HTTP/1.1 302 Found", "ftp://127.0.0.1/x")).err(Redirect),
        keep("to-file", to("HTTP/1.1 302 Found", "file:///etc/passwd")).err(Redirect),
        keep("to-data", to("HTTP/1.1 302 Found", "data:text/plain,hello")).err(Redirect),
        keep(
            "to-javascript",
            to("HTTP/1.1 302 Found", "javascript:alert(1)"),
        )
        .err(Redirect),
        keep(
            "location-not-a-url",
            to("HTTP/1.1 302 Found", "http://[::1"),
        )
        .err(Redirect),
        keep(
            "location-missing",
            resp("HTTP/1.1 302 Found", &["content-length: 5"], b"hello"),
        )
        .ok(302, b"hello"),
        keep(
            "location-60k",
            to("HTTP/1.1 302 Found", &format!("/{}", "a".repeat(60_000))),
        )
        .ok_len(200, 13),
        Case::h1_keep(
            "https-to-http",
            Redirects,
            to("HTTP/1.1 302 Found", "http://127.0.0.1:9/"),
        )
        .stack(follow)
        .over(&[TlsH1])
        .err(Redirect),
        // Schemes that are not HTTP, however written.
        keep("to-ws", to("HTTP/1.1 302 Found", "ws://127.0.0.1:9/")).err(Redirect),
        keep("to-mailto", to("HTTP/1.1 302 Found", "mailto:a@127.0.0.1")).err(Redirect),
        keep("to-about-blank", to("HTTP/1.1 302 Found", "about:blank")).err(Redirect),
        keep(
            "to-javascript-mixed-case",
            to("HTTP/1.1 302 Found", "JavaScript:alert(1)"),
        )
        .err(Redirect),
        keep(
            "to-javascript-padded",
            to("HTTP/1.1 302 Found", "   javascript:alert(1)"),
        )
        .err(Redirect),
        keep(
            "to-data-html",
            to(
                "HTTP/1.1 307 Temporary Redirect",
                "data:text/html;base64,PHNjcmlwdD4=",
            ),
        )
        .err(Redirect),
        // Credentials in the Location: the server would choose what the
        // next request authenticates with.
        keep(
            "location-userinfo",
            to("HTTP/1.1 302 Found", "http://user:pass@127.0.0.1:9/good"),
        )
        .err(Redirect),
        keep(
            "location-scheme-relative-userinfo",
            to("HTTP/1.1 302 Found", "//canary@127.0.0.1:9/good"),
        )
        .err(Redirect),
        keep(
            "location-userinfo-disguised-host",
            to("HTTP/1.1 302 Found", "http://127.0.0.1%2fgood@127.0.0.1:9/"),
        )
        .err(Redirect),
        // Backslashes: `/\host` is `//host` (another origin) to a browser.
        keep(
            "location-backslash-path",
            to("HTTP/1.1 302 Found", "/\\127.0.0.1:9/good"),
        )
        .err(Redirect),
        keep(
            "location-backslashes",
            to("HTTP/1.1 302 Found", "\\\\127.0.0.1:9\\good"),
        )
        .err(Redirect),
        // Whitespace and control bytes, read with the WHATWG URL rules
        // (issue 28): a tab inside is removed, a space and non-ASCII text
        // are percent-encoded; the target sent is well-formed either way.
        keep("location-tab-inside", to("HTTP/1.1 302 Found", "/go\tod")).ok_len(200, 13),
        keep("location-space-inside", to("HTTP/1.1 302 Found", "/go od")).ok_len(200, 13),
        keep("location-padded", to("HTTP/1.1 302 Found", "  \t/good \t ")).ok_len(200, 13),
        keep(
            "location-non-ascii",
            resp(
                "HTTP/1.1 302 Found",
                &["location: /g\u{f6}\u{f6}d", "content-length: 0"],
                b"",
            ),
        )
        .ok_len(200, 13),
        // Mixed scripts: a Cyrillic 'а' in the path is text, percent-encoded;
        // fullwidth solidi are no '/' (no `//host` authority from them).
        keep(
            "location-mixed-script-path",
            to("HTTP/1.1 302 Found", "/\u{430}dmin"),
        )
        .ok_len(200, 13),
        keep(
            "location-fullwidth-solidi",
            to("HTTP/1.1 302 Found", "\u{ff0f}\u{ff0f}127.0.0.1:9/good"),
        )
        .ok_len(200, 13),
        // Hosts IDNA refuses: a label over 63 bytes, punycode that does not
        // decode, a space; refused before any connection.
        keep(
            "location-idna-label-too-long",
            to(
                "HTTP/1.1 302 Found",
                &format!("http://{}\u{fc}.test/", "a".repeat(70)),
            ),
        )
        .err(Redirect),
        keep(
            "location-idna-bad-punycode",
            to("HTTP/1.1 302 Found", "http://xn--a.test/"),
        )
        .err(Redirect),
        keep(
            "location-space-in-host",
            to("HTTP/1.1 302 Found", "http://127.0.0.1 :9/"),
        )
        .err(Redirect),
        keep(
            "location-nul",
            cat(&[b"HTTP/1.1 302 Found\r\nlocation: /go\0od\r\ncontent-length: 0\r\n\r\n"]),
        )
        .err(Protocol),
        keep("location-empty", to("HTTP/1.1 302 Found", "")).err(TooManyRedirects),
        keep(
            "location-dot-segments",
            to("HTTP/1.1 302 Found", "/../../a/../../good"),
        )
        .ok_len(200, 13),
        keep(
            "location-fields-disagree",
            resp(
                "HTTP/1.1 302 Found",
                &[
                    "location: /good",
                    "location: http://127.0.0.1:9/",
                    "content-length: 0",
                ],
                b"",
            ),
        )
        .err(Redirect),
        keep(
            "location-fields-agree",
            resp(
                "HTTP/1.1 302 Found",
                &["location: /good", "location: /good", "content-length: 0"],
                b"",
            ),
        )
        .ok_len(200, 13),
        keep(
            "location-past-the-header-limit",
            to("HTTP/1.1 302 Found", &format!("/{}", "a".repeat(200_000))),
        )
        .err(HeadersTooLarge),
        // A loop through two URLs, and one through 303 See Other.
        keep(
            "loop-via-303",
            to("HTTP/1.1 303 See Other", "/hostile?via-303"),
        )
        .err(TooManyRedirects),
        Case::h1_keep(
            "https-to-http-upper-case",
            Redirects,
            to("HTTP/1.1 302 Found", "HTTP://127.0.0.1:9/"),
        )
        .stack(follow)
        .over(&[TlsH1])
        .err(Redirect),
        Case::h1_keep(
            "https-to-http-308",
            Redirects,
            to("HTTP/1.1 308 Permanent Redirect", "http://localhost:9/"),
        )
        .stack(follow)
        .over(&[TlsH1])
        .err(Redirect),
        Case::h2("h2-loop-to-self", Redirects, |s| {
            let block = super::block_200(&[("location", b"/hostile")]);
            // :status 302 instead of 200.
            let mut block = block[1..].to_vec();
            let mut status = crate::support::h2::status(302);
            status.append(&mut block);
            vec![super::w(super::h2_headers(s, &status, true))]
        })
        .stack(follow)
        .err(TooManyRedirects),
    ]
}
