//! [`Client`]: the entry point, and the path every request walks.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, Request};

use crate::body::Body;
use crate::builder::ClientBuilder;
use crate::config::Config;
use crate::drain::DrainPolicy;
use crate::error::Error;
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::pool::{Pool, SendError};
use crate::request::{IntoUri, RequestBuilder};
use crate::response::Response;
use crate::send::SendFuture;

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

struct ClientInner {
    pool: Pool,
    metrics: Arc<Metrics>,
    drain: DrainPolicy,
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

    pub(crate) fn from_config(config: Config, tls: Option<Arc<rustls::ClientConfig>>) -> Client {
        let metrics = Arc::new(Metrics::default());
        let drain = DrainPolicy {
            max_bytes: config.max_response_drain_size,
            timeout: config.response_drain_timeout,
            metrics: Arc::clone(&metrics),
        };
        Client {
            inner: Arc::new(ClientInner {
                pool: Pool::new(config, Arc::clone(&metrics), tls),
                metrics,
                drain,
            }),
        }
    }

    /// Starts a GET request.
    pub fn get(&self, url: impl IntoUri) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    /// Starts a POST request.
    pub fn post(&self, url: impl IntoUri) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    /// Starts a PUT request.
    pub fn put(&self, url: impl IntoUri) -> RequestBuilder {
        self.request(Method::PUT, url)
    }

    /// Starts a PATCH request.
    pub fn patch(&self, url: impl IntoUri) -> RequestBuilder {
        self.request(Method::PATCH, url)
    }

    /// Starts a DELETE request.
    pub fn delete(&self, url: impl IntoUri) -> RequestBuilder {
        self.request(Method::DELETE, url)
    }

    /// Starts a HEAD request.
    pub fn head(&self, url: impl IntoUri) -> RequestBuilder {
        self.request(Method::HEAD, url)
    }

    /// Starts a request with any method.
    pub fn request(&self, method: Method, url: impl IntoUri) -> RequestBuilder {
        RequestBuilder::new(self.clone(), method, url.into_uri())
    }

    /// Sends an `http::Request` with the client's default timeout. The
    /// future owns what it needs (`'static`), so it can be spawned.
    pub fn execute(
        &self,
        request: Request<Body>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        self.clone().send(request, self.inner.pool.config().timeout)
    }

    /// A snapshot of everything the pool has counted.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot()
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.inner.pool.config().timeout
    }

    /// Sends a request within its total timeout.
    pub(crate) fn send(
        self,
        request: Request<Body>,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let started = Instant::now();
        let deadline = timeout.and_then(|t| started.checked_add(t));
        let metrics = Arc::clone(&self.inner.metrics);
        SendFuture::new(
            metrics,
            started,
            deadline,
            send_once(self.inner, request, deadline),
        )
    }
}

/// Checkout, send, and the one retry a failed attempt may earn: on a new
/// connection when a reused HTTP/1.1 connection turned out dead, or on any
/// other connection when an HTTP/2 server refused the stream unprocessed.
fn send_once(
    inner: Arc<ClientInner>,
    request: Request<Body>,
    deadline: Option<Instant>,
) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
    let mut request = request;
    async move {
        let config = inner.pool.config();
        let origin = inner.pool.origin(request.uri())?;
        let mut fresh_only = false;
        let mut retried = false;
        loop {
            let mut lease = origin
                .checkout(fresh_only, config.pool_queue_timeout)
                .await?;
            let h2 = lease.is_http2();
            let stale_retry = !retried && config.retry_stale_connections && lease.is_reused_http1();
            // A request that was written may only be replayed when replaying
            // cannot change the outcome: the server did not process it (HTTP/2
            // refusal: the stream hands back a copy), or the method is
            // idempotent (HTTP/1.1 hands the request back when no answer
            // came); and the body is buffered.
            let idempotent = is_idempotent(request.method());
            let SendError {
                error,
                unsent,
                unanswered,
            } = match lease.send(request).await {
                Ok(res) => {
                    return Ok(Response::new(
                        res,
                        lease,
                        deadline,
                        inner.drain.clone(),
                        config.max_response_body_size,
                    ))
                }
                Err(e) => e,
            };
            drop(lease);
            let retry = if retried {
                None
            } else if h2 {
                unsent
            } else if stale_retry {
                unsent.or(unanswered.filter(|_| idempotent))
            } else {
                None
            };
            let Some(req) = retry else {
                return Err(error);
            };
            if h2 {
                tracing::debug!(%error, "HTTP/2 stream refused unprocessed; retrying");
                inner.metrics.refused_stream_retries.inc();
            } else {
                tracing::debug!(%error, "reused connection was stale; retrying on a new one");
                inner.metrics.stale_retries.inc();
            }
            request = req;
            retried = true;
            fresh_only = !h2;
        }
    }
}

fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}
