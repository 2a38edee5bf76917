//! The settings a [`ClientBuilder`](crate::ClientBuilder) collects, with their defaults.

use std::sync::Arc;
use std::time::Duration;

use crate::connect::{Resolve, SystemResolver};

/// Everything the pool, the connector and the request path read.
///
/// Defaults follow .NET's SocketsHttpHandler unless noted; each is documented
/// on its builder method.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) max_connections_per_host: usize,
    pub(crate) pool_idle_timeout: Option<Duration>,
    pub(crate) pooled_connection_lifetime: Option<Duration>,
    pub(crate) pooled_connection_lifetime_jitter: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Option<Duration>,
    pub(crate) pool_queue_timeout: Option<Duration>,
    pub(crate) max_response_drain_size: u64,
    pub(crate) response_drain_timeout: Duration,
    pub(crate) max_response_headers_size: usize,
    pub(crate) max_response_body_size: Option<u64>,
    pub(crate) tcp_nodelay: bool,
    pub(crate) retry_stale_connections: bool,
    pub(crate) resolver: Arc<dyn Resolve>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_connections_per_host: usize::MAX,
            pool_idle_timeout: Some(Duration::from_secs(60)),
            pooled_connection_lifetime: None,
            pooled_connection_lifetime_jitter: Duration::ZERO,
            connect_timeout: Duration::from_secs(10),
            timeout: Some(Duration::from_secs(100)),
            pool_queue_timeout: None,
            max_response_drain_size: 1024 * 1024,
            response_drain_timeout: Duration::from_secs(2),
            max_response_headers_size: 64 * 1024,
            max_response_body_size: None,
            tcp_nodelay: true,
            retry_stale_connections: true,
            resolver: Arc::new(SystemResolver),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("max_connections_per_host", &self.max_connections_per_host)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .field(
                "pooled_connection_lifetime",
                &self.pooled_connection_lifetime,
            )
            .field(
                "pooled_connection_lifetime_jitter",
                &self.pooled_connection_lifetime_jitter,
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("pool_queue_timeout", &self.pool_queue_timeout)
            .field("max_response_drain_size", &self.max_response_drain_size)
            .field("response_drain_timeout", &self.response_drain_timeout)
            .field("max_response_headers_size", &self.max_response_headers_size)
            .field("max_response_body_size", &self.max_response_body_size)
            .field("tcp_nodelay", &self.tcp_nodelay)
            .field("retry_stale_connections", &self.retry_stale_connections)
            .finish_non_exhaustive()
    }
}
