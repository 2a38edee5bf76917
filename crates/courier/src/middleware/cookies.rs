//! Cookies (RFC 6265bis): a jar that keeps what responses set
//! (`Set-Cookie`) and sends back what applies to each request (`Cookie`),
//! behind the `cookies` feature, as browsers do where it matters to a
//! client that may meet a hostile server:
//! - the public suffix list (the `psl` crate, released with the list): a
//!   response cannot set a cookie for all of `.com` or `.co.uk`, nor
//!   another site's domain; an IP address matches itself only;
//! - `Secure`: only a secure origin (`https`, or loopback, as browsers
//!   allow) sets one or is sent one, and a plain origin cannot overwrite,
//!   delete or shadow one; the `__Secure-` and `__Host-` prefixes;
//! - bounds ([`CookieLimits`]): cookies per site and in all (evicting the
//!   expired, then plain, then least recently used), each cookie's size,
//!   the `Set-Cookie` lines taken from one response, the `Cookie` header's
//!   bytes; what is dropped is counted ([`CookieJar::stats`]) and traced at
//!   debug level.
//!
//! In a [`Stack`](super::Stack) the layer sits below redirects, so every hop
//! stores what it set, for its own origin, before the next hop is sent, and
//! above retries, so an attempt sent again carries the same cookies.

mod domain;
mod limits;
mod parse;
mod store;

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderValue, Request, Uri};

pub use limits::{CookieLimits, CookieStats};
use parse::{Origin, Refused};
use store::Store;

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
/// let client = courier::ServiceClient::new(courier::Client::new(), &Stack::new().cookies(Arc::clone(&jar)));
/// assert_eq!(
///     jar.cookies(&"https://api.example/items".parse().unwrap()).unwrap(),
///     "session=abc"
/// );
/// ```
#[derive(Debug, Default)]
pub struct CookieJar {
    store: Mutex<Store>,
    limits: CookieLimits,
}

impl CookieJar {
    /// An empty jar with the default [`CookieLimits`].
    pub fn new() -> CookieJar {
        CookieJar::default()
    }

    /// An empty jar with these bounds.
    pub fn with_limits(limits: CookieLimits) -> CookieJar {
        CookieJar {
            store: Mutex::default(),
            limits,
        }
    }

    /// Stores a `Set-Cookie` value as if `url` had answered with it; a value
    /// that does not parse, or is not `url`'s to set, is ignored (and
    /// counted in [`CookieStats::refused`]).
    pub fn add(&self, set_cookie: &str, url: &Uri) {
        let Some(origin) = Origin::of(url) else {
            return;
        };
        let now = SystemTime::now();
        let parsed = parse::parse(set_cookie, &origin, now);
        let mut store = self.lock();
        let result = parsed.and_then(|new| store.insert(new, &origin, &self.limits, now));
        if let Err(why) = result {
            refuse(&mut store, why);
        }
    }

    /// The `Cookie` header value for a request to `url`, if any applies.
    pub fn cookies(&self, url: &Uri) -> Option<HeaderValue> {
        let origin = Origin::of(url)?;
        let value = self
            .lock()
            .header(&origin, &self.limits, SystemTime::now())?;
        // Names and values hold no control character (refused when set):
        // this does not fail.
        HeaderValue::try_from(value).ok()
    }

    /// What the jar holds and has dropped so far.
    pub fn stats(&self) -> CookieStats {
        let store = self.lock();
        CookieStats {
            cookies: store.len(),
            ..store.stats
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores a response's `Set-Cookie` lines, up to the per-response bound.
    fn store_response(&self, values: http::header::GetAll<'_, HeaderValue>, url: &Uri) {
        let mut over = 0u64;
        for (i, value) in values.into_iter().enumerate() {
            match value.to_str() {
                Ok(value) if i < self.limits.max_set_cookies => self.add(value, url),
                Ok(_) => over += 1,
                Err(_) => refuse(&mut self.lock(), Refused::Syntax),
            }
        }
        if over > 0 {
            let mut store = self.lock();
            store.stats.refused += over;
            tracing::debug!(
                refused = over,
                why = ?Refused::TooMany,
                "Set-Cookie lines past a response's bound"
            );
        }
    }
}

fn refuse(store: &mut Store, why: Refused) {
    store.stats.refused += 1;
    tracing::debug!(?why, "Set-Cookie refused");
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
            jar.store_response(res.headers().get_all(SET_COOKIE), &uri);
            Ok(res)
        })
    }
}
