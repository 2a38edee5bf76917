//! The fault endpoints over every transport: HTTP/1.1, h2c and TLS (HTTP/2
//! and HTTP/1.1). Each fault must end in its expected error kind, within the
//! request timeout, and leave the pool with only healthy connections.

use std::time::{Duration, Instant};

use crate::support::{eventually, server_with, settled};
use courier::{Client, ErrorKind};
use courier_server::{ServerConfig, ServerHandle, TestPki};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Transport {
    Http1,
    H2c,
    TlsH2,
    TlsHttp1,
}

struct Setup {
    srv: ServerHandle,
    client: Client,
    base: String,
}

async fn setup(transport: Transport) -> Setup {
    let pki = TestPki::new();
    let tls = matches!(transport, Transport::TlsH2 | Transport::TlsHttp1);
    let srv = server_with(ServerConfig {
        tls: tls.then(|| pki.server_config(&["localhost"])),
        http2: transport != Transport::TlsHttp1,
        ..ServerConfig::default()
    })
    .await;
    let mut builder = Client::builder()
        .timeout(Duration::from_millis(700))
        .max_response_headers_size(16 * 1024)
        .max_response_body_size(Some(1024 * 1024))
        .add_root_certificate(pki.ca_pem());
    if transport == Transport::H2c {
        builder = builder.http2_prior_knowledge();
    }
    let scheme = if tls { "https" } else { "http" };
    Setup {
        base: format!("{scheme}://localhost:{}", srv.local_addr().port()),
        srv,
        client: builder.build().unwrap(),
    }
}

/// What a request ended in: `Ok(status)` or the error kind.
type Outcome = Result<u16, ErrorKind>;

/// What a request to `path` ended in: `Ok(status)` or the error kind.
async fn outcome(client: &Client, url: String) -> Outcome {
    let res = client.get(url).send().await.map_err(|e| e.kind())?;
    let status = res.status().as_u16();
    res.bytes().await.map_err(|e| e.kind())?;
    Ok(status)
}

#[tokio::test]
async fn every_fault_on_every_transport() {
    use ErrorKind::*;
    use Transport::*;
    // (path, expected over HTTP/1.1, expected over HTTP/2)
    let table: &[(&str, Outcome, Outcome)] = &[
        ("/fault/close", Err(ConnectionClosed), Err(ConnectionClosed)),
        ("/fault/reset", Err(ConnectionClosed), Err(ConnectionClosed)),
        ("/fault/close-mid-body", Err(Body), Err(Body)),
        ("/fault/chunked-mid-body", Err(Body), Err(Body)),
        ("/fault/malformed-status", Err(Protocol), Ok(400)),
        ("/fault/garbage", Err(Protocol), Ok(400)),
        (
            "/fault/huge-headers/100000",
            Err(HeadersTooLarge),
            Err(HeadersTooLarge),
        ),
        ("/fault/endless", Err(BodyTooLarge), Err(BodyTooLarge)),
        ("/fault/no-answer", Err(Timeout), Err(Timeout)),
        ("/fault/rst-stream", Err(ConnectionClosed), Err(Protocol)),
    ];
    let mut failures = Vec::new();
    for transport in [Http1, H2c, TlsH2, TlsHttp1] {
        let s = setup(transport).await;
        let h2 = matches!(transport, H2c | TlsH2);
        for (path, on_h1, on_h2) in table {
            let expected = if h2 { on_h2 } else { on_h1 };
            // Once on a fresh connection, once after a good request.
            for _ in 0..2 {
                let started = Instant::now();
                let got = outcome(&s.client, format!("{}{path}", s.base)).await;
                assert!(
                    started.elapsed() < Duration::from_millis(1500),
                    "{transport:?} {path} overran its timeout"
                );
                if got != *expected {
                    failures.push(format!(
                        "{transport:?} {path}: expected {expected:?}, got {got:?}"
                    ));
                }
                assert_eq!(
                    outcome(&s.client, format!("{}/bytes/16", s.base)).await,
                    Ok(200),
                    "{transport:?} after {path}"
                );
            }
        }
        eventually("pool settles", Duration::from_secs(3), || {
            settled(&s.client.metrics())
        })
        .await;
        drop(s.srv);
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
