//! The client under test, in one place: a `Client` with
//! `http3_prior_knowledge()`, so every hostile peer meets the pool's
//! HTTP/3 (its resend rules, its stream counts, its connection reuse), as a
//! user's requests would.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use courier::{Body, Certificate, Client, ErrorKind};
use http_body_util::BodyExt;

/// A request's outcome: status and whole body, or the error's kind and text.
pub type Outcome = Result<(u16, Bytes), (ErrorKind, String)>;

/// What a request sends.
#[derive(Debug, Clone, Copy)]
pub enum Send {
    Get,
    /// A POST of this many bytes, in 16 KiB pieces.
    Upload(usize),
    /// A streamed POST of `sent` bytes whose Content-Length says `declared`.
    UploadDeclaring {
        declared: u64,
        sent: usize,
    },
    /// A streamed POST of a few bytes, then a trailer `x-big` whose value
    /// is this long.
    UploadTrailed(usize),
}

/// The client, and where it sends.
pub struct Driver {
    client: Client,
    port: u16,
}

impl Driver {
    /// `early_data`: 0-RTT on resumed connections (`tls_early_data`).
    pub fn new(
        addr: SocketAddr,
        root_pem: &str,
        connect_timeout: Duration,
        early_data: bool,
    ) -> Driver {
        let root = Certificate::from_pem(root_pem.as_bytes()).expect("root");
        let client = Client::builder()
            .add_root_certificate(root)
            .resolve("localhost", addr)
            .connect_timeout(connect_timeout)
            .http3_prior_knowledge()
            // The windows are credit the client gives: a peer may fill them
            // however it behaves (the defaults, 16 MiB a stream and 32 MiB
            // a connection, are measured in docs/src/http3.md). The class's
            // budgets (16 MiB of RSS against 24 MiB bombs) test what the
            // client keeps beyond its credit, so the credit stays below them.
            .http3_stream_receive_window(2 << 20)
            .http3_conn_receive_window(8 << 20)
            .tls_early_data(early_data)
            .build()
            .expect("client");
        Driver {
            client,
            port: addr.port(),
        }
    }

    /// Sends `what` to `path` and reads the whole body, all within `timeout`.
    pub async fn request(&mut self, path: &str, what: Send, timeout: Duration) -> Outcome {
        match tokio::time::timeout(timeout, self.exchange(path, what)).await {
            Ok(outcome) => outcome,
            Err(_) => Err((ErrorKind::Timeout, format!("no answer within {timeout:?}"))),
        }
    }

    async fn exchange(&mut self, path: &str, what: Send) -> Outcome {
        let url = format!("https://localhost:{}{path}", self.port);
        let request = match what {
            Send::Get => self.client.get(&url),
            Send::Upload(n) => {
                let piece = Bytes::from(vec![b'u'; 16 * 1024]);
                let pieces = n.div_ceil(piece.len());
                let stream = futures_util::stream::iter(
                    std::iter::repeat_n(piece, pieces).map(Ok::<_, std::io::Error>),
                );
                self.client.post(&url).body(Body::wrap_stream(stream))
            }
            Send::UploadTrailed(len) => {
                let mut trailers = http::HeaderMap::new();
                let big = http::HeaderValue::from_str(&"t".repeat(len)).expect("a value");
                trailers.insert("x-big", big);
                let frames = [
                    http_body::Frame::data(Bytes::from_static(b"hi")),
                    http_body::Frame::trailers(trailers),
                ];
                let stream = futures_util::stream::iter(frames.map(Ok::<_, std::io::Error>));
                let body = http_body_util::StreamBody::new(stream);
                self.client.post(&url).body(Body::wrap(body))
            }
            Send::UploadDeclaring { declared, sent } => {
                let piece = Bytes::from(vec![b'u'; sent]);
                let stream = futures_util::stream::iter([Ok::<_, std::io::Error>(piece)]);
                self.client
                    .post(&url)
                    .header("content-length", declared)
                    .body(Body::wrap_stream(stream))
            }
        };
        let response = request
            .send()
            .await
            .map_err(|e| (e.kind(), format!("{e:?}")))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| (e.kind(), format!("{e:?}")))?
            .to_bytes();
        Ok((status, body))
    }

    /// HTTP/3 connections open.
    pub fn open_connections(&self) -> u64 {
        self.client.metrics().connections_open_http3
    }

    /// Connections that sent early data (0-RTT).
    pub fn early_data(&self) -> u64 {
        self.client.metrics().tls_early_data
    }

    /// Request streams open, over every connection of the client.
    pub fn open_streams(&self) -> usize {
        self.client.metrics().http3_streams_active as usize
    }
}
