//! The client under test, in one place: today courier's standalone HTTP/3
//! connection (`courier::http3_hooks`), with the request timeout a
//! `Client` would apply and a pool's one rule (a connection whose request
//! failed is not reused). When HTTP/3 is in the pool, this file becomes a
//! `Client` with `http3_prior_knowledge()`, and nothing else changes.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use courier::http3_hooks::{Http3Connection, Http3Dialer, Http3Options};
use courier::{Body, Certificate, ErrorKind};
use http_body_util::BodyExt;

/// A request's outcome: status and whole body, or the error's kind and text.
pub type Outcome = Result<(u16, Bytes), (ErrorKind, String)>;

/// What a request sends.
#[derive(Debug, Clone, Copy)]
pub enum Send {
    Get,
    /// A POST of this many bytes, in 16 KiB pieces.
    Upload(usize),
}

/// The client: a dialer and the connection it keeps.
pub struct Driver {
    dialer: Http3Dialer,
    addr: SocketAddr,
    conn: Option<Http3Connection>,
    /// Connections dialed (kept to check they end).
    pub dialed: Vec<Http3Connection>,
}

impl Driver {
    pub fn new(addr: SocketAddr, root_pem: &str, connect_timeout: Duration) -> Driver {
        let root = Certificate::from_pem(root_pem.as_bytes()).expect("root");
        let dialer = Http3Dialer::new(Http3Options {
            root: Some(root),
            connect_timeout,
            ..Http3Options::default()
        })
        .expect("dialer");
        Driver {
            dialer,
            addr,
            conn: None,
            dialed: Vec::new(),
        }
    }

    /// Sends `what` to `path` and reads the whole body, all within `timeout`.
    pub async fn request(&mut self, path: &str, what: Send, timeout: Duration) -> Outcome {
        let outcome = match tokio::time::timeout(timeout, self.exchange(path, what)).await {
            Ok(outcome) => outcome,
            Err(_) => Err((ErrorKind::Timeout, format!("no answer within {timeout:?}"))),
        };
        if outcome.is_err() {
            // A pool drops a connection whose request failed.
            if let Some(conn) = self.conn.take() {
                conn.close();
            }
        }
        outcome
    }

    async fn exchange(&mut self, path: &str, what: Send) -> Outcome {
        let conn = match &self.conn {
            Some(c) if c.accepts_requests() && !c.is_closed() => c.clone(),
            _ => {
                let c = self
                    .dialer
                    .connect(self.addr, "localhost")
                    .await
                    .map_err(|e| (e.kind(), format!("{e:?}")))?;
                self.dialed.push(c.clone());
                self.conn = Some(c.clone());
                c
            }
        };
        let (method, body) = match what {
            Send::Get => (http::Method::GET, Body::empty()),
            Send::Upload(n) => {
                let piece = Bytes::from(vec![b'u'; 16 * 1024]);
                let pieces = n.div_ceil(piece.len());
                let stream = futures_util::stream::iter(
                    std::iter::repeat_n(piece, pieces).map(Ok::<_, std::io::Error>),
                );
                (http::Method::POST, Body::wrap_stream(stream))
            }
        };
        let request = http::Request::builder()
            .method(method)
            .uri(format!("https://localhost:{}{path}", self.addr.port()))
            .body(body)
            .expect("request");
        let response = conn
            .send(request)
            .await
            .map_err(|e| (e.error.kind(), format!("{:?}", e.error)))?;
        let status = response.head.status.as_u16();
        let body = response
            .body
            .collect()
            .await
            .map_err(|e| (e.kind(), format!("{e:?}")))?
            .to_bytes();
        Ok((status, body))
    }

    /// Request streams open on every connection dialed.
    pub fn open_streams(&self) -> usize {
        self.dialed.iter().map(Http3Connection::open_streams).sum()
    }
}
