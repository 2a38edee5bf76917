//! HTTP/3 discovery by `Alt-Svc` (RFC 7838): the header's parser, a
//! per-origin cache of the alternatives it names (each until its `ma`), and
//! the alternatives that failed ("broken", with exponential backoff as
//! Chromium's `BrokenAlternativeServices`: 5 minutes, doubling, capped), so
//! a network that drops UDP costs one race, not every request.
//!
//! The peer writes the header, so everything it controls is bounded: the
//! value's length, the number of entries kept, the authority's length, the
//! parameters read per entry, and the origins the cache holds. Nothing here
//! does I/O or reads the clock: callers pass `now` (tokio's [`Instant`], so
//! the tests run on paused time).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// Longest `Alt-Svc` value read; a longer one is ignored whole (a server
/// has no need of more: Chromium's own are under 200 bytes).
pub(crate) const MAX_VALUE_LEN: usize = 2048;
/// Most alternatives kept from one value; later entries are ignored.
pub(crate) const MAX_ENTRIES: usize = 8;
/// Longest alternative host name (a DNS name is at most 253).
const MAX_HOST_LEN: usize = 253;
/// Most parameters read on one entry; the rest of the entry is skipped.
const MAX_PARAMS: usize = 8;
/// `ma` when absent: 24 hours (RFC 7838 §3.1).
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// Longest `ma` honoured: a week, so a typo of the server's does not pin
/// an alternative for years.
pub(crate) const MAX_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// One alternative service the origin named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alternative {
    /// The ALPN protocol id, percent-decoded (`h3`).
    pub(crate) protocol: String,
    /// The host to connect to; `None`: the origin's own.
    pub(crate) host: Option<String>,
    /// The UDP (for `h3`) port.
    pub(crate) port: u16,
    /// How long the alternative may be used (`ma`, bounded).
    pub(crate) max_age: Duration,
    /// `persist=1`: kept across network changes (we keep no state across
    /// networks anyway; parsed so the value is not mistaken).
    pub(crate) persist: bool,
}

/// A parsed `Alt-Svc` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AltSvc {
    /// `clear`: forget every alternative of the origin.
    Clear,
    /// The alternatives, in the server's order of preference (entries this
    /// parser cannot read are skipped, as RFC 7838 §3 asks).
    Services(Vec<Alternative>),
}

/// Why a value was not read at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Longer than [`MAX_VALUE_LEN`].
    TooLong,
    /// Not visible ASCII, or no entry could be read.
    Malformed,
}

/// Parses one `Alt-Svc` field value. Several field lines are one value
/// joined with `,` (as `HeaderMap::get_all` gives them, joined by the caller).
pub(crate) fn parse(value: &[u8]) -> Result<AltSvc, ParseError> {
    if value.len() > MAX_VALUE_LEN {
        return Err(ParseError::TooLong);
    }
    let text = std::str::from_utf8(value).map_err(|_| ParseError::Malformed)?;
    if !text
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return Err(ParseError::Malformed);
    }
    let trimmed = text.trim_matches([' ', '\t']);
    if trimmed == "clear" {
        return Ok(AltSvc::Clear);
    }
    let mut services = Vec::new();
    let mut any = false;
    let mut cursor = Cursor { rest: trimmed };
    loop {
        cursor.skip_ows();
        if cursor.rest.is_empty() {
            break;
        }
        if let Some(alt) = cursor.entry() {
            any = true;
            if let Some(alt) = alt {
                if services.len() < MAX_ENTRIES {
                    services.push(alt);
                }
            }
        }
        // Past this entry, to the next `,` outside quotes.
        if !cursor.skip_to_comma() {
            break;
        }
    }
    if !any && services.is_empty() {
        return Err(ParseError::Malformed);
    }
    Ok(AltSvc::Services(services))
}

/// A position in the value.
struct Cursor<'a> {
    rest: &'a str,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl<'a> Cursor<'a> {
    fn skip_ows(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.rest.as_bytes().first() == Some(&c) {
            self.rest = &self.rest[1..];
            true
        } else {
            false
        }
    }

    fn token(&mut self) -> Option<&'a str> {
        let n = self.rest.bytes().take_while(|b| is_tchar(*b)).count();
        (n > 0).then(|| {
            let (token, rest) = self.rest.split_at(n);
            self.rest = rest;
            token
        })
    }

    /// A quoted-string's content, unescaped; `None` if unterminated.
    fn quoted(&mut self) -> Option<String> {
        if !self.eat(b'"') {
            return None;
        }
        let mut out = String::new();
        let mut chars = self.rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = &self.rest[i + 1..];
                    return Some(out);
                }
                '\\' => out.push(chars.next()?.1),
                c => out.push(c),
            }
        }
        None
    }

    /// One `alt-value`: `Some(Some(_))` read, `Some(None)` well formed but
    /// not usable (a port of 0, a bad authority), `None` malformed.
    fn entry(&mut self) -> Option<Option<Alternative>> {
        let protocol = percent_decode(self.token()?)?;
        if !self.eat(b'=') {
            return None;
        }
        let authority = self.quoted()?;
        let mut alt = authority_of(&authority).map(|(host, port)| Alternative {
            protocol,
            host,
            port,
            max_age: DEFAULT_MAX_AGE,
            persist: false,
        });
        for _ in 0..MAX_PARAMS {
            self.skip_ows();
            if !self.eat(b';') {
                break;
            }
            self.skip_ows();
            let name = self.token()?;
            if !self.eat(b'=') {
                return None;
            }
            let value = match self.rest.as_bytes().first() {
                Some(b'"') => self.quoted()?,
                _ => self.token()?.to_owned(),
            };
            if let Some(alt) = alt.as_mut() {
                if name.eq_ignore_ascii_case("ma") {
                    // delta-seconds, digits only (`u64`'s parser would
                    // take a `+`); an unreadable one leaves the entry out.
                    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                        return Some(None);
                    }
                    // Past u64, all digits: more than a week anyway.
                    let secs = value.parse::<u64>().unwrap_or(u64::MAX);
                    alt.max_age = Duration::from_secs(secs).min(MAX_MAX_AGE);
                } else if name.eq_ignore_ascii_case("persist") {
                    alt.persist = value == "1";
                }
            }
        }
        Some(alt)
    }

    /// Moves past the next `,` that is not inside a quoted string; false
    /// at the end of the value.
    fn skip_to_comma(&mut self) -> bool {
        let mut quoted = false;
        let mut escaped = false;
        for (i, b) in self.rest.bytes().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                b',' if !quoted => {
                    self.rest = &self.rest[i + 1..];
                    return true;
                }
                _ => {}
            }
        }
        self.rest = "";
        false
    }
}

/// `h3`, or a percent-encoded protocol id (`w%3Dx%3Ay` is `w=x:y`). Each
/// `%` must start an escape of two hex digits, and the result be UTF-8.
fn percent_decode(token: &str) -> Option<String> {
    let escapes_hold = token
        .split('%')
        .skip(1)
        .all(|after| after.len() >= 2 && after.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit));
    let decoded = percent_encoding::percent_decode_str(token)
        .decode_utf8()
        .ok()?;
    escapes_hold.then(|| decoded.into_owned())
}

/// `[host]:port`: the host (`None` when empty: the origin's) and a
/// non-zero port.
fn authority_of(authority: &str) -> Option<(Option<String>, u16)> {
    let colon = authority.rfind(':')?;
    let (host, port) = (&authority[..colon], &authority[colon + 1..]);
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
    if host.is_empty() {
        return Some((None, port));
    }
    if host.len() > MAX_HOST_LEN {
        return None;
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let valid = match bare {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'),
    };
    valid.then(|| (Some(host.to_ascii_lowercase()), port))
}

/// What an origin may use instead of itself, until when.
#[derive(Debug, Clone)]
struct Known {
    alternatives: Vec<(Alternative, Instant)>,
}

/// Alternatives learnt from responses, per origin (`K`: the pool's origin
/// key), each until its `ma`. At most `max_origins`: a new origin past it
/// evicts the one whose alternatives expire first.
#[derive(Debug)]
pub(crate) struct AltSvcCache<K> {
    origins: HashMap<K, Known>,
    max_origins: usize,
}

impl<K: Hash + Eq + Clone> AltSvcCache<K> {
    pub(crate) fn new(max_origins: usize) -> Self {
        AltSvcCache {
            origins: HashMap::new(),
            max_origins: max_origins.max(1),
        }
    }

    /// Takes in an `Alt-Svc` value `origin` answered with. `clear` forgets
    /// the origin; a value naming alternatives replaces what was known (RFC
    /// 7838 §3: the newest header wins); only `h3` is kept. An unreadable
    /// value changes nothing.
    #[cfg(test)]
    pub(crate) fn learn(&mut self, origin: &K, value: &[u8], now: Instant) {
        self.learn_where(origin, value, now, |_| true);
    }

    /// [`learn`](Self::learn), keeping only the alternatives `usable`
    /// accepts (the client uses only its origin's own host): what is left
    /// replaces what was known, so a value naming none forgets the origin.
    pub(crate) fn learn_where(
        &mut self,
        origin: &K,
        value: &[u8],
        now: Instant,
        usable: impl Fn(&Alternative) -> bool,
    ) {
        let Ok(parsed) = parse(value) else {
            return;
        };
        let alternatives: Vec<_> = match parsed {
            AltSvc::Clear => Vec::new(),
            AltSvc::Services(services) => services
                .into_iter()
                .filter(|alt| alt.protocol == "h3" && !alt.max_age.is_zero() && usable(alt))
                .map(|alt| {
                    let until = now + alt.max_age;
                    (alt, until)
                })
                .collect(),
        };
        self.keep(origin, alternatives, now);
    }

    /// What `origin` offers now, whoever said so (`Alt-Svc`, or a DNS
    /// HTTPS record): it replaces what was known; none forgets the origin.
    pub(crate) fn keep(
        &mut self,
        origin: &K,
        alternatives: Vec<(Alternative, Instant)>,
        now: Instant,
    ) {
        if alternatives.is_empty() {
            self.origins.remove(origin);
            return;
        }
        if !self.origins.contains_key(origin) && self.origins.len() >= self.max_origins {
            self.evict(now);
        }
        self.origins.insert(origin.clone(), Known { alternatives });
    }

    /// The origin's preferred `h3` alternative still within its `ma`.
    pub(crate) fn get(&mut self, origin: &K, now: Instant) -> Option<&Alternative> {
        let known = self.origins.get_mut(origin)?;
        known.alternatives.retain(|(_, until)| *until > now);
        if known.alternatives.is_empty() {
            self.origins.remove(origin);
            return None;
        }
        self.origins
            .get(origin)
            .and_then(|k| k.alternatives.first())
            .map(|(alt, _)| alt)
    }

    /// Origins held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.origins.len()
    }

    /// Drops expired origins, then if still full the one expiring first.
    fn evict(&mut self, now: Instant) {
        self.origins
            .retain(|_, k| k.alternatives.iter().any(|(_, until)| *until > now));
        if self.origins.len() < self.max_origins {
            return;
        }
        let first = self
            .origins
            .iter()
            .min_by_key(|(_, k)| k.alternatives.iter().map(|(_, u)| *u).max())
            .map(|(key, _)| key.clone());
        if let Some(key) = first {
            self.origins.remove(&key);
        }
    }
}

/// The first delay an alternative stays broken (Chromium's
/// `kDefaultBrokenAlternativeProtocolDelay`).
pub(crate) const BROKEN_BASE: Duration = Duration::from_secs(5 * 60);
/// The longest (Chromium caps at two days).
pub(crate) const BROKEN_CAP: Duration = Duration::from_secs(48 * 3600);

/// One alternative's failures.
#[derive(Debug, Clone, Copy)]
struct Broken {
    /// Times marked broken since it last worked.
    count: u32,
    /// Not tried again before this.
    until: Instant,
}

/// Alternatives (`K`: origin and alternative) whose connection attempts
/// failed: not tried until a delay passes, 5 minutes doubling with each
/// failure up to [`BROKEN_CAP`]. Once the delay passes the alternative is
/// tried again but its count stays (Chromium's "recently broken"), so a
/// second failure waits twice as long; a success forgets it.
#[derive(Debug)]
pub(crate) struct BrokenAlternatives<K> {
    broken: HashMap<K, Broken>,
    max_entries: usize,
}

impl<K: Hash + Eq + Clone> BrokenAlternatives<K> {
    pub(crate) fn new(max_entries: usize) -> Self {
        BrokenAlternatives {
            broken: HashMap::new(),
            max_entries: max_entries.max(1),
        }
    }

    /// `key` failed (its attempt lost to TCP by failing, or timed out):
    /// broken until the returned instant. A failure while it is still
    /// broken is the same failure (attempts raced at once, one per dial
    /// the pool started together): it neither counts nor extends.
    pub(crate) fn mark_broken(&mut self, key: &K, now: Instant) -> Instant {
        if let Some(b) = self.broken.get(key).filter(|b| b.until > now) {
            return b.until;
        }
        if !self.broken.contains_key(key) && self.broken.len() >= self.max_entries {
            // Full: forget the one that comes back first.
            let first = self
                .broken
                .iter()
                .min_by_key(|(_, b)| b.until)
                .map(|(k, _)| k.clone());
            if let Some(k) = first {
                self.broken.remove(&k);
            }
        }
        let entry = self.broken.entry(key.clone()).or_insert(Broken {
            count: 0,
            until: now,
        });
        entry.count = entry.count.saturating_add(1);
        entry.until = now + backoff(entry.count);
        entry.until
    }

    /// Whether `key` is broken now (not to be tried).
    pub(crate) fn is_broken(&self, key: &K, now: Instant) -> bool {
        self.broken.get(key).is_some_and(|b| b.until > now)
    }

    /// `key` worked: forget its failures.
    pub(crate) fn confirm(&mut self, key: &K) {
        self.broken.remove(key);
    }
}

/// The delay after the `count`th failure in a row.
fn backoff(count: u32) -> Duration {
    // 5 min << 10 is past the cap already: no overflow to guard beyond it.
    let shift = count.saturating_sub(1).min(10);
    (BROKEN_BASE * (1u32 << shift)).min(BROKEN_CAP)
}

#[cfg(test)]
#[path = "alt_svc_tests.rs"]
mod tests;
