//! [`FollowRedirectLayer`]: following redirects (RFC 9110 §15.4) as a tower
//! layer. The following itself is the client's (`client/follow.rs`): a
//! plain [`Client`](crate::Client) follows with the same code by default.

use std::sync::Arc;

use http::header::HeaderName;
use http::Request;

use super::{call, Attempts, HttpService, ResponseFuture};
use crate::body::Body;
pub use crate::client::follow::Redirects;
use crate::client::follow::{self, FollowedAbove, Rules, Sent};
use crate::redirect::Policy;

/// Redirect settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedirectConfig {
    /// Redirects followed at most; the next one fails with
    /// [`ErrorKind::TooManyRedirects`](crate::ErrorKind::TooManyRedirects). Default: 10 (as Go and reqwest).
    pub max_redirects: usize,
    /// Follow a redirect from `https` to `http`. Default: off (an
    /// [`ErrorKind::Redirect`](crate::ErrorKind::Redirect) error instead).
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
            sensitive_headers: Rules::default_sensitive(),
        }
    }
}

setters!(RedirectConfig {
    max_redirects: usize,
    allow_https_to_http: bool,
    @list { sensitive_headers: HeaderName, }
});

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
///   request fails with [`ErrorKind::TooManyRedirects`](crate::ErrorKind::TooManyRedirects).
///
/// The response carries a [`Redirects`] extension.
///
/// Over a [`Client`](crate::Client), which follows redirects itself by
/// default, the layer is the one that follows: each request it sends tells
/// the client not to, so a redirect is followed once, with the layer's
/// settings, and each hop goes through the layers below it.
#[derive(Clone, Debug)]
pub struct FollowRedirectLayer {
    rules: Arc<Rules>,
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
            rules: Arc::new(Rules {
                policy: Policy::limited(config.max_redirects),
                allow_https_to_http: config.allow_https_to_http,
                sensitive: config.sensitive_headers.into(),
            }),
        }
    }

    /// Decides each redirect with `policy` instead of
    /// [`RedirectConfig::max_redirects`](RedirectConfig#structfield.max_redirects)
    /// (the safety rules still come first).
    pub fn policy(mut self, policy: Policy) -> Self {
        Arc::make_mut(&mut self.rules).policy = policy;
        self
    }
}

layer_service!(
    /// The service made by [`FollowRedirectLayer`].
    FollowRedirectLayer => FollowRedirect
);

impl FollowRedirectLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        // One follower per request: the client below leaves it to us.
        req.extensions_mut().insert(FollowedAbove);
        let mut inner = Attempts::new(inner);
        let rules = Arc::clone(&self.rules);
        Box::pin(async move {
            let sent = Sent::of(&req);
            let res = call(inner.next(), req).await?;
            if !follow::is_redirect(&res) {
                return Ok(res);
            }
            follow::follow(&rules, res, sent, |next| {
                let sent = Sent::of(&next);
                let hop = call(inner.next(), next);
                async move { Ok((hop.await?, sent)) }
            })
            .await
        })
    }
}

/// Resolves a URL reference against an absolute base; see `client/follow.rs`.
pub(crate) use crate::client::follow::resolve;
