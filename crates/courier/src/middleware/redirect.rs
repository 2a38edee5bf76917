//! Following redirects (RFC 9110 §15.4).

use std::fmt;
use std::sync::Arc;

use http::header::{self, HeaderName};
use http::{Method, Request, StatusCode, Uri};

use super::{call, Attempts, HttpService, ResponseFuture};
use crate::body::Body;
use crate::config::WithheldDefaults;
use crate::error::{Error, ErrorKind};

/// Redirect settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedirectConfig {
    /// Redirects followed at most; the next one fails with
    /// [`ErrorKind::TooManyRedirects`]. Default: 10 (as Go and reqwest).
    pub max_redirects: usize,
    /// Follow a redirect from `https` to `http`. Default: off (an
    /// [`ErrorKind::Redirect`] error instead).
    pub allow_https_to_http: bool,
    /// Headers removed when a redirect leads to another origin (scheme, host
    /// or port): from the request, and from the client's default headers,
    /// which are written below this layer (see [`FollowRedirectLayer`]).
    /// Default: `authorization`, `cookie`, `proxy-authorization`,
    /// `www-authenticate` (reqwest's list; and `host` always).
    pub sensitive_headers: Vec<HeaderName>,
}

impl Default for RedirectConfig {
    fn default() -> Self {
        RedirectConfig {
            max_redirects: 10,
            allow_https_to_http: false,
            sensitive_headers: vec![
                header::AUTHORIZATION,
                header::COOKIE,
                header::PROXY_AUTHORIZATION,
                header::WWW_AUTHENTICATE,
            ],
        }
    }
}

setters!(RedirectConfig {
    max_redirects: usize,
    allow_https_to_http: bool,
    @list { sensitive_headers: HeaderName, }
});

/// Response extension: the URLs requested after the original one, in order
/// (the last is where the response came from). Present when at least one
/// redirect was followed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Redirects {
    /// Every `Location` followed, resolved to an absolute URL.
    pub chain: Vec<Uri>,
}

impl Redirects {
    /// The URL the response came from.
    pub fn final_uri(&self) -> Option<&Uri> {
        self.chain.last()
    }
}

/// Follows 301, 302, 303, 307 and 308 responses that carry a `Location`.
///
/// - 303 turns any method but HEAD into GET; 301 and 302 turn POST into GET
///   (what every browser and client does, RFC 9110 §15.4.2); the body and its
///   `content-*` headers are dropped then. 307 and 308 keep the method and the
///   body, which must be buffered; with a streaming body the 307/308 response
///   itself is returned.
/// - Credentials stay with the origin they were sent to. An origin is
///   scheme, host and port (RFC 6454): a hop to another host, another port,
///   or another scheme (`http` to `https` as well as `https` to `http`, as
///   curl; reqwest and browsers do the same on default ports) sends the next
///   request without [`RedirectConfig::sensitive_headers`](RedirectConfig#structfield.sensitive_headers)
///   and `host`, wherever they came from: the request's own headers
///   (`basic_auth`, `bearer_auth`, `header`), a `ServiceClient`'s default
///   headers, and the [client's default headers](crate::ClientBuilder::default_headers),
///   which are written when the request goes out, below this layer, and
///   are withheld by name for the rest of the chain. Once dropped they stay
///   dropped, also on a hop back to the first origin (as reqwest; curl and
///   Go send them again there). A hop within the origin keeps them. Cookies
///   from a `CookieJar` (the `cookies` feature) are not headers of the request:
///   the jar, below this layer, picks them for each hop's URL. Proxy
///   credentials belong to the route, not the request: each hop's proxy (or
///   none) gets its own.
/// - `https` to `http` is refused unless allowed; other schemes (`file:`,
///   `data:`, `javascript:`, …) are refused, and so is a `Location` with
///   credentials in it (`http://user:pass@host/`) or a backslash, or
///   `Location` fields that disagree.
/// - Past [`RedirectConfig::max_redirects`](RedirectConfig#structfield.max_redirects) (a loop ends there too), the
///   request fails with [`ErrorKind::TooManyRedirects`].
///
/// The response carries a [`Redirects`] extension.
#[derive(Clone, Debug)]
pub struct FollowRedirectLayer {
    config: Arc<RedirectConfig>,
    /// `config.sensitive_headers`, shared by every request that crosses origins.
    withheld: Arc<[HeaderName]>,
}

impl Default for FollowRedirectLayer {
    fn default() -> Self {
        FollowRedirectLayer::new(RedirectConfig::default())
    }
}

impl FollowRedirectLayer {
    /// A layer with `config`.
    pub fn new(config: RedirectConfig) -> Self {
        FollowRedirectLayer {
            withheld: config.sensitive_headers.clone().into(),
            config: Arc::new(config),
        }
    }
}

layer_service!(
    /// The service made by [`FollowRedirectLayer`].
    FollowRedirectLayer => FollowRedirect
);

#[derive(Debug)]
struct TooMany {
    redirects: usize,
    location: Uri,
    looped: bool,
}

impl fmt::Display for TooMany {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stopped after {} redirects{} (next Location: {})",
            self.redirects,
            if self.looped { ", in a loop" } else { "" },
            self.location
        )
    }
}

impl std::error::Error for TooMany {}

#[derive(Debug)]
struct Refused(String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refused(why: String) -> Error {
    Error::new(ErrorKind::Redirect, Refused(why))
}

fn same_origin(a: &Uri, b: &Uri) -> bool {
    fn port(u: &Uri) -> Option<u16> {
        u.port_u16().or(match u.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        })
    }
    a.scheme() == b.scheme()
        && a.host().map(str::to_ascii_lowercase) == b.host().map(str::to_ascii_lowercase)
        && port(a) == port(b)
}

/// Refuses the Location forms that read differently to different parsers:
/// credentials in the URL (`http://user:pass@host/`, which would put the
/// server's choice of credentials on the next request, and which requests
/// refuse too), and a backslash, which browsers read as `/` (`/\evil` is
/// `//evil`, another host, to them) and RFC 3986 does not allow at all.
fn suspicious(location: &[u8], next: &Uri) -> Result<(), Error> {
    if next.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(refused(format!(
            "a redirect to a URL with credentials is refused ({}://…@{})",
            next.scheme_str().unwrap_or_default(),
            next.host().unwrap_or_default()
        )));
    }
    if location.contains(&b'\\') {
        return Err(refused(
            "a Location with a backslash is refused (read as '/' by browsers, invalid in a URL)"
                .into(),
        ));
    }
    Ok(())
}

const CONTENT_HEADERS: [HeaderName; 5] = [
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::TRANSFER_ENCODING,
];

impl FollowRedirectLayer {
    fn handle<S: HttpService>(&self, inner: S, req: Request<Body>) -> ResponseFuture {
        let mut inner = Attempts::new(inner);
        let config = self.config.clone();
        let withheld = Arc::clone(&self.withheld);
        Box::pin(async move {
            let mut chain: Vec<Uri> = Vec::new();
            let mut req = req;
            loop {
                let method = req.method().clone();
                let uri = req.uri().clone();
                let version = req.version();
                let mut headers = req.headers().clone();
                let extensions = req.extensions().clone();
                let body = req.body().try_clone();
                let mut res = call(inner.next(), req).await?;
                let status = res.status();
                let followed = matches!(
                    status,
                    StatusCode::MOVED_PERMANENTLY
                        | StatusCode::FOUND
                        | StatusCode::SEE_OTHER
                        | StatusCode::TEMPORARY_REDIRECT
                        | StatusCode::PERMANENT_REDIRECT
                );
                let mut locations = res.headers().get_all(header::LOCATION).iter();
                let location = locations.next().cloned();
                // Location is one URL (RFC 9110 §10.2.2): fields that
                // disagree leave which one is meant to whoever reads them.
                if followed && locations.any(|other| Some(other) != location.as_ref()) {
                    return Err(refused(format!(
                        "a {} response with Location fields that disagree",
                        status.as_u16()
                    )));
                }
                let (true, Some(location)) = (followed, location) else {
                    if !chain.is_empty() {
                        res.extensions_mut().insert(Redirects { chain });
                    }
                    return Ok(res);
                };
                let next = location
                    .to_str()
                    .ok()
                    .and_then(|l| resolve(&uri, l))
                    .ok_or_else(|| {
                        refused(format!(
                            "invalid Location {:?} in a {} response",
                            String::from_utf8_lossy(location.as_bytes()),
                            status.as_u16()
                        ))
                    })?;
                suspicious(location.as_bytes(), &next)?;
                if chain.len() >= config.max_redirects {
                    let looped = chain.contains(&next) || next == uri;
                    return Err(Error::new(
                        ErrorKind::TooManyRedirects,
                        TooMany {
                            redirects: chain.len(),
                            location: next,
                            looped,
                        },
                    ));
                }
                match next.scheme_str() {
                    Some("https") => {}
                    Some("http") if uri.scheme_str() != Some("https") => {}
                    Some("http") if config.allow_https_to_http => {}
                    Some("http") => {
                        return Err(refused(format!(
                            "redirect from https to http refused ({next})"
                        )))
                    }
                    _ => return Err(refused(format!("redirect to unsupported URL {next}"))),
                }
                let (next_method, keep_body) = match status {
                    StatusCode::SEE_OTHER if method == Method::HEAD => (Method::HEAD, false),
                    StatusCode::SEE_OTHER => (Method::GET, false),
                    StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND if method == Method::POST => {
                        (Method::GET, false)
                    }
                    _ => (method, true),
                };
                let next_body = if keep_body {
                    match body {
                        Some(body) => body,
                        // A streaming body was sent and cannot be sent again.
                        None => return Ok(res),
                    }
                } else {
                    for h in &CONTENT_HEADERS {
                        headers.remove(h);
                    }
                    Body::empty()
                };
                let mut extensions = extensions;
                if !same_origin(&uri, &next) {
                    headers.remove(header::HOST);
                    for h in &config.sensitive_headers {
                        headers.remove(h);
                    }
                    // The client's default headers are written below this
                    // layer: withhold the same names from them. Kept for
                    // the rest of the chain, as the removals are.
                    extensions.insert(WithheldDefaults(Arc::clone(&withheld)));
                }
                tracing::debug!(status = status.as_u16(), location = %next, "following redirect");
                // The redirect's own body is drained in the background.
                drop(res);
                let mut next_req = Request::new(next_body);
                *next_req.method_mut() = next_method;
                *next_req.uri_mut() = next.clone();
                *next_req.version_mut() = version;
                *next_req.headers_mut() = headers;
                *next_req.extensions_mut() = extensions;
                chain.push(next);
                req = next_req;
            }
        })
    }
}

/// Resolves a URI reference against an absolute base (RFC 3986 §5.2), for
/// `Location` headers and base URLs. The fragment is dropped.
pub(crate) fn resolve(base: &Uri, reference: &str) -> Option<Uri> {
    let reference = reference.split('#').next().unwrap_or("").trim();
    let has_scheme = reference.split_once(':').is_some_and(|(scheme, _)| {
        let mut chars = scheme.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if has_scheme {
        let uri: Uri = reference.parse().ok()?;
        uri.authority()?;
        return normalize(uri);
    }
    let scheme = base.scheme_str()?;
    let authority = base.authority()?.as_str();
    if let Some(rest) = reference.strip_prefix("//") {
        return normalize(format!("{scheme}://{rest}").parse().ok()?);
    }
    let (ref_path, ref_query) = match reference.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (reference, None),
    };
    let (path, query) = if ref_path.is_empty() {
        (base.path().to_owned(), ref_query.or(base.query()))
    } else if ref_path.starts_with('/') {
        (remove_dot_segments(ref_path), ref_query)
    } else {
        let base_path = base.path();
        let dir = match base_path.rfind('/') {
            Some(i) => &base_path[..=i],
            None => "/",
        };
        (remove_dot_segments(&format!("{dir}{ref_path}")), ref_query)
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out.parse().ok()
}

fn normalize(uri: Uri) -> Option<Uri> {
    let path = remove_dot_segments(uri.path());
    if path == uri.path() {
        return Some(uri);
    }
    let mut parts = uri.into_parts();
    let pq = match parts.path_and_query.as_ref().and_then(|pq| pq.query()) {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    parts.path_and_query = Some(pq.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// RFC 3986 §5.2.4.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if joined.starts_with('/') {
        joined
    } else {
        format!("/{joined}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(base: &str, reference: &str) -> String {
        resolve(&base.parse().unwrap(), reference)
            .map(|u| u.to_string())
            .unwrap_or_else(|| "<none>".into())
    }

    #[test]
    fn rfc3986_examples() {
        let base = "http://a/b/c/d;p?q";
        assert_eq!(r(base, "g"), "http://a/b/c/g");
        assert_eq!(r(base, "./g"), "http://a/b/c/g");
        assert_eq!(r(base, "g/"), "http://a/b/c/g/");
        assert_eq!(r(base, "/g"), "http://a/g");
        assert_eq!(r(base, "//g"), "http://g/");
        assert_eq!(r(base, "?y"), "http://a/b/c/d;p?y");
        assert_eq!(r(base, "g?y"), "http://a/b/c/g?y");
        assert_eq!(r(base, "#s"), "http://a/b/c/d;p?q");
        assert_eq!(r(base, ""), "http://a/b/c/d;p?q");
        assert_eq!(r(base, "."), "http://a/b/c/");
        assert_eq!(r(base, ".."), "http://a/b/");
        assert_eq!(r(base, "../g"), "http://a/b/g");
        assert_eq!(r(base, "../../g"), "http://a/g");
        assert_eq!(r(base, "../../../g"), "http://a/g");
        assert_eq!(r(base, "/./g"), "http://a/g");
        assert_eq!(r(base, "g/../h"), "http://a/b/c/h");
        assert_eq!(
            r(base, "https://other:8443/x/../y?z"),
            "https://other:8443/y?z"
        );
        assert_eq!(r(base, "mailto:x@y"), "<none>");
    }

    #[test]
    fn origins() {
        let a: Uri = "http://Example.test/a".parse().unwrap();
        assert!(same_origin(
            &a,
            &"http://example.test:80/b".parse().unwrap()
        ));
        assert!(!same_origin(&a, &"https://example.test/b".parse().unwrap()));
        assert!(!same_origin(
            &a,
            &"http://example.test:8080/b".parse().unwrap()
        ));
    }
}
