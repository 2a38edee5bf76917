//! The request extensions every client type reads the same way: a
//! request's own timeout and its "safe to replay" mark. Here, at the bottom
//! of the client types, so that the request builder they share can set
//! them and every layer above can read them.

use std::time::Duration;

use http::Request;

/// A request's own total timeout, which replaces the default of whatever
/// sends it (the client's `timeout`, a stack's total timeout, a cluster's
/// `timeout`); see [`RequestBuilder::timeout`](crate::RequestBuilder::timeout),
/// which [`build`](crate::RequestBuilder::build) turns into this extension.
/// The clock starts when the request is sent (`execute`, or a `tower`
/// service's `call`).
///
/// ```
/// use std::time::Duration;
/// let mut req = http::Request::get("http://example.test/").body(courier::Body::empty()).unwrap();
/// req.extensions_mut().insert(courier::RequestTimeout(Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeout(pub Duration);

impl RequestTimeout {
    /// The timeout `req` carries, if any.
    pub(crate) fn of<B>(req: &Request<B>) -> Option<Duration> {
        req.extensions().get::<RequestTimeout>().map(|t| t.0)
    }
}

/// Marks a request as safe to send more than once even though its method is
/// not idempotent (POST, PATCH), so the pool (after a reused connection
/// died unanswered), [`RetryLayer`](crate::middleware::RetryLayer),
/// [`HedgeLayer`](crate::middleware::HedgeLayer) and a cluster's strategy
/// may replay it. A request with an `Idempotency-Key` header counts as
/// marked too. [`RequestBuilder::idempotent`](crate::RequestBuilder::idempotent)
/// sets it.
///
/// ```
/// let mut req = http::Request::post("http://example.test/orders").body(courier::Body::from("{}")).unwrap();
/// req.extensions_mut().insert(courier::middleware::Idempotent);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Idempotent;
