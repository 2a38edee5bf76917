//! How one replica attempt is sent: on the client itself, or through the
//! named client's attempt-side middleware (`layers.rs`) down to it.
//!
//! Why two ways: without attempt layers an attempt is one `Client::send`,
//! with no boxing or extensions on the way (the cluster bench's path). With
//! them, the attempt carries the cluster's deadline as a [`Deadline`] (it
//! bounds the response body, and the deadline header tells it) and the
//! replica's share of the budget as the attempt's deadline (the header
//! tells the earlier of the two). Either way the attempt is a future the
//! strategy drops to cancel it: nothing here spawns, so dropping it drops
//! the client's request future (HTTP/2: the stream is reset; HTTP/1.1: the
//! pool closes the connection, whose request is half sent or unanswered).

use std::time::Duration;

use http::Request;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::body::Body;
use crate::client::response::Response;
use crate::client::Client;
use crate::error::Error;
use crate::middleware::{AttemptDeadline, BoxHttpService, Deadline};

/// The attempt side of a cluster.
pub(crate) enum Transport {
    /// Straight to the client.
    Client,
    /// Through these layers, down to [`AttemptSend`].
    Layers(BoxHttpService),
}

impl Transport {
    /// Sends `request` (its URI the replica's) on `client` or through the
    /// layers, within the cluster's `deadline`; `share` is the replica's
    /// part of it (the caller enforces it).
    pub(crate) async fn send(
        &self,
        client: &Client,
        mut request: Request<Body>,
        deadline: Instant,
        share: Duration,
    ) -> Result<Response, Error> {
        match self {
            Transport::Client => {
                let left = deadline.saturating_duration_since(Instant::now());
                client.clone().send(request, Some(left)).await
            }
            Transport::Layers(layers) => {
                let ext = request.extensions_mut();
                ext.insert(Deadline::from_tokio(deadline));
                let share_ends = Instant::now().checked_add(share).unwrap_or(deadline);
                ext.insert(AttemptDeadline(share_ends.min(deadline)));
                layers.clone().oneshot(request).await
            }
        }
    }
}

/// The innermost attempt service: the client, with the request's
/// [`Deadline`] as its timeout. Not `Client`'s own `tower::Service`, whose
/// timeout is the earlier of the deadline and the client's `timeout`: a
/// cluster's budget (its `timeout`, else the client's) replaces the
/// client's timeout, with or without layers.
#[derive(Clone)]
pub(crate) struct AttemptSend(pub(crate) Client);

crate::service::always_ready!(AttemptSend, |this, request| {
    let timeout = request
        .extensions()
        .get::<Deadline>()
        .map(|d| d.remaining())
        .or_else(|| this.0.default_timeout());
    Box::pin(this.0.clone().send(request, timeout))
});
