//! The public suffix list (RFC 6265bis §5.7 step 9): a response may not set
//! a cookie for a whole registry (`com`, `co.uk`, `github.io`), only for
//! its own registrable domain; a host that is itself a public suffix gets a
//! host-only cookie; an IP address matches itself alone.

use std::sync::Arc;

use courier::middleware::{CookieJar, Stack};
use courier::Client;

use super::support::{requests, sent, set};
use crate::hostile::h1_wire::{ok, Reply, Server};

#[test]
fn a_public_suffix_domain_is_refused() {
    let jar = CookieJar::new();
    set(&jar, "a=1; Domain=co.uk", "http://www.example.co.uk/");
    set(&jar, "b=1; Domain=.co.uk", "http://www.example.co.uk/");
    set(&jar, "c=1; Domain=com", "http://evil.com/");
    set(&jar, "d=1; Domain=COM", "http://evil.com/");
    // A private registry of the list: one GitHub Pages site for another.
    set(&jar, "e=1; Domain=github.io", "https://evil.github.io/");
    // A wildcard rule (`*.kawasaki.jp`): `city.kawasaki.jp` is a suffix.
    set(&jar, "f=1; Domain=b.kawasaki.jp", "http://a.b.kawasaki.jp/");
    // No rule at all: the implicit `*` makes the last label a suffix.
    set(&jar, "g=1; Domain=internal", "http://a.internal/");
    for victim in [
        "http://victim.co.uk/",
        "http://www.example.co.uk/",
        "http://bank.com/",
        "https://victim.github.io/",
        "http://x.b.kawasaki.jp/",
        "http://b.internal/",
    ] {
        assert_eq!(sent(&jar, victim), Vec::<String>::new(), "{victim}");
    }
    assert_eq!(jar.stats().refused, 7);
    assert_eq!(jar.stats().cookies, 0);
}

#[test]
fn a_registrable_domain_is_kept_for_its_subdomains() {
    let jar = CookieJar::new();
    set(
        &jar,
        "a=1; Domain=example.co.uk",
        "http://www.example.co.uk/",
    );
    set(
        &jar,
        "b=1; Domain=.example.co.uk",
        "http://www.example.co.uk/",
    );
    set(
        &jar,
        "c=1; Domain=svc.cluster.local",
        "http://a.svc.cluster.local/",
    );
    assert_eq!(sent(&jar, "http://api.example.co.uk/"), ["a=1", "b=1"]);
    assert_eq!(sent(&jar, "http://example.co.uk/"), ["a=1", "b=1"]);
    assert_eq!(sent(&jar, "http://victim.co.uk/"), Vec::<String>::new());
    assert_eq!(sent(&jar, "http://b.svc.cluster.local/"), ["c=1"]);
}

#[test]
fn a_public_suffix_host_gets_a_host_only_cookie() {
    let jar = CookieJar::new();
    // The host is itself a suffix and names itself: host-only, as browsers do.
    set(&jar, "a=1; Domain=co.uk", "http://co.uk/");
    set(&jar, "b=1; Domain=localhost", "http://localhost/");
    assert_eq!(sent(&jar, "http://co.uk/"), ["a=1"]);
    assert_eq!(sent(&jar, "http://victim.co.uk/"), Vec::<String>::new());
    assert_eq!(sent(&jar, "http://localhost/"), ["b=1"]);
    assert_eq!(sent(&jar, "http://a.localhost/"), Vec::<String>::new());
}

#[test]
fn an_ip_address_matches_itself_only() {
    let jar = CookieJar::new();
    set(&jar, "a=1; Domain=127.0.0.1", "http://127.0.0.1/");
    set(&jar, "b=1; Domain=0.0.1", "http://127.0.0.1/");
    set(&jar, "c=1; Domain=1", "http://127.0.0.1/");
    set(&jar, "d=1; Domain=10.0.0.1", "http://127.0.0.1/");
    set(&jar, "e=1", "http://[::1]/");
    set(&jar, "f=1; Domain=::1", "http://[::1]/");
    assert_eq!(sent(&jar, "http://127.0.0.1/"), ["a=1"]);
    assert_eq!(sent(&jar, "http://10.0.0.1/"), Vec::<String>::new());
    assert_eq!(sent(&jar, "http://127.0.0.2/"), Vec::<String>::new());
    assert_eq!(sent(&jar, "http://[::1]/"), ["e=1"]);
}

/// The case over the wire: `www.example.co.uk` answers with
/// `Domain=co.uk`, and the next request, to `victim.co.uk`, must not carry it.
#[tokio::test]
async fn a_public_suffix_cookie_does_not_reach_another_site() {
    fn route(path: &str) -> Reply {
        match path {
            "/login" => Reply::Bytes(
                b"HTTP/1.1 200 OK\r\nset-cookie: stolen=1; Domain=co.uk; Path=/\r\nset-cookie: mine=1; Domain=example.co.uk\r\ncontent-length: 0\r\n\r\n"
                    .to_vec(),
            ),
            _ => ok(b"ok"),
        }
    }
    let server = Server::start(route).await;
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let loopback = ([127, 0, 0, 1], 0).into();
    let client = Client::builder()
        .resolve("www.example.co.uk", loopback)
        .resolve("api.example.co.uk", loopback)
        .resolve("victim.co.uk", loopback)
        .build()
        .unwrap();
    let jar = Arc::new(CookieJar::new());
    let client = Stack::new().cookies(Arc::clone(&jar)).client(client);
    for url in [
        "http://www.example.co.uk:{port}/login",
        "http://victim.co.uk:{port}/me",
        "http://api.example.co.uk:{port}/me",
    ] {
        let url = url.replace("{port}", &port);
        client
            .get(&url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    let seen = requests(&server);
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[1], ("victim.co.uk".into(), "/me".into(), None));
    assert_eq!(
        seen[2],
        (
            "api.example.co.uk".into(),
            "/me".into(),
            Some("mine=1".into())
        )
    );
}
