//! [`ServiceClient`]: a client behind a middleware stack, with the same
//! request-building API.

use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderMap;
use http::{Method, Request, Uri};

use crate::body::Body;
use crate::client::request::{IntoUri, RequestBuilder, RequestSender};
use crate::client::response::Response;
use crate::client::Client;
use crate::client::RequestTimeout;
use crate::error::{Error, ErrorKind};
use crate::metrics::MetricsSnapshot;
use crate::middleware::{AsHttp, BoxHttpService, FromTower, Stack, StackLayers, TowerHttpService};

use super::{always_ready, call_stack, Backend};

/// A [`Client`] behind a middleware stack (retries, timeouts, tracing, …),
/// with an optional base URL and default headers: what
/// [`ClientFactory::client`](crate::ClientFactory::client) returns, or
/// [`ServiceClient::new`] builds.
///
/// Cheap to clone; clones share the pool and the middleware state (retry
/// budget, circuits, concurrency limit).
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// use courier::middleware::{RetryConfig, Stack};
/// let stack = Stack::new().retry(RetryConfig::default());
/// let billing = courier::ServiceClient::new(courier::Client::new(), &stack)
///     .with_base_url("http://127.0.0.1:8080/api/")?;
/// let res = billing.get("invoices/42").send().await?; // http://127.0.0.1:8080/api/invoices/42
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ServiceClient {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    name: Option<Arc<str>>,
    backend: Backend,
    service: BoxHttpService,
    layers: StackLayers,
    base_url: Option<Uri>,
    default_headers: HeaderMap,
}

impl std::fmt::Debug for ServiceClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceClient")
            .field("name", &self.inner.name)
            .field("base_url", &self.inner.base_url)
            .field("layers", &self.inner.layers)
            .finish_non_exhaustive()
    }
}

impl ServiceClient {
    /// `client` behind the middleware `stack` configures (with fresh state:
    /// retry budget, circuits, concurrency limit); `&Stack::new()` for none.
    ///
    /// ```
    /// use courier::middleware::{RetryConfig, Stack};
    /// let stack = Stack::new().retry(RetryConfig::default());
    /// let client = courier::ServiceClient::new(courier::Client::new(), &stack);
    /// ```
    pub fn new(client: Client, stack: &Stack) -> ServiceClient {
        Self::with_layers(client, stack.layers())
    }

    pub(crate) fn with_layers(client: Client, layers: StackLayers) -> ServiceClient {
        Self::from_backend(None, Backend::Fixed(client), layers)
    }

    pub(crate) fn from_backend(
        name: Option<Arc<str>>,
        backend: Backend,
        layers: StackLayers,
    ) -> ServiceClient {
        ServiceClient {
            inner: Arc::new(Inner {
                name,
                service: layers.service_exact(backend.clone()),
                backend,
                layers,
                base_url: None,
                default_headers: HeaderMap::new(),
            }),
        }
    }

    /// Resolves relative request URLs against `base` (RFC 3986: with
    /// `http://h/api/`, `users` is `http://h/api/users` and `/users` is
    /// `http://h/users`).
    pub fn with_base_url(self, base: impl IntoUri) -> Result<ServiceClient, Error> {
        let base = base.into_uri()?;
        if base.scheme().is_none() || base.authority().is_none() {
            return Err(Error::msg(
                ErrorKind::InvalidUrl,
                "a base URL must be absolute (scheme and host)",
            ));
        }
        let mut inner = (*self.inner).clone();
        inner.base_url = Some(base);
        Ok(ServiceClient {
            inner: Arc::new(inner),
        })
    }

    /// Adds `headers` to every request that does not set them itself.
    /// `Host`, `Content-Length`, `Transfer-Encoding` and `Connection` are
    /// ignored here, as by
    /// [`ClientBuilder::default_headers`](crate::ClientBuilder::default_headers):
    /// they belong to each request.
    pub fn with_default_headers(self, headers: HeaderMap) -> ServiceClient {
        let mut inner = (*self.inner).clone();
        inner.default_headers = crate::validate::defaults(headers);
        ServiceClient {
            inner: Arc::new(inner),
        }
    }

    /// Puts `layer` around this client's middleware (outermost): any tower
    /// or tower-http layer over `http::Request<courier::Body>`. The layer
    /// wraps an [`AsHttp`] (its responses are `http::Response<ResponseBody>`,
    /// as tower-http's layers want), and what it returns is made courier's
    /// again ([`FromTower`]): a response whose body a layer wrapped keeps the
    /// client's URL, server address and body limit; an error that is a
    /// `BoxError` (`tower::timeout`) becomes an [`Error`], a timeout's
    /// [`is_timeout`](Error::is_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// let client = courier::ServiceClient::new(courier::Client::new(), &courier::middleware::Stack::new())
    ///     .with_layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(2)));
    /// ```
    pub fn with_layer<L>(self, layer: L) -> ServiceClient
    where
        L: tower::Layer<AsHttp<BoxHttpService>>,
        L::Service: TowerHttpService,
    {
        let mut inner = (*self.inner).clone();
        let wrapped = layer.layer(AsHttp::new(inner.service));
        inner.service = BoxHttpService::new(FromTower::new(wrapped));
        ServiceClient {
            inner: Arc::new(inner),
        }
    }

    /// A client whose requests go to `service`, not to the network: a
    /// mock for testing code that takes a `ServiceClient` (a closure with
    /// `tower::service_fn` that answers `http::Response`s or courier
    /// [`Response`]s), or any tower service of courier requests. Base URL,
    /// default headers and [`with_layer`](Self::with_layer) apply as to any
    /// `ServiceClient`; [`client`](Self::client) is a default [`Client`]
    /// that no request of this one uses. See the book's testing chapter.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), courier::Error> {
    /// use std::convert::Infallible;
    ///
    /// let mock = courier::ServiceClient::from_service(tower::service_fn(
    ///     |req: http::Request<courier::Body>| async move {
    ///         let body = format!("you asked for {}", req.uri().path());
    ///         Ok::<_, Infallible>(courier::Response::from(http::Response::new(body)))
    ///     },
    /// ))
    /// .with_base_url("http://billing.test/")?;
    /// let text = mock.get("invoices/42").send().await?.text().await?;
    /// assert_eq!(text, "you asked for /invoices/42");
    /// # Ok(()) }
    /// ```
    pub fn from_service<S: TowerHttpService>(service: S) -> ServiceClient {
        let client = ServiceClient::new(Client::new(), &Stack::new());
        let mut inner = (*client.inner).clone();
        inner.service = BoxHttpService::new(FromTower::new(service));
        ServiceClient {
            inner: Arc::new(inner),
        }
    }

    /// The name it was created under by a [`ClientFactory`](crate::ClientFactory).
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The base URL, if any.
    pub fn base_url(&self) -> Option<&Uri> {
        self.inner.base_url.as_ref()
    }

    /// The middleware layers (for their statistics and circuit states).
    pub fn layers(&self) -> &StackLayers {
        &self.inner.layers
    }

    /// The underlying client (with pool rotation: the current one). Requests
    /// sent on it skip the middleware.
    pub fn client(&self) -> Client {
        self.inner.backend.client()
    }

    /// The pool's metrics. With pool rotation, counters and histograms add up
    /// every pool this client has used, and gauges those still open.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.backend.metrics()
    }

    /// How many times the pool was replaced (with
    /// [`ClientOptions::rotate_pool`](crate::ClientOptions::rotate_pool); else 0).
    pub fn pool_rotations(&self) -> u64 {
        match &self.inner.backend {
            Backend::Fixed(_) => 0,
            Backend::Rotating(r) => r.rotations(),
        }
    }

    crate::client::verbs::http_verbs!(url: impl IntoUri => ServiceRequestBuilder);

    /// Starts a request with any method.
    pub fn request(&self, method: Method, url: impl IntoUri) -> ServiceRequestBuilder {
        let uri = match (&self.inner.base_url, url.as_reference()) {
            // Text against a base: resolved as a reference (RFC 3986 §5),
            // which `invoices/42` is though no `Uri` on its own.
            (Some(base), Some(text)) if !text.contains("://") => {
                crate::middleware::resolve_reference(base, text).ok_or_else(|| {
                    Error::msg(ErrorKind::InvalidUrl, "cannot resolve against the base URL")
                })
            }
            _ => url.into_uri().and_then(|u| self.resolve(u)),
        };
        RequestBuilder::new(self.clone(), method, uri)
    }

    fn resolve(&self, uri: Uri) -> Result<Uri, Error> {
        match &self.inner.base_url {
            Some(base) if uri.scheme().is_none() => {
                crate::middleware::resolve_reference(base, &uri.to_string()).ok_or_else(|| {
                    Error::msg(ErrorKind::InvalidUrl, "cannot resolve against the base URL")
                })
            }
            _ => Ok(uri),
        }
    }

    fn prepare(&self, req: &mut Request<Body>) -> Result<(), Error> {
        if req.uri().scheme().is_none() && self.inner.base_url.is_some() {
            *req.uri_mut() = self.resolve(req.uri().clone())?;
        }
        for (name, value) in &self.inner.default_headers {
            if !req.headers().contains_key(name) {
                req.headers_mut().insert(name.clone(), value.clone());
            }
        }
        Ok(())
    }

    /// Sends an `http::Request` through the middleware, as
    /// [`RequestBuilder::send`] would (what [`RequestBuilder::build`] gives
    /// is sent the same way). A [`Deadline`](crate::middleware::Deadline) extension and the request's
    /// [`RequestTimeout`] (else the stack's total timeout) bound the whole
    /// call: the wait for the stack to be ready (a full concurrency limit),
    /// the response head, and the body (through the client).
    pub async fn execute(&self, mut request: Request<Body>) -> Result<Response, Error> {
        self.prepare(&mut request)?;
        call_stack(&self.inner.service, &self.inner.layers, request).await
    }
}

always_ready!(
/// `poll_ready` is always `Ready`: each call waits for the middleware stack
/// to be ready (a full concurrency limit) inside its future, within the
/// request's deadline; see [`ServiceClient::execute`].
ServiceClient, |this, req| {
    let this = this.clone();
    Box::pin(async move { this.execute(req).await })
});

/// A request being built for a [`ServiceClient`], sent through its
/// middleware: the one [`RequestBuilder`] type, over a `ServiceClient`.
pub type ServiceRequestBuilder = RequestBuilder<ServiceClient>;

impl crate::client::request::sealed::Sealed for ServiceClient {}

impl RequestSender for ServiceClient {
    fn dispatch(
        self,
        mut request: Request<Body>,
        timeout: Option<Duration>,
    ) -> impl std::future::Future<Output = Result<Response, Error>> + Send + 'static {
        if let Some(timeout) = timeout {
            request.extensions_mut().insert(RequestTimeout(timeout));
        }
        async move { self.execute(request).await }
    }
}

// Here, not in middleware/stack.rs: the middleware names no service client
// above it (the constructor to prefer is `ServiceClient::new`).
impl Stack {
    /// Wraps `client` in the configured middleware (fresh state): the same
    /// as [`ServiceClient::new(client, &stack)`](ServiceClient::new), which
    /// is the constructor to prefer.
    pub fn client(&self, client: Client) -> ServiceClient {
        ServiceClient::new(client, self)
    }
}
