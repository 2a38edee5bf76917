//! Hooks for the criterion micro-benchmarks in `benches/`: a client whose
//! pool holds HTTP/1.1 connections over in-memory pipes to a minimal hyper
//! server, so checkout/return and the request path can be timed without the
//! kernel's TCP stack in the numbers. Not part of the public API.

use std::convert::Infallible;

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use crate::{Client, Error, Response};

/// The origin the in-memory connections belong to.
pub const ORIGIN: &str = "http://bench.invalid";

/// A client with `connections` in-memory HTTP/1.1 connections to [`ORIGIN`].
pub struct InMemory {
    client: Client,
    uri: Uri,
}

impl InMemory {
    /// Starts `connections` pipe-backed connections, each served by a hyper
    /// server task answering every request with 200 and `body`.
    pub async fn new(connections: usize, body: &'static [u8]) -> Result<InMemory, Error> {
        let client = Client::new();
        let uri = Uri::from_static("http://bench.invalid/");
        let origin = client.pool().origin(&uri)?;
        for _ in 0..connections {
            let (near, far) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move {
                let service = service_fn(move |_req| async move {
                    Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(body))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(far), service)
                    .await;
            });
            origin.adopt_http1(near);
        }
        Ok(InMemory { client, uri })
    }

    /// One checkout of an idle connection and its return, nothing sent.
    pub async fn checkout_release(&self) -> Result<(), Error> {
        let origin = self.client.pool().origin(&self.uri)?;
        origin.checkout(false, None).await?.release();
        Ok(())
    }

    /// A whole GET through the public request path.
    pub async fn get(&self) -> Result<Response, Error> {
        self.client.get(&self.uri).send().await
    }

    /// The client, for metrics.
    pub fn client(&self) -> &Client {
        &self.client
    }
}
