//! The HTTP/3 connection (`proto/h3`) over a QUIC connection from the
//! client's dialer (`connect/quic.rs`), driven directly: for its
//! integration tests (`tests/it/http3_conn.rs`) and its bench until the
//! pool binds it. Not an API; may change at any time.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body::{Frame, SizeHint};
use tokio::time::Instant;

use crate::body::Body;
use crate::connect::quic::{QuicConnector, QuicOptions};
use crate::connect::tls::TlsSettings;
use crate::error::Error;
use crate::proto::exchange::HandedBack;
use crate::proto::h3::body::RecvBody;
use crate::proto::h3::conn::{self, Config, Connection};
use crate::tls::Certificate;

/// Knobs of a connection made here.
#[derive(Debug, Clone)]
pub struct Http3Options {
    /// Trusted in addition to the built-in roots.
    pub root: Option<Certificate>,
    /// Largest response header section (SETTINGS_MAX_FIELD_SECTION_SIZE).
    pub max_field_section: u64,
    /// Slots assumed until the server's limit shows.
    pub assumed_streams: usize,
    /// Connect deadline from now.
    pub connect_timeout: Duration,
}

impl Default for Http3Options {
    fn default() -> Self {
        let config = Config::default();
        Http3Options {
            root: None,
            max_field_section: config.max_field_section,
            assumed_streams: config.assumed_streams,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// A dialer: one UDP endpoint per family, shared by its connections.
pub struct Http3Dialer {
    connector: Arc<QuicConnector>,
    options: Http3Options,
}

impl Http3Dialer {
    /// A dialer with the client's default TLS settings plus `options.root`.
    ///
    /// # Errors
    /// A configuration error.
    pub fn new(options: Http3Options) -> Result<Http3Dialer, Error> {
        let mut tls = TlsSettings::default();
        tls.extra_roots.extend(options.root.clone());
        let connector = QuicConnector::new(&tls, &QuicOptions::default())?;
        Ok(Http3Dialer {
            connector: Arc::new(connector),
            options,
        })
    }

    /// What quinn-udp found the kernel offers (GSO, GRO) on the endpoint
    /// for `addr`'s family.
    ///
    /// # Errors
    /// The bind error.
    pub fn offload(&self, addr: SocketAddr) -> Result<(usize, usize), Error> {
        let offload = self.connector.offload(addr)?;
        Ok((offload.gso_segments, offload.gro_segments))
    }

    /// Dials `addr` verifying `server_name`, sets HTTP/3 up, spawns its driver.
    ///
    /// # Errors
    /// The connect error.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        server_name: &str,
    ) -> Result<Http3Connection, Error> {
        let deadline = Instant::now() + self.options.connect_timeout;
        let quic = self.connector.connect(addr, server_name, deadline).await?;
        let config = Config {
            max_field_section: self.options.max_field_section,
            assumed_streams: self.options.assumed_streams,
        };
        let (conn, driver) = tokio::time::timeout_at(
            deadline,
            conn::handshake(
                quic,
                config,
                http::HeaderMap::new(),
                conn::Resume::default(),
            ),
        )
        .await
        .map_err(|_| Error::msg(crate::ErrorKind::ConnectTimeout, "HTTP/3 setup"))??;
        tokio::spawn(driver);
        Ok(Http3Connection {
            conn,
            _connector: Arc::clone(&self.connector),
        })
    }
}

/// One HTTP/3 connection.
#[derive(Clone)]
pub struct Http3Connection {
    conn: Connection,
    /// Keeps the endpoint alive with the connection.
    _connector: Arc<QuicConnector>,
}

/// Whether a failed request may be sent again, and how it got there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend {
    /// Not to be sent again.
    No,
    /// Nothing reached the connection.
    Unsent,
    /// The server did not process it.
    Refused,
    /// Lost with the connection (after a GOAWAY or not).
    Lost {
        /// The server had sent GOAWAY.
        after_goaway: bool,
    },
}

/// A failed send.
#[derive(Debug)]
pub struct Http3SendError {
    /// The error.
    pub error: Error,
    /// Whether the request may go again.
    pub resend: Resend,
    /// The request, when handed back.
    pub request: Option<Request<Body>>,
}

/// A response head and its streamed body.
#[derive(Debug)]
pub struct Http3Response {
    /// Status, headers, version.
    pub head: http::response::Parts,
    /// The request's URI.
    pub uri: http::Uri,
    /// The request's headers as given (before the connection-specific ones
    /// were left out of the HTTP/3 head).
    pub request_headers: http::HeaderMap,
    /// The body.
    pub body: Http3Body,
}

/// A response body (drop it unread to cancel the stream).
#[derive(Debug)]
pub struct Http3Body(RecvBody);

impl Http3Body {
    /// Fails the body past `max` bytes.
    pub fn limit(&mut self, max: u64) {
        self.0.limit(max);
    }
}

impl http_body::Body for Http3Body {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        Pin::new(&mut self.get_mut().0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

impl Http3Connection {
    /// Sends `request` (absolute URI) and waits for the response head.
    ///
    /// # Errors
    /// The error, and whether the request may go again.
    pub async fn send(&self, request: Request<Body>) -> Result<Http3Response, Http3SendError> {
        match self.conn.send::<Box<RecvBody>>(request, None).await {
            Ok(mut answer) => Ok(Http3Response {
                head: {
                    // A replayed head's headers are shared: the tests get a copy.
                    if let Some(shared) = answer.shared.take() {
                        answer.head.headers = Arc::unwrap_or_clone(shared);
                    }
                    answer.head
                },
                uri: answer.uri,
                request_headers: answer.sent.headers,
                body: Http3Body(*answer.body),
            }),
            Err(e) => {
                let (resend, request) = match e.handed_back {
                    None => (Resend::No, None),
                    Some(HandedBack::Unsent(r)) => (Resend::Unsent, Some(r)),
                    Some(HandedBack::Refused(r)) => (Resend::Refused, Some(r)),
                    Some(HandedBack::Unanswered(r)) => (Resend::No, Some(r)),
                    Some(HandedBack::Lost {
                        request,
                        after_goaway,
                    }) => (Resend::Lost { after_goaway }, Some(request)),
                };
                Err(Http3SendError {
                    error: e.error,
                    resend,
                    request,
                })
            }
        }
    }

    /// Slots the pool may use (the server's stream limit once observed).
    pub fn slots(&self) -> usize {
        self.conn.signals().slots()
    }

    /// The server's stream limit, once a stream open had to wait for it.
    pub fn declared(&self) -> Option<usize> {
        self.conn.signals().declared()
    }

    /// Request streams open.
    pub fn open_streams(&self) -> usize {
        self.conn.signals().open()
    }

    /// Requests answered in full.
    pub fn served(&self) -> usize {
        self.conn.signals().served()
    }

    /// The GOAWAY's stream id.
    pub fn goaway_id(&self) -> Option<u64> {
        self.conn.signals().goaway_id()
    }

    /// Requests the server took before its GOAWAY, once.
    pub fn take_served(&self) -> Option<usize> {
        self.conn.signals().take_served()
    }

    /// Neither GOAWAY nor closed.
    pub fn accepts_requests(&self) -> bool {
        self.conn.signals().accepts_requests()
    }

    /// Closed (or closing).
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// The server's SETTINGS as sent.
    pub fn peer_settings(&self) -> Option<Vec<(u64, u64)>> {
        self.conn.signals().peer_settings().map(<[_]>::to_vec)
    }

    /// The server's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.conn.remote_addr()
    }

    /// UDP bytes and datagrams so far: (sent, received, datagrams sent,
    /// datagrams received), from quinn's statistics.
    pub fn udp_stats(&self) -> (u64, u64, u64, u64) {
        let stats = self.conn.quic().stats();
        (
            stats.udp_tx.bytes,
            stats.udp_rx.bytes,
            stats.udp_tx.datagrams,
            stats.udp_rx.datagrams,
        )
    }

    /// The path as quinn sees it: (the datagram size MTU discovery has
    /// reached, packets declared lost so far).
    pub fn path_stats(&self) -> (u16, u64) {
        let stats = self.conn.quic().stats();
        (stats.path.current_mtu, stats.path.lost_packets)
    }

    /// STOP_SENDING and RESET_STREAM frames so far: (STOP_SENDING sent,
    /// received, RESET_STREAM sent, received), from quinn's statistics.
    pub fn stop_stats(&self) -> (u64, u64, u64, u64) {
        let stats = self.conn.quic().stats();
        (
            stats.frame_tx.stop_sending,
            stats.frame_rx.stop_sending,
            stats.frame_tx.reset_stream,
            stats.frame_rx.reset_stream,
        )
    }

    /// STREAM frames so far: (sent, received), from quinn's statistics.
    pub fn stream_frames(&self) -> (u64, u64) {
        let stats = self.conn.quic().stats();
        (stats.frame_tx.stream, stats.frame_rx.stream)
    }

    /// Closes the connection now.
    pub fn close(&self) {
        self.conn.close();
    }
}
