//! HTTP/3's QUIC transport settings through `Client` (feature `http3`):
//! keep-alive against the idle timeout the server announces, and idle
//! connections left to idle out.

use std::time::Duration;

use courier::{Client, ClientBuilder};
use courier_server::{ServerConfig, ServerHandle, TestPki};
use http::StatusCode;
use tokio::time::Instant;

use crate::support::{eventually, server_with};

/// Every wait in this module is bounded by this.
const LIMIT: Duration = Duration::from_secs(20);

/// The built-in server with TLS and HTTP/3 announcing `idle` as QUIC's
/// `max_idle_timeout`, and a builder that trusts it.
async fn h3_server(idle: Duration) -> (ServerHandle, ClientBuilder) {
    let pki = TestPki::new();
    let server = server_with(ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        http3: true,
        quic_idle_timeout: Some(idle),
        ..ServerConfig::default()
    })
    .await;
    let builder = Client::builder()
        .add_root_certificate(pki.ca_pem())
        .http3_prior_knowledge()
        .pool_idle_timeout(None);
    (server, builder)
}

fn url(server: &ServerHandle, path: &str) -> String {
    let addr = server.http3_addr().expect("HTTP/3 address");
    format!("https://{addr}{path}")
}

/// A server announcing a 1 s idle timeout, and requests the server answers
/// only after 3 s (long polls): the client's keep-alive must come within
/// the effective timeout (the lower of both sides', RFC 9000 §10.1), not
/// at its own fixed interval (10 s before, past the server's 1 s: the
/// connection timed out under the waiting requests).
#[tokio::test]
async fn requests_outlive_a_short_server_idle_timeout() {
    let (server, builder) = h3_server(Duration::from_secs(1)).await;
    let client = builder.build().expect("client");
    let started = Instant::now();
    let polls = (0..3).map(|_| {
        let client = client.clone();
        let url = url(&server, "/delay/3s");
        async move {
            let response = client.get(url).send().await?;
            let status = response.status();
            response.bytes().await?;
            Ok::<_, courier::Error>(status)
        }
    });
    let answers = tokio::time::timeout(LIMIT, futures_util::future::join_all(polls))
        .await
        .expect("the polls within the limit");
    for answer in answers {
        assert_eq!(answer.expect("a long poll"), StatusCode::OK);
    }
    assert!(started.elapsed() >= Duration::from_secs(3));
    let m = client.metrics();
    assert_eq!(m.connections_established_http3, 1, "one connection, kept");
    assert_eq!(m.requests_http3, 3);
}

/// A request waiting for the server's stream credit, with no stream of
/// its own open, is kept alive like one waiting for its answer: a server
/// (quinn, no HTTP/3 library) that allows one stream, announces a 1 s idle
/// timeout, answers the first request at once and grants the next stream
/// only 3 s later (it leaves the first request unread till then). Before,
/// the keep-alive counted open streams only, so the connection idled out
/// under the waiting request ("HTTP/3: timed out"; hypercorn's loaded
/// QUIC, which grants credit late, showed it in the interop suite).
#[tokio::test]
async fn a_request_waiting_for_stream_credit_outlives_the_idle_timeout() {
    let endpoint = credit_server();
    let addr = endpoint.local_addr().expect("address");
    let server = tokio::spawn(grant_late(endpoint.clone(), Duration::from_secs(3)));
    let client = quic_client()
        .pool_idle_timeout(None)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let url = format!("https://{addr}/");
    for request in ["first", "second, after the credit"] {
        let response = tokio::time::timeout(LIMIT, client.get(&url).send())
            .await
            .expect("bounded")
            .unwrap_or_else(|e| panic!("the {request} request: {e:#}"));
        assert_eq!(response.status(), StatusCode::OK, "{request}");
        response.bytes().await.expect(request);
    }
    let m = client.metrics();
    assert_eq!(m.connections_established_http3, 1, "one connection, kept");
    tokio::time::timeout(LIMIT, server)
        .await
        .expect("bounded")
        .expect("server");
}

/// A QUIC server allowing one request stream at a time, with a 1 s idle
/// timeout.
fn credit_server() -> quinn::Endpoint {
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(1u32.into())
        .max_idle_timeout(Some(Duration::from_secs(1).try_into().expect("idle")));
    quic_server(transport)
}

/// A client that trusts [`quic_server`]'s certificate and speaks HTTP/3.
fn quic_client() -> ClientBuilder {
    let root =
        courier::Certificate::from_pem(crate::corpus::tls::root_pem().as_bytes()).expect("root");
    Client::builder()
        .add_root_certificate(root)
        .http3_prior_knowledge()
}

/// A bare QUIC server on loopback with the corpus's test certificate and
/// `transport`: the HTTP/3 on it is the test's own (`support::h3_accept`).
fn quic_server(transport: quinn::TransportConfig) -> quinn::Endpoint {
    let id = crate::corpus::tls::identity();
    let tls = crate::support::h3_tls(&id.cert, &id.key);
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
    let mut config = quinn::ServerConfig::with_crypto(std::sync::Arc::new(crypto));
    config.transport_config(std::sync::Arc::new(transport));
    quinn::Endpoint::server(config, ([127, 0, 0, 1], 0).into()).expect("QUIC server")
}

/// Sets HTTP/3 up (an empty SETTINGS), answers the first request at once
/// with a bodiless 200 but keeps its stream unread for `late` (so quinn
/// grants no second stream), then answers the second.
async fn grant_late(endpoint: quinn::Endpoint, late: Duration) {
    let (conn, control) = crate::support::h3_accept(&endpoint).await;
    // HEADERS (0x01) of 3 bytes: QPACK's prefix (no dynamic table), then
    // `:status: 200` from the static table (index 25).
    let ok = [0x01, 0x03, 0x00, 0x00, 0xC0 | 25];
    let (mut send, first) = conn.accept_bi().await.expect("the first request");
    send.write_all(&ok).await.expect("the first answer");
    send.finish().expect("finished");
    tokio::time::sleep(late).await;
    drop(first);
    let (mut send, mut second) = conn.accept_bi().await.expect("the second request");
    second
        .read_to_end(1 << 16)
        .await
        .expect("the second request");
    send.write_all(&ok).await.expect("the second answer");
    send.finish().expect("finished");
    let _ = send.stopped().await;
    drop(control);
}

/// A connection with no request in flight is not kept alive: QUIC's idle
/// timeout (the server's 1 s here) closes it, with the pool's own idle
/// timeout off. Before the fit, quinn's keep-alive pinged every connection
/// whatever it carried; fitted to the server's timeout, it would have kept
/// every idle connection open for good.
#[tokio::test]
async fn an_idle_connection_is_left_to_idle_out() {
    let (server, builder) = h3_server(Duration::from_secs(1)).await;
    let client = builder.build().expect("client");
    let response = tokio::time::timeout(LIMIT, client.get(url(&server, "/bytes/1")).send())
        .await
        .expect("GET within the limit")
        .expect("GET");
    tokio::time::timeout(LIMIT, response.bytes())
        .await
        .expect("body within the limit")
        .expect("body");
    let idle = Instant::now();
    eventually("the idle connection closed", LIMIT, || {
        client.metrics().connections_open_http3 == 0
    })
    .await;
    eventually("the server saw it close", LIMIT, || {
        server.connections_open() == 0
    })
    .await;
    // 1 s, or three probe timeouts if longer: far below our own 30 s.
    assert!(
        idle.elapsed() < Duration::from_secs(10),
        "{:?}",
        idle.elapsed()
    );
}

/// The sibling case: the client's own idle timeout is the lower one
/// (`http3_max_idle_timeout`, 1 s against the server's 30 s). Requests that
/// wait 3 s are kept alive within it, and an idle connection closes by it.
#[tokio::test]
async fn the_clients_own_short_idle_timeout_is_kept_alive_and_idles_out() {
    let (server, builder) = h3_server(Duration::from_secs(30)).await;
    let client = builder
        .http3_max_idle_timeout(Duration::from_secs(1))
        .build()
        .expect("client");
    let response = tokio::time::timeout(LIMIT, client.get(url(&server, "/delay/3s")).send())
        .await
        .expect("the poll within the limit")
        .expect("a long poll");
    assert_eq!(response.status(), StatusCode::OK);
    tokio::time::timeout(LIMIT, response.bytes())
        .await
        .expect("body within the limit")
        .expect("body");
    let idle = Instant::now();
    eventually("the idle connection closed", LIMIT, || {
        client.metrics().connections_open_http3 == 0
    })
    .await;
    assert!(
        idle.elapsed() < Duration::from_secs(10),
        "{:?}",
        idle.elapsed()
    );
    assert_eq!(client.metrics().connections_established_http3, 1);
}

/// Windows far below a response (16 KiB, the smallest taken, against
/// 1 MiB) only pace it: every byte arrives, in order.
#[tokio::test]
async fn small_windows_pace_a_large_response() {
    let (server, builder) = h3_server(Duration::from_secs(30)).await;
    let client = builder
        .http3_stream_receive_window(1)
        .http3_conn_receive_window(1)
        .http3_send_window(1)
        .build()
        .expect("client");
    let size = 1024 * 1024;
    let response = tokio::time::timeout(
        LIMIT,
        client.get(url(&server, &format!("/bytes/{size}"))).send(),
    )
    .await
    .expect("GET within the limit")
    .expect("GET");
    let body = tokio::time::timeout(LIMIT, response.bytes())
        .await
        .expect("body within the limit")
        .expect("body");
    assert_eq!(body.len(), size);
    let upload = vec![b'x'; 256 * 1024];
    let echoed = tokio::time::timeout(LIMIT, async {
        client
            .post(url(&server, "/echo"))
            .body(upload.clone())
            .send()
            .await?
            .bytes()
            .await
    })
    .await
    .expect("POST within the limit")
    .expect("POST");
    assert_eq!(echoed.as_ref(), upload.as_slice());
}

/// An idle timeout QUIC cannot carry (past 2^62 ms) fails the build.
#[test]
fn an_idle_timeout_quic_cannot_carry_fails_the_build() {
    let err = Client::builder()
        .http3_prior_knowledge()
        .http3_max_idle_timeout(Duration::MAX)
        .build()
        .expect_err("too long");
    assert_eq!(err.kind(), courier::ErrorKind::Config);
}

/// A request dropped while its head is still being written (the server's
/// stream window smaller than the head) resets its stream with
/// H3_REQUEST_CANCELLED (0x10c). quinn's drop of the send half would finish
/// it after what went out: a head that went out whole, with a streamed body
/// not begun, would be a whole request with an empty body.
#[tokio::test]
async fn a_request_dropped_while_its_head_is_written_is_reset() {
    let mut transport = quinn::TransportConfig::default();
    // Room for 64 bytes a stream: the client's control stream fits, the
    // request's head (with 256 bytes of one field) does not.
    transport.stream_receive_window(64u32.into());
    let endpoint = quic_server(transport);
    let addr = endpoint.local_addr().expect("address");
    let (gave_up, given_up) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let (conn, _control) = crate::support::h3_accept(&endpoint).await;
        let (send, mut recv) = conn.accept_bi().await.expect("the request");
        // Read only once the client gave up (reading grants it room); then
        // to the stream's end.
        let _ = given_up.await;
        let end = recv.read_to_end(1 << 16).await;
        (end, send, conn)
    });
    let client = quic_client().build().expect("client");
    let body = futures_util::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(
        b"never sent",
    ))]);
    let request = client
        .post(format!("https://{addr}/upload"))
        .header("x-padding", "p".repeat(256))
        .body(courier::Body::wrap_stream(body))
        .timeout(Duration::from_millis(300))
        .send();
    let err = tokio::time::timeout(LIMIT, request)
        .await
        .expect("bounded")
        .expect_err("the server reads nothing");
    assert!(err.is_timeout(), "{err:#}");
    let _ = gave_up.send(());
    let (end, _send, _conn) = tokio::time::timeout(LIMIT, server)
        .await
        .expect("bounded")
        .expect("server");
    match end {
        Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
            assert_eq!(code.into_inner(), 0x10c, "reset with H3_REQUEST_CANCELLED")
        }
        other => panic!("the request stream ended with {other:?}, not a reset"),
    }
}

/// A quinn server allowing `limit` request streams whose first connection
/// holds its first `hold` requests, answering the oldest held one each time
/// it is told to (the returned `Notify`), and every later request at once,
/// as later connections answer theirs.
fn holding_server(
    limit: u32,
    hold: usize,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<tokio::sync::Notify>,
    tokio::task::JoinHandle<()>,
) {
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(limit.into());
    let endpoint = quic_server(transport);
    let addr = endpoint.local_addr().expect("address");
    let answer_one = std::sync::Arc::new(tokio::sync::Notify::new());
    let told = std::sync::Arc::clone(&answer_one);
    let server = tokio::spawn(async move {
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0.. {
            let (conn, control) = crate::support::h3_accept(&endpoint).await;
            let told = std::sync::Arc::clone(&told);
            tasks.spawn(async move {
                let _control = control;
                let (mut held, mut accepted) = (std::collections::VecDeque::new(), 0);
                loop {
                    tokio::select! {
                        stream = conn.accept_bi() => {
                            let Ok((mut send, recv)) = stream else { return };
                            accepted += 1;
                            if n == 0 && accepted <= hold {
                                held.push_back((send, recv));
                            } else {
                                send.write_all(&OK_HEAD).await.expect("an answer");
                                send.finish().expect("finished");
                            }
                        }
                        () = told.notified(), if !held.is_empty() => {
                            let (mut send, _recv) = held.pop_front().expect("held");
                            send.write_all(&OK_HEAD).await.expect("an answer");
                            send.finish().expect("finished");
                        }
                    }
                }
            });
        }
    });
    (addr, answer_one, server)
}

/// A quinn server announces freed stream credit only once more than an
/// eighth of its limit was freed (quinn-proto's `queue_max_stream_id`): at
/// a limit of 8 it keeps one freed stream's credit to itself until another
/// ends. A client that plans for all eight meets that kept-back credit
/// when a request comes after one of eight long polls ended: the ninth
/// stream's credit waits for another poll's end (HTTP/3 long polls woke a
/// whole delay late, 1-10 % of them at 100,000). So a connection plans for
/// seven: the eighth poll goes to a second connection, and a request that
/// comes after one of the seven ended opens the eighth stream at once.
#[tokio::test]
async fn a_connection_plans_for_seven_eighths_of_a_quinn_servers_streams() {
    let (addr, answer_one, server) = holding_server(8, 7);
    let client = quic_client().build().expect("client");
    let url = format!("https://{addr}/");
    let polls: Vec<_> = (0..8)
        .map(|_| {
            let poll = client.get(&url).send();
            tokio::spawn(async move { poll.await?.bytes().await })
        })
        .collect();
    eventually("seven polls held, one answered", LIMIT, || {
        let m = client.metrics();
        m.requests_total == 8 && m.http3_streams_active == 7
    })
    .await;
    answer_one.notify_one();
    eventually("a held poll answered", LIMIT, || {
        client.metrics().http3_streams_active == 6
    })
    .await;
    let next = tokio::time::timeout(Duration::from_secs(5), client.get(&url).send())
        .await
        .expect("answered without waiting for another poll to end")
        .expect("answered");
    assert_eq!(next.status(), StatusCode::OK);
    assert_eq!(
        client.metrics().connections_established_http3,
        2,
        "the eighth poll went to a second connection, the next request to the first"
    );
    drop(polls);
    server.abort();
}

/// HEADERS (0x01) of 3 bytes: QPACK's prefix (no dynamic table), then
/// `:status: 200` from the static table (index 25).
const OK_HEAD: [u8; 5] = [0x01, 0x03, 0x00, 0x00, 0xC0 | 25];
