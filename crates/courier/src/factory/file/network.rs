//! The file's keys for where connections go: proxies, fixed addresses
//! (`resolve`), Unix sockets. Checked when the file is read (a bad proxy
//! URL or address names its key), applied to every client built.
//!
//! ```toml
//! [clients.docker]
//! unix_socket = "/var/run/docker.sock"        # every host; relative to the file's directory
//! unix_sockets = { "agent.local" = "agent.sock" }  # one host each
//! resolve = { "api.internal" = ["127.0.0.1:8443", "[::1]"] }  # no port: the URL's
//! proxy = "http://user:pw@proxy.internal:3128"  # every scheme, or a table, or a list of either:
//! # proxy = [{ url = "http://p:3128", scheme = "https", no_proxy = "localhost,.internal" }]
//! env_proxy = false                           # ignore HTTP_PROXY, NO_PROXY, ...
//! ```

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::super::config_error;
use crate::client::builder::ClientBuilder;
use crate::connect::Proxy;
use crate::error::Error;

/// One value or a list of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn iter(&self) -> std::slice::Iter<'_, T> {
        match self {
            OneOrMany::One(v) => std::slice::from_ref(v).iter(),
            OneOrMany::Many(v) => v.iter(),
        }
    }
}

/// A proxy: its URL (every scheme), or a table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum ProxySettings {
    Url(String),
    Table(ProxyTable),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProxyTable {
    url: String,
    /// Which requests: `all` (default), `http` or `https`.
    #[serde(default)]
    scheme: ProxyScheme,
    /// Hosts that go direct (`NO_PROXY` syntax).
    no_proxy: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ProxyScheme {
    #[default]
    All,
    Http,
    Https,
}

/// The checked routing keys of one section.
#[derive(Debug, Default)]
pub(super) struct Network {
    proxies: Vec<Proxy>,
    resolve: Vec<(String, SocketAddr)>,
    unix_socket: Option<PathBuf>,
    unix_sockets: Vec<(String, PathBuf)>,
}

impl Network {
    pub(super) fn parse(s: &super::Settings, ctx: &str, base_dir: &Path) -> Result<Network, Error> {
        let mut proxies = Vec::new();
        for p in s.proxy.iter().flat_map(OneOrMany::iter) {
            proxies.push(proxy(p).map_err(|e| config_error(format!("{ctx}.proxy: {e}")))?);
        }
        let mut resolve = Vec::new();
        for (host, addrs) in s.resolve.iter().flatten() {
            for a in addrs.iter() {
                let addr = a
                    .parse::<SocketAddr>()
                    .or_else(|_| a.trim_matches(['[', ']']).parse::<IpAddr>().map(|ip| (ip, 0).into()))
                    .map_err(|_| {
                        config_error(format!(
                            "{ctx}.resolve.{host}: {a:?} is not an IP address (with an optional port)"
                        ))
                    })?;
                resolve.push((host.clone(), addr));
            }
        }
        let unix_sockets = s
            .unix_sockets
            .iter()
            .flatten()
            .map(|(host, path)| (host.clone(), base_dir.join(path)))
            .collect();
        Ok(Network {
            proxies,
            resolve,
            unix_socket: s.unix_socket.as_ref().map(|p| base_dir.join(p)),
            unix_sockets,
        })
    }

    pub(super) fn apply(&self, mut b: ClientBuilder) -> ClientBuilder {
        for p in &self.proxies {
            b = b.proxy(p.clone());
        }
        for (host, addr) in &self.resolve {
            b = b.resolve(host, *addr);
        }
        if let Some(path) = &self.unix_socket {
            b = b.unix_socket(path.clone());
        }
        for (host, path) in &self.unix_sockets {
            b = b.unix_socket_for(host, path.clone());
        }
        b
    }
}

fn proxy(p: &ProxySettings) -> Result<Proxy, Error> {
    Ok(match p {
        ProxySettings::Url(url) => Proxy::all(url)?,
        ProxySettings::Table(t) => {
            let proxy = match t.scheme {
                ProxyScheme::All => Proxy::all(&t.url)?,
                ProxyScheme::Http => Proxy::http(&t.url)?,
                ProxyScheme::Https => Proxy::https(&t.url)?,
            };
            match &t.no_proxy {
                Some(list) => proxy.no_proxy(list),
                None => proxy,
            }
        }
    })
}

/// `resolve`'s value: host → one address or several.
pub(super) type ResolveMap = BTreeMap<String, OneOrMany<String>>;
