//! The UDP relay: a datagram's round trip takes the link's two delays,
//! sessions are bounded in count and idle time, and QUIC (HTTP/3 from the
//! built-in server to h3's client) works through it.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Buf;
use delay_proxy::{serve_udp, UdpLink, UdpStats};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

const LIMIT: Duration = Duration::from_secs(10);

async fn bounded<F: Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A UDP echo server; aborted when the handle drops.
struct Echo(SocketAddr, JoinHandle<()>);

impl Drop for Echo {
    fn drop(&mut self) {
        self.1.abort();
    }
}

async fn echo() -> Echo {
    let socket = UdpSocket::bind(loopback()).await.expect("bind echo");
    let addr = socket.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let mut buf = vec![0u8; 65_535];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let _ = socket.send_to(&buf[..n], from).await;
        }
    });
    Echo(addr, task)
}

/// Starts the relay in front of `upstream`; its address and counters.
async fn relay(upstream: SocketAddr, link: UdpLink) -> (SocketAddr, Arc<UdpStats>, JoinHandle<()>) {
    let front = UdpSocket::bind(loopback()).await.expect("bind relay");
    let addr = front.local_addr().expect("addr");
    let stats = Arc::new(UdpStats::default());
    let task = tokio::spawn(serve_udp(front, upstream, link, Arc::clone(&stats)));
    (addr, stats, task)
}

/// One datagram there and back through the relay; `None` if no answer
/// came within `wait`.
async fn round_trip(client: &UdpSocket, relay: SocketAddr, wait: Duration) -> Option<Duration> {
    let started = Instant::now();
    client.send_to(b"ping", relay).await.expect("send");
    let mut buf = [0u8; 16];
    let (n, _) = tokio::time::timeout(wait, client.recv_from(&mut buf))
        .await
        .ok()?
        .expect("recv");
    assert_eq!(&buf[..n], b"ping");
    Some(started.elapsed())
}

#[tokio::test]
async fn round_trip_takes_both_delays() {
    let one_way = Duration::from_millis(40);
    let echo = echo().await;
    let (addr, stats, task) = relay(echo.0, UdpLink::delay(one_way)).await;
    let client = UdpSocket::bind(loopback()).await.expect("client");
    for _ in 0..3 {
        let rtt = round_trip(&client, addr, LIMIT).await.expect("answer");
        assert!(rtt >= one_way * 2, "{rtt:?}");
        assert!(rtt < one_way * 2 + Duration::from_millis(500), "{rtt:?}");
    }
    assert_eq!(stats.relayed.load(Ordering::Relaxed), 6);
    assert_eq!(stats.sessions.load(Ordering::Relaxed), 1);
    task.abort();
}

#[tokio::test]
async fn sessions_are_bounded_in_count_and_idle_time() {
    let echo = echo().await;
    let idle = Duration::from_millis(200);
    let link = UdpLink {
        max_sessions: 1,
        idle,
        ..UdpLink::delay(Duration::from_millis(1))
    };
    let (addr, stats, task) = relay(echo.0, link).await;
    let first = UdpSocket::bind(loopback()).await.expect("first");
    let second = UdpSocket::bind(loopback()).await.expect("second");
    assert!(round_trip(&first, addr, LIMIT).await.is_some());
    // The one session is taken: the second client is not relayed.
    assert!(round_trip(&second, addr, Duration::from_millis(100))
        .await
        .is_none());
    assert!(stats.dropped.load(Ordering::Relaxed) >= 1);
    // Once the first has been idle long enough its session goes, and the
    // second gets one.
    bounded("idle session dropped", async {
        while stats.sessions.load(Ordering::Relaxed) != 0 {
            tokio::time::sleep(idle / 4).await;
        }
    })
    .await;
    assert!(round_trip(&second, addr, LIMIT).await.is_some());
    task.abort();
}

#[tokio::test]
async fn total_loss_drops_everything() {
    let echo = echo().await;
    let link = UdpLink {
        loss: 1.0,
        ..UdpLink::delay(Duration::from_millis(1))
    };
    let (addr, stats, task) = relay(echo.0, link).await;
    let client = UdpSocket::bind(loopback()).await.expect("client");
    assert!(round_trip(&client, addr, Duration::from_millis(200))
        .await
        .is_none());
    assert_eq!(stats.relayed.load(Ordering::Relaxed), 0);
    assert_eq!(stats.dropped.load(Ordering::Relaxed), 1);
    task.abort();
}

/// HTTP/3 over a 2 × 25 ms link: the handshake and a 1 MiB download work,
/// and a request's round trip is no shorter than the link's.
#[tokio::test]
async fn quic_works_through_the_relay() {
    let one_way = Duration::from_millis(25);
    let pki = courier_server::TestPki::new();
    let server = courier_server::start(courier_server::ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        http3: true,
        ..Default::default()
    })
    .await
    .expect("server");
    let upstream = server.http3_addr().expect("HTTP/3");
    let (addr, stats, task) = relay(upstream, UdpLink::delay(one_way)).await;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca_der()).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut endpoint = quinn::Endpoint::client(loopback()).expect("client endpoint");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = bounded(
        "handshake",
        endpoint.connect(addr, "127.0.0.1").expect("connect"),
    )
    .await
    .expect("QUIC handshake through the relay");
    let (mut driver, mut send) = bounded("h3", h3::client::new(h3_quinn::Connection::new(conn)))
        .await
        .expect("HTTP/3 setup");
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });

    for n in [10usize, 1 << 20] {
        let started = Instant::now();
        let req = http::Request::get(format!("https://{addr}/bytes/{n}"))
            .body(())
            .expect("request");
        let received = bounded("HTTP/3 GET", async {
            let mut stream = send.send_request(req).await.expect("send");
            stream.finish().await.expect("finish");
            let response = stream.recv_response().await.expect("response");
            assert_eq!(response.status(), http::StatusCode::OK);
            let mut received = 0;
            while let Some(chunk) = stream.recv_data().await.expect("body") {
                received += chunk.remaining();
            }
            received
        })
        .await;
        assert_eq!(received, n);
        assert!(started.elapsed() >= one_way * 2, "{:?}", started.elapsed());
    }
    assert_eq!(server.connections_h3(), 1);
    assert!(stats.relayed.load(Ordering::Relaxed) > 0);
    drive.abort();
    task.abort();
}
