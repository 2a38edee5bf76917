//! The HTTP/3 column's client until the pool speaks HTTP/3: courier's
//! HTTP/3 connection (`proto/h3` over `connect/quic`, reached through
//! `courier::http3_hooks`) as a tower service, which the checks drive as
//! they drive `Client` (`ServiceClient::from_service`, behind the same
//! middleware). It does the least of a pool's work the checks need: one
//! connection at a time, a new one once it is closed or has a GOAWAY, a
//! request the server did not process (unsent, refused) sent again, a
//! deadline on the response head (the client's `timeout`). What it does
//! not do (extra connections at the stream limit: requests wait for a
//! stream instead; the pool's metrics) the checks say where it matters.
//! `Target::base` is the one place that picks it.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use courier::http3_hooks::{Http3Body, Http3Connection, Http3Dialer, Http3Options, Resend};
use courier::{Body, Certificate, Error, ErrorKind};
use http::{Request, Response};
use tokio::sync::Mutex;

use super::target::Target;

/// Times one request is sent when the server did not process it.
const ATTEMPTS: usize = 3;

/// courier's HTTP/3 connection to one target, as a `tower::Service`.
#[derive(Clone)]
pub struct Driver(Arc<Inner>);

struct Inner {
    dialer: Http3Dialer,
    addr: SocketAddr,
    server_name: String,
    timeout: Duration,
    conn: Mutex<Option<Http3Connection>>,
}

impl Driver {
    /// A driver for `t` (`https://localhost:PORT`, the UDP port on
    /// loopback), trusting the suite's CA, with its mode's timeout.
    pub fn new(t: &Target) -> Driver {
        let uri: http::Uri = t.base.parse().expect("the target's base URL");
        let port = uri.port_u16().expect("a port in the base URL");
        let root = Certificate::from_pem(t.ca_pem.as_bytes()).expect("the suite's CA");
        let dialer = Http3Dialer::new(Http3Options {
            root: Some(root),
            connect_timeout: t.mode.timeout,
            ..Http3Options::default()
        })
        .expect("HTTP/3 dialer");
        Driver(Arc::new(Inner {
            dialer,
            // Loopback only, whatever the name says.
            addr: (Ipv4Addr::LOCALHOST, port).into(),
            server_name: uri.host().expect("a host").to_owned(),
            timeout: t.mode.timeout,
            conn: Mutex::new(None),
        }))
    }

    /// The connection in use, or a new one when there is none or it takes
    /// no more requests (closed, GOAWAY).
    async fn connection(&self) -> Result<Http3Connection, Error> {
        let mut slot = self.0.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            if conn.accepts_requests() && !conn.is_closed() {
                return Ok(conn.clone());
            }
        }
        let conn = self
            .0
            .dialer
            .connect(self.0.addr, &self.0.server_name)
            .await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    async fn send(self, mut request: Request<Body>) -> Result<Response<Http3Body>, Error> {
        let mut attempt = 1;
        loop {
            let conn = self.connection().await?;
            match conn.send(request).await {
                Ok(r) => return Ok(Response::from_parts(r.head, r.body)),
                Err(e) => match (e.resend, e.request) {
                    (Resend::Unsent | Resend::Refused, Some(again)) if attempt < ATTEMPTS => {
                        attempt += 1;
                        request = again;
                    }
                    _ => return Err(e.error),
                },
            }
        }
    }
}

impl tower::Service<Request<Body>> for Driver {
    type Response = Response<Http3Body>;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Http3Body>, Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (driver, limit) = (self.clone(), self.0.timeout);
        Box::pin(async move {
            tokio::time::timeout(limit, driver.send(request))
                .await
                .unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorKind::Timeout,
                        format!("no HTTP/3 response head within {limit:?}"),
                    ))
                })
        })
    }
}
