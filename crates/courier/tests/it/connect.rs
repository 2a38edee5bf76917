//! How connections are made: Happy Eyeballs over a black-holed address,
//! IPv6 loopback, addresses given for a host name instead of DNS, the local
//! address bound, and errors that name the host that failed to resolve.
//!
//! A black hole on loopback: a listener whose accept queue is full and that
//! never accepts. Linux then drops further SYNs (`tcp_abort_on_overflow`
//! is 0 by default), so a connect to it neither succeeds nor fails: what a
//! dead replica still in DNS, or a dropped IPv6 route, looks like.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use courier::{Client, ErrorKind};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::support::read_head;

/// A listener nobody accepts from, its queue filled: connects to it hang.
/// The returned values keep it so.
async fn black_hole() -> (SocketAddr, tokio::net::TcpListener, Vec<TcpStream>) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    // Fill the accept queue; once it is full, a connect is left unanswered.
    for _ in 0..8 {
        match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await {
            Ok(Ok(s)) => fillers.push(s),
            _ => break,
        }
    }
    (addr, listener, fillers)
}

/// A one-request HTTP/1.1 server on `ip` answering with the peer's address.
async fn peer_echo(ip: IpAddr) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut io, peer)) = listener.accept().await {
            tokio::spawn(async move {
                if !read_head(&mut io).await {
                    return;
                }
                let body = peer.ip().to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = io.write_all(head.as_bytes()).await;
            });
        }
    });
    (addr, task)
}

#[tokio::test]
async fn a_black_holed_first_address_costs_the_attempt_delay_not_the_timeout() {
    let (dead, _listener, fillers) = black_hole().await;
    assert!(!fillers.is_empty(), "the black hole needs its queue filled");
    let (live, server) = peer_echo(IpAddr::V4(Ipv4Addr::LOCALHOST)).await;
    // Both addresses for one name, the dead one first. Tried in turn, the
    // request would wait out the 10 s connect timeout and fail at its own 3 s.
    let client = Client::builder()
        .resolve("replicas.test", dead)
        .resolve("replicas.test", live)
        .connect_timeout(Duration::from_secs(10))
        .happy_eyeballs_delay(Duration::from_millis(100))
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let body =
        crate::support::fetch(&client, format!("http://replicas.test:{}/", live.port())).await;
    assert_eq!(body, "127.0.0.1");
    let m = client.metrics();
    assert_eq!(m.connections_established, 1, "{m:?}");
    server.abort();
}

#[tokio::test]
async fn every_address_black_holed_fails_at_the_connect_timeout() {
    let (dead, _listener, fillers) = black_hole().await;
    assert!(!fillers.is_empty());
    let client = Client::builder()
        .resolve("nowhere.test", dead)
        .connect_timeout(Duration::from_millis(300))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let err = client
        .get(format!("http://nowhere.test:{}/", dead.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectTimeout, "{err}");
    // And a per-address limit alone, below the connect timeout.
    let client = Client::builder()
        .resolve("nowhere.test", dead)
        .connect_timeout_per_address(Some(Duration::from_millis(200)))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let err = client
        .get(format!("http://nowhere.test:{}/", dead.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(format!("{err:#}").contains("timed out"), "{err}");
}

#[tokio::test]
async fn ipv6_loopback_is_reached_and_families_alternate() {
    let (v6, server) = peer_echo(IpAddr::V6(Ipv6Addr::LOCALHOST)).await;
    let (dead, _listener, fillers) = black_hole().await;
    assert!(!fillers.is_empty());
    // The dead IPv4 address first: the IPv6 one is tried next (after the
    // delay), not after every IPv4 address.
    let client = Client::builder()
        .resolve("dual.test", SocketAddr::new(dead.ip(), v6.port()))
        .resolve("dual.test", v6)
        .happy_eyeballs_delay(Duration::from_millis(100))
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let body = crate::support::fetch(&client, format!("http://dual.test:{}/", v6.port())).await;
    assert_eq!(body, "::1");
    // An IPv6 literal in the URL.
    let client = Client::new();
    let body = crate::support::fetch(&client, format!("http://[::1]:{}/", v6.port())).await;
    assert_eq!(body, "::1");
    server.abort();
}

#[tokio::test]
async fn a_resolved_override_keeps_the_host_name() {
    let srv = crate::support::server().await;
    let port = srv.local_addr().port();
    let client = Client::builder()
        .resolve("API.internal.", SocketAddr::from(([127, 0, 0, 1], 0)))
        .build()
        .unwrap();
    let res = client
        .get(format!("http://api.internal:{port}/headers"))
        .send()
        .await
        .unwrap();
    let headers: serde_json::Value = res.json().await.unwrap();
    assert_eq!(headers["host"], format!("api.internal:{port}"));
}

#[tokio::test]
async fn the_local_address_is_bound() {
    let (addr, server) = peer_echo(IpAddr::V4(Ipv4Addr::LOCALHOST)).await;
    let client = Client::builder()
        .local_address(Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))))
        .build()
        .unwrap();
    let body = crate::support::fetch(&client, format!("http://{addr}/")).await;
    assert_eq!(body, "127.0.0.2");
    server.abort();
}

#[tokio::test]
async fn a_dns_failure_names_the_host() {
    let client = Client::new();
    let err = client
        .get("http://no-such-host.invalid/")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Dns, "{err}");
    assert!(format!("{err:#}").contains("no-such-host.invalid"), "{err}");
}

/// A TCP front for `upstream` whose first connection is accepted and never
/// answered (a TLS handshake that hangs: a stuck backend behind a load
/// balancer); the others are passed through.
async fn first_connection_hangs(upstream: SocketAddr) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        let mut first = true;
        while let Ok((mut io, _)) = listener.accept().await {
            if std::mem::take(&mut first) {
                held.push(io);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut up) = TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut io, &mut up).await;
                }
            });
        }
    });
    (addr, task)
}

#[tokio::test]
async fn a_request_behind_a_stuck_handshake_gets_a_dial_of_its_own() {
    let pki = courier_server::TestPki::new();
    let srv = crate::support::server_with(courier_server::ServerConfig {
        tls: Some(pki.server_config(&["localhost"])),
        ..courier_server::ServerConfig::default()
    })
    .await;
    let (front, task) = first_connection_hangs(srv.local_addr()).await;
    // The stuck attempt would run to its 4 s connect timeout, past the
    // request's 3 s; after a quarter of it (1 s) the waiting request gets a
    // connection attempt of its own.
    let client = Client::builder()
        .no_env_proxy()
        .add_root_certificate(pki.ca_pem())
        .connect_timeout(Duration::from_secs(4))
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let url = format!("https://localhost:{}/bytes/4", front.port());
    assert_eq!(crate::support::fetch(&client, &url).await.len(), 4);
    task.abort();
}
