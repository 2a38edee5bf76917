//! `tower::Service` for [`Client`]: the request's timeout taken from its
//! extensions (a [`RequestTimeout`], a [`Deadline`] the stack set), so the
//! middleware above can bound a call.

use std::time::Duration;

use http::Request;

use crate::body::Body;
use crate::client::Client;
use crate::client::RequestTimeout;
use crate::middleware::Deadline;

use super::always_ready;

always_ready!(
/// `Client` as a tower service: `Response = courier::Response` (head now, body
/// streaming, drained on drop), `Error = courier::Error`.
///
/// `poll_ready` is always `Ready`: the pool has its own fair (FIFO) queue per
/// origin, bounded by `max_connections_per_host` and the request's timeout,
/// and a request waiting there is counted (`requests_queued`). To push back
/// on the layers outside, put a
/// [`ConcurrencyLimitLayer`](crate::middleware::ConcurrencyLimitLayer) in the
/// stack: its `poll_ready` is pending while the limit is full.
///
/// The request timeout is the request's [`RequestTimeout`] extension, else
/// the client's `timeout`, shortened by a [`Deadline`] request extension
/// when there is one (the total [`TimeoutLayer`](crate::middleware::TimeoutLayer)
/// sets it), and bounds the response body as well as the head.
Client, |this, req| {
    let client = this.clone();
    Box::pin(async move {
        let timeout = request_timeout(client.default_timeout(), &req);
        client.send(req, timeout).await
    })
});

fn request_timeout(default: Option<Duration>, req: &Request<Body>) -> Option<Duration> {
    // The request's own timeout replaces the client's (the deadline the
    // stack set from it is no later).
    let default = RequestTimeout::of(req).or(default);
    match req.extensions().get::<Deadline>() {
        Some(deadline) => {
            let left = deadline.remaining();
            Some(default.map_or(left, |d| d.min(left)))
        }
        None => default,
    }
}
