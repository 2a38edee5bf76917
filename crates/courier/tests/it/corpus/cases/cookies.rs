//! Cookie abuse through `CookieLayer` (feature `cookies`): a response that
//! sets cookies for a public suffix, another site, an address that is not
//! its own; a plain origin that overwrites or shadows a `Secure` cookie;
//! prefixes without what they require; paths that are not segments;
//! deletion; far expiry; control characters and `;` in values; floods of
//! `Set-Cookie` lines, cookies past the size and count bounds; cookies set
//! by a redirect. After the hostile response, probes (requests to other
//! hosts resolved to the same server) show which cookies went where.

use std::sync::Arc;

use courier::middleware::{CookieJar, CookieLimits, RedirectConfig, Stack};

use super::resp;
use crate::corpus::case::{Case, Class::Cookies, Transport::*};

fn with(jar: CookieJar) -> Stack {
    Stack::new()
        .redirect(RedirectConfig::default())
        .cookies(Arc::new(jar))
}

fn jar() -> Stack {
    with(CookieJar::new())
}

/// A jar holding `s=good; Secure`, set by `https://site.test`, and
/// `gone=1`, set by `http://site.test` (cookies do not care for ports; not
/// loopback, which counts as secure).
fn seeded() -> Stack {
    let jar = CookieJar::new();
    jar.add(
        "s=good; Secure; Path=/",
        &"https://site.test/".parse().unwrap(),
    );
    jar.add("gone=1; Path=/", &"http://site.test/".parse().unwrap());
    with(jar)
}

fn small() -> Stack {
    with(CookieJar::with_limits(CookieLimits::default().per_site(10)))
}

/// `200 OK` setting `cookies`.
fn sets(cookies: &[&str]) -> Vec<u8> {
    let mut lines: Vec<String> = cookies.iter().map(|c| format!("set-cookie: {c}")).collect();
    lines.push("content-length: 2".into());
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    resp("HTTP/1.1 200 OK", &lines, b"ok")
}

/// `n` cookies `c{i}` of `len`-byte values, with `attrs`.
fn many(n: usize, len: usize, attrs: &str) -> Vec<u8> {
    let all: Vec<String> = (0..n)
        .map(|i| format!("c{i}={}{attrs}", "v".repeat(len)))
        .collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    sets(&all)
}

fn none(v: Option<&str>) -> Result<(), String> {
    match v {
        None => Ok(()),
        Some(v) => Err(format!("carried {:?}", &v[..v.len().min(60)])),
    }
}

fn is(v: Option<&str>, want: &str) -> Result<(), String> {
    if v == Some(want) {
        Ok(())
    } else {
        Err(format!("{v:?}, expected {want:?}"))
    }
}

/// The header's cookies are `c{from}` to `c{to}`, in order.
fn run_of(v: Option<&str>, from: usize, to: usize) -> Result<(), String> {
    let names: Vec<&str> = v
        .unwrap_or_default()
        .split("; ")
        .map(|c| c.split('=').next().unwrap_or_default())
        .collect();
    let want: Vec<String> = (from..=to).map(|i| format!("c{i}")).collect();
    if names == want {
        Ok(())
    } else {
        Err(format!(
            "{} cookies, {:?}…, expected c{from}..=c{to}",
            names.len(),
            names.first()
        ))
    }
}

pub fn cases() -> Vec<Case> {
    let case = |name, bytes: Vec<u8>| {
        Case::h1_keep(name, Cookies, bytes)
            .stack(jar)
            .ok(200, b"ok")
    };
    vec![
        case(
            "public-suffix-co-uk",
            sets(&[
                "stolen=1; Domain=co.uk; Path=/",
                "mine=1; Domain=example.co.uk; Path=/",
            ]),
        )
        .at("http://www.example.co.uk:{port}/hostile")
        .probe("http://victim.co.uk:{port}/p1", "cookie", none)
        .probe("http://api.example.co.uk:{port}/p2", "cookie", |v| {
            is(v, "mine=1")
        }),
        case("public-suffix-com", sets(&["stolen=1; Domain=com; Path=/"]))
            .at("http://www.evil.com:{port}/hostile")
            .probe("http://bank.com:{port}/p1", "cookie", none),
        case(
            "public-suffix-private-registry",
            sets(&["stolen=1; Domain=github.io"]),
        )
        .at("http://evil.github.io:{port}/hostile")
        .probe("http://victim.github.io:{port}/p1", "cookie", none),
        case(
            "public-suffix-host-itself",
            sets(&["a=1; Domain=co.uk; Path=/"]),
        )
        .at("http://co.uk:{port}/hostile")
        .probe("http://co.uk:{port}/p1", "cookie", |v| is(v, "a=1"))
        .probe("http://victim.co.uk:{port}/p2", "cookie", none),
        case(
            "another-sites-domain",
            sets(&["stolen=1; Domain=victim.test; Path=/"]),
        )
        .at("http://evil.test:{port}/hostile")
        .probe("http://victim.test:{port}/p1", "cookie", none),
        case(
            "ip-address-domains",
            sets(&[
                "a=1; Domain=0.0.1",
                "b=1; Domain=127.0.0.2",
                "ok=1; Domain=127.0.0.1",
            ]),
        )
        .probe("http://127.0.0.1:{port}/p1", "cookie", |v| is(v, "ok=1")),
        case(
            "leading-dot-domain",
            sets(&["d=1; Domain=.example.test; Path=/"]),
        )
        .at("http://www.example.test:{port}/hostile")
        .probe("http://example.test:{port}/p1", "cookie", |v| is(v, "d=1"))
        .probe("http://notexample.test:{port}/p2", "cookie", none),
        case("path-prefix-not-a-segment", sets(&["p=1; Path=/probe"]))
            .probe("http://127.0.0.1:{port}/probebar", "cookie", none)
            .probe("http://127.0.0.1:{port}/probe/x", "cookie", |v| {
                is(v, "p=1")
            }),
        case("max-age-zero-deletes", sets(&["gone=; Max-Age=0; Path=/"]))
            .stack(seeded)
            .at("http://site.test:{port}/hostile")
            .probe("http://site.test:{port}/p1", "cookie", none),
        case(
            "expires-far-and-garbage",
            sets(&[
                "far=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT; Path=/",
                "bad=1; Expires=yesterday-ish; Max-Age=1x; Path=/",
            ]),
        )
        .probe("http://127.0.0.1:{port}/p1", "cookie", |v| {
            is(v, "far=1; bad=1")
        }),
        case("semicolon-in-a-value", sets(&["a=1; evil=2; Path=/"])).probe(
            "http://127.0.0.1:{port}/p1",
            "cookie",
            |v| is(v, "a=1"),
        ),
        case("obs-text-in-a-value", {
            let mut bytes = sets(&["a=1; Path=/", "b=\u{e9}; Path=/"]);
            // The header line as ISO-8859-1 bytes: not UTF-8, so refused.
            let at = bytes
                .windows(2)
                .position(|w| w == "\u{e9}".as_bytes())
                .unwrap();
            bytes.splice(at..at + 2, [0xe9]);
            bytes
        })
        .probe("http://127.0.0.1:{port}/p1", "cookie", |v| is(v, "a=1")),
        case("set-cookie-flood-90-lines", many(90, 1, "; Path=/")).probe(
            "http://127.0.0.1:{port}/p1",
            "cookie",
            |v| run_of(v, 0, 49),
        ),
        case("cookie-over-4096-bytes", many(1, 5000, "; Path=/")).probe(
            "http://127.0.0.1:{port}/p1",
            "cookie",
            none,
        ),
        case("cookie-header-bound", many(20, 1000, "; Path=/")).probe(
            "http://127.0.0.1:{port}/p1",
            "cookie",
            |v| run_of(v, 0, 7),
        ),
        case(
            "per-site-cap-of-10",
            many(50, 1, "; Domain=example.test; Path=/"),
        )
        .stack(small)
        .at("http://a.example.test:{port}/hostile")
        .probe("http://b.example.test:{port}/p1", "cookie", |v| {
            run_of(v, 40, 49)
        }),
        case("http-overwrites-secure", sets(&["s=evil; Path=/"]))
            .stack(seeded)
            .at("http://site.test:{port}/hostile")
            .probe("http://site.test:{port}/p1", "cookie", |v| is(v, "gone=1")),
        case("http-shadows-secure", sets(&["s=evil; Path=/p1"]))
            .stack(seeded)
            .at("http://site.test:{port}/hostile")
            .probe("http://site.test:{port}/p1", "cookie", |v| is(v, "gone=1")),
        case(
            "prefixes-without-their-rules",
            sets(&[
                "__Host-a=1; Path=/",
                "__Host-b=1; Secure; Path=/; Domain=localhost",
                "__Host-c=1; Secure",
                "__Secure-d=1",
                "__Host-ok=1; Secure; Path=/",
            ]),
        )
        .over(&[TlsH1])
        .at("https://localhost:{port}/hostile")
        .probe("https://localhost:{port}/p1", "cookie", |v| {
            is(v, "__Host-ok=1")
        }),
        case(
            "redirect-sets-a-cookie",
            resp(
                "HTTP/1.1 302 Found",
                &[
                    "location: /landing",
                    "set-cookie: hop=1; Path=/",
                    "content-length: 0",
                ],
                b"",
            ),
        )
        .ok_len(200, 13)
        .probe("http://127.0.0.1:{port}/p1", "cookie", |v| is(v, "hop=1")),
        case(
            "redirect-sets-a-public-suffix-cookie",
            resp(
                "HTTP/1.1 302 Found",
                &[
                    "location: /landing",
                    "set-cookie: stolen=1; Domain=co.uk; Path=/",
                    "content-length: 0",
                ],
                b"",
            ),
        )
        .at("http://www.example.co.uk:{port}/hostile")
        .ok_len(200, 13)
        .probe("http://victim.co.uk:{port}/p1", "cookie", none),
    ]
}
