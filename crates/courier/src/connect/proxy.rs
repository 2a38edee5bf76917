//! Which proxy, if any, a request's origin goes through: proxies the caller
//! configured, and the environment's (`HTTP_PROXY`, `HTTPS_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, lower case first, as curl and Go read them).
//!
//! The choice is made once per origin, when its pool is created, so a
//! tunnel or a proxied connection is never reused for another origin: each
//! origin has a pool of its own.

use std::net::IpAddr;

use http::HeaderValue;
use percent_encoding::percent_decode_str;

use crate::error::{Error, ErrorKind};

/// A proxy for some or all of a client's requests.
///
/// The proxy URL's scheme says how to speak to it: `http://` (an HTTP
/// proxy: `http` requests are forwarded in absolute form, `https` ones go
/// through a `CONNECT` tunnel), `https://` (the same over TLS to the proxy,
/// verified with the client's roots for the proxy's name; an `https`
/// origin's TLS then runs inside it, end to end), `socks5://` (SOCKS5, names resolved here),
/// `socks5h://` (SOCKS5, names resolved by the proxy). Credentials in the
/// URL (`http://user:pass@proxy:3128`) are sent as `Proxy-Authorization:
/// Basic`, or as SOCKS5 username/password.
///
/// ```
/// use courier::{Client, Proxy};
/// let client = Client::builder()
///     .proxy(Proxy::https("http://squid.internal:3128")?.no_proxy("localhost,.svc,10.0.0.0/8"))
///     .build()?;
/// # Ok::<(), courier::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Proxy {
    applies_to: AppliesTo,
    endpoint: Endpoint,
    no_proxy: NoProxy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AppliesTo {
    All,
    Http,
    Https,
}

/// Where a proxy is and how to speak to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `https://`: TLS to the proxy (HTTP proxies only).
    pub(crate) tls: bool,
    pub(crate) kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Http {
        /// `Proxy-Authorization`, when the URL had credentials.
        auth: Option<HeaderValue>,
    },
    Socks5 {
        /// `socks5h`: the proxy resolves the name.
        remote_dns: bool,
        auth: Option<(String, String)>,
    },
}

impl Proxy {
    /// A proxy for every request.
    pub fn all(url: &str) -> Result<Proxy, Error> {
        Proxy::new(AppliesTo::All, url)
    }

    /// A proxy for `http://` requests only.
    pub fn http(url: &str) -> Result<Proxy, Error> {
        Proxy::new(AppliesTo::Http, url)
    }

    /// A proxy for `https://` requests only.
    pub fn https(url: &str) -> Result<Proxy, Error> {
        Proxy::new(AppliesTo::Https, url)
    }

    /// Hosts that bypass this proxy, in `NO_PROXY`'s syntax: a
    /// comma-separated list of host names (matching the name and its
    /// subdomains; a leading dot is allowed), IP addresses, CIDR blocks
    /// (`10.0.0.0/8`), or `*` for every host. An entry whose CIDR prefix is
    /// not digits up to the address's bits (`/+8`, `/33`) matches nothing,
    /// as in Go, with a warning.
    pub fn no_proxy(mut self, list: &str) -> Proxy {
        self.no_proxy = NoProxy::parse(list);
        self
    }

    fn new(applies_to: AppliesTo, url: &str) -> Result<Proxy, Error> {
        Ok(Proxy {
            applies_to,
            endpoint: Endpoint::parse(url)?,
            no_proxy: NoProxy::default(),
        })
    }

    /// Whether this proxy is for `https` (or `http`) URLs at all.
    pub(crate) fn applies(&self, https: bool) -> bool {
        match self.applies_to {
            AppliesTo::All => true,
            AppliesTo::Http => !https,
            AppliesTo::Https => https,
        }
    }

    /// The proxy `https` (or `http`) requests to `host` go through, if this one.
    pub(crate) fn endpoint_for(&self, https: bool, host: &str) -> Option<&Endpoint> {
        (self.applies(https) && !self.no_proxy.matches(host)).then_some(&self.endpoint)
    }

    /// The environment's proxies: `https_proxy`/`HTTPS_PROXY` for https,
    /// `http_proxy`/`HTTP_PROXY` for http (the upper-case one ignored when
    /// `REQUEST_METHOD` is set: in a CGI script it is the client's `Proxy:`
    /// header, "httpoxy"), `all_proxy`/`ALL_PROXY` for both, each with
    /// `no_proxy`/`NO_PROXY`. A variable that does not parse is skipped with
    /// a warning. A proxy URL without a scheme is taken as `http://`.
    pub(crate) fn from_env() -> Vec<Proxy> {
        Proxy::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Vec<Proxy> {
        let either = |lower: &str, upper: &str| get(lower).or_else(|| get(upper));
        let no_proxy = either("no_proxy", "NO_PROXY")
            .map(|l| NoProxy::parse(&l))
            .unwrap_or_default();
        let http = get("http_proxy").or_else(|| {
            // httpoxy: a CGI server sets HTTP_PROXY from the request's header.
            get("REQUEST_METHOD")
                .is_none()
                .then(|| get("HTTP_PROXY"))
                .flatten()
        });
        let mut proxies = Vec::new();
        for (applies_to, url) in [
            (AppliesTo::Https, either("https_proxy", "HTTPS_PROXY")),
            (AppliesTo::Http, http),
            (AppliesTo::All, either("all_proxy", "ALL_PROXY")),
        ] {
            let Some(url) = url else { continue };
            let url = if url.contains("://") {
                url
            } else {
                format!("http://{url}")
            };
            match Proxy::new(applies_to, &url) {
                Ok(p) => proxies.push(p.no_proxy_list(no_proxy.clone())),
                Err(e) => {
                    tracing::warn!(error = %format_args!("{e:#}"), "ignoring a proxy from the environment")
                }
            }
        }
        proxies
    }

    fn no_proxy_list(mut self, list: NoProxy) -> Proxy {
        self.no_proxy = list;
        self
    }
}

impl Endpoint {
    /// Parsed by `url` (WHATWG), as request URLs are: the port is digits
    /// only, the host is checked and normalised, credentials are
    /// percent-decoded.
    fn parse(text: &str) -> Result<Endpoint, Error> {
        let bad = |why: &str| Error::new(ErrorKind::Config, format!("proxy URL {text:?}: {why}"));
        let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
        let scheme = url.scheme();
        let (default_port, tls) = match scheme {
            "http" => (80, false),
            "https" => (443, true),
            "socks5" | "socks5h" => (1080, false),
            _ => return Err(bad("the scheme must be http, https, socks5 or socks5h")),
        };
        let host = match url.host() {
            Some(url::Host::Domain(name)) if !name.is_empty() => name.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err(bad("no host")),
        };
        let port = url.port().unwrap_or(default_port);
        let decoded = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        let credentials = match (url.username(), url.password()) {
            ("", None) => None,
            (user, pass) => Some((decoded(user), decoded(pass.unwrap_or_default()))),
        };
        let kind = if scheme.starts_with("http") {
            let auth = match credentials {
                Some((user, pass)) => {
                    let mut v = HeaderValue::try_from(crate::basic_auth::value(&user, &pass))
                        .map_err(|_| bad("bad credentials"))?;
                    v.set_sensitive(true);
                    Some(v)
                }
                None => None,
            };
            Kind::Http { auth }
        } else {
            if credentials
                .as_ref()
                .is_some_and(|(u, p)| u.len() > 255 || p.len() > 255)
            {
                return Err(bad("SOCKS5 credentials are at most 255 bytes each"));
            }
            Kind::Socks5 {
                remote_dns: scheme == "socks5h",
                auth: credentials,
            }
        };
        Ok(Endpoint {
            host,
            port,
            tls,
            kind,
        })
    }
}

/// `host[:port]` or `[v6][:port]`; the host with brackets stripped.
fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return Some((host, after.strip_prefix(':')));
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    (!host.is_empty()).then_some((host, port))
}

/// A CIDR block's prefix length: `1*3DIGIT` (`/+8` and `/ 8` are not one).
fn prefix_bits(text: &str) -> Option<u8> {
    let digits = !text.is_empty() && text.len() <= 3 && text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse().ok()).flatten()
}

/// A `NO_PROXY` list.
#[derive(Clone, Debug, Default)]
struct NoProxy {
    every_host: bool,
    domains: Vec<String>,
    nets: Vec<(IpAddr, u8)>,
}

impl NoProxy {
    fn parse(list: &str) -> NoProxy {
        let mut n = NoProxy::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                n.every_host = true;
                continue;
            }
            let (addr, bits) = match entry.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (entry, None),
            };
            let bare = addr.trim_start_matches('[').trim_end_matches(']');
            if let Ok(ip) = bare.parse::<IpAddr>() {
                let max = if ip.is_ipv4() { 32 } else { 128 };
                match bits.map(prefix_bits) {
                    None => n.nets.push((ip, max)),
                    Some(Some(bits)) if bits <= max => n.nets.push((ip, bits)),
                    // As Go's `net.ParseCIDR` refuses it: the entry matches nothing.
                    Some(_) => tracing::warn!(
                        entry,
                        "NO_PROXY: a CIDR prefix that is not 0 to {max}; the entry matches nothing"
                    ),
                }
                continue;
            }
            // A port in the entry is not matched: the host alone decides.
            let host = split_host_port(entry).map_or(entry, |(h, _)| h);
            n.domains
                .push(host.trim_start_matches('.').to_ascii_lowercase());
        }
        n
    }

    fn matches(&self, host: &str) -> bool {
        if self.every_host {
            return true;
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if let Ok(ip) = host.parse::<IpAddr>() {
            return self.nets.iter().any(|&(net, bits)| in_net(ip, net, bits));
        }
        self.domains.iter().any(|d| {
            host == *d
                || (host.len() > d.len() && host.ends_with(d.as_str()) && {
                    host.as_bytes()[host.len() - d.len() - 1] == b'.'
                })
        })
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Vec<Proxy> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Proxy::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn chosen(proxies: &[Proxy], https: bool, host: &str) -> Option<String> {
        proxies
            .iter()
            .find_map(|p| p.endpoint_for(https, host))
            .map(|e| format!("{}:{}", e.host, e.port))
    }

    #[test]
    fn urls_parse_with_their_kind_and_credentials() {
        let e = Endpoint::parse("http://u%40x:p%3Ass@proxy.local:3128").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("proxy.local", 3128));
        let Kind::Http { auth: Some(auth) } = e.kind else {
            panic!("{e:?}")
        };
        // base64("u@x:p:ss")
        assert_eq!(auth, "Basic dUB4OnA6c3M=");
        assert!(auth.is_sensitive());
        let e = Endpoint::parse("socks5h://[::1]").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 1080));
        assert_eq!(
            e.kind,
            Kind::Socks5 {
                remote_dns: true,
                auth: None
            }
        );
        let e = Endpoint::parse("https://u:p@proxy.local").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.tls), ("proxy.local", 443, true));
        assert!(matches!(e.kind, Kind::Http { auth: Some(_) }), "{e:?}");
        assert!(!Endpoint::parse("http://proxy.local").unwrap().tls);
        for bad in [
            "proxy:3128",
            "ftp://p",
            "https://",
            "http://",
            "http://p:x",
            "http://p:+8080",
            "http://p:-1",
            "http://p: 80",
            "http://p:65536",
            "socks5://p:+1080",
        ] {
            assert_eq!(
                Endpoint::parse(bad).unwrap_err().kind(),
                ErrorKind::Config,
                "{bad}"
            );
        }
    }

    #[test]
    fn no_proxy_matches_names_suffixes_ips_and_cidrs() {
        let n = NoProxy::parse(
            " localhost, .svc.cluster.local ,example.com:8080, 10.0.0.0/8, ::1 ,192.168.1.7",
        );
        for host in [
            "localhost",
            "a.svc.cluster.local",
            "svc.cluster.local",
            "example.com",
            "api.example.com",
            "10.1.2.3",
            "[::1]",
            "192.168.1.7",
            "LOCALHOST.",
        ] {
            assert!(n.matches(host), "{host}");
        }
        for host in [
            "notexample.com",
            "example.org",
            "11.0.0.1",
            "192.168.1.8",
            "[::2]",
            "cluster.local",
        ] {
            assert!(!n.matches(host), "{host}");
        }
        assert!(NoProxy::parse("*").matches("anything"));
    }

    /// A CIDR block's prefix is `1*3DIGIT` up to the address's bits, as Go's
    /// `net.ParseCIDR` takes it. Any other entry with a slash matches nothing:
    /// read as `/8`, `/+8` bypassed the proxy for a whole network the user
    /// never wrote; read as the bare address, `/x` bypassed it for one host.
    #[test]
    fn a_cidr_prefix_that_is_not_digits_matches_nothing() {
        let wide = NoProxy::parse("10.0.0.0/8, fd00::/8");
        assert!(wide.matches("10.9.9.9") && wide.matches("[fd00::1]"));
        for entry in [
            "10.0.0.0/+8",
            "10.0.0.0/ 8",
            "10.0.0.0/x",
            "10.0.0.0/",
            "10.0.0.0/33",
            "10.0.0.0/0008",
            "fd00::/+8",
            "fd00::/129",
            "[fd00::]/+8",
        ] {
            let n = NoProxy::parse(entry);
            for host in ["10.0.0.0", "10.9.9.9", "[fd00::]", "[fd00::1]"] {
                assert!(!n.matches(host), "{entry} matched {host}");
            }
        }
        assert!(!NoProxy::parse("").matches("anything"));
    }

    #[test]
    fn the_environment_is_read_lower_case_first() {
        let p = env(&[
            ("HTTP_PROXY", "http://upper:1"),
            ("http_proxy", "http://lower:2"),
            ("HTTPS_PROXY", "tunnel:3"),
            ("NO_PROXY", "internal"),
        ]);
        assert_eq!(chosen(&p, false, "example.com").as_deref(), Some("lower:2"));
        assert_eq!(chosen(&p, true, "example.com").as_deref(), Some("tunnel:3"));
        assert_eq!(chosen(&p, true, "a.internal"), None);
        let p = env(&[("ALL_PROXY", "socks5h://s:1080")]);
        assert_eq!(chosen(&p, false, "x").as_deref(), Some("s:1080"));
        assert_eq!(chosen(&p, true, "x").as_deref(), Some("s:1080"));
    }

    #[test]
    fn httpoxy_a_cgi_request_cannot_set_the_proxy() {
        let p = env(&[("HTTP_PROXY", "http://evil:1"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(chosen(&p, false, "example.com"), None);
        let p = env(&[("http_proxy", "http://ok:1"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(chosen(&p, false, "example.com").as_deref(), Some("ok:1"));
    }
}
