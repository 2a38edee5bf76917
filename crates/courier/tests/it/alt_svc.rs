//! HTTP/3 discovered by `Alt-Svc` (issue 31, `ClientBuilder::http3_alt_svc`):
//! a plain `Client` moves to HTTP/3 once an https origin offers it, races
//! QUIC against TCP, and keeps to TCP for the backoff when QUIC fails, so
//! a network that drops UDP costs one head start. What it must not do: use
//! an alternative on another host (a request's credentials would go where
//! the URL did not say), learn from a plain-http origin, or take one
//! origin's header for another's (a redirect).
//!
//! The origins here are the built-in server (HTTP/3 on the TCP port's
//! number, `alt-svc` on every TCP response) and a small HTTP/1.1 server
//! over TLS whose answers the test writes; UDP "networks" are sockets that
//! read and drop every datagram, counting the QUIC connection attempts by
//! their Initial packets' destination connection ids.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use courier::{Client, ClientBuilder};
use courier_server::{ServerConfig, ServerHandle, TestPki};
use http::Version;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UdpSocket};

use crate::support::{connection_id, server_with};

/// Every wait in this module is bounded by this.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);
/// The head start the races here are given.
pub(crate) const HEAD_START: Duration = Duration::from_millis(300);

pub(crate) async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

/// A UDP socket that reads every datagram and answers none: a network
/// that drops QUIC.
struct UdpSink {
    addr: SocketAddr,
    datagrams: Arc<AtomicUsize>,
    /// Destination connection ids of long-header (Initial) packets: one per
    /// QUIC connection attempt (its retransmissions repeat the id).
    attempts: Arc<Mutex<HashSet<Vec<u8>>>>,
}

impl UdpSink {
    async fn bind(ip: &str) -> UdpSink {
        let socket = UdpSocket::bind((ip, 0)).await.expect("udp");
        let addr = socket.local_addr().expect("addr");
        let datagrams = Arc::new(AtomicUsize::new(0));
        let attempts = Arc::new(Mutex::new(HashSet::new()));
        let (d, a) = (Arc::clone(&datagrams), Arc::clone(&attempts));
        tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = socket.recv(&mut buf).await {
                d.fetch_add(1, SeqCst);
                let packet = &buf[..n];
                // Long header: form bit, version (4), DCID length, DCID.
                if n > 6 && packet[0] & 0x80 != 0 {
                    let len = usize::from(packet[5]);
                    if let Some(dcid) = packet.get(6..6 + len) {
                        a.lock().unwrap().insert(dcid.to_vec());
                    }
                }
            }
        });
        UdpSink {
            addr,
            datagrams,
            attempts,
        }
    }

    fn attempts(&self) -> usize {
        self.attempts.lock().unwrap().len()
    }

    fn datagrams(&self) -> usize {
        self.datagrams.load(SeqCst)
    }
}

/// The certificate the scripted origins present (`localhost`, 127.0.0.1).
struct Cert {
    pem: String,
    key_pem: String,
    config: Arc<rustls::ServerConfig>,
}

fn cert() -> Cert {
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("cert");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .expect("config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Cert {
        pem: cert.cert.pem(),
        key_pem: cert.signing_key.serialize_pem(),
        config: Arc::new(config),
    }
}

/// What a scripted origin answers a request head with (the whole response).
type Answer = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// An HTTP/1.1 origin (over TLS when `tls` is given) that answers each
/// request with `answer`, keeps connections open, and records the heads.
struct Scripted {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
}

impl Scripted {
    async fn start(tls: Option<Arc<rustls::ServerConfig>>, answer: Answer) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (h, c) = (Arc::clone(&heads), Arc::clone(&connections));
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                c.fetch_add(1, SeqCst);
                let (answer, heads, acceptor) =
                    (Arc::clone(&answer), Arc::clone(&h), acceptor.clone());
                tokio::spawn(async move {
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(tcp).await {
                                serve(tls, answer, heads).await;
                            }
                        }
                        None => serve(tcp, answer, heads).await,
                    }
                });
            }
        });
        Scripted {
            port,
            heads,
            connections,
        }
    }

    fn requests(&self) -> usize {
        self.heads.lock().unwrap().len()
    }
}

/// Serves bodiless requests on one connection until it closes.
async fn serve<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut io: S,
    answer: Answer,
    heads: Arc<Mutex<Vec<String>>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match io.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            if buf.len() > 64 * 1024 {
                return;
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let response = answer(&head);
        heads.lock().unwrap().push(head);
        if io.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// `200 ok` with these extra header lines (each ending in CRLF).
/// Sends `n` GETs with `headers` to `url` one after another, reading each
/// body; the versions they were answered over.
pub(crate) async fn get_each(
    client: &Client,
    url: &str,
    n: usize,
    headers: &[(&str, &str)],
) -> Vec<Version> {
    let mut versions = Vec::with_capacity(n);
    for _ in 0..n {
        let mut request = client.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = bounded("request", request.send()).await.expect("request");
        versions.push(response.version());
        bounded("body", response.bytes()).await.expect("body");
    }
    versions
}

fn ok_with(headers: &str) -> String {
    format!("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n{headers}\r\nok")
}

fn alt_svc_answer(value: String) -> Answer {
    Arc::new(move |_| ok_with(&format!("alt-svc: {value}\r\n")))
}

pub(crate) fn client(pem: &str) -> ClientBuilder {
    Client::builder()
        .add_root_certificate(pem)
        .http3_alt_svc(true)
        .http3_head_start(HEAD_START)
}

/// The built-in server over TLS (a certificate for `name` from `pki`)
/// with HTTP/3 on, advertised by `alt-svc` on its TCP responses.
pub(crate) async fn https_and_h3(pki: &TestPki, name: &str) -> ServerHandle {
    server_with(ServerConfig {
        tls: Some(pki.server_config(&[name])),
        http3: true,
        ..ServerConfig::default()
    })
    .await
}

/// The first response over TCP names HTTP/3, and later requests go over
/// it: over HTTP/2 (the connection takes no new requests once HTTP/3 is
/// offered) and over HTTP/1.1 (the idle connection closes after its next
/// request).
#[tokio::test]
async fn the_built_in_server_moves_a_client_to_http3() {
    for http1 in [false, true] {
        let pki = TestPki::new();
        let server = https_and_h3(&pki, "127.0.0.1").await;
        let mut builder = client(&pki.ca_pem());
        if http1 {
            builder = builder.http1_only();
        }
        let client = builder.build().expect("client");
        let url = server.url("/get");
        assert!(url.starts_with("https://"), "{url}");

        let first = bounded("first", client.get(&url).send())
            .await
            .expect("first");
        let tcp = if http1 {
            Version::HTTP_11
        } else {
            Version::HTTP_2
        };
        assert_eq!(first.version(), tcp, "the first request knows nothing yet");
        assert!(first.headers().contains_key("alt-svc"));
        bounded("body", first.bytes()).await.expect("body");

        let mut versions = Vec::new();
        let mut h3_connection = None;
        for _ in 0..6 {
            let response = bounded("next", client.get(&url).send())
                .await
                .expect("next");
            versions.push(response.version());
            if response.version() == Version::HTTP_3 {
                let id = connection_id(&response);
                assert_eq!(
                    *h3_connection.get_or_insert(id),
                    id,
                    "one HTTP/3 connection"
                );
            }
            bounded("body", response.bytes()).await.expect("body");
        }
        // HTTP/2: the next request; HTTP/1.1: the one after (the idle
        // connection carries one more request, then closes).
        let tcp_after = usize::from(http1);
        assert!(
            versions[..tcp_after].iter().all(|v| *v == tcp)
                && versions[tcp_after..].iter().all(|v| *v == Version::HTTP_3),
            "http1 {http1}: {versions:?}"
        );
        let m = client.metrics();
        assert_eq!(m.connections_established_http3, 1);
        assert_eq!(server.connections_h3(), 1);
        assert_eq!(m.requests_http3, 6 - tcp_after as u64);
    }
}

/// A network that drops UDP: every request succeeds, the one racing dial
/// costs the head start (TCP starts then, and wins), and no QUIC attempt
/// follows (the alternative is broken for 5 minutes).
#[tokio::test]
async fn a_network_that_drops_udp_costs_one_head_start() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let cert = cert();
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(format!("h3=\":{}\"", sink.addr.port())),
    )
    .await;
    let client = client(&cert.pem).build().expect("client");
    let url = format!("https://localhost:{}/", origin.port);

    let mut took = Vec::new();
    for _ in 0..10 {
        let started = std::time::Instant::now();
        let response = bounded("request", client.get(&url).send())
            .await
            .expect("every request succeeds");
        assert_eq!(response.version(), Version::HTTP_11);
        assert_eq!(
            &bounded("body", response.bytes()).await.expect("body")[..],
            b"ok"
        );
        took.push(started.elapsed());
    }
    println!(
        "each request took {took:?}; QUIC attempts {}",
        sink.attempts()
    );
    assert_eq!(sink.attempts(), 1, "one QUIC attempt in all ({took:?})");
    assert!(sink.datagrams() >= 1);
    // The third request dialed (the second closed the connection the first
    // taught): it waited the head start, then TCP won.
    let raced = took[2];
    assert!(
        raced >= HEAD_START && raced < HEAD_START + Duration::from_secs(2),
        "the racing request took {raced:?} ({took:?})"
    );
    let slow = took.iter().filter(|t| **t >= HEAD_START).count();
    assert_eq!(slow, 1, "only the race pays the head start: {took:?}");
    // Two TCP connections: the first, and the race's winner, kept.
    assert_eq!(origin.connections.load(SeqCst), 2);
    assert_eq!(origin.requests(), 10);
}

/// An alternative on another host is never dialed: credentials (an
/// `Authorization`, a cookie) go only to the origin, over TCP.
#[tokio::test]
async fn an_alternative_on_another_host_is_never_used() {
    // 127.0.0.2 is loopback too (Linux routes 127/8 to lo).
    let elsewhere = UdpSink::bind("127.0.0.2").await;
    let cert = cert();
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(format!(
            "h3=\"127.0.0.2:{0}\", h3=\"evil.example:{0}\"",
            elsewhere.addr.port()
        )),
    )
    .await;
    let client = client(&cert.pem).build().expect("client");
    let url = format!("https://localhost:{}/", origin.port);
    let secrets = [
        ("authorization", "Bearer secret-token"),
        ("cookie", "session=secret-cookie"),
    ];
    let versions = get_each(&client, &url, 5, &secrets).await;
    assert!(
        versions.iter().all(|v| *v == Version::HTTP_11),
        "{versions:?}"
    );
    assert_eq!(elsewhere.datagrams(), 0, "nothing went to another host");
    assert_eq!(
        origin.connections.load(SeqCst),
        1,
        "the connection was kept"
    );
    let heads = origin.heads.lock().unwrap();
    assert_eq!(heads.len(), 5);
    assert!(heads.iter().all(|h| h.contains("secret-token")));
}

/// A plain-http origin's `Alt-Svc` is ignored (HTTP/3 needs TLS, and a
/// plaintext header may be anyone's).
#[tokio::test]
async fn a_plain_http_origin_learns_nothing() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let origin = Scripted::start(
        None,
        alt_svc_answer(format!("h3=\":{}\"", sink.addr.port())),
    )
    .await;
    let client = client(&cert().pem).build().expect("client");
    let url = format!("http://127.0.0.1:{}/", origin.port);
    get_each(&client, &url, 5, &[]).await;
    assert_eq!(sink.datagrams(), 0);
    assert_eq!(origin.connections.load(SeqCst), 1);
}

/// `Alt-Svc: clear` forgets what the origin offered before any dial used it.
#[tokio::test]
async fn clear_forgets_the_alternative() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let cert = cert();
    let port = sink.addr.port();
    let n = Arc::new(AtomicUsize::new(0));
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        Arc::new(move |_| {
            let value = match n.fetch_add(1, SeqCst) {
                0 => format!("h3=\":{port}\""),
                _ => "clear".to_owned(),
            };
            ok_with(&format!("alt-svc: {value}\r\n"))
        }),
    )
    .await;
    let client = client(&cert.pem).build().expect("client");
    let url = format!("https://localhost:{}/", origin.port);
    get_each(&client, &url, 5, &[]).await;
    assert_eq!(sink.datagrams(), 0, "no QUIC after clear");
    // The first connection closed after the second request (the offer
    // stood then); the next one stays.
    assert_eq!(origin.connections.load(SeqCst), 2);
}

/// A redirect's target offers HTTP/3: that is the target's, not the
/// first origin's, which keeps to TCP.
#[tokio::test]
async fn a_redirect_targets_offer_is_not_the_first_origins() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let cert = cert();
    let target = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(format!("h3=\":{}\"", sink.addr.port())),
    )
    .await;
    let location = format!("https://127.0.0.1:{}/there", target.port);
    let first = Scripted::start(
        Some(Arc::clone(&cert.config)),
        Arc::new(move |head: &str| {
            if head.starts_with("GET /go ") {
                format!("HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n")
            } else {
                ok_with("")
            }
        }),
    )
    .await;
    let client = client(&cert.pem).build().expect("client");
    let redirected = bounded(
        "redirect",
        client
            .get(format!("https://localhost:{}/go", first.port))
            .send(),
    )
    .await
    .expect("redirect");
    bounded("body", redirected.bytes()).await.expect("body");
    let url = format!("https://localhost:{}/", first.port);
    let versions = get_each(&client, &url, 5, &[]).await;
    assert!(
        versions.iter().all(|v| *v == Version::HTTP_11),
        "{versions:?}"
    );
    assert_eq!(sink.datagrams(), 0, "the first origin never raced");
    assert_eq!(first.connections.load(SeqCst), 1);
}

/// The alternative's port answers QUIC with a certificate for another
/// name: the handshake fails (the origin's name is verified), the
/// alternative is broken, and no request, credentials included, reaches it.
#[tokio::test]
async fn an_alternative_with_a_certificate_for_another_name_is_broken() {
    let pki = TestPki::new();
    let impostor = https_and_h3(&pki, "other.example").await;
    let quic_port = impostor.http3_addr().expect("h3").port();
    let cert = cert();
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(format!("h3=\":{quic_port}\"")),
    )
    .await;
    let client = client(&cert.pem)
        .add_root_certificate(pki.ca_pem())
        .build()
        .expect("client");
    let url = format!("https://localhost:{}/", origin.port);
    let secret = [("authorization", "Bearer secret-token")];
    let versions = get_each(&client, &url, 6, &secret).await;
    assert!(
        versions.iter().all(|v| *v == Version::HTTP_11),
        "{versions:?}"
    );
    assert_eq!(
        impostor.requests_served(),
        0,
        "nothing reached the impostor"
    );
    assert_eq!(impostor.connections_h3(), 0);
    let m = client.metrics();
    assert_eq!(m.tls_handshake_failures, 1, "one QUIC attempt, refused");
    assert_eq!(m.connections_established_http3, 0);
    assert_eq!(origin.requests(), 6);
}

/// Off by default: the same origin, no QUIC.
#[tokio::test]
async fn off_by_default() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let cert = cert();
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(format!("h3=\":{}\"", sink.addr.port())),
    )
    .await;
    let client = Client::builder()
        .add_root_certificate(&cert.pem)
        .build()
        .expect("client");
    let url = format!("https://localhost:{}/", origin.port);
    get_each(&client, &url, 4, &[]).await;
    assert_eq!(sink.datagrams(), 0);
    assert_eq!(origin.connections.load(SeqCst), 1);
}

/// Through a proxy's CONNECT tunnel: neither the proxy's own `Alt-Svc` (on
/// its `200`) nor the origin's is acted on (HTTP/3 goes straight to the
/// server over UDP, which the proxy route rules out): no QUIC, one tunnel.
#[tokio::test]
async fn an_origin_behind_a_proxy_is_not_upgraded() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let cert = cert();
    let offer = format!("h3=\":{}\"", sink.addr.port());
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(offer.clone()),
    )
    .await;
    let origin_port = origin.port;
    let proxy = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let proxy_addr = proxy.local_addr().expect("addr");
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tunnels);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = proxy.accept().await {
            counted.fetch_add(1, SeqCst);
            let offer = offer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                    if inbound.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                assert!(head.starts_with(b"CONNECT "), "a tunnel is asked for");
                let Ok(mut outbound) =
                    tokio::net::TcpStream::connect(("127.0.0.1", origin_port)).await
                else {
                    return;
                };
                let established =
                    format!("HTTP/1.1 200 Connection Established\r\nalt-svc: {offer}\r\n\r\n");
                if inbound.write_all(established.as_bytes()).await.is_err() {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    let client = client(&cert.pem)
        .proxy(courier::Proxy::all(&format!("http://{proxy_addr}")).expect("proxy"))
        .build()
        .expect("client");
    let url = format!("https://localhost:{origin_port}/");
    let versions = get_each(&client, &url, 5, &[]).await;
    assert!(
        versions.iter().all(|v| *v == Version::HTTP_11),
        "{versions:?}"
    );
    assert_eq!(sink.datagrams(), 0, "no QUIC from behind a proxy");
    assert_eq!(tunnels.load(SeqCst), 1, "the tunnel was kept");
    assert_eq!(origin.requests(), 5);
}

/// Caddy (Debian's 2.6, HTTP/3 on: it sends `Alt-Svc: h3=":PORT"` on its
/// TCP responses by default), when installed: the first request goes over
/// TCP (HTTP/2), the later ones over HTTP/3 on one connection.
#[tokio::test]
async fn caddy_moves_a_client_to_http3() {
    let installed = std::process::Command::new("caddy")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("skipped: caddy is not installed (interop/install-debian.sh)");
        return;
    }
    let cert = cert();
    let dir = std::env::temp_dir().join(format!("courier-alt-svc-caddy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("cert.pem"), &cert.pem).expect("cert");
    std::fs::write(dir.join("key.pem"), &cert.key_pem).expect("key");
    let port = crate::support::free_port();
    let d = dir.display();
    let conf = format!(
        "{{\n\tadmin off\n\tauto_https off\n\tstorage file_system {d}/data\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\n\
         https://localhost:{port} {{\n\tbind 127.0.0.1\n\ttls {d}/cert.pem {d}/key.pem\n\trespond \"ok\"\n}}\n"
    );
    std::fs::write(dir.join("Caddyfile"), conf).expect("Caddyfile");
    let child = std::process::Command::new("caddy")
        .args([
            "run",
            "--config",
            &format!("{d}/Caddyfile"),
            "--adapter",
            "caddyfile",
        ])
        .env("HOME", &dir)
        .env("XDG_DATA_HOME", &dir)
        .env("XDG_CONFIG_HOME", &dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("caddy");
    let _caddy = KillOnDrop(child);
    let client = client(&cert.pem).build().expect("client");
    let url = format!("https://localhost:{port}/");
    // Ready when it answers (each try bounded; at most LIMIT in all).
    let started = std::time::Instant::now();
    let first = loop {
        match tokio::time::timeout(Duration::from_secs(2), client.get(&url).send()).await {
            Ok(Ok(response)) => break response,
            _ if started.elapsed() < LIMIT => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("caddy never answered: {other:?}"),
        }
    };
    assert_eq!(first.version(), Version::HTTP_2);
    let offer = first
        .headers()
        .get("alt-svc")
        .expect("Caddy offers HTTP/3")
        .clone();
    assert!(
        offer.to_str().unwrap().contains(&format!("h3=\":{port}\"")),
        "{offer:?}"
    );
    bounded("body", first.bytes()).await.expect("body");
    for _ in 0..4 {
        let response = bounded("request", client.get(&url).send())
            .await
            .expect("request");
        assert_eq!(response.version(), Version::HTTP_3);
        assert_eq!(
            &bounded("body", response.bytes()).await.expect("body")[..],
            b"ok"
        );
    }
    let m = client.metrics();
    assert_eq!(m.connections_established_http3, 1);
    assert_eq!(m.requests_http3, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Kills the child it holds when dropped (a failed assertion included).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Many requests at the moment an offer is learnt: the pool dials one
/// connection per waiting HTTP/1.1 request, and each dial races, so
/// several QUIC attempts fail at once on a network that drops UDP. They
/// are one failure (the backoff is not compounded), every request
/// succeeds, and later requests make no attempt.
#[tokio::test]
async fn a_wave_of_races_on_a_network_that_drops_udp() {
    let sink = UdpSink::bind("127.0.0.1").await;
    let cert = cert();
    let origin = Scripted::start(
        Some(Arc::clone(&cert.config)),
        alt_svc_answer(format!("h3=\":{}\"", sink.addr.port())),
    )
    .await;
    let client = client(&cert.pem).build().expect("client");
    let url = format!("https://localhost:{}/", origin.port);
    let first = bounded("first", client.get(&url).send())
        .await
        .expect("first");
    bounded("body", first.bytes()).await.expect("body");

    let wave: Vec<_> = (0..8)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let response = client.get(&url).send().await?;
                response.bytes().await
            })
        })
        .collect();
    for request in wave {
        bounded("wave", request)
            .await
            .expect("task")
            .expect("request");
    }
    let attempts = sink.attempts();
    println!("a wave of 8: {attempts} QUIC attempts");
    assert_eq!(attempts, 1, "one race per origin: {attempts} QUIC attempts");
    get_each(&client, &url, 5, &[]).await;
    assert_eq!(sink.attempts(), attempts, "none after the wave");
    assert_eq!(origin.requests(), 14);
}

/// Sends `n` GETs to `url` at once; the versions they were answered over.
async fn get_at_once(client: &Client, url: &str, n: usize) -> Vec<Version> {
    let wave: Vec<_> = (0..n)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_owned());
            tokio::spawn(async move {
                let response = client.get(&url).send().await?;
                let version = response.version();
                response.bytes().await.map(|_| version)
            })
        })
        .collect();
    let mut versions = Vec::with_capacity(n);
    for request in wave {
        versions.push(
            bounded("wave", request)
                .await
                .expect("task")
                .expect("request"),
        );
    }
    versions
}

/// A wave of HTTP/1.1 requests as the offer arrives, with QUIC working:
/// the pool dials one connection per waiting request, and only one of
/// those dials races (the others go TCP), so the server sees one QUIC
/// connection, and later requests move to it.
#[tokio::test]
async fn a_wave_as_the_offer_arrives_makes_one_quic_attempt() {
    let pki = TestPki::new();
    let server = https_and_h3(&pki, "127.0.0.1").await;
    // A long head start: under load QUIC still wins, and the count is of
    // attempts, not of races won.
    let client = client(&pki.ca_pem())
        .http1_only()
        .http3_head_start(Duration::from_secs(5))
        .build()
        .expect("client");
    let url = server.url("/get");
    let first = get_each(&client, &url, 1, &[]).await;
    assert_eq!(first, [Version::HTTP_11], "the first request knows nothing");
    let wave = get_at_once(&client, &url, 8).await;
    println!(
        "the wave: {wave:?}; QUIC connections {}",
        server.connections_h3()
    );
    assert_eq!(server.connections_h3(), 1, "one QUIC attempt: {wave:?}");
    // The TCP connections give way (each carries at most one more request).
    let later = get_each(&client, &url, 12, &[]).await;
    assert_eq!(later.last(), Some(&Version::HTTP_3), "{later:?}");
    assert_eq!(server.connections_h3(), 1, "{later:?}");
    assert_eq!(client.metrics().connections_established_http3, 1);
}

/// An `Alt-Svc` received over HTTP/3 counts as one over TCP does (the
/// built-in server's `/response-headers` writes it on an HTTP/3
/// response): `clear` forgets the alternative, and a new offer replaces
/// the old one's `ma` (here a second, shorter than the day the TCP offer
/// gave). Both show on the next connection, once the QUIC one closes
/// (`/close`: GOAWAY; `clear` drains it at once): TCP, with no QUIC
/// attempt. Unchanged (the
/// control), the next connection is QUIC again.
#[tokio::test]
async fn alt_svc_received_over_http3_is_learnt() {
    for case in ["clear", "ma=1", "unchanged"] {
        let pki = TestPki::new();
        let server = https_and_h3(&pki, "127.0.0.1").await;
        let quic_port = server.http3_addr().expect("h3").port();
        // QUIC on loopback always wins: this is about learning.
        let client = client(&pki.ca_pem())
            .http3_head_start(Duration::from_secs(5))
            .build()
            .expect("client");
        let get = server.url("/get");
        let versions = get_each(&client, &get, 2, &[]).await;
        assert_eq!(versions, [Version::HTTP_2, Version::HTTP_3], "{case}");
        let offer = match case {
            "clear" => Some("clear".to_owned()),
            "ma=1" => Some(format!("h3=\":{quic_port}\"; ma=1")),
            _ => None,
        };
        if let Some(offer) = offer {
            let encoded: String = offer
                .bytes()
                .map(|b| match b {
                    b'a'..=b'z' | b'0'..=b'9' => char::from(b).to_string(),
                    _ => format!("%{b:02X}"),
                })
                .collect();
            let url = server.url(&format!("/response-headers?alt-svc={encoded}"));
            let response = bounded("offer", client.get(&url).send())
                .await
                .expect("offer");
            assert_eq!(response.version(), Version::HTTP_3, "{case}");
            assert_eq!(response.headers()["alt-svc"], offer.as_str(), "{case}");
            bounded("body", response.bytes()).await.expect("body");
        }
        if case == "ma=1" {
            // Time passing is what is tested: the offer's second runs out.
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        // `clear` drains the QUIC connection at once (`alt_svc_clear`);
        // otherwise it is closed here.
        let quic_conn = if case == "clear" {
            None
        } else {
            let response = bounded("close", client.get(server.url("/close")).send())
                .await
                .expect("close");
            assert_eq!(response.version(), Version::HTTP_3, "{case}");
            Some(connection_id(&response))
        };
        // Until a request lands off the closing QUIC connection.
        let mut next = None;
        for _ in 0..20 {
            let response = bounded("next", client.get(&get).send())
                .await
                .expect("next");
            let moved = response.version() != Version::HTTP_3
                || Some(connection_id(&response)) != quic_conn;
            let version = response.version();
            bounded("body", response.bytes()).await.expect("body");
            if moved {
                next = Some(version);
                break;
            }
        }
        let expected = match case {
            "unchanged" => (Version::HTTP_3, 2),
            _ => (Version::HTTP_2, 1),
        };
        assert_eq!(
            (
                next.expect("off the closed connection"),
                server.connections_h3()
            ),
            expected,
            "{case}: the next connection's version, QUIC connections"
        );
    }
}

/// The factory's TOML keys build a client that moves to HTTP/3:
/// `http3_alt_svc` and `http3_head_start` (a long head start: QUIC on
/// loopback then always wins, which the client made from the same file
/// without `http3_alt_svc` never tries).
#[tokio::test]
async fn the_toml_keys_move_a_factory_client_to_http3() {
    let pki = TestPki::new();
    let server = https_and_h3(&pki, "127.0.0.1").await;
    let dir = std::env::temp_dir().join(format!("courier-alt-svc-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("ca.pem"), pki.ca_pem()).expect("ca");
    std::fs::write(
        dir.join("clients.toml"),
        "[defaults]\nroot_certificates = [\"ca.pem\"]\n\n\
         [clients.upgrading]\nhttp3_alt_svc = true\nhttp3_head_start = \"5s\"\n",
    )
    .expect("toml");
    let factory = courier::ClientFactory::builder()
        .config_file(dir.join("clients.toml"))
        .expect("config")
        .build()
        .expect("factory");
    let url = server.url("/get");
    for (name, expected) in [
        (
            "upgrading",
            [Version::HTTP_2, Version::HTTP_3, Version::HTTP_3],
        ),
        ("staying", [Version::HTTP_2; 3]),
    ] {
        let client = factory.client(name);
        let mut versions = Vec::new();
        for _ in 0..3 {
            let response = bounded("request", client.get(&url).send())
                .await
                .expect("request");
            versions.push(response.version());
            bounded("body", response.bytes()).await.expect("body");
        }
        assert_eq!(versions, expected, "{name}");
    }
    assert_eq!(server.connections_h3(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
