//! The binding of courier's own protocols to the pool: HTTP/1.1 connections
//! are the pool's exclusive ones, HTTP/2 connections its shared ones.
//!
//! The pool is generic over [`pool::Protocol`] and imports no protocol; the
//! protocols know no pool. This module is where the two meet, in the layer
//! that may import both: it says which kind a connected stream becomes
//! (configuration and ALPN), makes the connection, sends on it, and passes
//! what an HTTP/2 connection signals to the pool's [`Reporter`]. The rest of
//! the client names the pool through the aliases below, so [`Client`],
//! [`Response`] and [`ResponseBody`] are not generic.
//!
//! [`Client`]: crate::Client
//! [`Response`]: crate::Response
//! [`ResponseBody`]: crate::ResponseBody

use std::future::Future;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use http::uri::{Authority, Scheme};
use http::Request;

use crate::body::Body;
use crate::config::{Config, Versions};
use crate::connect::{AsyncIo, ProxyEndpoint, ProxyKind};
use crate::error::{Error, ErrorKind};
use crate::pool::protocol::{self, Handshake, Kind, Reporter, Sent, Served};
use crate::pool::{self, OriginPool};
use crate::proto::exchange::{Answer, SendError};
use crate::proto::h1;
use crate::proto::h2::driver::Handle;
use crate::proto::h2::request::{self as h2, Http2Send, Target};
use crate::proto::h2::signals::{self, Listener, Signals};

/// The client's pool: HTTP/1.1 and HTTP/2 connections.
pub(crate) type Pool = pool::Pool<Transport>;
/// A connection or stream of the client's pool on loan to one request.
pub(crate) type Lease = pool::Lease<Transport>;

/// HTTP/1.1 (exclusive) and HTTP/2 (shared), as the pool's [`pool::Protocol`].
pub(crate) enum Transport {}

/// What HTTP/1.1 keeps per origin.
pub(crate) struct Origin {
    /// For `http` through an HTTP proxy: how requests are written for it.
    forward: Option<Arc<h1::Forward>>,
}

impl pool::Protocol for Transport {
    type Exclusive = h1::Connection;
    type Shared = Http2;
    type Answer = Answer;
    type Failure = SendError;
    type Origin = Origin;

    fn origin(scheme: &Scheme, authority: &Authority, proxy: Option<&ProxyEndpoint>) -> Origin {
        let tls = *scheme == Scheme::HTTPS;
        let forward = proxy.and_then(|p| match &p.kind {
            ProxyKind::Http { auth } if !tls => Some(Arc::new(h1::Forward {
                origin: format!("http://{authority}"),
                auth: auth.clone(),
            })),
            _ => None,
        });
        Origin { forward }
    }

    fn expect(config: &Config, tls: bool) -> Option<Kind> {
        match (config.versions, tls) {
            (Versions::Http2Only, _) => Some(Kind::Shared),
            (Versions::Http1Only, _) | (Versions::Auto, false) => Some(Kind::Exclusive),
            (Versions::Auto, true) => None,
        }
    }

    fn negotiate(
        config: &Config,
        origin: &Origin,
        tls: bool,
        alpn_h2: bool,
    ) -> Result<Kind, Error> {
        let h2 = match config.versions {
            Versions::Http2Only => {
                if origin.forward.is_some() {
                    return Err(Error::msg(
                        ErrorKind::Config,
                        "HTTP/2 by prior knowledge cannot go through an HTTP proxy's forwarding (only https URLs are tunnelled)",
                    ));
                }
                if tls && !alpn_h2 {
                    return Err(Error::msg(
                        ErrorKind::Protocol,
                        "the server did not negotiate HTTP/2 (ALPN h2)",
                    ));
                }
                true
            }
            Versions::Http1Only => false,
            Versions::Auto => alpn_h2,
        };
        Ok(if h2 { Kind::Shared } else { Kind::Exclusive })
    }

    fn handshake<S: AsyncIo>(
        stream: S,
        kind: Kind,
        config: &Config,
        origin: &Origin,
        reporter: Reporter,
        deadline: tokio::time::Instant,
    ) -> Handshake<Transport> {
        match kind {
            Kind::Exclusive => {
                let mut conn = h1::connection(stream, config);
                if let Some(forward) = &origin.forward {
                    conn.via_proxy(Arc::clone(forward));
                }
                Handshake::Exclusive(conn)
            }
            Kind::Shared => {
                let hs = h2::handshake(stream, config, deadline);
                let listener = Arc::new(Report(reporter));
                // The id is the reporter's; the signals' own is unused.
                let weak: Weak<Report> = Arc::downgrade(&listener);
                hs.signals.listen(weak as Weak<dyn Listener>, 0);
                Handshake::Shared {
                    conn: Http2 {
                        handle: hs.handle,
                        signals: hs.signals,
                        _listener: listener,
                    },
                    driver: hs.driver,
                }
            }
        }
    }
}

impl protocol::Exclusive<Transport> for h1::Connection {
    fn is_open(&mut self) -> bool {
        h1::Connection::is_open(self)
    }

    fn is_reusable(&self) -> bool {
        h1::Connection::is_reusable(self)
    }

    type Prepared = h1::Prepared;

    fn prepare(&mut self, req: &Request<Body>, origin: &OriginPool<Transport>) -> h1::Prepared {
        let defaults = &origin.shared().config.default_headers;
        h1::Connection::prepare(self, req, &origin.host_header, defaults)
    }

    fn send<C: AsMut<Self> + Send>(
        conn: C,
        req: Request<Body>,
        prepared: h1::Prepared,
    ) -> impl Future<Output = (C, Sent<Transport>)> + Send {
        h1::Connection::send_prepared(conn, req, prepared)
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
}

impl protocol::Shared<Transport> for Http2 {
    type Exchange = Http2Send;

    fn slots(&self) -> usize {
        self.signals.max_streams()
    }

    fn declared(&self) -> Option<usize> {
        self.signals.declared_max_streams()
    }

    fn accepts_requests(&self) -> bool {
        !self.signals.is_closed() && !self.signals.goaway_received()
    }

    fn is_closed(&self) -> bool {
        self.signals.is_closed()
    }

    fn take_served(&self) -> Option<Served> {
        self.signals
            .take_served()
            .map(|signals::Served { count, certain }| Served { count, certain })
    }

    fn send(&self, req: Request<Body>) -> Http2Send {
        h2::send(&self.handle, req)
    }

    // The error hands the request back by value: a failure path, not worth a box.
    #[allow(clippy::result_large_err)]
    fn poll_send(
        send: &mut Http2Send,
        cx: &mut Context<'_>,
        origin: &OriginPool<Transport>,
    ) -> Poll<Sent<Transport>> {
        let target = Target {
            scheme: origin.scheme(),
            authority: origin.authority(),
            defaults: &origin.shared().config.default_headers,
        };
        send.poll_send(cx, &target)
    }
}

/// HTTP/2's listener, passing what a connection signals to the pool.
struct Report(Reporter);

impl Listener for Report {
    fn changed(self: Arc<Self>, _id: u64) {
        self.0.report();
    }
}
