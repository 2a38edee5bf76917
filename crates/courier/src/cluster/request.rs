//! [`ClusterRequestBuilder`]: a request to a cluster, built as any courier
//! request, its target a path resolved against each replica it goes to.

use std::time::Duration;

use http::{Method, Uri};

use super::client::ClusterClient;
use crate::client::request::RequestBuilder;
use crate::client::response::Response;
use crate::error::Error;
use crate::middleware::Idempotent;

/// A request to a cluster; [`send`](Self::send) it.
///
/// Its body goes to a second replica only if it is buffered (bytes, a
/// string, JSON): a streamed body can be sent once, so such a request is
/// tried on one replica whatever the strategy.
#[must_use = "a request does nothing until it is sent"]
#[derive(Debug)]
pub struct ClusterRequestBuilder {
    cluster: ClusterClient,
    target: String,
    /// The request's method, headers and body, validated as any courier
    /// request's; its URI is the target's, resolved per replica at send.
    builder: RequestBuilder,
    idempotent: bool,
    timeout: Option<Duration>,
}

impl ClusterRequestBuilder {
    pub(crate) fn new(cluster: ClusterClient, method: Method, target: &str) -> Self {
        let builder =
            RequestBuilder::new(cluster.client().clone(), method, Ok(Uri::from_static("/")));
        ClusterRequestBuilder {
            cluster,
            target: target.to_owned(),
            builder,
            idempotent: false,
            timeout: None,
        }
    }

    // `header`, `headers`, `body`, `json`, `query`, `form`, the auth
    // helpers: as on any courier request (a query is added to the target).
    crate::client::request::forward_to_request_builder!();

    /// Marks the request safe to send to several replicas whatever its method.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// The whole budget of this request, over every replica it goes to
    /// (overrides the cluster's).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// A copy of this request (target, headers, body, idempotence,
    /// timeout); `None` for a streamed body or a builder holding an error,
    /// as [`RequestBuilder::try_clone`].
    ///
    /// ```no_run
    /// # async fn run(cluster: courier::cluster::ClusterClient) -> Result<(), courier::Error> {
    /// let request = cluster.post("/orders").body("{}").idempotent();
    /// let again = request.try_clone().expect("a buffered body");
    /// request.send().await?;
    /// again.send().await?;
    /// # Ok(()) }
    /// ```
    pub fn try_clone(&self) -> Option<ClusterRequestBuilder> {
        Some(ClusterRequestBuilder {
            cluster: self.cluster.clone(),
            target: self.target.clone(),
            builder: self.builder.try_clone()?,
            idempotent: self.idempotent,
            timeout: self.timeout,
        })
    }

    /// Sends the request: the accepted answer, or the last rejected one
    /// (a 503 response, an error) if no replica gave one.
    pub async fn send(self) -> Result<Response, Error> {
        let mut request = self.builder.build()?;
        if self.idempotent {
            request.extensions_mut().insert(Idempotent);
        }
        let mut target = self.target;
        // `query()` went to the stand-in URI: it belongs to the target.
        if let Some(query) = request.uri().query() {
            target.push(if target.contains('?') { '&' } else { '?' });
            target.push_str(query);
        }
        self.cluster.dispatch(request, target, self.timeout).await
    }
}
