//! Turning an origin into an open stream: resolve, pick an address, connect,
//! and for `https` run the TLS handshake.
//!
//! DNS is resolved for every new connection (never cached here), so connection
//! rotation (`pooled_connection_lifetime`) follows DNS changes, and each new
//! connection starts at the next resolved address so load spreads over them.

mod dns;
mod stream;
mod tcp;
pub(crate) mod tls;

pub use dns::{Resolve, Resolving, SystemResolver};
pub(crate) use stream::Stream;
pub(crate) use tcp::TcpOptions;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, ErrorKind};
use crate::metrics::{GaugeGuard, Metrics};

/// A connected stream and what was negotiated on it.
pub(crate) struct Connected {
    pub(crate) stream: Stream,
    /// ALPN chose HTTP/2.
    pub(crate) alpn_h2: bool,
    /// The address connected to.
    pub(crate) remote: Option<SocketAddr>,
}

/// Opens connections for the pool.
pub(crate) struct Connector {
    resolver: Arc<dyn Resolve>,
    overrides: HashMap<String, Vec<SocketAddr>>,
    tcp: TcpOptions,
    tls: Option<Arc<rustls::ClientConfig>>,
    metrics: Arc<Metrics>,
}

impl Connector {
    pub(crate) fn new(
        resolver: Arc<dyn Resolve>,
        overrides: HashMap<String, Vec<SocketAddr>>,
        tcp: TcpOptions,
        tls: Option<Arc<rustls::ClientConfig>>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Connector {
            resolver,
            overrides,
            tcp,
            tls,
            metrics,
        }
    }

    /// Resolves `host`, connects to one of its addresses (trying them in turn
    /// from `rotation % addresses.len()`), and runs TLS when `tls` is set.
    pub(crate) async fn connect(
        &self,
        host: &str,
        port: u16,
        tls: bool,
        rotation: usize,
    ) -> Result<Connected, Error> {
        let addrs = self.resolve(host, port).await?;
        let start = rotation % addrs.len();
        let tcp = tcp::connect_any(&addrs, start, &self.tcp)
            .await
            .map_err(|e| Error::new(ErrorKind::Connect, e))?;
        let remote = tcp.peer_addr().ok();
        if !tls {
            return Ok(Connected {
                stream: Stream::Left(tcp),
                alpn_h2: false,
                remote,
            });
        }
        let config = self
            .tls
            .as_ref()
            .ok_or_else(|| Error::msg(ErrorKind::Tls, "TLS is not configured"))?;
        let m = &self.metrics;
        let started = Instant::now();
        let in_progress = GaugeGuard::new(&m.tls_handshakes_current);
        let result = tls::handshake(config, tcp, host).await;
        drop(in_progress);
        match result {
            Ok((stream, negotiated)) => {
                m.tls_handshakes.inc();
                m.tls_handshake_duration.record(started.elapsed());
                if negotiated.resumed {
                    m.tls_resumed.inc();
                }
                Ok(Connected {
                    stream: Stream::Right(Box::new(stream)),
                    alpn_h2: negotiated.h2,
                    remote,
                })
            }
            Err(e) => {
                m.tls_handshake_failures.inc();
                Err(e)
            }
        }
    }

    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Error> {
        // IP literals (IPv6 comes bracketed in URLs) need no lookup.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        if let Some(addrs) = self.overrides.get(&host.to_ascii_lowercase()) {
            // Port 0 stands for the URL's port.
            let with_port = |a: &SocketAddr| match a.port() {
                0 => SocketAddr::new(a.ip(), port),
                _ => *a,
            };
            return Ok(addrs.iter().map(with_port).collect());
        }
        let started = Instant::now();
        self.metrics.dns_lookups.inc();
        let result = self.resolver.resolve(host, port).await;
        self.metrics.dns_duration.record(started.elapsed());
        match result {
            Ok(addrs) if !addrs.is_empty() => Ok(addrs),
            Ok(_) => {
                self.metrics.dns_failures.inc();
                Err(Error::new(
                    ErrorKind::Dns,
                    format!("no addresses found for {host}"),
                ))
            }
            Err(e) => {
                self.metrics.dns_failures.inc();
                Err(Error::new(
                    ErrorKind::Dns,
                    io::Error::new(e.kind(), format!("{host}: {e}")),
                ))
            }
        }
    }
}
