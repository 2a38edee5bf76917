//! What the cookie tests share: a jar's view of one URL, and the `Cookie`
//! header each request a scripted server read carried.

use courier::middleware::CookieJar;

use crate::hostile::h1_wire::{Seen, Server};

/// The cookies `jar` sends to `url`, as `name=value` pairs in order.
pub fn sent(jar: &CookieJar, url: &str) -> Vec<String> {
    jar.cookies(&url.parse().unwrap())
        .map(|v| v.to_str().unwrap().split("; ").map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Stores `set_cookie` as if `url` had answered with it.
pub fn set(jar: &CookieJar, set_cookie: &str, url: &str) {
    jar.add(set_cookie, &url.parse().unwrap());
}

/// Each request `server` read: its `Host`, path and `Cookie` header.
pub fn requests(server: &Server) -> Vec<(String, String, Option<String>)> {
    server
        .seen()
        .into_iter()
        .filter_map(|s| match s {
            Seen::Request { line, headers, .. } => {
                let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
                let header = |name: &str| {
                    headers
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                };
                let host = header("host").unwrap_or_default();
                let host = host.split(':').next().unwrap_or_default().to_owned();
                Some((host, path, header("cookie")))
            }
            _ => None,
        })
        .collect()
}
