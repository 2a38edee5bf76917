//! The binding of courier's own protocols to the pool: HTTP/1.1 connections
//! are the pool's exclusive ones, HTTP/2 and HTTP/3 (feature `http3`,
//! `http3.rs`) connections its shared ones ([`Multiplexed`]).
//!
//! The pool is generic over [`pool::Protocol`] and imports no protocol; the
//! protocols know no pool. This module is where the two meet, in the layer
//! that may import both: it keeps what an origin's connections need
//! ([`Origin`]), dials and negotiates them (`dial.rs`), makes the
//! connection, sends on it, and passes what an HTTP/2 connection signals to
//! the pool's [`Reporter`]. The rest of the client names the pool through
//! the aliases below, so [`Client`], [`Response`] and [`ResponseBody`] are
//! not generic.
//!
//! [`Client`]: crate::Client
//! [`Response`]: crate::Response
//! [`ResponseBody`]: crate::ResponseBody

#[cfg(feature = "http3")]
mod alt;
mod dial;
#[cfg(feature = "http3")]
mod http3;
#[cfg(all(feature = "http3", feature = "dns-srv"))]
mod https_rr;
#[cfg(feature = "http3")]
mod race;
mod source;

use dial::GiveWay;
pub(crate) use dial::Origin;
pub(crate) use source::Source;

use std::future::Future;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use http::uri::{Authority, Scheme};
use http::Request;
use tokio::time::Instant;

use crate::body::Body;
use crate::config::Config;
use crate::connect::{AsyncIo, Connector};
use crate::error::Error;
use crate::metrics::{Label, Metrics};
use crate::pool::protocol::{self, Connected, Handshake, Kind, Reporter, Sent, Served};
use crate::pool::{self, PoolConfig};
use crate::proto::exchange::{Answer, SendError};
use crate::proto::h1;
use crate::proto::h2::driver::Handle;
use crate::proto::h2::request::{self as h2, Http2Send, Target};
use crate::proto::h2::signals::{Listener, Signals};

/// The client's pool: HTTP/1.1, HTTP/2 and HTTP/3 connections.
pub(crate) type Pool = pool::Pool<Transport>;
/// A connection or stream of the client's pool on loan to one request.
pub(crate) type Lease = pool::Lease<Transport>;

/// HTTP/1.1 (exclusive), HTTP/2 and HTTP/3 (shared), as the pool's [`pool::Protocol`].
pub(crate) enum Transport {}

/// What the protocols share across a client's origins.
pub(crate) struct Settings {
    pub(crate) config: Config,
    /// Opens the byte streams (DNS, proxies, TCP, TLS).
    connector: Connector,
    /// Dials QUIC for HTTP/3, made on first use.
    #[cfg(feature = "http3")]
    quic: std::sync::OnceLock<Arc<crate::connect::quic::QuicConnector>>,
    /// What `Alt-Svc` taught, for every origin of the client.
    #[cfg(feature = "http3")]
    alt: alt::AltStore,
    /// HTTPS record lookups, made on first use.
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    https: https_rr::Lookups,
}

/// The pool's own settings, from the client's.
fn pool_config(config: &Config) -> PoolConfig {
    PoolConfig {
        max_connections_per_host: config.max_connections_per_host,
        idle_timeout: config.pool_idle_timeout,
        lifetime: config.pooled_connection_lifetime,
        lifetime_jitter: config.pooled_connection_lifetime_jitter,
        connect_timeout: config.connect_timeout,
        more_shared_when_full: config.http2.multiple_connections,
    }
}

impl pool::Pool<Transport> {
    /// The client's pool, dialing with `tls` (when https is enabled).
    pub(crate) fn for_client(
        config: Config,
        metrics: Arc<Metrics>,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Pool {
        let connector = Connector::new(
            config.resolver.clone(),
            config.resolve_overrides.clone(),
            config.tcp,
            tls,
            Arc::clone(&metrics),
        );
        let pool_config = pool_config(&config);
        let settings = Arc::new(Settings {
            config,
            connector,
            #[cfg(feature = "http3")]
            quic: std::sync::OnceLock::new(),
            #[cfg(feature = "http3")]
            alt: alt::AltStore::default(),
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            https: https_rr::Lookups::new(),
        });
        pool::Pool::new(pool_config, metrics, settings)
    }

    /// The client's configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.client().config
    }
}

impl pool::Protocol for Transport {
    type Exclusive = h1::Connection;
    type Shared = Multiplexed;
    type Answer = Answer<Source>;
    type Failure = SendError;
    type Client = Settings;
    type Origin = Origin;

    fn origin(
        client: &Arc<Settings>,
        scheme: &Scheme,
        authority: &Authority,
    ) -> Result<Origin, Error> {
        Origin::new(client, scheme, authority)
    }

    fn expect(origin: &Origin) -> Option<Kind> {
        origin.expect()
    }

    fn connect(
        origin: &Origin,
        reporter: Reporter,
        deadline: Instant,
    ) -> impl Future<Output = Result<Connected<Transport>, Error>> + Send {
        origin.connect(reporter, deadline)
    }
}

/// Makes an HTTP/2 connection over `stream`, reporting to `reporter`.
fn http2<S: AsyncIo>(
    stream: S,
    config: &Config,
    reporter: Reporter,
    deadline: Instant,
    give_way: GiveWay,
) -> Handshake<Transport> {
    let hs = h2::handshake(stream, config, deadline);
    let listener = Arc::new(Report(reporter));
    // The id is the reporter's; the signals' own is unused.
    let weak: Weak<Report> = Arc::downgrade(&listener);
    hs.signals.listen(weak as Weak<dyn Listener>, 0);
    Handshake::Shared {
        conn: Multiplexed::Http2(Http2 {
            handle: hs.handle,
            signals: hs.signals,
            _listener: listener,
            give_way,
        }),
        driver: hs.driver,
    }
}

impl protocol::Exclusive<Transport> for h1::Connection {
    fn label(&self) -> Label {
        Label::HTTP1
    }

    fn is_open(&mut self) -> bool {
        h1::Connection::is_open(self)
    }

    fn is_reusable(&self) -> bool {
        h1::Connection::is_reusable(self)
    }

    type Prepared = h1::Prepared;

    fn prepare(&mut self, req: &Request<Body>, origin: &Origin) -> h1::Prepared {
        let defaults = &origin.settings.config.default_headers;
        let prepared = h1::Connection::prepare(self, req, &origin.host_header, defaults);
        if origin.give_way.get() {
            // The origin offered HTTP/3: this request is the connection's
            // last, and the next one dials (and races QUIC).
            self.close_after();
        }
        prepared
    }

    fn send<C: AsMut<Self> + Send>(
        conn: C,
        req: Request<Body>,
        prepared: h1::Prepared,
    ) -> impl Future<Output = (C, Sent<Transport>)> + Send {
        h1::Connection::send_prepared(conn, req, prepared, || Source::Http1)
    }
}

/// An HTTP/2 connection as the pool holds it.
pub(crate) struct Http2 {
    handle: Handle,
    /// SETTINGS (stream limit) and GOAWAY as read off the wire.
    signals: Arc<Signals>,
    /// What the signals report to (they hold it weakly): lives as long as
    /// the pool holds the connection, as the pool's own listener did.
    _listener: Arc<Report>,
    /// Its origin offered HTTP/3: no new requests here.
    give_way: GiveWay,
}

/// A connection of many requests at once: HTTP/2, or HTTP/3 (feature
/// `http3`). One type for the pool, which is generic over one protocol
/// binding; each request's exchange is its connection's own.
pub(crate) enum Multiplexed {
    Http2(Http2),
    #[cfg(feature = "http3")]
    Http3(http3::Http3),
}

/// A request on a [`Multiplexed`] connection, until its response head.
/// (HTTP/2's is held inline: boxing it would cost every HTTP/2 request an
/// allocation; HTTP/3's is a box already.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum MultiplexedSend {
    Http2(Http2Send),
    #[cfg(feature = "http3")]
    Http3(http3::Http3Send),
}

impl protocol::Shared<Transport> for Multiplexed {
    type Exchange = MultiplexedSend;

    fn label(&self) -> Label {
        match self {
            Multiplexed::Http2(_) => Label::HTTP2,
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => c.label(),
        }
    }

    fn slots(&self) -> usize {
        match self {
            Multiplexed::Http2(c) => c.signals.max_streams(),
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => c.slots(),
        }
    }

    fn declared(&self) -> Option<usize> {
        match self {
            Multiplexed::Http2(c) => c.signals.declared_max_streams(),
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => c.declared(),
        }
    }

    fn accepts_requests(&self) -> bool {
        match self {
            Multiplexed::Http2(c) => {
                !c.signals.is_closed() && !c.signals.goaway_received() && !c.give_way.get()
            }
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => c.accepts_requests(),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Multiplexed::Http2(c) => c.signals.is_closed(),
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => c.is_closed(),
        }
    }

    fn take_served(&self) -> Option<Served> {
        match self {
            Multiplexed::Http2(c) => c.signals.take_served(),
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => c.take_served(),
        }
    }

    fn send(&self, req: Request<Body>, deadline: Option<Instant>) -> MultiplexedSend {
        match self {
            Multiplexed::Http2(c) => MultiplexedSend::Http2(h2::send(&c.handle, req, deadline)),
            #[cfg(feature = "http3")]
            Multiplexed::Http3(c) => MultiplexedSend::Http3(c.send(req, deadline)),
        }
    }

    fn deadline_kept(send: &MultiplexedSend) -> bool {
        match send {
            MultiplexedSend::Http2(send) => send.deadline_kept(),
            #[cfg(feature = "http3")]
            // By its connection (`proto/h3/deadline.rs`).
            MultiplexedSend::Http3(_) => true,
        }
    }

    // The error hands the request back by value: a failure path, not worth a box.
    #[allow(clippy::result_large_err)]
    fn poll_send(
        send: &mut MultiplexedSend,
        cx: &mut Context<'_>,
        origin: &Origin,
    ) -> Poll<Sent<Transport>> {
        match send {
            MultiplexedSend::Http2(send) => {
                let target = Target {
                    scheme: &origin.scheme,
                    authority: &origin.authority,
                    defaults: &origin.settings.config.default_headers,
                };
                send.poll_send(cx, &target)
                    .map(|sent| sent.map(|a| a.map_body(Source::Http2)))
            }
            #[cfg(feature = "http3")]
            MultiplexedSend::Http3(send) => http3::poll_send(send, cx),
        }
    }
}

/// HTTP/2's listener, passing what a connection signals to the pool.
struct Report(Reporter);

impl Listener for Report {
    fn changed(self: Arc<Self>, _id: u64) {
        self.0.report();
    }
}

#[cfg(any(test, feature = "internal-hooks"))]
impl pool::OriginPool<Transport> {
    /// Adds an HTTP/1.1 connection over `stream` (any byte stream) as if
    /// the pool had dialed it: for in-memory benchmarks.
    pub(crate) fn adopt_exclusive<S: AsyncIo>(self: &Arc<Self>, stream: S) {
        self.adopt(|origin, _, _| Handshake::Exclusive(origin.http1(stream)));
    }

    /// Adds an HTTP/2 connection over `stream` (any byte stream) as if the
    /// pool had dialed it: for the fuzz target that drives whole HTTP/2
    /// responses through the public API.
    pub(crate) fn adopt_shared<S: AsyncIo>(self: &Arc<Self>, stream: S) {
        self.adopt(|origin, reporter, deadline| {
            http2(
                stream,
                &origin.settings.config,
                reporter,
                deadline,
                origin.give_way.clone(),
            )
        });
    }
}
