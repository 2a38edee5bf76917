//! What the binding keeps per origin, and how it makes that origin's
//! connections: the route (chosen once, with the origin), dialing through
//! the connector, and the version negotiated (configuration and ALPN).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use http::uri::{Authority, Scheme};
use http::HeaderValue;
use tokio::time::Instant;

use super::{http2, Settings, Transport};
use crate::config::{Config, Versions};
use crate::connect::{AsyncIo, ProxyKind, Route, Routes};
use crate::error::{Error, ErrorKind};
use crate::pool::protocol::{Connected, Handshake, Kind, Reporter};
use crate::proto::h1;

/// What the protocols keep for one origin.
pub(crate) struct Origin {
    pub(super) scheme: Scheme,
    pub(super) authority: Authority,
    pub(super) host: Box<str>,
    pub(super) port: u16,
    pub(super) tls: bool,
    /// `Host` header value, built once so requests only bump a refcount.
    pub(super) host_header: HeaderValue,
    /// How this origin's connections are opened (`connect::route`).
    pub(super) route: Route,
    /// Where the next new connection starts in the resolved address list.
    pub(super) next_addr: AtomicUsize,
    /// For `http` through an HTTP proxy: how HTTP/1.1 requests are written
    /// for it.
    forward: Option<Arc<h1::Forward>>,
    pub(super) settings: Arc<Settings>,
    /// Its TCP connections give way to HTTP/3 (see [`GiveWay`]).
    pub(super) give_way: GiveWay,
    /// A race for this origin is under way (`race.rs`): one at a time.
    #[cfg(feature = "http3")]
    pub(super) racing: AtomicBool,
    /// Its `Alt-Svc` offers withdrawn so far (`alt.rs`).
    #[cfg(feature = "http3")]
    pub(super) alt_offer: super::alt::AltOffer,
    /// No HTTPS record lookup before this (`https_rr.rs`).
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    pub(super) https_next: std::sync::Mutex<Option<Instant>>,
}

impl Origin {
    pub(super) fn new(
        settings: &Arc<Settings>,
        scheme: &Scheme,
        authority: &Authority,
    ) -> Result<Origin, Error> {
        let tls = *scheme == Scheme::HTTPS;
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let host_header = HeaderValue::from_str(authority.as_str())
            .map_err(|e| Error::new(ErrorKind::InvalidUrl, e))?;
        let config = &settings.config;
        let route = Routes {
            dial: &config.dial,
            pinned: &config.resolve_overrides,
            proxies: &config.proxies,
            env_proxies: &config.env_proxies,
        }
        .choose(tls, authority.host());
        let forward = route.proxy().and_then(|p| match &p.kind {
            ProxyKind::Http { auth } if !tls => Some(Arc::new(h1::Forward {
                origin: format!("http://{authority}"),
                auth: auth.clone(),
            })),
            _ => None,
        });
        Ok(Origin {
            scheme: scheme.clone(),
            authority: authority.clone(),
            host: authority.host().into(),
            port,
            tls,
            host_header,
            route,
            next_addr: AtomicUsize::new(0),
            forward,
            settings: Arc::clone(settings),
            give_way: GiveWay::default(),
            #[cfg(feature = "http3")]
            racing: AtomicBool::new(false),
            #[cfg(feature = "http3")]
            alt_offer: super::alt::AltOffer::default(),
            #[cfg(all(feature = "http3", feature = "dns-srv"))]
            https_next: std::sync::Mutex::new(None),
        })
    }

    fn config(&self) -> &Config {
        &self.settings.config
    }

    /// The kind this origin's connections will be, when the configuration
    /// decides it before any is made (`None`: ALPN will tell).
    pub(super) fn expect(&self) -> Option<Kind> {
        if self.speaks_http3() {
            return Some(Kind::Shared);
        }
        match (self.config().versions, self.tls) {
            (Versions::Http2Only, _) => Some(Kind::Shared),
            (Versions::Http1Only, _) | (Versions::Auto, false) => Some(Kind::Exclusive),
            (Versions::Auto, true) => None,
        }
    }

    /// Dials (TCP, TLS, a proxy, a Unix socket: the route's), negotiates
    /// the version and makes the connection; QUIC instead, or raced
    /// against TCP when the origin offered HTTP/3 (`race.rs`).
    pub(super) async fn connect(
        &self,
        reporter: Reporter,
        deadline: Instant,
    ) -> Result<Connected<Transport>, Error> {
        #[cfg(feature = "http3")]
        {
            if self.speaks_http3() {
                return self.connect_http3(self.port, reporter, deadline).await;
            }
            #[cfg(feature = "dns-srv")]
            self.look_up_https_record().await;
            if let Some(port) = self.alternative() {
                // One race per origin: a dial while one runs goes TCP.
                if let Some(_racing) = self.start_race() {
                    return self.race(port, reporter, deadline).await;
                }
            }
        }
        self.connect_tcp(reporter, deadline).await
    }

    /// A connection over TCP (or the route's byte stream): HTTP/1.1 or
    /// HTTP/2.
    pub(super) async fn connect_tcp(
        &self,
        reporter: Reporter,
        deadline: Instant,
    ) -> Result<Connected<Transport>, Error> {
        let rotation = self.next_addr.fetch_add(1, Relaxed);
        let connected = self
            .settings
            .connector
            .connect(&self.host, self.port, self.tls, rotation, &self.route)
            .await?;
        let conn = match self.negotiate(connected.alpn_h2)? {
            Kind::Exclusive => Handshake::Exclusive(self.http1(connected.stream)),
            Kind::Shared => http2(
                connected.stream,
                self.config(),
                reporter,
                deadline,
                self.give_way.clone(),
            ),
        };
        Ok(Connected {
            conn,
            remote: connected.remote,
        })
    }

    /// Every connection of this origin is HTTP/3 (prior knowledge, https).
    pub(super) fn speaks_http3(&self) -> bool {
        #[cfg(feature = "http3")]
        return self.tls && self.config().http3.prior_knowledge;
        #[cfg(not(feature = "http3"))]
        false
    }

    /// The kind a connected stream becomes, given what its TLS handshake
    /// negotiated (`alpn_h2`), or why it cannot be used.
    fn negotiate(&self, alpn_h2: bool) -> Result<Kind, Error> {
        let h2 = match self.config().versions {
            Versions::Http2Only => {
                if self.forward.is_some() {
                    return Err(Error::msg(
                        ErrorKind::Config,
                        "HTTP/2 by prior knowledge cannot go through an HTTP proxy's forwarding (only https URLs are tunnelled)",
                    ));
                }
                if self.tls && !alpn_h2 {
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

    /// An HTTP/1.1 connection over `stream`, writing requests as this
    /// origin's route needs them.
    pub(super) fn http1<S: AsyncIo>(&self, stream: S) -> h1::Connection {
        let mut conn = h1::connection(stream, self.config());
        if let Some(forward) = &self.forward {
            conn.via_proxy(Arc::clone(forward));
        }
        conn
    }
}

/// An origin's TCP connections give way to HTTP/3: set while a fresh
/// alternative that is not broken is known, so an idle HTTP/1.1 connection
/// closes after its next request and an HTTP/2 one takes no new requests,
/// and the origin's next connection is a race. One flag per origin, read
/// with a relaxed load on each request; the store is locked only when a
/// response carries `Alt-Svc` and when a connection is dialed.
#[derive(Clone, Default)]
pub(crate) struct GiveWay(Arc<AtomicBool>);

impl GiveWay {
    /// Without the `http3` feature nothing sets it: no load on each request.
    #[inline]
    pub(crate) fn get(&self) -> bool {
        cfg!(feature = "http3") && self.0.load(Relaxed)
    }

    #[cfg_attr(not(feature = "http3"), allow(dead_code))]
    pub(super) fn set(&self, on: bool) {
        self.0.store(on, Relaxed);
    }
}
