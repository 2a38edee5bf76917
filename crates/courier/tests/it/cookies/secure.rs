//! `Secure` (RFC 6265bis §5.7 steps 16 and 22): only a secure origin sets
//! a `Secure` cookie, and a plain-http response may neither overwrite nor
//! shadow one; the `__Secure-` and `__Host-` name prefixes (§4.1.3) hold.

use courier::middleware::CookieJar;

use super::support::{sent, set};

const NONE: [&str; 0] = [];

#[test]
fn plain_http_cannot_set_a_secure_cookie() {
    let jar = CookieJar::new();
    set(&jar, "s=1; Secure", "http://example.com/");
    assert_eq!(sent(&jar, "https://example.com/"), NONE);
    assert_eq!(sent(&jar, "http://example.com/"), NONE);
}

#[test]
fn plain_http_cannot_overwrite_a_secure_cookie() {
    let jar = CookieJar::new();
    set(&jar, "s=good; Secure; Path=/", "https://example.com/");
    set(&jar, "s=evil; Path=/", "http://example.com/");
    assert_eq!(sent(&jar, "https://example.com/"), ["s=good"]);
    assert_eq!(sent(&jar, "http://example.com/"), NONE);
}

#[test]
fn plain_http_cannot_shadow_a_secure_cookie() {
    let jar = CookieJar::new();
    set(&jar, "s=good; Secure", "https://example.com/");
    // A longer path would be sent first and win with many servers.
    set(&jar, "s=evil; Path=/admin", "http://example.com/");
    // A parent-domain cookie of the same name, from a sibling host.
    set(
        &jar,
        "s=evil; Domain=example.com",
        "http://www.example.com/",
    );
    // Nor may plain http delete it.
    set(&jar, "s=; Max-Age=0", "http://example.com/");
    assert_eq!(sent(&jar, "https://example.com/admin"), ["s=good"]);
    assert_eq!(sent(&jar, "http://example.com/admin"), NONE);
    // Another name, or an unrelated path under another host, is fine.
    set(&jar, "t=1", "http://example.com/");
    assert_eq!(sent(&jar, "http://example.com/"), ["t=1"]);
}

#[test]
fn a_secure_origin_may_overwrite_and_delete_its_cookie() {
    let jar = CookieJar::new();
    set(&jar, "s=1; Secure", "https://example.com/");
    set(&jar, "s=2", "https://example.com/");
    assert_eq!(sent(&jar, "http://example.com/"), ["s=2"]);
    set(&jar, "s=3; Secure", "https://example.com/");
    set(&jar, "s=; Max-Age=0", "https://example.com/");
    assert_eq!(sent(&jar, "https://example.com/"), NONE);
}

#[test]
fn the_secure_prefix_needs_secure() {
    let jar = CookieJar::new();
    set(&jar, "__Secure-a=1", "https://example.com/");
    set(&jar, "__secure-b=1", "https://example.com/");
    set(&jar, "__Secure-c=1; Secure", "http://example.com/");
    set(
        &jar,
        "__Secure-ok=1; Secure; Domain=example.com",
        "https://www.example.com/",
    );
    assert_eq!(sent(&jar, "https://www.example.com/"), ["__Secure-ok=1"]);
    assert_eq!(sent(&jar, "https://example.com/"), ["__Secure-ok=1"]);
}

#[test]
fn the_host_prefix_needs_secure_no_domain_and_the_root_path() {
    let jar = CookieJar::new();
    set(&jar, "__Host-a=1; Path=/", "https://example.com/");
    set(
        &jar,
        "__Host-b=1; Secure; Path=/; Domain=example.com",
        "https://example.com/",
    );
    set(&jar, "__Host-c=1; Secure; Path=/x", "https://example.com/x");
    set(&jar, "__Host-d=1; Secure", "https://example.com/x/y");
    set(&jar, "__HOST-e=1; Path=/", "https://example.com/");
    set(
        &jar,
        "__Host-ok=1; Secure; Path=/",
        "https://example.com/x/y",
    );
    assert_eq!(sent(&jar, "https://example.com/x/y"), ["__Host-ok=1"]);
    assert_eq!(sent(&jar, "https://www.example.com/"), NONE);
}

/// Loopback is a secure origin, as in Chromium and Firefox: a plain hop to
/// a local sidecar keeps `Secure` cookies working.
#[test]
fn loopback_counts_as_secure() {
    let jar = CookieJar::new();
    set(&jar, "a=1; Secure", "http://localhost/");
    set(&jar, "b=1; Secure", "http://127.0.0.1/");
    set(&jar, "c=1; Secure", "http://[::1]/");
    set(&jar, "__Host-d=1; Secure; Path=/", "http://api.localhost/");
    assert_eq!(sent(&jar, "http://localhost/"), ["a=1"]);
    assert_eq!(sent(&jar, "http://127.0.0.1/"), ["b=1"]);
    assert_eq!(sent(&jar, "http://[::1]/"), ["c=1"]);
    assert_eq!(sent(&jar, "http://api.localhost/"), ["__Host-d=1"]);
    // Not a loopback address: plain.
    set(&jar, "e=1; Secure", "http://127.0.0.1.example/");
    set(&jar, "f=1; Secure", "http://10.0.0.1/");
    assert_eq!(sent(&jar, "https://127.0.0.1.example/"), NONE);
    assert_eq!(sent(&jar, "https://10.0.0.1/"), NONE);
}
