//! Cookies (RFC 6265): a jar that keeps what responses set (`Set-Cookie`)
//! and sends back what applies to each request (`Cookie`), behind the
//! `cookies` feature. The jar is the `cookie_store` crate's (what reqwest
//! uses): domain and path matching, expiry, `Secure`, and the public suffix
//! list, so a response cannot set a cookie for all of `.com`.
//!
//! In a [`Stack`](super::Stack) the layer sits below redirects, so every hop
//! stores what it set before the next hop is sent, and above retries, so an
//! attempt sent again carries the same cookies.

use std::sync::{Arc, Mutex};

use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderValue, Request, Uri};

use super::{call, HttpService, ResponseFuture};
use crate::body::Body;

/// A cookie jar, shared by the services (and clients) given it.
///
/// ```
/// use std::sync::Arc;
/// use courier::middleware::{CookieJar, Stack};
///
/// let jar = Arc::new(CookieJar::new());
/// jar.add("session=abc; Path=/", &"https://api.example/".parse().unwrap());
/// let client = Stack::new().cookies(Arc::clone(&jar)).client(courier::Client::new());
/// assert_eq!(
///     jar.cookies(&"https://api.example/items".parse().unwrap()).unwrap(),
///     "session=abc"
/// );
/// ```
#[derive(Debug, Default)]
pub struct CookieJar {
    store: Mutex<cookie_store::CookieStore>,
}

impl CookieJar {
    /// An empty jar.
    pub fn new() -> CookieJar {
        CookieJar::default()
    }

    /// Stores a `Set-Cookie` value as if `url` had answered with it; a value
    /// that does not parse, or is not `url`'s to set, is ignored.
    pub fn add(&self, set_cookie: &str, url: &Uri) {
        if let Some(url) = to_url(url) {
            let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
            // A refusal (another domain's cookie, a public suffix) is the
            // jar doing its job, not an error for the request.
            let _ = store.parse(set_cookie, &url);
        }
    }

    /// The `Cookie` header value for a request to `url`, if any applies.
    pub fn cookies(&self, url: &Uri) -> Option<HeaderValue> {
        let url = to_url(url)?;
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let value = store
            .get_request_values(&url)
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join("; ");
        drop(store);
        if value.is_empty() {
            return None;
        }
        HeaderValue::try_from(value).ok()
    }
}

fn to_url(uri: &Uri) -> Option<url::Url> {
    url::Url::parse(&uri.to_string()).ok()
}

/// Adds a [`CookieJar`] to a service.
#[derive(Debug, Clone)]
pub struct CookieLayer {
    jar: Arc<CookieJar>,
}

impl CookieLayer {
    /// Cookies kept in `jar`.
    pub fn new(jar: Arc<CookieJar>) -> CookieLayer {
        CookieLayer { jar }
    }
}

layer_service!(
    /// The service [`CookieLayer`] makes.
    CookieLayer => Cookies
);

impl CookieLayer {
    fn handle<S: HttpService>(&self, inner: S, mut req: Request<Body>) -> ResponseFuture {
        // A `Cookie` the caller set is theirs: the jar adds none then.
        if !req.headers().contains_key(COOKIE) {
            if let Some(value) = self.jar.cookies(req.uri()) {
                req.headers_mut().insert(COOKIE, value);
            }
        }
        let uri = req.uri().clone();
        let jar = Arc::clone(&self.jar);
        Box::pin(async move {
            let res = call(inner, req).await?;
            for value in res.headers().get_all(SET_COOKIE) {
                if let Ok(value) = value.to_str() {
                    jar.add(value, &uri);
                }
            }
            Ok(res)
        })
    }
}
