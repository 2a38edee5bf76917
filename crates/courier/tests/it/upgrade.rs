//! Upgrades over HTTP/1.1: `Response::upgrade()` after a `101` and after a
//! CONNECT's 2xx, against scripted servers for the edge cases (bytes behind
//! the head, a `101` nobody asked for, hostile `101`s, a CONNECT tunnel, the
//! pool's books) and a real WebSocket server (Python `websockets`) through
//! tokio-tungstenite.

mod http2;
mod websocket;

use std::time::Duration;

use courier::http::{header, Method};
use courier::{Client, ErrorKind, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{eventually, read_head};

const LIMIT: Duration = Duration::from_secs(10);

/// A request that asks to switch to a made-up protocol.
fn upgrade_request(client: &Client, url: &str) -> courier::RequestBuilder {
    client
        .get(url)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "echo")
}

/// A server that answers every connection's first request head with
/// `answer`, then echoes what it reads until the client closes.
async fn scripted(answer: &'static [u8]) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if !read_head(&mut stream).await {
                    return;
                }
                if stream.write_all(answer).await.is_err() {
                    return;
                }
                let (mut r, mut w) = stream.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// Reads exactly `n` bytes from `io`, within the test's limit.
async fn read_n(io: &mut (impl tokio::io::AsyncRead + Unpin), n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    tokio::time::timeout(LIMIT, io.read_exact(&mut buf))
        .await
        .expect("read within the limit")
        .expect("read");
    buf
}

#[tokio::test]
async fn bytes_behind_the_101_head_come_first_then_the_stream_is_raw() {
    // The head and the new protocol's first bytes in one write: the client
    // reads them together, and they must not be lost in its read buffer.
    let addr = scripted(
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\nhello",
    )
    .await;
    let client = Client::new();
    let res = upgrade_request(&client, &format!("http://{addr}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 101);
    let mut io = res.upgrade().await.unwrap();
    assert_eq!(read_n(&mut io, 5).await, b"hello");
    // Past the head, nothing is HTTP: a second 101 is just bytes.
    let second = b"HTTP/1.1 101 Switching Protocols\r\n\r\n";
    io.write_all(second).await.unwrap();
    assert_eq!(read_n(&mut io, second.len()).await, second);
    assert_eq!(client.metrics().upgrades, 1);
}

#[tokio::test]
async fn a_101_to_a_request_that_asked_for_no_upgrade_is_a_protocol_error() {
    let addr = scripted(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\n\r\n").await;
    let client = Client::new();
    let err = client
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
}

#[tokio::test]
async fn a_101_that_frames_a_body_is_refused() {
    for answer in [
        &b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nTransfer-Encoding: chunked\r\n\r\n"
            [..],
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nContent-Length: 5\r\n\r\nhello",
    ] {
        let addr = scripted(answer).await;
        let client = Client::new();
        let err = upgrade_request(&client, &format!("http://{addr}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    }
}

#[tokio::test]
async fn a_server_that_declines_the_upgrade_answers_as_usual() {
    // The built-in server knows no upgrade: a 200 with its body, and the
    // connection goes back to the pool.
    let server = crate::support::server().await;
    let client = Client::new();
    let url = format!("http://{}/bytes/10", server.local_addr());
    let res = upgrade_request(&client, &url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let err = res.upgrade().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade, "{err}");
    // Declined, the response was dropped unread: drained, reused.
    let again = client.get(&url).send().await.unwrap();
    assert_eq!(again.bytes().await.unwrap().len(), 10);
    assert_eq!(client.metrics().connections_established, 1);
    assert_eq!(client.metrics().upgrades, 0);
}

#[tokio::test]
async fn an_upgraded_connection_stays_counted_until_dropped_and_is_never_reused() {
    let addr = scripted(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\n\r\n").await;
    let client = Client::builder()
        .max_connections_per_host(1)
        .pool_queue_timeout(Some(Duration::from_millis(200)))
        .build()
        .unwrap();
    let url = format!("http://{addr}/");
    let res = upgrade_request(&client, &url).send().await.unwrap();
    let mut io = res.upgrade().await.unwrap();
    let m = client.metrics();
    assert_eq!((m.connections_open, m.connections_idle), (1, 0));
    assert_eq!(m.upgrades, 1);
    // The cap is 1 and the upgraded connection holds it: a request waits,
    // and gives up after the queue timeout.
    let err = upgrade_request(&client, &url).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PoolQueueTimeout, "{err}");
    io.write_all(b"ping").await.unwrap();
    assert_eq!(read_n(&mut io, 4).await, b"ping");
    drop(io);
    eventually("the upgraded connection closed", LIMIT, || {
        client.metrics().connections_open == 0
    })
    .await;
    // A new request gets a new connection.
    let res = upgrade_request(&client, &url).send().await.unwrap();
    assert_eq!(res.status(), 101);
    assert_eq!(client.metrics().connections_established, 2);
}

#[tokio::test]
async fn a_switched_response_dropped_without_upgrading_closes_its_connection() {
    let addr = scripted(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\n\r\n").await;
    let client = Client::new();
    let res = upgrade_request(&client, &format!("http://{addr}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(client.metrics().connections_open, 1);
    drop(res);
    eventually("the connection closed", LIMIT, || {
        client.metrics().connections_open == 0
    })
    .await;
    assert_eq!(client.metrics().upgrades, 0);
}

/// A CONNECT proxy: checks the request line is in authority form, dials the
/// target, answers 200 (with a framing header a tunnel must ignore), relays.
async fn connect_proxy() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8(head).unwrap();
                let line = head.lines().next().unwrap_or_default().to_owned();
                let Some(target) = line
                    .strip_prefix("CONNECT ")
                    .and_then(|l| l.strip_suffix(" HTTP/1.1"))
                else {
                    let _ = client
                        .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                let Ok(mut upstream) = TcpStream::connect(target).await else {
                    let _ = client
                        .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                let _ = client
                    .write_all(b"HTTP/1.1 200 Connection Established\r\nContent-Length: 99\r\n\r\n")
                    .await;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    addr
}

/// A TCP echo server (no HTTP).
async fn tcp_echo() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = stream.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn connect_through_a_proxy_gives_a_tunnel_to_the_target() {
    let (proxy, echo) = (connect_proxy().await, tcp_echo().await);
    let client = Client::builder()
        .proxy(Proxy::http(&format!("http://{proxy}")).unwrap())
        .build()
        .unwrap();
    let res = client
        .request(Method::CONNECT, format!("http://{echo}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut tunnel = res.upgrade().await.unwrap();
    // More than the proxy's Content-Length, which a tunnel ignores.
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let (mut r, mut w) = tokio::io::split(&mut tunnel);
    let write = async {
        w.write_all(&data).await.unwrap();
        w.flush().await.unwrap();
    };
    let (_, echoed) = tokio::join!(write, read_n(&mut r, data.len()));
    assert!(echoed == data, "the tunnel echoed other bytes");
    assert_eq!(client.metrics().upgrades, 1);
}

#[tokio::test]
async fn a_connect_refused_by_the_proxy_is_an_ordinary_response() {
    let proxy = connect_proxy().await;
    // Nothing listens there: the proxy answers 502.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = closed.local_addr().unwrap();
    drop(closed);
    let client = Client::builder()
        .proxy(Proxy::http(&format!("http://{proxy}")).unwrap())
        .build()
        .unwrap();
    let res = client
        .request(Method::CONNECT, format!("http://{target}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 502);
    let err = res.upgrade().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade, "{err}");
}
