//! [`ClusterRequestBuilder`]: a request to a cluster, the one courier
//! [`RequestBuilder`] over a [`ClusterClient`], its target a path resolved
//! against each replica it goes to.
//!
//! A target relative to the replicas' path prefix (`invoices/42`) is no
//! `Uri`: the request carries a stand-in `/` and the text in a
//! [`RelativeTarget`] extension, and the query the builder appends to the
//! stand-in goes to the text when it is sent.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Uri};

use super::client::ClusterClient;
use crate::body::Body;
use crate::client::request::{IntoUri, RequestBuilder, RequestSender};
use crate::client::response::Response;
use crate::client::RequestTimeout;
use crate::error::{Error, ErrorKind};

/// A request to a cluster; [`send`](RequestBuilder::send) it. The one
/// [`RequestBuilder`] type, over a [`ClusterClient`]: its target is a path
/// (`/invoices/42`, or `invoices/42` under the replicas' path prefix).
///
/// Its body goes to a second replica only if it is buffered (bytes, a
/// string, JSON): a streamed body can be sent once, so such a request is
/// tried on one replica whatever the strategy.
pub type ClusterRequestBuilder = RequestBuilder<ClusterClient>;

/// A target with no leading `/`, kept as text until it meets a replica.
#[derive(Clone, Debug)]
pub(super) struct RelativeTarget(pub(super) Arc<str>);

/// The cluster's builder for `target`: a path, absolute (`/a`) or relative
/// to the replicas' prefix (`a`); a URL with a scheme or host fails with
/// [`ErrorKind::InvalidUrl`] when sent.
pub(super) fn builder(
    cluster: ClusterClient,
    method: Method,
    target: impl IntoUri,
) -> ClusterRequestBuilder {
    let relative = target
        .as_reference()
        .filter(|t| !t.starts_with('/') && !t.contains("://"))
        .map(|t| RelativeTarget(t.into()));
    let uri = match relative {
        Some(_) => Ok(Uri::from_static("/")),
        None => target.into_uri().and_then(|uri| {
            if uri.authority().is_some() {
                Err(names_a_path())
            } else {
                Ok(uri)
            }
        }),
    };
    let builder = RequestBuilder::new(cluster, method, uri);
    match relative {
        Some(relative) => builder.extension(relative),
        None => builder,
    }
}

fn names_a_path() -> Error {
    Error::msg(
        ErrorKind::InvalidUrl,
        "a cluster request names a path; the replica gives the origin",
    )
}

/// The target of `request`: its relative target with the URI's query
/// appended, or its URI's path and query (which must have no origin).
pub(super) fn target_of(request: &mut Request<Body>) -> Result<String, Error> {
    if let Some(RelativeTarget(text)) = request.extensions_mut().remove::<RelativeTarget>() {
        let mut target = text.to_string();
        // `query()` went to the stand-in URI: it belongs to the target.
        if let Some(query) = request.uri().query() {
            target.push(if target.contains('?') { '&' } else { '?' });
            target.push_str(query);
        }
        return Ok(target);
    }
    if request.uri().authority().is_some() {
        return Err(names_a_path());
    }
    Ok(request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned())
}

impl crate::client::request::sealed::Sealed for ClusterClient {}

impl RequestSender for ClusterClient {
    fn dispatch(
        self,
        mut request: Request<Body>,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        if let Some(timeout) = timeout {
            request.extensions_mut().insert(RequestTimeout(timeout));
        }
        async move { self.execute(request).await }
    }
}
