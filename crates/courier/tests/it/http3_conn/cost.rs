//! What HTTP/3 itself costs on top of QUIC: the client's CPU and UDP bytes
//! per request for courier's connection (our own HTTP/3 and QPACK,
//! `proto/h3`, over quinn) against the same exchange on raw quinn streams
//! (the request and response bytes alone, no HTTP/3 framing, no QPACK). It
//! was written to decide between the h3 crate and our own; now it bounds
//! what is left to save above QUIC. The client runs on this thread alone
//! (a current-thread runtime; quinn's endpoint driver with it), the servers
//! on a runtime of their own, so this thread's CPU time is the client's.
//!
//! `cargo test -p courier-http --features http3 --release --test it http3_conn::cost -- --ignored --nocapture`

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use courier::http3_hooks::{Http3Dialer, Http3Options};
use courier::{Body, Certificate};
use courier_server::{ServerConfig, TestPki};
use http::Request;
use http_body_util::BodyExt;

const REQUESTS: usize = 3000;
const WARM_UP: usize = 200;
/// The response body, as courier bench's default (128 B).
const BODY: usize = 128;

/// This thread's CPU time so far (Linux: `/proc/thread-self/schedstat`).
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns: u64 = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("ns");
    Duration::from_nanos(ns)
}

struct Figures {
    cpu_per_request: Duration,
    tx_bytes: f64,
    rx_bytes: f64,
    tx_datagrams: f64,
    rx_datagrams: f64,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>7.1} µs CPU/req  {:>6.0} B sent/req  {:>6.0} B received/req  {:.2}/{:.2} datagrams sent/received per req",
            self.cpu_per_request.as_secs_f64() * 1e6,
            self.tx_bytes,
            self.rx_bytes,
            self.tx_datagrams,
            self.rx_datagrams
        )
    }
}

fn per_request(
    before: (u64, u64, u64, u64),
    after: (u64, u64, u64, u64),
    cpu: Duration,
) -> Figures {
    let n = REQUESTS as f64;
    Figures {
        cpu_per_request: cpu / REQUESTS as u32,
        tx_bytes: (after.0 - before.0) as f64 / n,
        rx_bytes: (after.1 - before.1) as f64 / n,
        tx_datagrams: (after.2 - before.2) as f64 / n,
        rx_datagrams: (after.3 - before.3) as f64 / n,
    }
}

fn runtimes() -> (tokio::runtime::Runtime, tokio::runtime::Runtime) {
    let servers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    (servers, client)
}

fn courier_h3(
    servers: &tokio::runtime::Runtime,
    client: &tokio::runtime::Runtime,
) -> (Figures, usize) {
    let pki = TestPki::new();
    let server = servers
        .block_on(courier_server::start(ServerConfig {
            tls: Some(pki.server_config(&["127.0.0.1"])),
            http3: true,
            ..ServerConfig::default()
        }))
        .expect("server");
    let addr = server.http3_addr().expect("HTTP/3");
    let root = Certificate::from_pem(pki.ca_pem().as_bytes()).expect("CA");
    let figures = client.block_on(async {
        let dialer = Http3Dialer::new(Http3Options {
            root: Some(root),
            ..Http3Options::default()
        })
        .expect("dialer");
        let conn = dialer.connect(addr, "127.0.0.1").await.expect("connect");
        let uri = format!("https://{addr}/bytes/{BODY}");
        let mut head_len = 0;
        let one = || async {
            let req = Request::get(&uri).body(Body::empty()).expect("request");
            let response = conn.send(req).await.expect("send");
            let len = response
                .head
                .headers
                .iter()
                .map(|(k, v)| k.as_str().len() + v.len())
                .sum::<usize>();
            let body = response.body.collect().await.expect("body").to_bytes();
            assert_eq!(body.len(), BODY);
            len
        };
        for _ in 0..WARM_UP {
            head_len = one().await;
        }
        let before = conn.udp_stats();
        let cpu = thread_cpu();
        for _ in 0..REQUESTS {
            one().await;
        }
        let cpu = thread_cpu() - cpu;
        (per_request(before, conn.udp_stats(), cpu), head_len)
    });
    drop(server);
    figures
}

/// A raw quinn server: reads each stream to its end, answers `response` bytes.
async fn raw_server(response: usize) -> (SocketAddr, rustls::pki_types::CertificateDer<'static>) {
    let (endpoint, cert) = super::quic_endpoint(b"raw");
    let addr = endpoint.local_addr().unwrap();
    let answer = bytes::Bytes::from(vec![b'x'; response]);
    tokio::spawn(async move {
        while let Some(incoming) = endpoint.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let Ok(conn) = incoming.await else { return };
                while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                    let answer = answer.clone();
                    tokio::spawn(async move {
                        let _ = recv.read_to_end(64 * 1024).await;
                        let _ = send.write_chunk(answer).await;
                        let _ = send.finish();
                    });
                }
            });
        }
    });
    (addr, cert)
}

fn raw_quinn(
    servers: &tokio::runtime::Runtime,
    client: &tokio::runtime::Runtime,
    request: usize,
    response: usize,
) -> Figures {
    let (addr, cert) = servers.block_on(raw_server(response));
    client.block_on(async {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).expect("root");
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        tls.alpn_protocols = vec![b"raw".to_vec()];
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(tls)).unwrap();
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let conn = endpoint
            .connect(addr, "127.0.0.1")
            .unwrap()
            .await
            .expect("connect");
        let ask = bytes::Bytes::from(vec![b'q'; request]);
        let one = || async {
            let (mut send, mut recv) = conn.open_bi().await.expect("open");
            send.write_chunk(ask.clone()).await.expect("write");
            send.finish().expect("finish");
            let got = recv.read_to_end(64 * 1024).await.expect("read");
            assert_eq!(got.len(), response);
        };
        for _ in 0..WARM_UP {
            one().await;
        }
        let stats = |c: &quinn::Connection| {
            let s = c.stats();
            (
                s.udp_tx.bytes,
                s.udp_rx.bytes,
                s.udp_tx.datagrams,
                s.udp_rx.datagrams,
            )
        };
        let before = stats(&conn);
        let cpu = thread_cpu();
        for _ in 0..REQUESTS {
            one().await;
        }
        let cpu = thread_cpu() - cpu;
        per_request(before, stats(&conn), cpu)
    })
}

#[test]
#[ignore = "a measurement: run it in release, alone (see the module's docs)"]
fn our_http3_versus_raw_quinn() {
    let (servers, client) = runtimes();
    let (h3, head_len) = courier_h3(&servers, &client);
    // The raw exchange carries what HTTP/3 must: the request's fields
    // (:method, :scheme, :authority, :path: about 40 bytes) and the
    // response's fields and body, as bytes of the same length, unframed.
    let raw = raw_quinn(&servers, &client, 40, head_len + BODY);
    println!("{REQUESTS} sequential GETs of {BODY} B over loopback, client thread only:");
    println!("  courier (proto/h3 + quinn): {h3}");
    println!("  raw quinn streams:          {raw}");
    let share = 1.0 - raw.cpu_per_request.as_secs_f64() / h3.cpu_per_request.as_secs_f64();
    println!(
        "  HTTP/3's share (framing, QPACK, courier's client and pool): {:.0}% of the client's CPU",
        share * 100.0
    );
}
