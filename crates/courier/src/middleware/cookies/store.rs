//! The cookies kept, grouped by site (registrable domain), with the caps
//! browsers keep: per site and in all, evicting the expired first, then
//! plain cookies before `Secure` ones (so a plain origin cannot flush a
//! secure one out), then the least recently used. What a request gets is
//! ordered as RFC 6265bis §5.8.3 says and bounded in bytes.

use std::collections::HashMap;
use std::time::SystemTime;

use super::domain::is_subdomain;
use super::limits::{CookieLimits, CookieStats};
use super::parse::{path_matches, New, Origin, Refused};

#[derive(Debug)]
struct Stored {
    name: String,
    value: String,
    domain: String,
    host_only: bool,
    path: String,
    secure: bool,
    expires: Option<SystemTime>,
    /// The store's clock when first set (kept across overwrites).
    created: u64,
    /// The store's clock when last set or sent.
    used: u64,
}

impl Stored {
    fn expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|at| at <= now)
    }

    /// What eviction takes first: expired, then plain, then least recent.
    fn victim_order(&self, now: SystemTime) -> (bool, bool, u64) {
        (!self.expired(now), self.secure, self.used)
    }

    fn applies_to(&self, origin: &Origin<'_>, now: SystemTime) -> bool {
        let domain = if self.host_only {
            origin.host.key() == self.domain
        } else {
            origin.host.domain_matches(&self.domain)
        };
        domain
            && path_matches(origin.path, &self.path)
            && (origin.secure || !self.secure)
            && !self.expired(now)
    }
}

#[derive(Debug, Default)]
pub(super) struct Store {
    sites: HashMap<String, Vec<Stored>>,
    total: usize,
    /// A logical clock: creation and use order, independent of wall time.
    clock: u64,
    pub(super) stats: CookieStats,
}

impl Store {
    /// Stores (or, expired, deletes) `new`, set by a response to `origin`.
    pub(super) fn insert(
        &mut self,
        new: New,
        origin: &Origin<'_>,
        limits: &CookieLimits,
        now: SystemTime,
    ) -> Result<(), Refused> {
        let site = origin.host.site();
        let cookies = self.sites.entry(site.clone()).or_default();
        // A plain origin may not overwrite, delete or shadow a `Secure`
        // cookie of the same name (RFC 6265bis §5.7 step 16).
        if !new.secure && !origin.secure {
            let shadows = cookies.iter().any(|old| {
                old.secure
                    && old.name == new.name
                    && (is_subdomain(&old.domain, &new.domain)
                        || is_subdomain(&new.domain, &old.domain))
                    && path_matches(&new.path, &old.path)
            });
            if shadows {
                self.drop_site_if_empty(&site);
                return Err(Refused::Insecure);
            }
        }
        self.clock += 1;
        let mut created = self.clock;
        if let Some(at) = cookies.iter().position(|old| {
            old.name == new.name
                && old.domain == new.domain
                && old.host_only == new.host_only
                && old.path == new.path
        }) {
            created = cookies.swap_remove(at).created;
            self.total -= 1;
        }
        if new.expired {
            self.drop_site_if_empty(&site);
            return Ok(());
        }
        cookies.push(Stored {
            name: new.name,
            value: new.value,
            domain: new.domain,
            host_only: new.host_only,
            path: new.path,
            secure: new.secure,
            expires: new.expires,
            created,
            used: self.clock,
        });
        self.total += 1;
        if cookies.len() > limits.per_site {
            let over = cookies.len() - limits.per_site;
            Self::evict(cookies, over, now);
            self.total -= over;
            self.stats.evicted += over as u64;
        }
        if self.total > limits.total {
            self.evict_anywhere(self.total - limits.total, now);
        }
        Ok(())
    }

    /// The `Cookie` header value for `origin`: its cookies, longest path
    /// first, then oldest first, as many as fit in `max_header` bytes.
    pub(super) fn header(
        &mut self,
        origin: &Origin<'_>,
        limits: &CookieLimits,
        now: SystemTime,
    ) -> Option<String> {
        let cookies = self.sites.get_mut(&origin.host.site())?;
        let mut matching: Vec<&mut Stored> = cookies
            .iter_mut()
            .filter(|c| c.applies_to(origin, now))
            .collect();
        matching.sort_by(|a, b| {
            b.path
                .len()
                .cmp(&a.path.len())
                .then(a.created.cmp(&b.created))
        });
        self.clock += 1;
        let mut out = String::new();
        let mut withheld = 0;
        for c in matching {
            let len = c.name.len() + 1 + c.value.len() + if out.is_empty() { 0 } else { 2 };
            if out.len() + len > limits.max_header {
                withheld += 1;
                continue;
            }
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(&c.name);
            out.push('=');
            out.push_str(&c.value);
            c.used = self.clock;
        }
        if withheld > 0 {
            self.stats.withheld += withheld;
            tracing::debug!(
                withheld,
                "cookies left out of a Cookie header over its bound"
            );
        }
        (!out.is_empty()).then_some(out)
    }

    /// The number of cookies kept (expired ones not yet evicted included).
    pub(super) fn len(&self) -> usize {
        self.total
    }

    /// Removes the `n` first victims of one site.
    fn evict(cookies: &mut Vec<Stored>, n: usize, now: SystemTime) {
        for _ in 0..n {
            if let Some(at) = (0..cookies.len()).min_by_key(|&i| cookies[i].victim_order(now)) {
                cookies.swap_remove(at);
            }
        }
        tracing::debug!(evicted = n, "cookies evicted over the per-site cap");
    }

    /// Removes every expired cookie, then the first victims over all sites
    /// until `n` are gone.
    fn evict_anywhere(&mut self, n: usize, now: SystemTime) {
        let mut gone = 0;
        for cookies in self.sites.values_mut() {
            let before = cookies.len();
            cookies.retain(|c| !c.expired(now));
            gone += before - cookies.len();
        }
        while gone < n {
            let victim = self
                .sites
                .iter()
                .flat_map(|(site, cookies)| {
                    cookies
                        .iter()
                        .enumerate()
                        .map(move |(i, c)| (c.victim_order(now), site, i))
                })
                .min();
            let Some((_, site, i)) = victim else { break };
            let site = site.clone();
            if let Some(cookies) = self.sites.get_mut(&site) {
                cookies.swap_remove(i);
            }
            gone += 1;
        }
        self.sites.retain(|_, cookies| !cookies.is_empty());
        self.total -= gone.min(self.total);
        self.stats.evicted += gone as u64;
        tracing::debug!(evicted = gone, "cookies evicted over the jar's cap");
    }

    fn drop_site_if_empty(&mut self, site: &str) {
        if self.sites.get(site).is_some_and(Vec::is_empty) {
            self.sites.remove(site);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::parse::parse;
    use super::*;

    fn set(store: &mut Store, line: &str, url: &str, limits: &CookieLimits, now: SystemTime) {
        let uri: http::Uri = url.parse().unwrap();
        let origin = Origin::of(&uri).unwrap();
        let new = parse(line, &origin, now).unwrap();
        store.insert(new, &origin, limits, now).unwrap();
    }

    #[test]
    fn the_expired_go_before_the_least_recently_used() {
        let limits = CookieLimits::default().per_site(3);
        let mut store = Store::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let url = "http://example.com/";
        set(&mut store, "old=1", url, &limits, t0);
        set(&mut store, "brief=1; Max-Age=10", url, &limits, t0);
        set(&mut store, "mid=1", url, &limits, t0);
        // Later, `brief` has expired: it goes, not `old`, the least recent.
        let t1 = t0 + Duration::from_secs(11);
        set(&mut store, "new=1", url, &limits, t1);
        let uri: http::Uri = url.parse().unwrap();
        let origin = Origin::of(&uri).unwrap();
        assert_eq!(
            store.header(&origin, &limits, t1).as_deref(),
            Some("old=1; mid=1; new=1")
        );
        assert_eq!(store.stats.evicted, 1);
    }

    #[test]
    fn plain_cookies_go_before_secure_ones() {
        let limits = CookieLimits::default().per_site(2);
        let mut store = Store::default();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        set(
            &mut store,
            "s=1; Secure",
            "https://example.com/",
            &limits,
            now,
        );
        for i in 0..5 {
            set(
                &mut store,
                &format!("p{i}=1"),
                "http://example.com/",
                &limits,
                now,
            );
        }
        let uri: http::Uri = "https://example.com/".parse().unwrap();
        let origin = Origin::of(&uri).unwrap();
        assert_eq!(
            store.header(&origin, &limits, now).as_deref(),
            Some("s=1; p4=1")
        );
    }
}

/// Random `Set-Cookie` lines from a hostile alphabet, for random origins:
/// nothing panics, and the counts and caps hold after every step.
#[cfg(test)]
mod random {
    use std::time::Duration;

    use super::super::parse::parse;
    use super::*;

    #[test]
    fn hostile_lines_keep_the_books() {
        const PARTS: &[&str] = &[
            "a",
            "b=",
            "=",
            ";",
            " ",
            "\t",
            "\u{1}",
            "é",
            "Domain=",
            "domain=.",
            "example.com",
            "co.uk",
            "com",
            "127.0.0.1",
            "[::1]",
            "Path=",
            "/",
            "/x",
            "Secure",
            "Max-Age=",
            "0",
            "-1",
            "99999999999",
            "Expires=",
            "Thu, 01 Jan 1970 00:00:00 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "__Host-",
            "__Secure-",
            "HttpOnly",
        ];
        const URLS: &[&str] = &[
            "http://example.com/",
            "https://www.example.com/x/y",
            "http://a.b.example.com/x",
            "http://co.uk/",
            "https://127.0.0.1/",
            "http://[::1]/a",
            "http://10.0.0.1/",
            "http://localhost/",
        ];
        let limits = CookieLimits::default().per_site(7).total(20).max_header(64);
        let mut store = Store::default();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for step in 0..20_000u64 {
            let now = t0 + Duration::from_secs(step);
            let line: String = (0..next(12)).map(|_| PARTS[next(PARTS.len())]).collect();
            let uri: http::Uri = URLS[next(URLS.len())].parse().unwrap();
            let origin = Origin::of(&uri).unwrap();
            if let Ok(new) = parse(&line, &origin, now) {
                let _ = store.insert(new, &origin, &limits, now);
            }
            let uri: http::Uri = URLS[next(URLS.len())].parse().unwrap();
            if let Some(header) = store.header(&Origin::of(&uri).unwrap(), &limits, now) {
                assert!(header.len() <= 64, "{header}");
            }
            let counted: usize = store.sites.values().map(Vec::len).sum();
            assert_eq!(store.total, counted, "step {step}: {line:?}");
            assert!(store.total <= 20);
            assert!(store.sites.values().all(|c| !c.is_empty() && c.len() <= 7));
        }
        // Not vacuous: cookies were kept, and caps were met.
        assert!(
            store.total > 0 && store.stats.evicted > 100,
            "{:?}",
            store.stats
        );
    }
}
