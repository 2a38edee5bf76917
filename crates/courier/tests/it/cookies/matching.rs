//! Domain and path matching under attack (RFC 6265bis §5.1.3, §5.1.4,
//! §5.7): another site's domain, a leading dot, path prefixes that are not
//! path segments, deletion, far expiry, control characters and `;` in what
//! a server sends, floods of `Set-Cookie` lines, and cookies set by a
//! redirect, stored before the next hop and kept to their own origin.

use std::sync::{Arc, OnceLock};

use courier::middleware::{CookieJar, RedirectConfig, Stack};
use courier::Client;

use super::support::{requests, sent, set};
use crate::hostile::h1_wire::{ok, Reply, Server};

const NONE: [&str; 0] = [];

#[test]
fn another_sites_domain_is_refused() {
    let jar = CookieJar::new();
    set(&jar, "a=1; Domain=example.com", "http://evil.com/");
    set(&jar, "b=1; Domain=example.com", "http://notexample.com/");
    set(&jar, "c=1; Domain=www.example.com", "http://example.com/");
    assert_eq!(sent(&jar, "http://example.com/"), NONE);
    assert_eq!(sent(&jar, "http://www.example.com/"), NONE);
}

#[test]
fn a_leading_dot_is_dropped_and_a_host_only_cookie_stays_on_its_host() {
    let jar = CookieJar::new();
    set(
        &jar,
        "dot=1; Domain=.example.com",
        "http://www.example.com/",
    );
    set(&jar, "host=1", "http://www.example.com/");
    assert_eq!(sent(&jar, "http://example.com/"), ["dot=1"]);
    assert_eq!(sent(&jar, "http://a.www.example.com/"), ["dot=1"]);
    assert_eq!(sent(&jar, "http://www.example.com/"), ["dot=1", "host=1"]);
}

#[test]
fn a_path_matches_whole_segments_only() {
    let jar = CookieJar::new();
    set(&jar, "p=1; Path=/foo", "http://example.com/");
    for (url, want) in [
        ("http://example.com/foo", &["p=1"][..]),
        ("http://example.com/foo/", &["p=1"]),
        ("http://example.com/foo/bar", &["p=1"]),
        ("http://example.com/foo?x=1", &["p=1"]),
        ("http://example.com/foobar", &[]),
        ("http://example.com/fo", &[]),
        ("http://example.com/", &[]),
        ("http://example.com/FOO", &[]),
    ] {
        assert_eq!(sent(&jar, url), want, "{url}");
    }
    // No Path: the default path, the request path's directory.
    set(&jar, "d=1", "http://example.com/a/b/c");
    assert_eq!(sent(&jar, "http://example.com/a/b/x"), ["d=1"]);
    assert_eq!(sent(&jar, "http://example.com/a/bx"), NONE);
}

#[test]
fn max_age_zero_or_a_past_expires_deletes() {
    let jar = CookieJar::new();
    let url = "http://example.com/";
    set(&jar, "a=1", url);
    set(&jar, "b=1", url);
    set(&jar, "c=1", url);
    set(&jar, "a=; Max-Age=0", url);
    set(&jar, "b=; Max-Age=-5", url);
    set(&jar, "c=; Expires=Thu, 01 Jan 1970 00:00:00 GMT", url);
    assert_eq!(sent(&jar, url), NONE);
}

#[test]
fn a_far_expiry_is_kept_and_a_bad_one_ignored() {
    let jar = CookieJar::new();
    let url = "http://example.com/";
    set(&jar, "a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT", url);
    set(&jar, "b=1; Max-Age=99999999999999999999999", url);
    set(&jar, "c=1; Expires=not a date", url);
    set(&jar, "d=1; Max-Age=1x", url);
    assert_eq!(sent(&jar, url), ["a=1", "b=1", "c=1", "d=1"]);
}

#[test]
fn control_characters_refuse_the_cookie_and_a_semicolon_ends_the_value() {
    let jar = CookieJar::new();
    let url = "http://example.com/";
    set(&jar, "a=b\u{1}c", url);
    set(&jar, "a\u{7f}=1", url);
    set(&jar, "x=1\ty", url);
    set(&jar, "=novalue", url);
    set(&jar, "noequals", url);
    // `;` ends the pair: `evil=1` is an (unknown) attribute, not a cookie.
    set(&jar, "inj=1; evil=1; Path=/", url);
    assert_eq!(sent(&jar, url), ["x=1\ty", "inj=1"]);
}

fn flood(path: &str) -> Reply {
    match path {
        "/flood" => {
            let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
            // Under the client's bound of 100 header lines.
            for i in 0..90 {
                head.extend_from_slice(format!("set-cookie: f{i}=1\r\n").as_bytes());
            }
            head.extend_from_slice(b"content-length: 0\r\n\r\n");
            Reply::Bytes(head)
        }
        _ => ok(b"ok"),
    }
}

/// One response's `Set-Cookie` lines count up to 50 (curl's bound); the
/// rest are dropped, so a response cannot flush the jar by itself.
#[tokio::test]
async fn a_response_sets_at_most_50_cookies() {
    let server = Server::start(flood).await;
    let jar = Arc::new(CookieJar::new());
    let client = Stack::new().cookies(Arc::clone(&jar)).client(Client::new());
    let res = client
        .get(format!("{}/flood", server.url))
        .send()
        .await
        .unwrap();
    res.bytes().await.unwrap();
    let kept = sent(&jar, &format!("{}/", server.url));
    assert_eq!(kept.len(), 50);
    assert_eq!(kept[0], "f0=1");
    assert_eq!(jar.stats().refused, 40);
}

/// A 3xx's cookie is stored before the next hop and applies to the
/// redirect's own origin: the hop to another host does not carry it, and
/// the next request to the first host does.
#[tokio::test]
async fn a_redirects_cookie_is_kept_to_its_origin() {
    // Where `/hop` sends the client: the other server, by another name.
    static OTHER: OnceLock<String> = OnceLock::new();
    fn route(path: &str) -> Reply {
        match path {
            "/hop" => Reply::Bytes(
                format!(
                    "HTTP/1.1 302 Found\r\nlocation: {}/landing\r\nset-cookie: hop=1\r\ncontent-length: 0\r\n\r\n",
                    OTHER.get().unwrap()
                )
                .into_bytes(),
            ),
            _ => ok(b"ok"),
        }
    }
    let other = Server::start(route).await;
    OTHER
        .set(other.url.replace("127.0.0.1", "localhost"))
        .unwrap();
    let first = Server::start(route).await;
    let jar = Arc::new(CookieJar::new());
    let client = Stack::new()
        .redirect(RedirectConfig::default())
        .cookies(Arc::clone(&jar))
        .client(Client::new());
    for path in ["/hop", "/me"] {
        let res = client.get(format!("{}{path}", first.url)).send().await;
        res.unwrap().bytes().await.unwrap();
    }
    assert_eq!(
        requests(&other),
        [("localhost".into(), "/landing".into(), None)]
    );
    let seen = requests(&first);
    assert_eq!(
        seen[1],
        ("127.0.0.1".into(), "/me".into(), Some("hop=1".into()))
    );
}
