//! [`ClusterRequestBuilder`]: a request to a cluster, built as any courier
//! request, its target a path resolved against each replica it goes to.

use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request};

use super::client::ClusterClient;
use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::middleware::Idempotent;
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
    request: Result<Request<Body>, Error>,
    timeout: Option<Duration>,
}

impl ClusterRequestBuilder {
    pub(crate) fn new(cluster: ClusterClient, method: Method, target: &str) -> Self {
        let mut request = Request::new(Body::empty());
        *request.method_mut() = method;
        ClusterRequestBuilder {
            cluster,
            target: target.to_owned(),
            request: Ok(request),
            timeout: None,
        }
    }

    /// Adds a header; an invalid name or value fails the request with
    /// [`ErrorKind::InvalidRequest`].
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        if let Ok(req) = &mut self.request {
            let name = HeaderName::try_from(name).map_err(Into::into);
            let value = HeaderValue::try_from(value).map_err(Into::into);
            match name.and_then(|n| value.map(|v| (n, v))) {
                Ok((n, v)) => {
                    req.headers_mut().append(n, v);
                }
                Err(e) => self.request = Err(Error::new(ErrorKind::InvalidRequest, e)),
            }
        }
        self
    }

    /// Adds every header in `headers`.
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        if let Ok(req) = &mut self.request {
            req.headers_mut().extend(headers);
        }
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Body>) -> Self {
        if let Ok(req) = &mut self.request {
            *req.body_mut() = body.into();
        }
        self
    }

    /// Marks the request safe to send to several replicas whatever its method.
    pub fn idempotent(mut self) -> Self {
        if let Ok(req) = &mut self.request {
            req.extensions_mut().insert(Idempotent);
        }
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
        let request = self.request?;
        self.cluster.send(request, self.target, self.timeout).await
    }
}
