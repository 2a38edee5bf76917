//! [`ClientBuilder`]: every knob, with its default.

use std::sync::Arc;
use std::time::Duration;

use crate::client::Client;
use crate::config::Config;
use crate::connect::Resolve;
use crate::error::{Error, ErrorKind};

/// Configures a [`Client`]. Every setting has a documented default; defaults
/// follow .NET's SocketsHttpHandler unless noted.
///
/// ```
/// use std::time::Duration;
///
/// let client = courier::Client::builder()
///     .max_connections_per_host(64)
///     .pooled_connection_lifetime(Some(Duration::from_secs(120)))
///     .timeout(Duration::from_secs(5))
///     .build()
///     .unwrap();
/// ```
#[must_use]
#[derive(Debug, Default)]
pub struct ClientBuilder {
    config: Config,
}

impl ClientBuilder {
    /// Starts from the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Most connections open (or being opened) to one origin at once. Requests
    /// beyond it wait in a FIFO queue. Default: unbounded.
    pub fn max_connections_per_host(mut self, max: usize) -> Self {
        self.config.max_connections_per_host = max;
        self
    }

    /// Idle connections older than this are closed by a background scavenger.
    /// `None` keeps them forever. Default: 60 s.
    pub fn pool_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.pool_idle_timeout = timeout;
        self
    }

    /// A connection stops taking new requests this long after it was
    /// established; a request in flight always finishes. With DNS resolved for
    /// every new connection, this is how a long-lived client follows DNS
    /// changes. `None`: no limit. Default: none.
    pub fn pooled_connection_lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.config.pooled_connection_lifetime = lifetime;
        self
    }

    /// Adds a random 0..=`jitter` to each connection's lifetime so many clients
    /// do not rotate in lockstep. Default: 0.
    pub fn pooled_connection_lifetime_jitter(mut self, jitter: Duration) -> Self {
        self.config.pooled_connection_lifetime_jitter = jitter;
        self
    }

    /// Limit on establishing one connection (DNS + TCP + handshake). Default: 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// Total time for a request, from send through the last body byte; each
    /// request may override it. Default: 100 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.config.timeout = Some(timeout);
        self
    }

    /// Removes the default total timeout (requests may still set one).
    pub fn no_timeout(mut self) -> Self {
        self.config.timeout = None;
        self
    }

    /// Longest a request waits in the queue for a connection before failing
    /// with [`ErrorKind::PoolQueueTimeout`]. Default: none (bounded by the
    /// request timeout).
    pub fn pool_queue_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.pool_queue_timeout = timeout;
        self
    }

    /// Most bytes read in the background from a dropped, unfinished body to
    /// save its connection; beyond it the connection is closed. 0 disables
    /// draining. Default: 1 MiB.
    pub fn max_response_drain_size(mut self, bytes: u64) -> Self {
        self.config.max_response_drain_size = bytes;
        self
    }

    /// Longest a background drain may take. Default: 2 s.
    pub fn response_drain_timeout(mut self, timeout: Duration) -> Self {
        self.config.response_drain_timeout = timeout;
        self
    }

    /// Largest response head (status line + headers) accepted; larger fails
    /// with [`ErrorKind::HeadersTooLarge`]. Default: 64 KiB.
    pub fn max_response_headers_size(mut self, bytes: usize) -> Self {
        self.config.max_response_headers_size = bytes;
        self
    }

    /// Largest body that [`Response::bytes`](crate::Response::bytes), `text`
    /// and `json` will buffer; larger fails with [`ErrorKind::BodyTooLarge`].
    /// Streaming with `chunk` is not limited. Default: unbounded. (courier addition)
    pub fn max_response_body_size(mut self, bytes: Option<u64>) -> Self {
        self.config.max_response_body_size = bytes;
        self
    }

    /// Sets TCP_NODELAY on new connections. Default: on.
    pub fn tcp_nodelay(mut self, enabled: bool) -> Self {
        self.config.tcp_nodelay = enabled;
        self
    }

    /// Retry once, on a new connection, a request whose reused connection
    /// failed before any response: always when nothing was sent, otherwise for
    /// idempotent methods with a buffered body. Default: on. (courier addition)
    pub fn retry_stale_connections(mut self, enabled: bool) -> Self {
        self.config.retry_stale_connections = enabled;
        self
    }

    /// Replaces the system resolver (used once per new connection).
    pub fn dns_resolver<R: Resolve>(mut self, resolver: R) -> Self {
        self.config.resolver = Arc::new(resolver);
        self
    }

    /// Builds the client. Fails only on contradictory settings.
    pub fn build(self) -> Result<Client, Error> {
        if self.config.max_connections_per_host == 0 {
            return Err(Error::msg(
                ErrorKind::InvalidRequest,
                "max_connections_per_host must be at least 1",
            ));
        }
        if self.config.connect_timeout.is_zero() {
            return Err(Error::msg(
                ErrorKind::InvalidRequest,
                "connect_timeout must be greater than zero",
            ));
        }
        Ok(Client::from_config(self.config))
    }
}
