//! Following redirects (RFC 9110 §15.4): the one implementation, used by a
//! plain [`Client`](crate::Client) (its [`redirect::Policy`](crate::redirect::Policy))
//! and by [`FollowRedirectLayer`](crate::middleware::FollowRedirectLayer).
//!
//! What a hop needs of the request it follows (method, headers, extensions,
//! a body to send again) is a [`Sent`]: the client gets it back from the
//! protocol with the answer, so a response that is no redirect cost nothing
//! more than before; a layer above the client copies it before each hop.
//!
//! The rules, whoever follows:
//! - 303 turns any method but HEAD into GET; 301 and 302 turn POST into GET;
//!   the body and its `content-*` headers are dropped then. 307 and 308 keep
//!   method and body, which must be whole (buffered): with a streamed body
//!   the 307/308 response itself is returned.
//! - A hop to another origin (scheme, host, port) drops the sensitive
//!   headers and `host` from the request and withholds the client's default
//!   headers of those names ([`WithheldDefaults`]) for the rest of the chain.
//! - `https` to `http` is refused unless allowed; schemes other than `http`
//!   and `https` are refused, and so is a `Location` with credentials, a
//!   backslash, or `Location` fields that disagree.
//! - A `Location` is read with the WHATWG URL rules (the `url` crate):
//!   spaces and non-ASCII text are percent-encoded, IDNA hosts become
//!   punycode, tabs and newlines inside are removed, so what goes on the
//!   wire is always a well-formed request target.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use url::Url;

use crate::body::Body;
use crate::client::response::Response;
use crate::config::WithheldDefaults;
use crate::error::{Error, ErrorKind};
use crate::redirect::{ActionKind, Attempt, Policy};

/// A request extension: the client below does not follow this request's
/// redirects, because a redirect layer above it does (one follower per
/// request: two would follow twice, or the client's policy would hide the
/// layer's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FollowedAbove;

/// How redirects are followed: a client's or a layer's.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    pub(crate) policy: Policy,
    pub(crate) allow_https_to_http: bool,
    /// Removed from a request that crosses origins, and withheld from the
    /// client's default headers.
    pub(crate) sensitive: Arc<[HeaderName]>,
}

impl Rules {
    /// reqwest's list of sensitive headers.
    pub(crate) fn default_sensitive() -> Vec<HeaderName> {
        vec![
            header::AUTHORIZATION,
            header::COOKIE,
            header::PROXY_AUTHORIZATION,
            header::WWW_AUTHENTICATE,
        ]
    }
}

pub(crate) use crate::proto::exchange::Sent;

impl Sent {
    /// A copy of `req`'s parts, for a follower above the client.
    pub(crate) fn of(req: &Request<Body>) -> Sent {
        Sent {
            method: req.method().clone(),
            version: req.version(),
            headers: req.headers().clone(),
            extensions: req.extensions().clone(),
            body: req.body().try_clone(),
        }
    }
}

/// Whether `res` is a redirect to follow (a status that redirects, with a
/// `Location`): the one test on the hot path.
pub(crate) fn is_redirect(res: &Response) -> bool {
    matches!(
        res.status(),
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    ) && res.headers().contains_key(header::LOCATION)
}

/// Follows `res` (whose request was `sent`) and the redirects after it;
/// `send` sends a hop and gives back its response and what it sent.
pub(crate) async fn follow<F, Fut>(
    rules: &Rules,
    mut res: Response,
    mut sent: Sent,
    mut send: F,
) -> Result<Response, Error>
where
    F: FnMut(Request<Body>) -> Fut,
    Fut: Future<Output = Result<(Response, Sent), Error>>,
{
    let mut chain: Vec<Uri> = Vec::new();
    let mut previous: Vec<Url> = Vec::new();
    loop {
        if !is_redirect(&res) {
            break;
        }
        let Some(next) = next_hop(rules, &mut chain, &mut previous, &res, sent)? else {
            break;
        };
        tracing::debug!(status = res.status().as_u16(), location = %next.uri(), "following redirect");
        // The redirect's own body is drained in the background.
        drop(res);
        (res, sent) = send(next).await?;
    }
    if !chain.is_empty() {
        res.extensions_mut().insert(Redirects { chain });
    }
    Ok(res)
}

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

/// The request for the hop `res` redirects to, `None` to return `res`.
fn next_hop(
    rules: &Rules,
    chain: &mut Vec<Uri>,
    previous: &mut Vec<Url>,
    res: &Response,
    sent: Sent,
) -> Result<Option<Request<Body>>, Error> {
    let status = res.status();
    let uri = res.uri();
    let mut locations = res.headers().get_all(header::LOCATION).iter();
    let location = locations.next().expect("checked by is_redirect");
    // Location is one URL (RFC 9110 §10.2.2): fields that disagree leave
    // which one is meant to whoever reads them.
    if locations.any(|other| other != location) {
        return Err(refused(format!(
            "a {} response with Location fields that disagree",
            status.as_u16()
        )));
    }
    let (next_url, next) = parse_location(uri, location, status)?;
    if previous.is_empty() {
        previous.push(to_url(uri)?);
    }
    let action = rules.policy.redirect(Attempt {
        status,
        next: &next_url,
        previous,
    });
    match action.kind {
        ActionKind::Follow => {}
        ActionKind::Stop => return Ok(None),
        ActionKind::Error(e) => return Err(Error::new(ErrorKind::Redirect, e)),
        ActionKind::TooMany => {
            let looped = chain.contains(&next) || next == *uri;
            return Err(Error::new(
                ErrorKind::TooManyRedirects,
                TooMany {
                    redirects: chain.len(),
                    location: next,
                    looped,
                },
            ));
        }
    }
    match next.scheme_str() {
        Some("https") => {}
        Some("http") if uri.scheme_str() != Some("https") => {}
        Some("http") if rules.allow_https_to_http => {}
        Some("http") => {
            return Err(refused(format!(
                "redirect from https to http refused ({next})"
            )))
        }
        _ => return Err(refused(format!("redirect to unsupported URL {next}"))),
    }
    let Sent {
        method,
        version,
        mut headers,
        mut extensions,
        body,
    } = sent;
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
            None => return Ok(None),
        }
    } else {
        for h in &CONTENT_HEADERS {
            headers.remove(h);
        }
        Body::empty()
    };
    if !same_origin(uri, &next) {
        headers.remove(header::HOST);
        for h in rules.sensitive.iter() {
            headers.remove(h);
        }
        // The client's default headers are written below: withhold the
        // same names from them, for the rest of the chain.
        let mut withheld: Vec<HeaderName> = WithheldDefaults::of(&extensions).to_vec();
        withheld.extend(rules.sensitive.iter().cloned());
        extensions.insert(WithheldDefaults(withheld.into()));
    }
    let mut next_req = Request::new(next_body);
    *next_req.method_mut() = next_method;
    *next_req.uri_mut() = next.clone();
    *next_req.version_mut() = version;
    *next_req.headers_mut() = headers;
    *next_req.extensions_mut() = extensions;
    chain.push(next);
    previous.push(next_url);
    Ok(Some(next_req))
}

const CONTENT_HEADERS: [HeaderName; 5] = [
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::TRANSFER_ENCODING,
];

/// `uri` as a WHATWG URL (for a policy to read).
fn to_url(uri: &Uri) -> Result<Url, Error> {
    Url::parse(&uri.to_string()).map_err(|e| Error::new(ErrorKind::InvalidUrl, e))
}

/// The `Location` resolved against the URL that answered, with the WHATWG
/// rules, refusing the forms that read differently to different parsers:
/// credentials in the URL (the server would choose what the next request
/// authenticates with; requests refuses them too), and a backslash, which
/// WHATWG and browsers read as `/` (`/\evil` is `//evil`, another host)
/// and RFC 3986 does not allow at all.
fn parse_location(
    base: &Uri,
    location: &HeaderValue,
    status: StatusCode,
) -> Result<(Url, Uri), Error> {
    let invalid = |why: &dyn fmt::Display| {
        refused(format!(
            "invalid Location {:?} in a {} response: {why}",
            String::from_utf8_lossy(location.as_bytes()),
            status.as_u16()
        ))
    };
    let bytes = location.as_bytes();
    if bytes.contains(&b'\\') {
        return Err(refused(
            "a Location with a backslash is refused (read as '/' by browsers, invalid in a URL)"
                .into(),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| invalid(&e))?;
    let base = to_url(base)?;
    let mut next = base.join(text).map_err(|e| invalid(&e))?;
    next.set_fragment(None);
    if !next.username().is_empty() || next.password().is_some() {
        return Err(refused(format!(
            "a redirect to a URL with credentials is refused ({}://…@{})",
            next.scheme(),
            next.host_str().unwrap_or_default()
        )));
    }
    if !matches!(next.scheme(), "http" | "https") {
        return Err(refused(format!(
            "redirect to unsupported URL {}:…",
            next.scheme()
        )));
    }
    let uri = crate::client::request::url_to_uri(&next).map_err(|e| invalid(&e))?;
    Ok((next, uri))
}

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

/// Resolves a URL reference against an absolute base with the WHATWG rules
/// (which include RFC 3986 §5.2's), for a service's base URL and a
/// cluster's replicas. The fragment is dropped; `None` if the result is no
/// `http`/`https` URL with a host.
pub(crate) fn resolve(base: &Uri, reference: &str) -> Option<Uri> {
    let base = to_url(base).ok()?;
    let mut url = base.join(reference).ok()?;
    url.set_fragment(None);
    url.host_str()?;
    crate::client::request::url_to_uri(&url).ok()
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
    fn whatwg_forms_become_well_formed_targets() {
        let base = "http://a/b/";
        assert_eq!(r(base, "/go od"), "http://a/go%20od");
        assert_eq!(r(base, "/g\u{f6}\u{f6}d"), "http://a/g%C3%B6%C3%B6d");
        assert_eq!(r(base, "/go\tod"), "http://a/good");
        assert_eq!(r(base, "/go\nod"), "http://a/good");
        assert_eq!(r(base, "  /good \t "), "http://a/good");
        assert_eq!(
            r(base, "http://b\u{fc}cher.example/"),
            "http://xn--bcher-kva.example/"
        );
        // A label over 63 bytes, or a name over 253, is no DNS name;
        // punycode that does not decode is no IDNA name.
        let long = format!("http://{}\u{fc}.example/", "a".repeat(70));
        assert_eq!(r(base, &long), "<none>");
        let long = format!("http://{}example/", "abcdefghi.".repeat(26));
        assert_eq!(r(base, &long), "<none>");
        assert_eq!(r(base, "http://xn--a.test/"), "<none>");
        // Mixed scripts stay what they are, in punycode: never the
        // Latin look-alike.
        assert_eq!(
            r(base, "http://p\u{430}ypal.test/"),
            "http://xn--pypal-4ve.test/"
        );
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
