//! The jar's bounds and its counts. Every figure a server controls is
//! bounded: cookies per site and in all (Firefox's 180 and 3000; Chromium
//! keeps 180 and 3300), `Set-Cookie` lines taken from one response (50, as
//! curl), the `Cookie` header sent (8190 bytes, as curl: what common
//! servers take in one header line), and each cookie's name and value
//! (4096 bytes, RFC 6265bis, not configurable).

/// The bounds of a [`CookieJar`](super::CookieJar).
///
/// ```
/// use courier::middleware::{CookieJar, CookieLimits};
///
/// let jar = CookieJar::with_limits(CookieLimits::default().per_site(50).max_header(4096));
/// # let _ = jar;
/// ```
/// `#[non_exhaustive]`: build it from `Default` with the setters, named
/// after the fields; the fields are public to read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CookieLimits {
    /// See [`CookieLimits::per_site`].
    pub per_site: usize,
    /// See [`CookieLimits::total`].
    pub total: usize,
    /// See [`CookieLimits::max_header`].
    pub max_header: usize,
    /// See [`CookieLimits::max_set_cookies`].
    pub max_set_cookies: usize,
}

impl Default for CookieLimits {
    fn default() -> Self {
        CookieLimits {
            per_site: 180,
            total: 3000,
            max_header: 8190,
            max_set_cookies: 50,
        }
    }
}

impl CookieLimits {
    /// Cookies kept per site (registrable domain, e.g. `example.co.uk`,
    /// with all its subdomains; an IP address is a site of its own). Over
    /// it, the expired go first, then cookies without `Secure`, then the
    /// least recently set or sent. Default: 180. At least 1.
    pub fn per_site(mut self, n: usize) -> Self {
        self.per_site = n.max(1);
        self
    }

    /// Cookies kept in all, evicted in the same order. Default: 3000. At least 1.
    pub fn total(mut self, n: usize) -> Self {
        self.total = n.max(1);
        self
    }

    /// The most bytes of `Cookie` header a request carries: the cookies
    /// that apply go longest path first, then oldest first, and those that
    /// would pass the bound are left out (counted in
    /// [`CookieStats::withheld`]). Default: 8190.
    pub fn max_header(mut self, bytes: usize) -> Self {
        self.max_header = bytes;
        self
    }

    /// `Set-Cookie` lines taken from one response; the rest are refused.
    /// Default: 50.
    pub fn max_set_cookies(mut self, n: usize) -> Self {
        self.max_set_cookies = n;
        self
    }
}

/// What a [`CookieJar`](super::CookieJar) has kept and dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CookieStats {
    /// Cookies kept now.
    pub cookies: usize,
    /// `Set-Cookie` lines not stored: malformed, too large, for a domain
    /// not the response's (another site, a public suffix), breaking the
    /// `Secure` or prefix rules, or past a response's count.
    pub refused: u64,
    /// Cookies evicted over a cap.
    pub evicted: u64,
    /// Cookies that applied to a request but were left out of its `Cookie`
    /// header over its bound.
    pub withheld: u64,
}
