//! [`Client`]: the entry point, and the path every request walks.
//!
//! This layer sits on the pool and the protocols and under the middleware,
//! the factory and the cluster: [`builder`] configures a client, [`request`]
//! builds a request, [`send`] is the request future (timeout, metrics),
//! [`attempt`] checks a connection out, sends, and makes the one retry a
//! dead connection calls for, [`response`] reads the answer, and [`drain`]
//! reads what a dropped body left so its connection is reused; [`verbs`]
//! gives every client type the same `get`/`post`/…; [`transport`] binds
//! HTTP/1.1 and HTTP/2 to the pool, which is generic over its protocols.
//! [`deliver`] follows redirects ([`follow`]) and decodes bodies
//! ([`decode`]) when a response calls for it: the code the middleware's
//! redirect and decompression layers run too.

pub(crate) mod attempt;
pub(crate) mod builder;
pub(crate) mod decode;
pub(crate) mod deliver;
pub(crate) mod drain;
pub(crate) mod extensions;
pub(crate) mod follow;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod rotation;
pub(crate) mod send;
pub(crate) mod transport;
pub(crate) mod upgrade;
pub(crate) mod uri;
pub(crate) mod verbs;

pub use builder::ClientBuilder;
pub use extensions::{Idempotent, RequestTimeout};
pub use request::{IntoUri, RequestBuilder, RequestSender};
pub use response::{RemoteAddr, Response, ResponseBody, ResponseUrl};
pub use upgrade::{Protocol, Upgraded};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request};
use tokio::time::Instant;

use crate::body::Body;
use crate::config::Config;
use crate::error::Error;
use crate::metrics::{Metrics, MetricsSnapshot};
use attempt::Attempt;
use drain::DrainPolicy;
use send::SendFuture;
use transport::{Lease, Pool};

/// An HTTP client with a connection pool per origin.
///
/// Cheap to clone (clones share the pool); build one per configuration and
/// keep it. Dropping the last clone closes idle connections.
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// let client = courier::Client::new();
/// let res = client.get("http://127.0.0.1:8080/json/64").send().await?;
/// assert!(res.status().is_success());
/// let body = res.text().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub(crate) pool: Pool,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) drain: DrainPolicy,
    /// How redirects are followed; `None`: not at all (`Policy::none`).
    pub(crate) follow: Option<follow::Rules>,
    /// The decoder; `None`: no decompression.
    pub(crate) decoder: Option<decode::Decoder>,
}

/// What a client does with a response besides returning it (reqwest's
/// defaults: follow redirects, decode bodies).
#[derive(Debug, Default)]
pub(crate) struct Handling {
    pub(crate) follow: Option<follow::Rules>,
    pub(crate) decoder: Option<decode::Decoder>,
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", self.inner.pool.config())
            .finish()
    }
}

impl Client {
    /// A client with every default (see [`ClientBuilder`]).
    ///
    /// # Panics
    ///
    /// Never with the defaults; use [`Client::builder`] to handle configuration errors.
    pub fn new() -> Client {
        ClientBuilder::new()
            .build()
            .expect("the default configuration is valid")
    }

    /// Starts configuring a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    pub(crate) fn from_config(
        config: Config,
        tls: Option<Arc<rustls::ClientConfig>>,
        handling: Handling,
    ) -> Client {
        let metrics = Arc::new(Metrics::default());
        let drain = DrainPolicy {
            max_bytes: config.max_response_drain_size,
            timeout: config.response_drain_timeout,
            metrics: Arc::clone(&metrics),
        };
        Client {
            inner: Arc::new(ClientInner {
                pool: Pool::for_client(config, Arc::clone(&metrics), tls),
                metrics,
                drain,
                follow: handling.follow,
                decoder: handling.decoder,
            }),
        }
    }

    crate::client::verbs::http_verbs!(url: impl IntoUri => RequestBuilder);

    /// Starts a request with any method.
    pub fn request(&self, method: Method, url: impl IntoUri) -> RequestBuilder {
        RequestBuilder::new(self.clone(), method, url.into_uri())
    }

    /// Sends an `http::Request` as [`RequestBuilder::send`] would: within
    /// its [`RequestTimeout`] extension if it has one
    /// ([`RequestBuilder::build`] puts it there), else the client's default
    /// timeout. The future owns what it needs (`'static`), so it can be spawned.
    pub fn execute(
        &self,
        request: Request<Body>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        RequestSender::dispatch(self.clone(), request, None)
    }

    /// A snapshot of everything the pool has counted.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot()
    }

    #[cfg(any(test, feature = "internal-hooks"))]
    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.inner.pool.config().timeout
    }

    /// Sends a request within its total timeout, following its redirects
    /// and decoding its body as the client is configured to.
    pub(crate) fn send(
        self,
        request: Request<Body>,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let started = Instant::now();
        let deadline = timeout.and_then(|t| started.checked_add(t));
        deliver::Deliver::new(self.inner, request, started, deadline)
    }

    /// One request on the wire (one hop of a redirect chain): the
    /// response and what its request handed back.
    #[inline]
    pub(crate) fn hop(
        inner: Arc<ClientInner>,
        request: Request<Body>,
        started: Instant,
        deadline: Option<Instant>,
    ) -> SendFuture<
        impl Future<Output = Result<attempt::Answered, Error>> + send::DeadlineKept + Send + 'static,
    > {
        let metrics = Arc::clone(&inner.metrics);
        SendFuture::new(
            metrics,
            Attempt::start(inner, request, started, deadline, Lease::send),
        )
    }
}

/// RFC 9110 §9.2.2 idempotent methods: the pool's resends and the
/// middleware's retries and hedges go by it.
pub(crate) fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}
