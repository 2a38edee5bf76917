//! The request side of a cluster: a request through the named client's
//! request-side layers (trace, total timeout, concurrency limit,
//! whole-request retry; see `layers.rs`) to the cluster's strategy, and
//! [`ClusterClient`] as a `tower::Service`.
//!
//! Why the request goes through as an `http::Request` with its target in
//! an extension: the layers are tower services over `http::Request`, and a
//! target relative to the replicas' path prefix (`invoices/42`) is no
//! `Uri`; the URI the layers see (and the request span shows) is the
//! target when it is a path (`/invoices/42`).

use std::str::FromStr;
use std::sync::Arc;

use http::uri::PathAndQuery;
use http::{Request, Uri};

use super::client::{ClusterClient, Inner};
use crate::body::Body;
use crate::client::response::Response;
use crate::error::Error;

/// What a request carries through the layers to the strategy.
#[derive(Clone)]
struct Target {
    text: Arc<str>,
}

/// The cluster's strategy as the innermost service of the request side.
#[derive(Clone)]
pub(super) struct Core(pub(super) Arc<Inner>);

crate::service::always_ready!(Core, |this, request| {
    let mut request = request;
    let target = match request.extensions_mut().remove::<Target>() {
        Some(t) => t.text.to_string(),
        None => path_of(request.uri()),
    };
    let inner = Arc::clone(&this.0);
    Box::pin(async move { super::send::send(&inner, request, target).await })
});

fn path_of(uri: &Uri) -> String {
    uri.path_and_query().map_or("/", |p| p.as_str()).to_owned()
}

impl ClusterClient {
    /// Sends `request` to the replicas at `target`, through the request-side
    /// layers if there are any.
    async fn dispatch_to(
        &self,
        mut request: Request<Body>,
        target: String,
    ) -> Result<Response, Error> {
        let Some(front) = &self.front else {
            return super::send::send(&self.inner, request, target).await;
        };
        if let Ok(path) = PathAndQuery::from_str(&target) {
            *request.uri_mut() = Uri::from(path);
        }
        request.extensions_mut().insert(Target {
            text: target.into(),
        });
        crate::service::call_stack(front, &self.inner.layers, request).await
    }

    /// Sends an `http::Request` whose URI is a path (`/invoices/42?x=1`),
    /// as [`RequestBuilder::send`](crate::RequestBuilder::send) would (what
    /// [`build`](crate::RequestBuilder::build) gives is sent the same way):
    /// a URI with a scheme or host fails with
    /// [`ErrorKind::InvalidUrl`](crate::ErrorKind::InvalidUrl). A
    /// [`RequestTimeout`](crate::RequestTimeout) extension replaces the
    /// cluster's timeout; a [`Deadline`](crate::middleware::Deadline)
    /// extension bounds the whole request.
    pub async fn execute(&self, mut request: Request<Body>) -> Result<Response, Error> {
        let target = super::request::target_of(&mut request)?;
        self.dispatch_to(request, target).await
    }
}

crate::service::always_ready!(
/// A cluster as a tower service (requests name a path, as for
/// [`ClusterClient::execute`]), so any tower layer can go around it.
/// `poll_ready` is always `Ready`: a concurrency limit in the cluster's
/// middleware is waited for inside the call, within the request's deadline.
ClusterClient, |this, request| {
    let this = this.clone();
    Box::pin(async move { this.execute(request).await })
});
