//! `--connect-to`: curl's `HOST:PORT:HOST2:PORT2` routes, turned into the library's per-host
//! address overrides (`ClientBuilder::resolve`).
//!
//! Why a module: the library pins a host (any port) to addresses, while curl's rule matches a
//! host and a port. The bench knows every URL it will request before it starts, so each rule is
//! evaluated against those URLs here: the result is exact for this run, and a route the
//! library cannot express (one host's ports going to different places) is refused with a reason
//! instead of being half applied. A rule that matches no URL is refused too: in a benchmark,
//! a typo must not send the load to the wrong server unnoticed.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;

use http::Uri;

use crate::error::{CliError, Result};

/// One rule: requests for `host:port` (either may be "any") connect to `to_host:to_port`
/// (either may be "the URL's").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectTo {
    host: Option<String>,
    port: Option<u16>,
    to_host: Option<String>,
    to_port: Option<u16>,
}

impl FromStr for ConnectTo {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let parts = split_outside_brackets(text.trim());
        let bad = |why: &str| {
            format!("--connect-to `{text}`: {why} (HOST:PORT:HOST2:PORT2 as curl, or HOST2:PORT2)")
        };
        let (host, port, to_host, to_port) = match parts.as_slice() {
            [to_host, to_port] if !to_host.is_empty() && !to_port.is_empty() => {
                ("", "", *to_host, *to_port)
            }
            [_, _] => return Err(bad("the short form needs a host and a port")),
            [host, port, to_host, to_port] => (*host, *port, *to_host, *to_port),
            _ => return Err(bad("expected 4 fields separated by `:`")),
        };
        let port_of = |p: &str| -> std::result::Result<Option<u16>, String> {
            if p.is_empty() {
                return Ok(None);
            }
            match p.parse::<u16>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(bad(&format!("`{p}` is not a port"))),
            }
        };
        let host_of = |h: &str| -> std::result::Result<Option<String>, String> {
            let bare = h.trim_start_matches('[').trim_end_matches(']');
            if bare.is_empty() {
                return Ok(None);
            }
            if bare.contains(['/', ' ', '@']) {
                return Err(bad(&format!("`{h}` is not a host")));
            }
            Ok(Some(bare.trim_end_matches('.').to_ascii_lowercase()))
        };
        Ok(Self {
            host: host_of(host)?,
            port: port_of(port)?,
            to_host: host_of(to_host)?,
            to_port: port_of(to_port)?,
        })
    }
}

/// Splits on `:` except inside `[...]` (IPv6 addresses).
fn split_outside_brackets(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0u32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                parts.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[from..]);
    parts
}

impl ConnectTo {
    fn matches(&self, host: &str, port: u16) -> bool {
        self.host.as_deref().is_none_or(|h| h == host) && self.port.is_none_or(|p| p == port)
    }
}

/// Where a host's connections go: the addresses to give `ClientBuilder::resolve` (a port of 0
/// keeps the URL's port).
pub type Pins = BTreeMap<String, Vec<SocketAddr>>;

/// Applies `rules` (as written, already checked) to the run's `uris`: for each host, the
/// addresses its connections go to. Hosts no rule matches are absent (they connect as usual).
pub fn pins(rules: &[String], uris: &[Uri]) -> Result<Pins> {
    pins_with(rules, uris, &|host, port| {
        (host, port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .map_err(|e| format!("cannot resolve {host}: {e}"))
    })
}

/// Where a destination (`None`: the URL's port) resolves to; one entry per address.
type Lookup<'a> = dyn Fn(&str, u16) -> std::result::Result<Vec<SocketAddr>, String> + 'a;

/// A URL port of a host and where its connections go (`None`: not rerouted).
type Seen = (u16, Option<Vec<SocketAddr>>);

fn pins_with(rules: &[String], uris: &[Uri], lookup: &Lookup<'_>) -> Result<Pins> {
    let rules = rules
        .iter()
        .map(|r| r.parse::<ConnectTo>().map(|rule| (r, rule)))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(CliError::new)?;
    // A rule that matches no URL (not one merely shadowed by an earlier rule) is a mistake.
    let mut matched = vec![false; rules.len()];
    let mut routes: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    for uri in uris {
        let Some(host) = uri.host() else { continue };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        for (i, (_, rule)) in rules.iter().enumerate() {
            matched[i] |= rule.matches(&host, port);
        }
        let seen = routes.entry(host.clone()).or_default();
        if seen.iter().any(|(p, _)| *p == port) {
            continue;
        }
        let target = match rules.iter().position(|(_, r)| r.matches(&host, port)) {
            Some(i) => {
                let rule = &rules[i].1;
                let to_host = rule.to_host.as_deref().unwrap_or(&host);
                // Port 0 stands for the URL's port: the pin then fits every port of the host.
                let to_port = rule.to_port.unwrap_or(0);
                let mut addrs = lookup(to_host, to_port)
                    .map_err(|e| CliError::new(format!("--connect-to {}: {e}", rules[i].0)))?;
                addrs.sort();
                addrs.dedup();
                Some(addrs)
            }
            None => None,
        };
        seen.push((port, target));
    }
    if let Some(i) = matched.iter().position(|m| !m) {
        return Err(CliError::new(format!(
            "--connect-to {} matches none of the URLs requested",
            rules[i].0
        )));
    }
    let mut pins = Pins::new();
    for (host, seen) in routes {
        let first = &seen[0].1;
        if seen.iter().any(|(_, target)| target != first) {
            return Err(CliError::new(format!(
                "--connect-to: the ports of {host} would go to different places; courier routes \
                 a host's connections one way (give one rule for the host, e.g. {host}::HOST2:)"
            )));
        }
        if let Some(addrs) = first {
            pins.insert(host, addrs.clone());
        }
    }
    Ok(pins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> ConnectTo {
        text.parse().unwrap()
    }

    /// A resolver that knows `localhost` and IP literals, so the tests need no DNS.
    fn lookup(host: &str, port: u16) -> std::result::Result<Vec<SocketAddr>, String> {
        match host {
            "localhost" => Ok(vec![([127, 0, 0, 1], port).into()]),
            ip => ip
                .parse::<std::net::IpAddr>()
                .map(|ip| vec![SocketAddr::new(ip, port)])
                .map_err(|_| format!("cannot resolve {ip}")),
        }
    }

    fn uris(list: &[&str]) -> Vec<Uri> {
        list.iter().map(|u| u.parse().unwrap()).collect()
    }

    fn pins_of(rules: &[&str], urls: &[&str]) -> Result<Pins> {
        let rules: Vec<String> = rules.iter().map(|r| (*r).to_owned()).collect();
        pins_with(&rules, &uris(urls), &lookup)
    }

    #[test]
    fn parses_curls_syntax_and_the_short_form() {
        let r = rule("example.com:443:127.0.0.1:8443");
        assert_eq!(r.host.as_deref(), Some("example.com"));
        assert_eq!((r.port, r.to_port), (Some(443), Some(8443)));
        let r = rule("::localhost:");
        assert_eq!((r.host, r.port, r.to_port), (None, None, None));
        assert_eq!(r.to_host.as_deref(), Some("localhost"));
        let r = rule("127.0.0.1:9000");
        assert_eq!(r.host, None);
        assert_eq!(r.to_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(r.to_port, Some(9000));
        let r = rule("[::1]:80:[::1]:8080");
        assert_eq!(r.host.as_deref(), Some("::1"));
        assert_eq!(r.to_host.as_deref(), Some("::1"));
        for bad in [
            "",
            "a",
            "a:b:c",
            "h:x:h2:1",
            "h:1:h2:70000",
            ":1",
            "h:0:h2:1",
            "a b:1",
        ] {
            assert!(
                bad.parse::<ConnectTo>().is_err(),
                "{bad:?} should be refused"
            );
        }
    }

    #[test]
    fn rules_become_per_host_pins() {
        let pins = pins_of(
            &["api.test:80:127.0.0.1:9000"],
            &["http://api.test/x", "http://other.test/"],
        )
        .unwrap();
        assert_eq!(pins.len(), 1);
        assert_eq!(pins["api.test"], [SocketAddr::from(([127, 0, 0, 1], 9000))]);
        // An empty port keeps the URL's: port 0 in the pin.
        let pins = pins_of(&["api.test::localhost:"], &["http://api.test:81/"]).unwrap();
        assert_eq!(pins["api.test"], [SocketAddr::from(([127, 0, 0, 1], 0))]);
        // The short form applies to every host.
        let pins = pins_of(&["127.0.0.1:9"], &["http://a.test/", "https://b.test/"]).unwrap();
        assert_eq!(pins.len(), 2);
        // The first matching rule wins, as in curl.
        let pins = pins_of(
            &["a.test:80:127.0.0.1:1", "a.test::127.0.0.1:2"],
            &["http://a.test/"],
        );
        assert_eq!(pins.unwrap()["a.test"][0].port(), 1);
    }

    #[test]
    fn refuses_what_it_cannot_route_and_rules_that_match_nothing() {
        let err = pins_of(&["a.test:80:127.0.0.1:1"], &["http://b.test/"]).unwrap_err();
        assert!(err.to_string().contains("matches none"), "{err}");
        let err = pins_of(
            &["a.test:80:127.0.0.1:1"],
            &["http://a.test/", "http://a.test:81/"],
        )
        .unwrap_err();
        assert!(err.to_string().contains("different places"), "{err}");
        let err = pins_of(&["a.test:80:nowhere.test:1"], &["http://a.test/"]).unwrap_err();
        assert!(err.to_string().contains("cannot resolve"), "{err}");
    }
}
