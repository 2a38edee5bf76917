//! HTTP/3 as one of the pool's shared connections (feature `http3`): QUIC
//! dialed here (`connect/quic.rs`, to the origin's resolved addresses),
//! HTTP/3 set up on it (`proto/h3`), and what its [`Signals`] see (the
//! stream limit as observed, GOAWAY, closed) passed to the pool's
//! [`Reporter`], as HTTP/2's are. The pool sees a shared connection like
//! any other: it names no protocol.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use http::header::{HeaderValue, CONTENT_LENGTH};
use http::{Method, Request};
use http_body::Body as _;
use tokio::time::Instant;

use super::alt::OfferMark;
use super::{Origin, Report, Settings, Source, Transport};
use crate::body::Body;
use crate::connect::quic::QuicConnector;
use crate::connect::Route;
use crate::error::{Error, ErrorKind};
use crate::metrics::Label;
use crate::pool::protocol::{Connected, Handshake, Reporter, Sent, Served};
use crate::proto::exchange::{Answer, SendError};
use crate::proto::h3::conn::{self as h3conn, Connection};
use crate::proto::h3::early::Remembered;
use crate::proto::h3::signals::{Listener, Signals};

/// An HTTP/3 connection as the pool holds it.
pub(crate) struct Http3 {
    conn: Connection,
    /// What the signals report to (they hold it weakly).
    _listener: Arc<Report>,
    /// Dialed for an `Alt-Svc` offer: drained once it is withdrawn.
    offer: Option<OfferMark>,
}

/// One request on its way to its response head. Boxed: h3's request
/// future cannot be named, and HTTP/3 is the rarer protocol; HTTP/2's
/// requests pay nothing for it.
pub(crate) type Http3Send = Pin<Box<dyn Future<Output = Result<Answer<Source>, SendError>> + Send>>;

impl Http3 {
    pub(super) fn label(&self) -> Label {
        Label::HTTP3
    }

    fn signals(&self) -> &Arc<Signals> {
        self.conn.signals()
    }

    pub(super) fn slots(&self) -> usize {
        self.signals().slots()
    }

    /// The slots the pool plans by: what a stream open that had to wait
    /// showed, or before that seven eighths of the server's initial limit
    /// (its transport parameter) or of the assumed 100, as if the server
    /// had said so. The pool opens no second connection while one has not
    /// declared: 100 requests held there (long polls, bodies unread) left
    /// the 101st waiting for a slot of it for good.
    pub(super) fn declared(&self) -> Option<usize> {
        Some(self.slots())
    }

    /// A connection whose server let no request stream open at all (a
    /// learnt limit of 0: MAX_STREAMS 0, never raised while a request
    /// waited) takes no new requests: they would wait there for their
    /// whole deadline while a new connection may serve them (as Go's
    /// HTTP/2 treats a limit of 0).
    pub(super) fn accepts_requests(&self) -> bool {
        self.signals().accepts_requests()
            && !self.conn.is_closed()
            && self.declared() != Some(0)
            && self.offer.as_ref().is_none_or(OfferMark::stands)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// A GOAWAY's count, when it left work in flight (a GOAWAY on an idle
    /// connection, a timeout or a restart, teaches nothing), as HTTP/2's.
    /// Never `certain`: HTTP/3's GOAWAY names the first stream it will not
    /// process, so a request limit and a graceful shutdown racing a request
    /// look alike; the pool waits for a second connection to agree.
    pub(super) fn take_served(&self) -> Option<Served> {
        let count = self.signals().take_served()?;
        (self.signals().open() > 0).then_some(Served {
            count,
            certain: false,
        })
    }

    /// Sends `request`; the connection keeps its `deadline` (one timer per
    /// connection, `proto/h3/deadline.rs`). Past the deadline the request
    /// fails with the request timeout's error. The connection's future
    /// makes the pool's answer itself (its body a [`Source`]): a wrapper
    /// here that made it from HTTP/3's moved the whole answer once more.
    pub(super) fn send(&self, mut request: Request<Body>, deadline: Option<Instant>) -> Http3Send {
        add_length(&mut request);
        Box::pin(self.conn.send::<Source>(request, deadline))
    }
}

/// A `content-length` when the body's size is known: HTTP/3 frames the
/// body, but servers (and their limits) read the length up front. (The
/// client's default headers are written by the connection's encoder,
/// `proto/h3/head.rs`, not added here.)
fn add_length(request: &mut Request<Body>) {
    let exact = request.body().size_hint().exact();
    let with_body = matches!(
        *request.method(),
        Method::POST | Method::PUT | Method::PATCH
    );
    // The header looked up only when there is a length to add (a lookup
    // hashes the name: a GET paid it for nothing).
    if let Some(n) = exact.filter(|n| *n > 0 || with_body) {
        if !request.headers().contains_key(CONTENT_LENGTH) {
            request
                .headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(n));
        }
    }
}

impl Settings {
    /// The client's QUIC dialer, made on first use (its UDP endpoints bind
    /// when it first dials).
    fn quic(&self) -> Result<Arc<QuicConnector>, Error> {
        if let Some(quic) = self.quic.get() {
            return Ok(Arc::clone(quic));
        }
        let made = Arc::new(QuicConnector::new(
            &self.config.tls,
            &self.config.http3.quic_options(),
        )?);
        Ok(Arc::clone(self.quic.get_or_init(|| made)))
    }
}

impl Origin {
    /// Dials QUIC to the origin's host on UDP `port` (its own, or an
    /// alternative's) and sets HTTP/3 up on it, reporting to `reporter`.
    /// The origin's resolved addresses are tried in turn from the rotation,
    /// each with an even share of the time left.
    pub(super) async fn connect_http3(
        &self,
        port: u16,
        reporter: Reporter,
        deadline: Instant,
    ) -> Result<Connected<Transport>, Error> {
        match &self.route {
            Route::Pinned | Route::Direct => {}
            _ => {
                return Err(Error::msg(
                    ErrorKind::Config,
                    "HTTP/3 goes straight to the server over UDP: not through a proxy, a Unix socket or a custom connector",
                ))
            }
        }
        let quic = self.settings.quic()?;
        let addrs = self.settings.connector.resolve(&self.host, port).await?;
        let start = self.next_addr.fetch_add(1, Relaxed) % addrs.len();
        let mut last = None;
        for (i, addr) in addrs
            .iter()
            .cycle()
            .skip(start)
            .take(addrs.len())
            .enumerate()
        {
            let left = u32::try_from(addrs.len() - i).unwrap_or(u32::MAX);
            let now = Instant::now();
            let share = now + deadline.saturating_duration_since(now) / left;
            match self.http3_on(&quic, *addr, reporter.clone(), share).await {
                Ok(connected) => return Ok(connected),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::msg(ErrorKind::Connect, "no address to dial")))
    }

    async fn http3_on(
        &self,
        quic: &QuicConnector,
        addr: SocketAddr,
        reporter: Reporter,
        deadline: Instant,
    ) -> Result<Connected<Transport>, Error> {
        // Before the dial: an offer withdrawn during it counts.
        let offer = (!self.speaks_http3()).then(|| self.alt_offer.mark());
        // QUIC's handshake is TLS 1.3's: counted with the TCP ones.
        let (dialed, settled) = self
            .settings
            .connector
            .counted_quic(quic.dial(addr, &self.host, deadline))
            .await?;
        let mut config = h3conn::Config {
            max_field_section: self.settings.config.max_response_headers_size as u64,
            ..h3conn::Config::default()
        };
        // The server's initial stream limit, when its transport parameters
        // are in (they are not for a dial still in 0-RTT), stands for the
        // assumed one, as HTTP/2's SETTINGS do (capped as those are, at
        // 2^32 - 1). An open that waits still teaches the real limit.
        if let Some(streams) = dialed.streams.get() {
            config.assumed_streams =
                usize::try_from(streams.min(u64::from(u32::MAX))).unwrap_or(config.assumed_streams);
        }
        let remember = dialed.remember;
        let resume = h3conn::Resume {
            // Early data sent now must be settled by the connect deadline.
            early: dialed.early.map(|accepted| (accepted, deadline)),
            settled,
            remembered: Remembered(dialed.remembered),
            remember: Some(Box::new(move |settings: Remembered| {
                remember.remember(settings.0);
            })),
        };
        let (connection, keep_alive) = (dialed.conn, dialed.keep_alive);
        let defaults = self.settings.config.default_headers.clone();
        let handshake = h3conn::handshake(connection, config, defaults, resume);
        let (conn, driver) = tokio::time::timeout_at(deadline, handshake)
            .await
            .map_err(|_| {
                Error::msg(
                    ErrorKind::ConnectTimeout,
                    "HTTP/3 setup past the connect timeout",
                )
            })??;
        let listener = Arc::new(Report(reporter));
        let weak: Weak<Report> = Arc::downgrade(&listener);
        // The id is the reporter's; the signals' own is unused.
        conn.signals().listen(weak as Weak<dyn Listener>, 0);
        let driver = keep_alive.around(driver, Arc::clone(conn.signals()) as _);
        Ok(Connected {
            conn: Handshake::Shared {
                conn: super::Multiplexed::Http3(Http3 {
                    conn,
                    _listener: listener,
                    offer,
                }),
                driver,
            },
            remote: Some(addr),
        })
    }
}

impl Listener for Report {
    fn changed(self: Arc<Self>, _id: u64) {
        self.0.report();
    }
}

/// Polls an HTTP/3 request to its answer.
pub(super) fn poll_send(send: &mut Http3Send, cx: &mut Context<'_>) -> Poll<Sent<Transport>> {
    send.as_mut().poll(cx)
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use http::Request;
    use tokio::time::Instant;

    use super::{Connection, Source};
    use crate::body::Body;

    /// The size of the box [`Http3::send`](super::Http3::send) makes, from
    /// the type of what it boxes (no connection needed).
    fn boxed<F: Future>(_: impl Fn(&Connection, Request<Body>, Option<Instant>) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A request over HTTP/3 keeps this box from its start to its response
    /// head, so a long poll holds it for its whole wait: one per request in
    /// flight, beside the client's own request future. It was 944 B: the
    /// encoded head, the taken body and the send half, borrowed before the
    /// wait, kept their room through it (40, 32 and 24 B), the head's write
    /// (quinn's `write_chunk` future, 192 B, and the chunks beside a future
    /// borrowing them, 168 B) set the size, the body's copy for a resend had
    /// a field of its own beside the request's empty body slot, and the
    /// reader (200 B), made before the head's write, had its room beside the
    /// write's instead of sharing it (`proto/h3/send_head.rs`).
    #[test]
    fn a_request_future_holds_little_while_it_waits() {
        let size = boxed(Connection::send::<Source>);
        eprintln!("HTTP/3 request future {size} B");
        assert!(size <= 576, "HTTP/3 request future {size} B (944 B before)");
    }
}
