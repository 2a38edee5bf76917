//! A `Set-Cookie` line made into a cookie for one request URL, or refused
//! (RFC 6265bis §5.6 and the steps of §5.7 that need no store): control
//! characters, size, expiry, the `Domain` attribute against the public
//! suffix list and the request's host, the path, `Secure`, the prefixes.

use std::time::{Duration, SystemTime};

use http::Uri;

use super::domain::{is_public_suffix, Host};

/// How far ahead a cookie may expire (RFC 6265bis §5.6.1: 400 days).
const MAX_LIFETIME: Duration = Duration::from_secs(400 * 24 * 3600);

/// Bytes of name and value together (RFC 6265bis §5.7 step 1).
pub(super) const MAX_NAME_VALUE: usize = 4096;

/// The longest attribute value taken (RFC 6265bis §5.6 step 8); a longer
/// `Path` is ignored, as if absent.
const MAX_ATTRIBUTE: usize = 1024;

/// The request a response answered.
pub(super) struct Origin<'a> {
    pub host: Host,
    pub secure: bool,
    pub path: &'a str,
}

impl Origin<'_> {
    pub(super) fn of(uri: &Uri) -> Option<Origin<'_>> {
        let host = Host::of(uri)?;
        // Loopback counts as secure, as in Chromium and Firefox: a plain
        // hop to a local sidecar (which speaks TLS onwards) keeps `Secure`
        // cookies working, and nothing on the network sees it.
        let secure = matches!(uri.scheme_str(), Some("https" | "wss")) || host.is_loopback();
        let path = match uri.path() {
            "" => "/",
            path => path,
        };
        Some(Origin { host, secure, path })
    }
}

/// A cookie to store (or, expired, to delete).
#[derive(Debug)]
pub(super) struct New {
    pub name: String,
    pub value: String,
    /// The host it was set for (host-only) or the domain it covers.
    pub domain: String,
    pub host_only: bool,
    pub path: String,
    pub secure: bool,
    /// `None`: a session cookie.
    pub expires: Option<SystemTime>,
    /// Its expiry has passed (`Max-Age=0`, a past `Expires`): a deletion.
    pub expired: bool,
}

/// Why a `Set-Cookie` was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Not `name=value`, or an empty name.
    Syntax,
    /// A control character other than a tab.
    Control,
    /// Name and value over 4096 bytes.
    TooLarge,
    /// A `Domain` the request's host is not in (another site, an address).
    Domain,
    /// A `Domain` that is a public suffix.
    PublicSuffix,
    /// `Secure` from a plain origin, or a plain origin's cookie that
    /// would overwrite or shadow a `Secure` one.
    Insecure,
    /// A `__Secure-` or `__Host-` name without what its prefix requires.
    Prefix,
    /// Past the response's count of `Set-Cookie` lines.
    TooMany,
}

pub(super) fn parse(line: &str, origin: &Origin<'_>, now: SystemTime) -> Result<New, Refused> {
    if line.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(Refused::Control);
    }
    let cookie = cookie::Cookie::parse(line).map_err(|_| Refused::Syntax)?;
    let (name, value) = (cookie.name(), cookie.value());
    if name.len() + value.len() > MAX_NAME_VALUE {
        return Err(Refused::TooLarge);
    }

    let (expires, expired) = expiry(&cookie, now);

    let attribute = cookie.domain().filter(|d| !d.is_empty());
    let (domain, host_only) = match attribute {
        None => (origin.host.key(), true),
        Some(value) => match (
            Host::of_attribute(value).ok_or(Refused::Domain)?,
            &origin.host,
        ) {
            (Host::Ip(ip), Host::Ip(host)) if ip == *host => (origin.host.key(), true),
            (Host::Name(name), Host::Name(host)) if is_public_suffix(&name) => {
                // A host that is itself a suffix may name itself: the
                // cookie is then its own (RFC 6265bis §5.7 step 9).
                if name != *host {
                    return Err(Refused::PublicSuffix);
                }
                (name, true)
            }
            (Host::Name(name), host @ Host::Name(_)) if host.domain_matches(&name) => (name, false),
            _ => return Err(Refused::Domain),
        },
    };

    let path = match cookie.path() {
        Some(p) if p.starts_with('/') && p.len() <= MAX_ATTRIBUTE => p.to_owned(),
        _ => default_path(origin.path).to_owned(),
    };

    let secure = cookie.secure() == Some(true);
    if secure && !origin.secure {
        return Err(Refused::Insecure);
    }
    let lower = name.get(..9).map(str::to_ascii_lowercase);
    if lower.as_deref() == Some("__secure-") && !secure {
        return Err(Refused::Prefix);
    }
    if name
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("__host-"))
        && !(secure && attribute.is_none() && cookie.path() == Some("/"))
    {
        return Err(Refused::Prefix);
    }

    Ok(New {
        name: name.to_owned(),
        value: value.to_owned(),
        domain,
        host_only,
        path,
        secure,
        expires,
        expired,
    })
}

/// The expiry (`Max-Age` before `Expires`, at most 400 days ahead), and
/// whether it has passed.
fn expiry(cookie: &cookie::Cookie<'_>, now: SystemTime) -> (Option<SystemTime>, bool) {
    let at = if let Some(age) = cookie.max_age() {
        let secs = age.whole_seconds();
        if secs <= 0 {
            return (Some(now), true);
        }
        now + Duration::from_secs(secs as u64).min(MAX_LIFETIME)
    } else if let Some(date) = cookie.expires_datetime() {
        let at = SystemTime::from(date);
        if at <= now {
            return (Some(at), true);
        }
        at.min(now + MAX_LIFETIME)
    } else {
        return (None, false);
    };
    (Some(at), false)
}

/// The directory of the request's path (RFC 6265bis §5.1.4).
fn default_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Whether a request's `path` path-matches a cookie's (RFC 6265bis §5.1.4):
/// equal, or the cookie's is a prefix ending at a `/` of the request's.
pub(super) fn path_matches(path: &str, cookie_path: &str) -> bool {
    path == cookie_path
        || (path.starts_with(cookie_path)
            && (cookie_path.ends_with('/') || path.as_bytes()[cookie_path.len()] == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(default_path("/a/b/c"), "/a/b");
        assert_eq!(default_path("/a"), "/");
        assert_eq!(default_path("/"), "/");
        assert!(path_matches("/foo/bar", "/foo"));
        assert!(path_matches("/foo/bar", "/foo/"));
        assert!(!path_matches("/foobar", "/foo"));
        assert!(!path_matches("/fo", "/foo"));
    }

    #[test]
    fn expiry_is_capped_at_400_days() {
        let uri: http::Uri = "http://example.com/".parse().unwrap();
        let origin = Origin::of(&uri).unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let far = parse("a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT", &origin, now).unwrap();
        assert_eq!(far.expires, Some(now + MAX_LIFETIME));
        let big = parse("a=1; Max-Age=99999999999999999999", &origin, now).unwrap();
        assert_eq!(big.expires, Some(now + MAX_LIFETIME));
        let soon = parse("a=1; Max-Age=60", &origin, now).unwrap();
        assert_eq!(soon.expires, Some(now + Duration::from_secs(60)));
        assert!(parse("a=1; Max-Age=0", &origin, now).unwrap().expired);
    }
}
