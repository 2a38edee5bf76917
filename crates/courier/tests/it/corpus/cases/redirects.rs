//! Redirect abuse through `FollowRedirectLayer`: loops, chains past the
//! limit, schemes that are not HTTP, a downgrade from HTTPS, Locations
//! that are missing or not URLs.

use courier::middleware::{RedirectConfig, Stack};
use courier::ErrorKind::*;

use super::resp;
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
