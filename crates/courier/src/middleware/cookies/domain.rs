//! Hosts as the jar sees them, the public suffix list, and domain matching
//! (RFC 6265bis §5.1.3). A host is a name or an IP address: an address
//! matches itself only, a name its parent domains up to, not including, a
//! public suffix.

use std::net::IpAddr;

use http::Uri;

/// A request's host, or a `Domain` attribute's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Host {
    /// Lowercase ASCII (IDNA applied), no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// The host of an absolute request URI.
    pub(super) fn of(uri: &Uri) -> Option<Host> {
        let host = uri.host()?;
        if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return v6.parse().ok().map(Host::Ip);
        }
        if let Ok(ip) = host.parse() {
            return Some(Host::Ip(ip));
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        (!name.is_empty()).then_some(Host::Name(name))
    }

    /// A `Domain` attribute (its leading dot already gone): `None` if it is
    /// no host at all.
    pub(super) fn of_attribute(value: &str) -> Option<Host> {
        match url::Host::parse(value.trim_end_matches('.')).ok()? {
            url::Host::Domain(name) if !name.is_empty() => Some(Host::Name(name)),
            url::Host::Domain(_) => None,
            url::Host::Ipv4(ip) => Some(Host::Ip(ip.into())),
            url::Host::Ipv6(ip) => Some(Host::Ip(ip.into())),
        }
    }

    /// An address of the loopback block, `localhost` or a name under it.
    pub(super) fn is_loopback(&self) -> bool {
        match self {
            Host::Ip(ip) => ip.is_loopback(),
            Host::Name(name) => name == "localhost" || name.ends_with(".localhost"),
        }
    }

    /// The form a cookie's domain is stored in.
    pub(super) fn key(&self) -> String {
        match self {
            Host::Name(name) => name.clone(),
            Host::Ip(ip) => ip.to_string(),
        }
    }

    /// The site a cookie for this host is counted under: the registrable
    /// domain (one label under the public suffix), or the host itself when
    /// it has none (an address, or a public suffix such as `localhost`).
    pub(super) fn site(&self) -> String {
        match self {
            Host::Name(name) => site_of(name).to_owned(),
            Host::Ip(ip) => ip.to_string(),
        }
    }

    /// Whether this host domain-matches a stored cookie domain.
    pub(super) fn domain_matches(&self, domain: &str) -> bool {
        match self {
            Host::Ip(ip) => ip.to_string() == domain,
            Host::Name(name) => is_subdomain(name, domain),
        }
    }
}

/// The registrable domain of `name`, or `name` itself if it has none.
pub(super) fn site_of(name: &str) -> &str {
    match psl::domain(name.as_bytes()) {
        Some(d) => &name[name.len() - d.as_bytes().len()..],
        None => name,
    }
}

/// Whether `name` is a public suffix: a rule of the list (ICANN's or a
/// private registry's, as browsers use both), or a last label no rule
/// names (the list's implicit `*`: `internal`, `localhost`).
pub(super) fn is_public_suffix(name: &str) -> bool {
    psl::suffix(name.as_bytes()).is_some_and(|s| s.as_bytes() == name.as_bytes())
}

/// `name` equals `domain` or ends with `.domain` (names only).
pub(super) fn is_subdomain(name: &str, domain: &str) -> bool {
    name == domain
        || (name.len() > domain.len()
            && name.ends_with(domain)
            && name.as_bytes()[name.len() - domain.len() - 1] == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_and_sites() {
        for suffix in [
            "com",
            "co.uk",
            "github.io",
            "b.kawasaki.jp",
            "internal",
            "localhost",
        ] {
            assert!(is_public_suffix(suffix), "{suffix}");
        }
        for name in [
            "example.com",
            "example.co.uk",
            "city.kawasaki.jp",
            "a.internal",
        ] {
            assert!(!is_public_suffix(name), "{name}");
        }
        assert_eq!(site_of("a.b.example.co.uk"), "example.co.uk");
        assert_eq!(site_of("co.uk"), "co.uk");
        assert_eq!(site_of("x.svc.cluster.local"), "cluster.local");
    }

    #[test]
    fn hosts() {
        let of = |s: &str| Host::of(&s.parse().unwrap());
        assert_eq!(
            of("http://[::1]:80/"),
            Some(Host::Ip([0u16, 0, 0, 0, 0, 0, 0, 1].into()))
        );
        assert_eq!(
            of("http://EXAMPLE.com./"),
            Some(Host::Name("example.com".into()))
        );
        assert_eq!(
            Host::of_attribute("0x7f.1"),
            Some(Host::Ip([127, 0, 0, 1].into()))
        );
        assert_eq!(Host::of_attribute("::1"), None);
        assert_eq!(Host::of_attribute("ex ample.com"), None);
        assert!(!is_subdomain("notexample.com", "example.com"));
        assert!(is_subdomain("a.example.com", "example.com"));
    }
}
