//! [`ClientBuilder`]: every knob, with its default.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::client::Client;
use crate::config::{Config, Versions};
use crate::connect::{tls, Connect, Proxy, Resolve};
use crate::error::{Error, ErrorKind};

// The TLS knobs, in a file of their own (a child module, so they reach the
// builder's private fields).
#[cfg(feature = "http3")]
#[path = "builder_http3.rs"]
mod builder_http3;
#[path = "builder_tls.rs"]
mod builder_tls;
// Redirects and decompression, likewise.
#[path = "builder_handling.rs"]
mod builder_handling;
// HTTP/3 from DNS HTTPS records, likewise.
#[cfg(all(feature = "http3", feature = "dns-srv"))]
#[path = "builder_https_records.rs"]
mod builder_https_records;

use builder_handling::HandlingSettings;

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
    /// `pooled_connection_lifetime` was called, so a `ClientFactory`'s
    /// handler lifetime does not replace it.
    lifetime_set: bool,
    /// A TLS configuration shared with other clients (see `shared_tls`).
    shared_tls: Option<Arc<OnceLock<Arc<rustls::ClientConfig>>>>,
    /// Redirects and decompression (`redirect`, `gzip`, …).
    handling: HandlingSettings,
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
        self.lifetime_set = true;
        self
    }

    /// Sets the pooled connection lifetime unless it was set explicitly (a
    /// `ClientFactory`'s handler lifetime).
    pub(crate) fn default_pooled_connection_lifetime(mut self, lifetime: Duration) -> Self {
        if !self.lifetime_set {
            self.config.pooled_connection_lifetime = Some(lifetime);
        }
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

    /// HTTP/1.1: a request body of unknown length (streamed), or longer than
    /// `min_size`, and not sent in the same write as the head, is announced
    /// with `Expect: 100-continue` and held until the server answers (a
    /// `100`, or its final response) or
    /// [`expect_continue_timeout`](Self::expect_continue_timeout) passes.
    /// Servers built on Go's net/http (Caddy, Go proxies) otherwise throw
    /// away up to 256 KiB of a body they answer before reading, and send a
    /// well-framed response with a hole in it; proxies such as HAProxy 2.6
    /// lose a body that arrives before the `100` they relay. `None`: never
    /// added (a caller's own `Expect: 100-continue` is still waited for).
    /// Default: 16 KiB. (curl asks for bodies over 1 MiB; Go, hyper and
    /// .NET only when the caller sets the header.)
    ///
    /// ```
    /// let client = courier::Client::builder()
    ///     .expect_continue(Some(1024 * 1024))
    ///     .expect_continue_timeout(std::time::Duration::from_millis(200))
    ///     .build()?;
    /// # Ok::<(), courier::Error>(())
    /// ```
    pub fn expect_continue(mut self, min_size: Option<u64>) -> Self {
        self.config.expect_continue = min_size;
        self
    }

    /// How long a body that asked for `100 Continue` waits for the server
    /// before it is sent anyway (a server that ignores the expectation costs
    /// this much per request). Default: 1 s, as curl.
    pub fn expect_continue_timeout(mut self, timeout: Duration) -> Self {
        self.config.expect_continue_timeout = timeout;
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
        self.config.tcp.nodelay = enabled;
        self
    }

    /// TCP keep-alive on every connection: after `idle` without traffic the
    /// kernel probes the peer every `idle`, so a peer that vanished (a
    /// replica's host died, a NAT forgot the flow) is found while the
    /// connection waits in the pool. `None` turns it off. Default: 15 s (as
    /// Go's `net/http`).
    pub fn tcp_keepalive(mut self, idle: Option<Duration>) -> Self {
        self.config.tcp.keepalive = idle;
        self
    }

    /// Binds new connections to this local address (its family must match
    /// the server's; other addresses are skipped). Default: the system's choice.
    pub fn local_address(mut self, addr: Option<IpAddr>) -> Self {
        self.config.tcp.local_address = addr;
        self
    }

    /// Happy Eyeballs (RFC 8305): with several addresses, the next one is
    /// tried when the previous fails or has not connected within this
    /// delay, IPv6 and IPv4 alternating; the first to connect wins. Default:
    /// 250 ms (RFC 8305's recommendation).
    pub fn happy_eyeballs_delay(mut self, delay: Duration) -> Self {
        self.config.tcp.attempt_delay = delay;
        self
    }

    /// The most one address may take to connect; `connect_timeout` bounds
    /// them all together. Default: none.
    pub fn connect_timeout_per_address(mut self, timeout: Option<Duration>) -> Self {
        self.config.tcp.attempt_timeout = timeout;
        self
    }

    /// Connects to `addr` for `host` instead of asking DNS (as curl's
    /// `--resolve` and reqwest's `resolve`): the URL, `Host` and TLS server
    /// name stay `host`. A port of 0 stands for the URL's port. Several calls
    /// for one host add addresses.
    ///
    /// Route precedence: see [`proxy`](Self::proxy). An address given here goes direct, past any proxy.
    ///
    /// ```
    /// let client = courier::Client::builder()
    ///     .resolve("api.internal", ([127, 0, 0, 1], 0).into())
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn resolve(mut self, host: &str, addr: SocketAddr) -> Self {
        self.config
            .resolve_overrides
            .entry(host.trim_end_matches('.').to_ascii_lowercase())
            .or_default()
            .push(addr);
        self
    }

    /// Retry once, on a new connection, a request whose reused connection
    /// failed before any response: always when nothing was sent, otherwise for
    /// idempotent methods with a buffered body. Default: on. (courier addition)
    pub fn retry_stale_connections(mut self, enabled: bool) -> Self {
        self.config.retry_stale_connections = enabled;
        self
    }

    /// Speak HTTP/1.1 only (ALPN offers only `http/1.1`).
    pub fn http1_only(mut self) -> Self {
        self.config.versions = Versions::Http1Only;
        self
    }

    /// Headers sent with every request that does not set a header of the same
    /// name itself (a `User-Agent`, an `Accept`, a service token). Over
    /// HTTP/1.1 they are written straight from this one map, so a request
    /// costs no copy of them. `Host`, `Content-Length`, `Transfer-Encoding`
    /// and `Connection` are ignored here: they belong to each request.
    ///
    /// A credential here (`Authorization`, `Cookie`, …) is sent to every
    /// origin this client is asked for, and no further: behind a
    /// [`FollowRedirectLayer`](crate::middleware::FollowRedirectLayer), a
    /// redirect to another origin withholds the defaults its
    /// `sensitive_headers` names, as it removes the request's own.
    ///
    /// ```
    /// use courier::http::{header, HeaderMap, HeaderValue};
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert(header::USER_AGENT, HeaderValue::from_static("billing/1.4"));
    /// let client = courier::Client::builder().default_headers(headers).build().unwrap();
    /// # drop(client);
    /// ```
    pub fn default_headers(mut self, headers: http::HeaderMap) -> Self {
        self.config.default_headers = crate::validate::defaults(headers);
        self
    }

    /// Speak HTTP/2 only: ALPN `h2` over TLS (a server that does not pick it
    /// fails with [`ErrorKind::Protocol`]), and h2c by prior knowledge over
    /// plain TCP. Default: HTTP/1.1 over plain TCP, ALPN's choice over TLS.
    pub fn http2_prior_knowledge(mut self) -> Self {
        self.config.versions = Versions::Http2Only;
        self
    }

    /// Send every request to an `https` origin over HTTP/3 (QUIC on UDP,
    /// TLS 1.3, ALPN `h3`), without waiting to discover it: the origin must
    /// speak it. `http` origins are unchanged (HTTP/3 needs TLS); an
    /// origin whose route goes through a proxy or a Unix socket fails with
    /// [`ErrorKind::Config`] (HTTP/3 goes straight to the server over UDP).
    /// The pool treats HTTP/3 connections as HTTP/2's: many requests per
    /// connection up to the server's stream limit, another connection when
    /// every one is full (within `max_connections_per_host`), GOAWAY and
    /// refused requests resent elsewhere, lifetime and idle timeout alike.
    /// Building fails with [`ErrorKind::Config`] when the TLS settings rule
    /// out TLS 1.3. Needs the cargo feature `http3`.
    #[cfg(feature = "http3")]
    pub fn http3_prior_knowledge(mut self) -> Self {
        self.config.http3.prior_knowledge = true;
        self
    }

    /// Upgrade to HTTP/3 where a server offers it: an `Alt-Svc: h3=":PORT"`
    /// on an `https` response (RFC 7838) is remembered for its origin
    /// until its `ma` (at most a week), and the origin's next new
    /// connection races QUIC against TCP, QUIC first by
    /// [`http3_head_start`](Self::http3_head_start); the first to finish
    /// its handshake carries the requests. Requests in flight on TCP
    /// connections finish there; an idle HTTP/1.1 connection of such an
    /// origin closes after its next request, and an HTTP/2 one takes no new
    /// requests, so new requests move to HTTP/3. An origin whose QUIC
    /// failed, or lost the race, stays on TCP for 5 minutes, doubling with
    /// each failure up to 2 days (Chromium's broken alternative services):
    /// a network that drops UDP costs one head start, not every request.
    ///
    /// Only alternatives on the origin's own host are used (another port
    /// is fine; `Alt-Svc: clear` forgets them): QUIC verifies the origin's
    /// name in the server's certificate, and no request goes to a host the
    /// URL did not name. `http` origins, and origins reached through a
    /// proxy, a Unix socket or a custom connector, are not upgraded. What
    /// is learnt is kept per client (its clones share it), for at most
    /// 1,024 origins.
    ///
    /// Default: off, as in curl and .NET (browsers turn it on): a service
    /// client should not change transport, and open UDP flows, unless
    /// asked. Building fails with [`ErrorKind::Config`] when the TLS
    /// settings rule out TLS 1.3. Needs the cargo feature `http3`.
    #[cfg(feature = "http3")]
    pub fn http3_alt_svc(mut self, enabled: bool) -> Self {
        self.config.http3.alt_svc = enabled;
        self
    }

    /// How long a QUIC attempt runs alone, in a race against TCP for an
    /// origin that offered HTTP/3 (see [`http3_alt_svc`](Self::http3_alt_svc)),
    /// before the TCP (and TLS) attempt starts. Default: 300 ms (Chromium's
    /// and Envoy's). Needs the cargo feature `http3`.
    #[cfg(feature = "http3")]
    pub fn http3_head_start(mut self, head_start: Duration) -> Self {
        self.config.http3.head_start = head_start;
        self
    }

    /// When every HTTP/2 connection to an origin has as many streams open as
    /// the server allows (SETTINGS_MAX_CONCURRENT_STREAMS), open another
    /// connection (within `max_connections_per_host`) instead of queueing.
    /// Default: on (SocketsHttpHandler's `EnableMultipleHttp2Connections` is
    /// off by default; courier turns it on because silent queueing behind a
    /// stream limit is what long-polling services trip over).
    pub fn http2_multiple_connections(mut self, enabled: bool) -> Self {
        self.config.http2.multiple_connections = enabled;
        self
    }

    /// How many times a request is sent again when an HTTP/2 server refuses
    /// its stream unprocessed (REFUSED_STREAM, a GOAWAY past it, or the
    /// connection closed before it was written): always on a connection that
    /// still takes streams (a new one if need be), whatever the method, and
    /// only while the request's timeout leaves time; from the second resend
    /// on after a short backoff (10 ms, doubling, at most 250 ms) so a
    /// refusal storm cannot turn into a loop. Past the bound the request
    /// fails with [`ErrorKind::Refused`](crate::ErrorKind::Refused).
    /// Default: 5 (6 attempts in all, as Go's HTTP/2 transport). (courier addition)
    pub fn http2_max_refused_retries(mut self, retries: u8) -> Self {
        self.config.http2.max_refused_retries = retries;
        self
    }

    /// Sends an HTTP/2 PING this often to detect a dead peer. Default: none.
    pub fn http2_keep_alive_interval(mut self, interval: Option<Duration>) -> Self {
        self.config.http2.keep_alive_interval = interval;
        self
    }

    /// How long to wait for a PING acknowledgement before the connection is
    /// declared dead and its streams fail. Default: 20 s. Also bounds the
    /// PING courier sends when a server's GOAWAY keeps streams courier still
    /// waits on (whether or not keep-alive PINGs are on).
    pub fn http2_keep_alive_timeout(mut self, timeout: Duration) -> Self {
        self.config.http2.keep_alive_timeout = timeout;
        self
    }

    /// Also PING connections with no open stream. Default: off.
    pub fn http2_keep_alive_while_idle(mut self, enabled: bool) -> Self {
        self.config.http2.keep_alive_while_idle = enabled;
        self
    }

    /// HTTP/2 flow-control window per stream, as the connection starts.
    /// Default: 32 MiB (a fresh connection's first large download on a 50 ms
    /// link needs no ramp; a reader that never reads holds at most this). With
    /// [`http2_adaptive_window`](Self::http2_adaptive_window) (the default)
    /// it grows from there; without, it stays.
    pub fn http2_initial_stream_window_size(mut self, bytes: u32) -> Self {
        self.config.http2.initial_stream_window_size = bytes;
        self
    }

    /// HTTP/2 flow-control window per connection, as it starts. Default:
    /// 64 MiB, twice the stream window's. Grows with [`http2_adaptive_window`](Self::http2_adaptive_window).
    pub fn http2_initial_connection_window_size(mut self, bytes: u32) -> Self {
        self.config.http2.initial_connection_window_size = bytes;
        self
    }

    /// HTTP/2 receive windows that grow to the link's bandwidth-delay
    /// product. Default: on.
    ///
    /// A stream window caps a download at one window per round trip: 2 MiB
    /// at 50 ms is 40 MB/s. With this on, whenever the application consumes
    /// half the stream window within 3/4 of a round trip (2/3 of it per
    /// round trip, gRPC's threshold; the round trip is timed by courier's
    /// own SETTINGS frames), courier grows the window to twice what the
    /// application showed it consumes per round trip (at least double),
    /// once a round trip at most, up to
    /// [`http2_max_stream_window_size`](Self::http2_max_stream_window_size)
    /// and [`http2_max_connection_window_size`](Self::http2_max_connection_window_size).
    /// The connection window, which bounds what the client buffers unread,
    /// grows only by what the application read: a slow reader keeps it
    /// where it was. No PING is sent for it, connections whose streams wait
    /// (long polls) do nothing, and a stream costs no more memory.
    ///
    /// Off, the windows stay at their initial sizes:
    ///
    /// ```
    /// let client = courier::Client::builder()
    ///     .http2_adaptive_window(false)
    ///     .http2_initial_stream_window_size(4 << 20)
    ///     .build()?;
    /// # Ok::<(), courier::Error>(())
    /// ```
    pub fn http2_adaptive_window(mut self, enabled: bool) -> Self {
        self.config.http2.adaptive_window = enabled;
        self
    }

    /// The most an adaptive HTTP/2 stream window grows to. Default: 128 MiB,
    /// twice the bandwidth-delay product of 1 GB/s at 50 ms round trip (gRPC
    /// and hyper stop at 16 MiB, 335 MB/s at 50 ms). Only a reader that
    /// consumed 2/3 of 64 MiB within one round trip earns it. Never
    /// below the initial stream window, nor above half the connection's
    /// ceiling (a raised window applies to every stream, and one nobody
    /// reads must not hold the whole connection's window).
    ///
    /// ```
    /// // A 10 Gbit/s link across an ocean (120 ms): 150 MB in flight.
    /// let client = courier::Client::builder()
    ///     .http2_max_stream_window_size(160 << 20)
    ///     .http2_max_connection_window_size(320 << 20)
    ///     .build()?;
    /// # Ok::<(), courier::Error>(())
    /// ```
    pub fn http2_max_stream_window_size(mut self, bytes: u32) -> Self {
        self.config.http2.max_stream_window_size = bytes;
        self
    }

    /// The most an adaptive HTTP/2 connection window grows to: the most the
    /// connection's streams together may hold unread. Default: 256 MiB
    /// (twice the stream window's, so one unread stream takes at most half).
    /// Never below the initial connection window.
    pub fn http2_max_connection_window_size(mut self, bytes: u32) -> Self {
        self.config.http2.max_connection_window_size = bytes;
        self
    }

    /// Sends every connection over the Unix domain socket at `path`, whatever
    /// the URL's host (which still names the `Host` header and, for
    /// `https`, the TLS server name): a sidecar, a local agent, the Docker
    /// API (`http://localhost/v1.43/containers/json` over
    /// `/var/run/docker.sock`).
    ///
    /// Route precedence: see [`proxy`](Self::proxy). A Unix socket never goes through a proxy.
    pub fn unix_socket(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.dial.unix.insert(None, path.into());
        self
    }

    /// Sends connections for `host` (any port) over the Unix domain socket
    /// at `path`; other hosts go over TCP (or [`unix_socket`](Self::unix_socket)).
    ///
    /// Route precedence: see [`proxy`](Self::proxy). A Unix socket never goes through a proxy.
    pub fn unix_socket_for(mut self, host: &str, path: impl Into<PathBuf>) -> Self {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.config.dial.unix.insert(Some(host), path.into());
        self
    }

    /// Opens connections with `connector` instead of DNS and TCP (TLS and
    /// HTTP run on top as usual); see [`connect::Connect`](crate::connect::Connect).
    ///
    /// Route precedence: see [`proxy`](Self::proxy). A connector never goes through a proxy.
    pub fn connector<C: Connect>(mut self, connector: C) -> Self {
        self.config.dial.connector = Some(Arc::new(connector));
        self
    }

    /// Sends requests through `proxy` (see [`Proxy`] for which and how).
    /// Several may be given; the first whose scheme applies to a request's
    /// URL decides: through it, or direct when its
    /// [`no_proxy`](Proxy::no_proxy) names the host. The environment's
    /// (`HTTP_PROXY`, ...) apply only when none given here is for the
    /// URL's scheme.
    ///
    /// Route precedence, first that applies: a Unix socket (this host's, then
    /// every host's), the [`connector`](Self::connector), an address given
    /// with [`resolve`](Self::resolve), a [`proxy`](Self::proxy) given here
    /// (or its `no_proxy` bypass), the environment's proxy and `NO_PROXY`,
    /// direct. A Unix socket or a connector never goes through a proxy.
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.config.proxies.push(proxy);
        self
    }

    /// No proxy from the environment: `HTTP_PROXY`, `HTTPS_PROXY`,
    /// `ALL_PROXY` and `NO_PROXY` (and their lower-case forms) are read by
    /// default, as curl, Go and reqwest do. Proxies given with
    /// [`proxy`](Self::proxy) still apply.
    ///
    /// Route precedence: see [`proxy`](Self::proxy). A proxy given here, or its bypass, comes first.
    pub fn no_env_proxy(mut self) -> Self {
        self.config.proxy_from_env = false;
        self
    }

    /// Replaces the system resolver (used once per new connection).
    pub fn dns_resolver<R: Resolve>(mut self, resolver: R) -> Self {
        self.config.resolver = Arc::new(resolver);
        self
    }

    /// Builds the client. Fails on impossible settings ([`ErrorKind::Config`])
    /// and on TLS material that does not parse ([`ErrorKind::Tls`]).
    pub fn build(self) -> Result<Client, Error> {
        if self.config.max_connections_per_host == 0 {
            return Err(Error::msg(
                ErrorKind::Config,
                "max_connections_per_host must be at least 1",
            ));
        }
        if crate::validate::header_values(&self.config.default_headers).is_err() {
            return Err(Error::msg(
                ErrorKind::Config,
                "a default header value holds a control character (CR, LF, NUL...)",
            ));
        }
        if self.config.connect_timeout.is_zero() {
            return Err(Error::msg(
                ErrorKind::Config,
                "connect_timeout must be greater than zero",
            ));
        }
        let tls = match &self.shared_tls {
            Some(cell) => match cell.get() {
                Some(config) => Arc::clone(config),
                None => {
                    let config = tls::client_config(&self.config.tls, self.config.versions.alpn())?;
                    Arc::clone(cell.get_or_init(|| config))
                }
            },
            None => tls::client_config(&self.config.tls, self.config.versions.alpn())?,
        };
        #[cfg(feature = "http3")]
        if self.config.http3.enabled() {
            // QUIC's own TLS settings, checked now rather than at the first request.
            tls::quic_client_config(&self.config.tls)?;
            self.config.http3.quic_options().check()?;
        }
        let mut config = self.config;
        if config.proxy_from_env {
            config.env_proxies = Proxy::from_env();
        }
        let handling = self.handling.build(&mut config.default_headers);
        Ok(Client::from_config(config, Some(tls), handling))
    }
}
