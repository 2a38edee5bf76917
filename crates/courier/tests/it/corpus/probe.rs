//! Requests a case sends after the hostile one, through the same caller,
//! and what the server must have seen in them: what the hostile response
//! left in the client's state (a cookie jar) and where it goes. A case may
//! also send its hostile request to a host name of its own; every name in
//! a case's URLs resolves to the case's server, so one server stands for
//! several origins (`Host` tells them apart), and a URL names `{scheme}`
//! and `{port}`, the server's. HTTP/1.1 only: the server reads requests'
//! headers there (HTTP/2's are HPACK-coded).

use std::sync::Mutex;
use std::time::Duration;

use courier::{Client, ClientBuilder, ServiceClient};

use super::server::Server;

/// A request after the hostile one.
#[derive(Clone, Copy)]
pub struct Probe {
    /// The URL (`{scheme}`, `{port}`); its path must be its own in the case.
    pub url: &'static str,
    /// The request header checked.
    pub header: &'static str,
    /// What the header's value (or its absence) must be.
    pub check: fn(Option<&str>) -> Result<(), String>,
}

/// A request's path and header fields (names in lowercase).
type Head = (String, Vec<(String, String)>);

/// The request heads the server read, in order.
#[derive(Default, Debug)]
pub struct Heads(Mutex<Vec<Head>>);

impl Heads {
    pub fn record(&self, path: &str, headers: &[httparse::Header<'_>]) {
        let fields = headers
            .iter()
            .map(|h| {
                let value = String::from_utf8_lossy(h.value).into_owned();
                (h.name.to_ascii_lowercase(), value)
            })
            .collect();
        let mut heads = self.0.lock().unwrap();
        heads.push((path.to_owned(), fields));
    }

    /// The `header` of the last request for `path`: `None` if no such
    /// request was read, `Some(None)` if it had no such header.
    fn last(&self, path: &str, header: &str) -> Option<Option<String>> {
        let heads = self.0.lock().unwrap();
        let (_, fields) = heads.iter().rev().find(|(p, _)| p == path)?;
        Some(
            fields
                .iter()
                .find(|(n, _)| n == header)
                .map(|(_, v)| v.clone()),
        )
    }
}

/// `template` with the server's scheme and port.
pub fn url(template: &str, scheme: &str, port: u16) -> String {
    template
        .replace("{scheme}", scheme)
        .replace("{port}", &port.to_string())
}

/// The client resolving every host name in `urls` to the server.
pub fn resolving<'a>(
    mut builder: ClientBuilder,
    urls: impl Iterator<Item = &'a str>,
) -> ClientBuilder {
    for url in urls {
        let host = url.split("://").nth(1).unwrap_or_default();
        let host = host.split([':', '/']).next().unwrap_or_default();
        if !host.is_empty() && host.parse::<std::net::IpAddr>().is_err() && host != "{scheme}" {
            builder = builder.resolve(host, ([127, 0, 0, 1], 0).into());
        }
    }
    builder
}

/// Sends each probe and checks what the server saw of it.
pub async fn run(
    probes: &[Probe],
    client: &Client,
    caller: Option<&ServiceClient>,
    server: &Server,
    limit: Duration,
    failures: &mut Vec<String>,
) {
    let heads = &server.log.heads;
    for probe in probes {
        let target = url(probe.url, server.scheme(), server.port());
        let send = async {
            let res = match caller {
                Some(c) => c.get(&target).send().await?,
                None => client.get(&target).send().await?,
            };
            res.bytes().await
        };
        match tokio::time::timeout(limit, send).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                failures.push(format!("probe {target} failed: {e:?}"));
                continue;
            }
            Err(_) => {
                failures.push(format!("probe {target} hung"));
                continue;
            }
        }
        let path = target.splitn(4, '/').nth(3).unwrap_or_default();
        match heads.last(&format!("/{path}"), probe.header) {
            None => failures.push(format!("probe {target}: the server saw no such request")),
            Some(value) => {
                if let Err(why) = (probe.check)(value.as_deref()) {
                    failures.push(format!("probe {target}: {}: {why}", probe.header));
                }
            }
        }
    }
}
