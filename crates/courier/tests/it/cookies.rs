//! The cookie jar (`cookies` feature): what a response sets is sent back to
//! the same site, on redirect hops too, and never to another host; the
//! public suffix list, `Secure`, the name prefixes, the caps, and domain
//! and path matching under attack, each in a module of its own.

mod caps;
mod matching;
mod secure;
mod suffix;
mod support;

use std::sync::Arc;

use crate::hostile::h1_wire::{ok, Reply, Seen, Server};
use courier::middleware::{CookieJar, RedirectConfig, Stack};
use courier::Client;

fn route(path: &str) -> Reply {
    match path {
        "/login" => Reply::Bytes(
            b"HTTP/1.1 200 OK\r\nset-cookie: session=abc; Path=/; HttpOnly\r\nset-cookie: theme=dark\r\ncontent-length: 0\r\n\r\n".to_vec(),
        ),
        "/hop" => Reply::Bytes(
            b"HTTP/1.1 302 Found\r\nlocation: /me\r\nset-cookie: hop=1\r\ncontent-length: 0\r\n\r\n".to_vec(),
        ),
        _ => ok(b"me"),
    }
}

/// The `Cookie` header of each request the server read, by path.
fn cookies_seen(server: &Server) -> Vec<(String, Option<String>)> {
    server
        .seen()
        .into_iter()
        .filter_map(|s| match s {
            Seen::Request { line, headers, .. } => {
                let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
                let cookie = headers
                    .iter()
                    .find(|(n, _)| n == "cookie")
                    .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
                Some((path, cookie))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn cookies_are_kept_and_sent_back_to_their_site_only() {
    let site = Server::start(route).await;
    let other = Server::start(route).await;
    let jar = Arc::new(CookieJar::new());
    let client = Stack::new()
        .redirect(RedirectConfig::default())
        .cookies(Arc::clone(&jar))
        .client(Client::new());
    client
        .get(format!("{}/login", site.url))
        .send()
        .await
        .unwrap();
    client.get(format!("{}/me", site.url)).send().await.unwrap();
    client
        .get(format!("{}/hop", site.url))
        .send()
        .await
        .unwrap();
    // `other` is 127.0.0.1 too, on another port: cookies do not care for
    // ports (RFC 6265 §8.5), so a different host name stands for another site.
    let other_url = other.url.replace("127.0.0.1", "localhost");
    client.get(format!("{other_url}/me")).send().await.unwrap();
    let seen = cookies_seen(&site);
    assert_eq!(seen[0], ("/login".into(), None));
    assert_eq!(seen[1].0, "/me");
    let mut sent: Vec<&str> = seen[1]
        .1
        .as_deref()
        .unwrap_or_default()
        .split("; ")
        .collect();
    sent.sort_unstable();
    assert_eq!(sent, ["session=abc", "theme=dark"]);
    assert_eq!(seen[2].0, "/hop");
    // The redirect hop's own cookie went with the next hop.
    assert_eq!(seen[3].0, "/me");
    assert!(
        seen[3].1.as_deref().unwrap_or_default().contains("hop=1"),
        "{seen:?}"
    );
    assert_eq!(cookies_seen(&other), [("/me".into(), None)]);
}

/// Issue 28: a plain `Client` follows redirects by itself, below the
/// middleware; a stack with a jar and no redirect settings must still
/// follow above the jar, so what a redirect sets reaches the next hop.
#[tokio::test]
async fn a_jar_without_redirect_settings_sees_every_hop() {
    let site = Server::start(route).await;
    let jar = Arc::new(CookieJar::new());
    let client = Stack::new().cookies(Arc::clone(&jar)).client(Client::new());
    let res = client
        .get(format!("{}/hop", site.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let seen = cookies_seen(&site);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1], ("/me".into(), Some("hop=1".into())), "{seen:?}");
}
