//! Turning an origin into an open stream: resolve, pick an address, connect,
//! and for `https` run the TLS handshake.
//!
//! DNS is resolved for every new connection (never cached here), so connection
//! rotation (`pooled_connection_lifetime`) follows DNS changes, and each new
//! connection starts at the next resolved address so load spreads over them.

#[cfg(feature = "http3")]
pub(crate) mod alt_svc;
mod custom;
mod dns;
#[cfg(all(feature = "http3", feature = "dns-srv"))]
pub(crate) mod https_record;
mod prefixed;
mod proxy;
#[cfg(feature = "http3")]
#[cfg_attr(not(feature = "internal-hooks"), allow(dead_code))]
pub(crate) mod quic;
#[cfg(feature = "http3")]
pub(crate) mod quic_idle;
#[cfg(feature = "http3")]
pub(crate) mod quic_resumed;
mod route;
mod stream;
mod tcp;
pub(crate) mod tls;
mod tunnel;

pub use custom::{Connect, Connecting};
pub use dns::{Resolve, Resolving, SystemResolver};
pub use proxy::Proxy;
pub(crate) use proxy::{Endpoint as ProxyEndpoint, Kind as ProxyKind};
pub(crate) use route::{Route, Routes};
pub use stream::AsyncIo;
pub(crate) use stream::Stream;
pub(crate) use tcp::TcpOptions;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_rustls::client::TlsStream;

use crate::error::{Error, ErrorKind};
use crate::metrics::{Label, Metrics};

/// A connected stream and what was negotiated on it.
pub(crate) struct Connected {
    pub(crate) stream: Stream,
    /// ALPN chose HTTP/2.
    pub(crate) alpn_h2: bool,
    /// The address connected to.
    pub(crate) remote: Option<SocketAddr>,
}

/// Where new connections go other than TCP.
#[derive(Clone, Default)]
pub(crate) struct Dial {
    /// Unix sockets by host name (lowercase); `None` key: every host.
    pub(crate) unix: HashMap<Option<String>, PathBuf>,
    pub(crate) connector: Option<Arc<dyn Connect>>,
}

impl Dial {
    fn unix_socket(&self, host: &str) -> Option<&PathBuf> {
        if self.unix.is_empty() {
            return None;
        }
        // As the builder stores names: lower case, no trailing dot.
        self.unix
            .get(&Some(host.trim_end_matches('.').to_ascii_lowercase()))
            .or_else(|| self.unix.get(&None))
    }
}

impl std::fmt::Debug for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dial")
            .field("unix", &self.unix)
            .field("connector", &self.connector.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// Opens connections for the pool.
pub(crate) struct Connector {
    resolver: Arc<dyn Resolve>,
    overrides: HashMap<String, Vec<SocketAddr>>,
    tcp: TcpOptions,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// For `https://` proxies: the client's TLS, speaking HTTP/1.1 and
    /// presenting no client certificate (the origin's identity is the
    /// origin's).
    proxy_tls: Option<Arc<rustls::ClientConfig>>,
    metrics: Arc<Metrics>,
}

/// A TLS handshake under way: counted in `tls_handshakes_current` until it
/// ends or is dropped (a dial given up, in neither the completed nor the
/// failed), its duration measured from the start.
struct HandshakeTimer {
    metrics: Arc<Metrics>,
    started: Instant,
}

impl HandshakeTimer {
    fn new(metrics: &Arc<Metrics>) -> HandshakeTimer {
        metrics.tls_handshakes_current.inc();
        HandshakeTimer {
            metrics: Arc::clone(metrics),
            started: Instant::now(),
        }
    }

    /// Completed, for a connection of protocol `label`.
    fn finished(self, label: Label, resumed: bool) {
        let by = self.metrics.protocol(label);
        by.tls_handshakes.inc();
        by.tls_handshake_duration.record(self.started.elapsed());
        if resumed {
            by.tls_resumed.inc();
        }
    }

    /// Failed; `tls`: by the handshake's own fault (not a missing server).
    fn failed(self, tls: bool) {
        if tls {
            self.metrics.tls_handshake_failures.inc();
        }
    }
}

impl Drop for HandshakeTimer {
    fn drop(&mut self) {
        self.metrics.tls_handshakes_current.dec();
    }
}

impl Connector {
    pub(crate) fn new(
        resolver: Arc<dyn Resolve>,
        overrides: HashMap<String, Vec<SocketAddr>>,
        tcp: TcpOptions,
        tls: Option<Arc<rustls::ClientConfig>>,
        metrics: Arc<Metrics>,
    ) -> Self {
        let proxy_tls = tls.as_deref().map(tls::for_proxy);
        Connector {
            resolver,
            overrides,
            tcp,
            tls,
            proxy_tls,
            metrics,
        }
    }

    /// Opens the byte stream for `host:port` by `route` (a Unix socket,
    /// the caller's connector, a proxy, or TCP to one of the resolved
    /// addresses, trying them from `rotation % addresses.len()`), and runs
    /// TLS over it when `tls` is set.
    pub(crate) async fn connect(
        &self,
        host: &str,
        port: u16,
        tls: bool,
        rotation: usize,
        route: &Route,
    ) -> Result<Connected, Error> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let other = match route {
            Route::Proxy(proxy) => return self.through(proxy, host, port, tls, rotation).await,
            Route::Unix(path) => custom::unix(path.clone()).await,
            Route::Custom(connector) => connector.connect(bare, port).await,
            Route::Pinned | Route::Direct => {
                let addrs = self.resolve(host, port).await?;
                let start = rotation % addrs.len();
                let tcp = tcp::connect_any(&addrs, start, &self.tcp)
                    .await
                    .map_err(|e| Error::new(ErrorKind::Connect, e))?;
                let remote = tcp.peer_addr().ok();
                return self.over(Stream::Tcp(tcp), host, tls, remote).await;
            }
        };
        match other {
            Ok(io) => self.over(Stream::Other(io), host, tls, None).await,
            Err(e) => Err(Error::new(ErrorKind::Connect, e)),
        }
    }

    /// Connects through `proxy`: to the proxy over TCP (and TLS to it for
    /// an `https://` proxy), then (but for plain HTTP through an HTTP
    /// proxy, which forwards requests) a `CONNECT` tunnel or a SOCKS5
    /// connection to `host:port`, then TLS if `tls`.
    async fn through(
        &self,
        proxy: &ProxyEndpoint,
        host: &str,
        port: u16,
        tls: bool,
        rotation: usize,
    ) -> Result<Connected, Error> {
        let at = |e: io::Error| {
            let what = format!("proxy {}:{}: {e}", proxy.host, proxy.port);
            Error::new(ErrorKind::Connect, io::Error::new(e.kind(), what))
        };
        let addrs = self.resolve(&proxy.host, proxy.port).await?;
        let tcp = tcp::connect_any(&addrs, 0, &self.tcp).await.map_err(at)?;
        let remote = tcp.peer_addr().ok();
        let mut io = if proxy.tls {
            let config = self
                .proxy_tls
                .as_ref()
                .ok_or_else(|| Error::msg(ErrorKind::Tls, "TLS is not configured"))?;
            let (stream, _) = self
                .handshake(config, tcp, &proxy.host)
                .await
                .map_err(|e| {
                    let what = format!("proxy {}:{}: {e:#}", proxy.host, proxy.port);
                    Error::new(e.kind(), io::Error::other(what))
                })?;
            // TLS to the origin may run inside it: `Other`, as `over` wants.
            Stream::Other(Box::new(stream))
        } else {
            Stream::Tcp(tcp)
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        match &proxy.kind {
            proxy::Kind::Http { .. } if !tls => {}
            proxy::Kind::Http { auth } => {
                let early = tunnel::http_connect(&mut io, bare, port, auth.as_ref())
                    .await
                    .map_err(at)?;
                if !early.is_empty() {
                    // The tunnel's first bytes came with the proxy's answer.
                    let io = Box::new(prefixed::Prefixed::new(early, io));
                    return self.over(Stream::Other(io), host, tls, remote).await;
                }
            }
            proxy::Kind::Socks5 { remote_dns, auth } => {
                let target = match bare.parse::<IpAddr>() {
                    Ok(ip) => tunnel::SocksTarget::Addr(SocketAddr::new(ip, port)),
                    Err(_) if *remote_dns => tunnel::SocksTarget::Name(bare, port),
                    Err(_) => {
                        let addrs = self.resolve(host, port).await?;
                        tunnel::SocksTarget::Addr(addrs[rotation % addrs.len()])
                    }
                };
                let auth = auth.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
                tunnel::socks5_connect(&mut io, target, auth)
                    .await
                    .map_err(at)?;
            }
        }
        self.over(io, host, tls, remote).await
    }

    /// Runs TLS over `stream` when `tls` is set.
    async fn over(
        &self,
        stream: Stream,
        host: &str,
        tls: bool,
        remote: Option<SocketAddr>,
    ) -> Result<Connected, Error> {
        if !tls {
            return Ok(Connected {
                stream,
                alpn_h2: false,
                remote,
            });
        }
        let config = self
            .tls
            .as_ref()
            .ok_or_else(|| Error::msg(ErrorKind::Tls, "TLS is not configured"))?;
        let (stream, negotiated) = match stream {
            Stream::Tcp(tcp) => {
                let (tls, negotiated) = self.handshake(config, tcp, host).await?;
                (Stream::Tls(Box::new(tls)), negotiated)
            }
            Stream::Other(io) => {
                let (tls, negotiated) = self.handshake(config, io, host).await?;
                (Stream::Other(Box::new(tls)), negotiated)
            }
            Stream::Tls(_) => unreachable!("TLS runs over a stream once"),
        };
        Ok(Connected {
            stream,
            alpn_h2: negotiated.h2,
            remote,
        })
    }

    /// The TLS handshake, counted.
    async fn handshake<IO: AsyncIo>(
        &self,
        config: &Arc<rustls::ClientConfig>,
        io: IO,
        host: &str,
    ) -> Result<(TlsStream<IO>, tls::Negotiated), Error> {
        let timer = HandshakeTimer::new(&self.metrics);
        let result = tls::handshake(config, io, host).await;
        match &result {
            Ok((_, negotiated)) => {
                let label = if negotiated.h2 {
                    Label::HTTP2
                } else {
                    Label::HTTP1
                };
                timer.finished(label, negotiated.resumed);
            }
            Err(_) => timer.failed(true),
        }
        result
    }

    /// A QUIC dial, its handshake counted in the client's TLS metrics under
    /// HTTP/3's label: at once when the dial waited for the handshake, or,
    /// for a 0-RTT connection (which comes back while its handshake goes
    /// on), when the returned [`quic::Settled`] is told how it ended (it
    /// counts the early data accepted or rejected too). A dial that found
    /// no server is a connect failure, not a TLS one.
    #[cfg(feature = "http3")]
    pub(crate) async fn counted_quic(
        &self,
        dial: impl std::future::Future<Output = Result<quic::Dialed, Error>>,
    ) -> Result<(quic::Dialed, Option<quic::Settled>), Error> {
        let timer = HandshakeTimer::new(&self.metrics);
        let dialed = match dial.await {
            Ok(dialed) => dialed,
            Err(e) => {
                timer.failed(e.kind() == ErrorKind::Tls);
                return Err(e);
            }
        };
        let watch = dialed.handshake.clone();
        if dialed.early.is_none() {
            timer.finished(Label::HTTP3, watch.resumed());
            return Ok((dialed, None));
        }
        self.metrics.tls_early_data.inc();
        let conn = dialed.conn.clone();
        let settled = move |accepted: Option<bool>| {
            let m = Arc::clone(&timer.metrics);
            match accepted {
                Some(accepted) if watch.complete() => {
                    let outcome = match accepted {
                        true => &m.tls_early_data_accepted,
                        false => &m.tls_early_data_rejected,
                    };
                    outcome.inc();
                    timer.finished(Label::HTTP3, watch.resumed());
                }
                // Lost before it completed (an alert is a TLS failure), or
                // past the connect deadline.
                _ => timer.failed(conn.close_reason().is_some_and(quic::is_tls_close)),
            }
        };
        Ok((dialed, Some(Box::new(settled))))
    }

    pub(crate) async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Error> {
        // IP literals (IPv6 comes bracketed in URLs) need no lookup.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if let Some(addrs) = self.overrides.get(&name) {
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
