//! Testing code that uses courier without a network, two ways:
//!
//! 1. A mock service: `ServiceClient::from_service` over a closure that
//!    answers each request (`tower::service_fn`). For code that takes a
//!    `ServiceClient` (what a `ClientFactory` hands out). Nothing is
//!    encoded or parsed: the fastest and most direct.
//! 2. An in-memory connection: a `Client` whose connector returns one end
//!    of a `tokio::io::duplex` pipe, with an HTTP server (here hyper's) on
//!    the other. For code that takes a `Client`; the requests go through
//!    courier's real HTTP/1.1 code and pool, only the socket is missing.
//!
//! ```sh
//! cargo run -p courier-http --example mock_testing
//! ```
//! Dependencies beside courier: `tokio` (`macros`, `rt`), `tower` (`util`),
//! `http`; for the second way `hyper` (`server`, `http1`), `hyper-util`
//! (`tokio`), `http-body-util`, `bytes`.

use std::convert::Infallible;

use bytes::Bytes;
use courier::connect::{AsyncIo, Connect, Connecting};
use courier::{Body, Client, Error, ErrorKind, Response, ServiceClient};
use http_body_util::Full;

/// The code under test: a billing API's client.
struct Billing {
    http: ServiceClient,
}

impl Billing {
    /// The invoice's total in cents; `None` if there is no such invoice.
    async fn invoice_total(&self, id: u32) -> Result<Option<u64>, Error> {
        let res = self.http.get(format!("invoices/{id}")).send().await?;
        if res.status() == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let text = res.error_for_status()?.text().await?;
        let total = text
            .trim()
            .parse()
            .map_err(|e| Error::new(ErrorKind::Decode, e))?;
        Ok(Some(total))
    }
}

/// The mock (way 1): answers by path, and fails one path as courier fails.
fn mock_billing() -> ServiceClient {
    let answer = |req: http::Request<Body>| async move {
        match req.uri().path() {
            "/invoices/42" => Ok(Response::from(http::Response::new("1250"))),
            "/invoices/7" => Err(Error::new(ErrorKind::Timeout, "the mock is slow today")),
            _ => Ok(Response::from(
                http::Response::builder().status(404).body(()).unwrap(),
            )),
        }
    };
    ServiceClient::from_service(tower::service_fn(answer))
        .with_base_url("http://billing.test/")
        .expect("an absolute base URL")
}

/// The in-memory connection (way 2): every connection courier opens is a
/// pipe to a hyper server running `answer`.
struct InMemory;

impl Connect for InMemory {
    fn connect(&self, _host: &str, _port: u16) -> Connecting {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(server_end);
            let service = hyper::service::service_fn(answer);
            // The connection ends when courier closes its end.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
        Box::pin(async move { Ok(Box::new(client_end) as Box<dyn AsyncIo>) })
    }
}

async fn answer(
    req: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let (status, body) = match req.uri().path() {
        "/invoices/42" => (200, "1250"),
        _ => (404, ""),
    };
    let res = http::Response::builder()
        .status(status)
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .expect("a valid response");
    Ok(res)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let billing = Billing {
        http: mock_billing(),
    };
    assert_eq!(billing.invoice_total(42).await?, Some(1250));
    assert_eq!(billing.invoice_total(1).await?, None);
    let err = billing.invoice_total(7).await.unwrap_err();
    assert!(err.is_timeout(), "{err:#}");
    println!("mock service: 42 -> 1250 cents, 1 -> none, 7 -> {err:#}");

    let client = Client::builder().connector(InMemory).build()?;
    let billing = Billing {
        http: ServiceClient::new(client.clone(), &courier::middleware::Stack::new())
            .with_base_url("http://billing.test/")?,
    };
    assert_eq!(billing.invoice_total(42).await?, Some(1250));
    assert_eq!(billing.invoice_total(1).await?, None);
    let m = client.metrics();
    println!(
        "in-memory connection: 42 -> 1250 cents, 1 -> none; {} connection(s) opened, {} request(s)",
        m.connections_established, m.requests_total
    );
    Ok(())
}
