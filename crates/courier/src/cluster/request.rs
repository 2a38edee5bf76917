//! [`ClusterRequestBuilder`]: a request to a cluster, built as any courier
//! request, its target a path resolved against each replica it goes to.

use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Uri};

use super::client::ClusterClient;
use crate::body::Body;
use crate::error::Error;
use crate::middleware::Idempotent;
use crate::request::RequestBuilder;
use crate::response::Response;

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

    /// Adds a header; an invalid name or value fails the request with
    /// [`ErrorKind::InvalidRequest`](crate::ErrorKind::InvalidRequest).
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        self.builder = self.builder.header(name, value);
        self
    }

    /// Adds every header in `headers`.
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        self.builder = self.builder.headers(headers);
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Body>) -> Self {
        self.builder = self.builder.body(body);
        self
    }

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

    /// Sends the request: the accepted answer, or the last rejected one
    /// (a 503 response, an error) if no replica gave one.
    pub async fn send(self) -> Result<Response, Error> {
        let mut request = self.builder.build()?;
        if self.idempotent {
            request.extensions_mut().insert(Idempotent);
        }
        self.cluster.send(request, self.target, self.timeout).await
    }
}
