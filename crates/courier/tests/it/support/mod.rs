//! Shared helpers for the integration tests: the built-in server on
//! loopback, a bounded wait for observable state, a test run alone in a
//! process of its own ([`alone`]), and the submodules [`ci`] (whether a skip
//! is a failure), [`h2`] (HTTP/2 frame by frame) and [`middleware`] (a
//! scriptable HTTP/1.1 server).

pub mod ci;
pub mod h2;
pub mod memory;
pub mod middleware;
#[cfg(feature = "dns-srv")]
pub mod nameserver;
#[cfg(feature = "http3")]
pub mod udp_delay;

use std::time::{Duration, Instant};

use courier_server::{ServerConfig, ServerHandle};

/// Starts the built-in server on 127.0.0.1 with an ephemeral port.
pub async fn server() -> ServerHandle {
    server_with(ServerConfig::default()).await
}

pub async fn server_with(config: ServerConfig) -> ServerHandle {
    courier_server::start(config)
        .await
        .expect("start built-in server")
}

/// Waits until `cond` holds, polling observable state; fails the test after
/// `limit` on either clock: real time (a hang), and tokio's, which on paused
/// time is virtual: there "closed after the timeout" must then happen within
/// `limit` of virtual time too (each poll's sleep advances it), not at any
/// time at all.
pub async fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    let virtual_deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        assert!(
            tokio::time::Instant::now() < virtual_deadline,
            "not within {limit:?} of tokio's clock: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads one request head (enough for GETs: no body); false if the peer
/// closed or failed first.
pub async fn read_head<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> bool {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// For a test that measures the whole process (its CPU time, its RSS),
/// which the binary's other tests, running beside it on other threads,
/// would add to: runs the test again in a process of its own, this binary
/// filtered to that one test (`module` is the caller's `module_path!()`,
/// `test` its function's name). Returns true in that process, where the
/// test goes on; false in the first, once the second has passed (its
/// failure fails the test here; what it printed is printed here).
pub fn alone(module: &str, test: &str) -> bool {
    const VAR: &str = "COURIER_TEST_ALONE";
    // libtest's name for the test: its path without the crate's name.
    let name = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    };
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([&name, "--exact", "--include-ignored", "--nocapture"])
        .env(VAR, &name)
        .output()
        .expect("run this test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, in a process of its own: {}",
        out.status
    );
    false
}

/// `data` in a content coding: `gzip`, `deflate` (zlib), `raw-deflate`
/// (deflate without the zlib wrapper), `br` (at its fastest level: bombs
/// of many MiB are compressed here) or `zstd`.
pub async fn compress(encoding: &str, data: &[u8]) -> Vec<u8> {
    use async_compression::tokio::bufread as enc;
    use tokio::io::{AsyncRead, AsyncReadExt};

    async fn read_all(mut r: impl AsyncRead + Unpin) -> Vec<u8> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        out
    }

    match encoding {
        "gzip" => read_all(enc::GzipEncoder::new(data)).await,
        "deflate" => read_all(enc::ZlibEncoder::new(data)).await,
        "raw-deflate" => read_all(enc::DeflateEncoder::new(data)).await,
        "br" => {
            read_all(enc::BrotliEncoder::with_quality(
                data,
                async_compression::Level::Fastest,
            ))
            .await
        }
        "zstd" => read_all(enc::ZstdEncoder::new(data)).await,
        other => panic!("{other}"),
    }
}

/// A loopback port nothing listens on, kept so while the returned socket
/// lives: bound and not listening, it holds the port (no server of this
/// process is given it, as one could be a port [`free_port`] found free and
/// let go) and a connection to it is refused.
pub fn refused_port() -> (u16, tokio::net::TcpSocket) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind");
    let port = socket.local_addr().expect("address").port();
    (port, socket)
}

/// A loopback port nobody listens on right now (TCP nor UDP), that no
/// earlier call in this process returned, and that the kernel does not hand
/// out as an ephemeral port.
///
/// Why once only: a port is free again as soon as this returns, so two calls
/// may return the same one before either is bound (about one pair in 20,000
/// here). HAProxy binds with SO_REUSEPORT, so when its plain and TLS
/// listeners got the same port both bound, and the kernel split the
/// connections between them: half the plain requests met TLS and the other
/// way round.
///
/// Why below the ephemeral range: between this call and the server's bind,
/// any socket the tests open (a client's connection, a listener on port 0)
/// could take an ephemeral port, and this one with it. The kernel picks
/// those from `ip_local_port_range` only. Ports are taken from 10,000 up to
/// that range's start, beginning at a place that depends on the process id,
/// so that two test processes on one machine seldom probe the same ones.
pub fn free_port() -> u16 {
    use std::collections::BTreeSet;
    use std::sync::{Mutex, PoisonError};

    const LOW: u16 = 10_000;
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(PoisonError::into_inner);
    let high = ephemeral_start();
    let free = |port: u16| {
        std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
    };
    if high > LOW + 1_000 {
        let span = u32::from(high - LOW);
        let offset = std::process::id().wrapping_mul(7_919) % span;
        for i in 0..span {
            let port = LOW + u16::try_from((offset + i) % span).expect("below the range");
            if !given.contains(&port) && free(port) {
                given.insert(port);
                return port;
            }
        }
    }
    // No room below the ephemeral range: one from it, as the kernel gives.
    for _ in 0..1_000 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        if given.insert(port) {
            return port;
        }
    }
    panic!("no port left that was not handed out already");
}

/// The first port of the kernel's ephemeral range (Linux's
/// `ip_local_port_range`; 32,768 by default, and where it cannot be read).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[test]
fn free_ports_are_never_handed_out_twice() {
    // 2,000 ports drawn by the kernel repeat some dozens of times; these
    // must not, even when the range below the ephemeral one is used up.
    let ports: Vec<u16> = (0..2_000).map(|_| free_port()).collect();
    let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
    assert_eq!(distinct.len(), ports.len());
    // None the kernel could give a socket bound to port 0 meanwhile.
    let ephemeral = ephemeral_start();
    assert!(ports.iter().all(|&p| p < ephemeral), "{ephemeral}");
}

/// Accepts one QUIC connection on `endpoint` and sets HTTP/3 up as a bare
/// server of the tests' own does: a control stream with an empty SETTINGS.
/// The control stream is handed back (dropping it would end HTTP/3 there).
#[cfg(feature = "http3")]
pub async fn h3_accept(endpoint: &quinn::Endpoint) -> (quinn::Connection, quinn::SendStream) {
    let conn = endpoint
        .accept()
        .await
        .expect("a connection")
        .await
        .expect("handshake");
    let mut control = conn.open_uni().await.expect("control stream");
    // Stream type 0x00 (control), SETTINGS (0x04) with nothing in it.
    control
        .write_all(&[0x00, 0x04, 0x00])
        .await
        .expect("SETTINGS");
    (conn, control)
}

/// A TLS 1.3 server configuration offering `h3` with `cert` and its `key`
/// (PKCS #8), on ring: what the tests' own QUIC servers start from.
#[cfg(feature = "http3")]
pub fn h3_tls(
    cert: &rustls_pki_types::CertificateDer<'static>,
    key: &[u8],
) -> rustls::ServerConfig {
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(key.to_vec().into());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .expect("server certificate");
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls
}

/// A streamed body fed by the test: pieces arrive as the test sends them,
/// and the body ends when the sender is dropped.
pub fn channel_body() -> (
    tokio::sync::mpsc::UnboundedSender<bytes::Bytes>,
    courier::Body,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<bytes::Bytes>();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    (tx, courier::Body::wrap_stream(stream))
}

/// The `x-connection-id` the built-in server stamps on every response.
pub fn connection_id(res: &courier::Response) -> u64 {
    res.headers()
        .get("x-connection-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("x-connection-id header")
}

/// Starts a GET of `url` on a task of its own, reading the body to its end.
pub fn spawn_get(
    client: &courier::Client,
    url: impl AsRef<str>,
) -> tokio::task::JoinHandle<Result<bytes::Bytes, courier::Error>> {
    let request = client.get(url.as_ref());
    tokio::spawn(async move { request.send().await?.bytes().await })
}

/// Starts a GET of `url` with a request timeout of `ms` on a task of its
/// own, reading the body to its end: its outcome, and when it came after
/// `started`.
pub fn spawn_timed_get(
    client: &courier::Client,
    url: impl AsRef<str>,
    ms: u64,
    started: tokio::time::Instant,
) -> tokio::task::JoinHandle<(Result<(), courier::Error>, Duration)> {
    let request = client
        .get(url.as_ref())
        .timeout(Duration::from_millis(ms))
        .send();
    tokio::spawn(async move {
        let outcome = match request.await {
            Ok(response) => response.bytes().await.map(drop),
            Err(e) => Err(e),
        };
        (outcome, started.elapsed())
    })
}

/// GETs `url` and reads the whole body; any error fails the test.
pub async fn fetch(client: &courier::Client, url: impl AsRef<str>) -> bytes::Bytes {
    client
        .get(url.as_ref())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
}

/// Nothing in flight, queued or connecting, and every open connection idle.
pub fn settled(m: &courier::MetricsSnapshot) -> bool {
    m.requests_active == 0
        && m.requests_queued == 0
        && m.http2_streams_active == 0
        && m.connect_attempts_current == 0
        && m.connections_open == m.connections_idle
}

/// A streamed request body: `pieces` in order, then its end; or, with
/// `stall`, nothing more, ever (a producer that has stopped).
pub struct Pieces<I> {
    pub pieces: I,
    pub stall: bool,
}

impl<I: Iterator<Item = bytes::Bytes> + Unpin> http_body::Body for Pieces<I> {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>> {
        use std::task::Poll;
        match self.pieces.next() {
            Some(piece) => Poll::Ready(Some(Ok(http_body::Frame::data(piece)))),
            None if self.stall => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}
