//! Turning an origin into an open TCP stream: resolve, pick an address, connect.
//!
//! DNS is resolved for every new connection (never cached here), so connection
//! rotation (`pooled_connection_lifetime`) follows DNS changes, and each new
//! connection starts at the next resolved address so load spreads over them.

mod dns;
mod tcp;

pub use dns::{Resolve, Resolving, SystemResolver};

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpStream;

use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;

/// Opens TCP connections for the pool.
pub(crate) struct Connector {
    resolver: Arc<dyn Resolve>,
    nodelay: bool,
    metrics: Arc<Metrics>,
}

impl Connector {
    pub(crate) fn new(resolver: Arc<dyn Resolve>, nodelay: bool, metrics: Arc<Metrics>) -> Self {
        Connector {
            resolver,
            nodelay,
            metrics,
        }
    }

    /// Resolves `host` and connects to one of its addresses, trying them in
    /// turn starting at `rotation % addresses.len()`.
    pub(crate) async fn connect(
        &self,
        host: &str,
        port: u16,
        rotation: usize,
    ) -> Result<TcpStream, Error> {
        let addrs = self.resolve(host, port).await?;
        let start = rotation % addrs.len();
        tcp::connect_any(&addrs, start, self.nodelay)
            .await
            .map_err(|e| Error::new(ErrorKind::Connect, e))
    }

    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Error> {
        // IP literals (IPv6 comes bracketed in URLs) need no lookup.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let started = Instant::now();
        self.metrics.dns_lookups.inc();
        let result = self.resolver.resolve(host, port).await;
        self.metrics.dns_duration.record(started.elapsed());
        match result {
            Ok(addrs) if !addrs.is_empty() => Ok(addrs),
            Ok(_) => {
                self.metrics.dns_failures.inc();
                Err(Error::msg(ErrorKind::Dns, "no addresses found"))
            }
            Err(e) => {
                self.metrics.dns_failures.inc();
                Err(Error::new(ErrorKind::Dns, e))
            }
        }
    }
}
