//! The settings a [`ClientBuilder`](crate::ClientBuilder) collects, with their defaults.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "http3")]
use crate::connect::quic;
use crate::connect::tls::TlsSettings;
use crate::connect::{Dial, Proxy, Resolve, SystemResolver, TcpOptions};

/// Which HTTP versions the client may speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versions {
    /// HTTP/1.1 over plain TCP; over TLS whatever ALPN picks (h2 preferred).
    Auto,
    /// HTTP/1.1 only (ALPN offers only `http/1.1`).
    Http1Only,
    /// HTTP/2 only: ALPN `h2` over TLS, prior knowledge (h2c) over plain TCP.
    Http2Only,
}

impl Versions {
    /// What courier offers by ALPN: exactly the protocols it will speak.
    pub(crate) fn alpn(self) -> Vec<Vec<u8>> {
        match self {
            Versions::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            Versions::Http1Only => vec![b"http/1.1".to_vec()],
            Versions::Http2Only => vec![b"h2".to_vec()],
        }
    }
}

/// Resends of a refused stream (6 attempts in all, as Go's transport).
pub(crate) const DEFAULT_MAX_REFUSED_RETRIES: u8 = 5;

/// HTTP/3 settings (feature `http3`).
#[cfg(feature = "http3")]
#[derive(Debug, Clone)]
pub(crate) struct Http3Config {
    /// Every request to an https origin goes over HTTP/3, without discovery.
    pub(crate) prior_knowledge: bool,
    /// HTTP/3 learnt from `Alt-Svc` on https responses, and QUIC raced
    /// against TCP for the origins that named it (`client/transport/race.rs`).
    pub(crate) alt_svc: bool,
    /// How long QUIC runs alone before TCP starts in a race.
    pub(crate) head_start: Duration,
    /// HTTP/3 also learnt from DNS HTTPS records (`connect/https_record.rs`).
    #[cfg(feature = "dns-srv")]
    pub(crate) https_records: bool,
    /// Where HTTPS records are asked for (`None`: the system's nameservers).
    #[cfg(feature = "dns-srv")]
    pub(crate) https_records_nameserver: Option<std::net::SocketAddr>,
    /// QUIC flow-control windows and congestion control
    /// (`connect/quic.rs` applies them; `builder_http3.rs` says why these).
    pub(crate) stream_receive_window: u32,
    pub(crate) conn_receive_window: u32,
    pub(crate) send_window: u64,
    pub(crate) congestion_bbr: bool,
    /// QUIC's idle timeout announced to the server.
    pub(crate) max_idle_timeout: Duration,
    /// 0-RTT for requests safe to replay, on resumed sessions.
    pub(crate) early_data: bool,
}

/// QUIC's head start in a race against TCP: Chromium's and Envoy's 300 ms
/// (curl's is 200 ms for its second attempt).
#[cfg(feature = "http3")]
pub(crate) const DEFAULT_HEAD_START: Duration = Duration::from_millis(300);

#[cfg(feature = "http3")]
impl Default for Http3Config {
    fn default() -> Self {
        Http3Config {
            prior_knowledge: false,
            alt_svc: false,
            head_start: DEFAULT_HEAD_START,
            #[cfg(feature = "dns-srv")]
            https_records: false,
            #[cfg(feature = "dns-srv")]
            https_records_nameserver: None,
            stream_receive_window: quic::DEFAULT_STREAM_WINDOW,
            conn_receive_window: quic::DEFAULT_CONN_WINDOW,
            send_window: quic::DEFAULT_SEND_WINDOW,
            congestion_bbr: false,
            max_idle_timeout: quic::DEFAULT_IDLE_TIMEOUT,
            early_data: false,
        }
    }
}

#[cfg(feature = "http3")]
impl Http3Config {
    /// The QUIC transport settings these ask for.
    pub(crate) fn quic_options(&self) -> quic::QuicOptions {
        let mut options = quic::QuicOptions::new(
            self.max_idle_timeout,
            (
                self.stream_receive_window,
                self.conn_receive_window,
                self.send_window,
            ),
            self.congestion_bbr,
        );
        options.early_data = self.early_data;
        options
    }

    /// The client may dial QUIC at all.
    pub(crate) fn enabled(&self) -> bool {
        self.prior_knowledge || self.discovers()
    }

    /// HTTP/3 may be discovered: by `Alt-Svc`, or by HTTPS records.
    pub(crate) fn discovers(&self) -> bool {
        #[cfg(feature = "dns-srv")]
        if self.https_records {
            return true;
        }
        self.alt_svc
    }
}

/// HTTP/2 settings.
#[derive(Debug, Clone)]
pub(crate) struct Http2Config {
    pub(crate) multiple_connections: bool,
    /// Times a request whose stream the server refused unprocessed is sent again.
    pub(crate) max_refused_retries: u8,
    pub(crate) keep_alive_interval: Option<Duration>,
    pub(crate) keep_alive_timeout: Duration,
    pub(crate) keep_alive_while_idle: bool,
    pub(crate) initial_stream_window_size: u32,
    pub(crate) initial_connection_window_size: u32,
    /// Receive windows grow while the application consumes them fast.
    pub(crate) adaptive_window: bool,
    /// The adaptive stream window's ceiling.
    pub(crate) max_stream_window_size: u32,
    /// The adaptive connection window's ceiling.
    pub(crate) max_connection_window_size: u32,
}

impl Default for Http2Config {
    fn default() -> Self {
        Http2Config {
            multiple_connections: true,
            max_refused_retries: DEFAULT_MAX_REFUSED_RETRIES,
            keep_alive_interval: None,
            keep_alive_timeout: Duration::from_secs(20),
            keep_alive_while_idle: false,
            // The first flight of a fresh connection (issue 30): 32 MiB is
            // what 650 MB/s carries in a 50 ms round trip, so a first large
            // download on a long link ramps in one growth, not four; a reader
            // that never reads holds at most this (the connection: twice, so
            // one such stream leaves the others half). Windows are counters:
            // idle connections and long polls pay nothing for them.
            initial_stream_window_size: 32 * 1024 * 1024,
            initial_connection_window_size: 64 * 1024 * 1024,
            adaptive_window: true,
            // Twice the BDP of 1 GB/s at 50 ms (see proto/h2/tune.rs).
            max_stream_window_size: 128 * 1024 * 1024,
            max_connection_window_size: 256 * 1024 * 1024,
        }
    }
}

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
    /// HTTP/1.1 request bodies of unknown length or longer than this ask for
    /// `100 Continue`; `None`: only when the caller says so.
    pub(crate) expect_continue: Option<u64>,
    pub(crate) expect_continue_timeout: Duration,
    pub(crate) max_response_body_size: Option<u64>,
    pub(crate) tcp: TcpOptions,
    /// Addresses given for host names, instead of DNS (`ClientBuilder::resolve`).
    pub(crate) resolve_overrides: HashMap<String, Vec<SocketAddr>>,
    /// Unix sockets and a caller's connector, in place of TCP.
    pub(crate) dial: Dial,
    /// Proxies given to the builder, first match wins (`connect::route`).
    pub(crate) proxies: Vec<Proxy>,
    /// The environment's proxies, read at build time unless opted out.
    pub(crate) env_proxies: Vec<Proxy>,
    pub(crate) proxy_from_env: bool,
    pub(crate) retry_stale_connections: bool,
    pub(crate) versions: Versions,
    pub(crate) http2: Http2Config,
    #[cfg(feature = "http3")]
    pub(crate) http3: Http3Config,
    pub(crate) tls: TlsSettings,
    pub(crate) resolver: Arc<dyn Resolve>,
    /// Sent with every request that does not set the same header itself.
    pub(crate) default_headers: http::HeaderMap,
}

/// A request extension: the client's default headers with these names are
/// not sent with this request. Default headers are written with the request,
/// below the middleware, where a redirect layer cannot remove them; on a hop
/// to another origin the redirect layer sets this with the names it removes
/// from the request, so a default credential stays with the origin it was
/// sent to, as a request's own does.
#[derive(Clone, Debug)]
pub(crate) struct WithheldDefaults(pub(crate) Arc<[http::HeaderName]>);

impl WithheldDefaults {
    /// The default headers a request with `extensions` goes without (usually none).
    pub(crate) fn of(extensions: &http::Extensions) -> &[http::HeaderName] {
        extensions
            .get::<WithheldDefaults>()
            .map_or(&[], |w| &w.0[..])
    }
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
            expect_continue: Some(16 * 1024),
            expect_continue_timeout: Duration::from_secs(1),
            max_response_body_size: None,
            tcp: TcpOptions {
                // Go's default: a dead peer on a pooled connection is found
                // within minutes, not at the next request's timeout.
                keepalive: Some(Duration::from_secs(15)),
                ..TcpOptions::default()
            },
            resolve_overrides: HashMap::new(),
            dial: Dial::default(),
            proxies: Vec::new(),
            env_proxies: Vec::new(),
            proxy_from_env: true,
            retry_stale_connections: true,
            versions: Versions::Auto,
            http2: Http2Config::default(),
            #[cfg(feature = "http3")]
            http3: Http3Config::default(),
            tls: TlsSettings::default(),
            resolver: Arc::new(SystemResolver),
            default_headers: http::HeaderMap::new(),
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
            .field("expect_continue", &self.expect_continue)
            .field("expect_continue_timeout", &self.expect_continue_timeout)
            .field("max_response_body_size", &self.max_response_body_size)
            .field("tcp", &self.tcp)
            .field("resolve_overrides", &self.resolve_overrides)
            .field("dial", &self.dial)
            .field("proxies", &self.proxies)
            .field("env_proxies", &self.env_proxies)
            .field("retry_stale_connections", &self.retry_stale_connections)
            .field("versions", &self.versions)
            .field("http2", &self.http2)
            .field("tls_accept_invalid_certs", &self.tls.accept_invalid_certs)
            .finish_non_exhaustive()
    }
}
