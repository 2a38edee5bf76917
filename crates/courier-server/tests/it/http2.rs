//! HTTP/2 over plain TCP (h2c prior knowledge): protocol detection next to
//! HTTP/1.1, settings, the HTTP/2 faults and graceful shutdown.

use std::time::Duration;

use crate::support::clients::{self, fetch_h1, fetch_h2, get, h2_reason, post, spawn_fetch_h2};
use crate::support::{bounded, wait_until};
use bytes::Bytes;
use courier_server::{start, ServerConfig, ServerHandle};
use h2::client::{Connection, ResponseFuture, SendRequest};
use http::{StatusCode, Version};
use tokio::net::TcpStream;

async fn server(config: ServerConfig) -> ServerHandle {
    start(config).await.expect("start server")
}

/// Opens an HTTP/2 connection with the `h2` crate itself rather than hyper's
/// client, for what hyper hides (the peer's SETTINGS, the connection's own
/// error), and sends a GET for `path` on it. The connection comes back
/// undriven: the caller polls it or spawns it.
async fn h2_raw_get(
    server: &ServerHandle,
    path: &str,
) -> (
    SendRequest<Bytes>,
    Connection<TcpStream, Bytes>,
    ResponseFuture,
) {
    let stream = clients::tcp(server.local_addr()).await;
    let (mut sender, conn) = bounded("h2 handshake", h2::client::handshake(stream))
        .await
        .expect("handshake");
    let request = http::Request::get(server.url(path))
        .body(())
        .expect("request");
    let (response, _) = sender.send_request(request, true).expect("send");
    (sender, conn, response)
}

#[tokio::test]
async fn h2c_prior_knowledge_and_http1_share_a_port() {
    let server = server(ServerConfig::default()).await;
    let url = server.url("/bytes/100000");

    let (mut h2, _h2_task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let first = fetch_h2(&mut h2, get(&url)).await.expect("h2 response");
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.version, Version::HTTP_2);
    assert_eq!(first.body.len(), 100_000);
    assert!(first
        .body
        .iter()
        .enumerate()
        .all(|(i, b)| *b == crate::support::pattern_byte(i)));
    let second = fetch_h2(&mut h2, get(&server.url("/json/50")))
        .await
        .expect("second stream");
    assert_eq!(second.body.len(), 50);
    assert_eq!(first.connection_id(), second.connection_id());

    let (mut h1, _h1_task) = clients::h1(clients::tcp(server.local_addr()).await).await;
    let plain = fetch_h1(&mut h1, get(&server.url("/bytes/10")))
        .await
        .expect("h1 response");
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.version, Version::HTTP_11);
    assert_ne!(plain.connection_id(), first.connection_id());

    assert_eq!(server.connections_accepted(), 2);
    assert_eq!(server.connections_h2(), 1);
    assert!(!server.is_tls());
    server.shutdown().await;
}

#[tokio::test]
async fn large_uploads_echo_over_h2() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, _task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let body: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    // Several at once, so the connection window matters, not just one stream's.
    let mut uploads = Vec::new();
    for _ in 0..4 {
        uploads.push(spawn_fetch_h2(
            &h2,
            post(&server.url("/echo"), body.clone()),
        ));
    }
    for upload in uploads {
        let echoed = upload.await.expect("join").expect("echo");
        assert_eq!(echoed.status, StatusCode::OK);
        assert!(echoed.body == body, "echoed body differs");
    }
    let headers = fetch_h2(&mut h2, get(&server.url("/headers")))
        .await
        .expect("headers");
    let json: serde_json::Value = serde_json::from_slice(&headers.body).expect("json");
    assert!(json.is_object());
    server.shutdown().await;
}

#[tokio::test]
async fn http2_only_server_speaks_h2c_without_detection() {
    let config = ServerConfig {
        http1: false,
        ..Default::default()
    };
    let server = server(config).await;
    let (mut h2, _task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let response = fetch_h2(&mut h2, get(&server.url("/status/201")))
        .await
        .expect("h2 response");
    assert_eq!(response.status, StatusCode::CREATED);
    assert_eq!(server.connections_h2(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_config_without_protocols_is_rejected() {
    let config = ServerConfig {
        http1: false,
        http2: false,
        ..Default::default()
    };
    let err = start(config).await.expect_err("no protocol");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn max_concurrent_streams_is_advertised() {
    let default = ServerConfig::default().max_concurrent_streams;
    assert_eq!(default, Some(100));
    for (limit, expected) in [(default, 100), (Some(2), 2), (None, usize::MAX)] {
        let config = ServerConfig {
            max_concurrent_streams: limit,
            ..Default::default()
        };
        let server = server(config).await;
        // The server's SETTINGS have been processed once a response arrived.
        let (_sender, mut conn, response) = h2_raw_get(&server, "/bytes/1").await;
        let response = tokio::select! {
            response = response => response.expect("response"),
            res = &mut conn => panic!("connection ended first: {res:?}"),
        };
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(conn.max_concurrent_send_streams(), expected);
        server.shutdown().await;
    }
}

#[tokio::test]
async fn fault_goaway_lets_in_flight_streams_finish_then_closes() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let slow = spawn_fetch_h2(&h2, get(&server.url("/delay/300")));
    wait_until("delay dispatched", || server.requests_served() == 1).await;

    let goaway = fetch_h2(&mut h2, get(&server.url("/fault/goaway")))
        .await
        .expect("goaway answered");
    assert_eq!(goaway.status, StatusCode::OK);
    assert_eq!(&goaway.body[..], b"ok");

    let slow = slow
        .await
        .expect("join")
        .expect("in-flight stream finished");
    assert_eq!(slow.status, StatusCode::OK);
    // The connection ends cleanly once nothing is in flight.
    bounded("client connection ends", task)
        .await
        .expect("join")
        .expect("clean close");
    assert!(fetch_h2(&mut h2, get(&server.url("/bytes/1")))
        .await
        .is_err());
    wait_until("server closed it", || server.connections_open() == 0).await;
    server.shutdown().await;
}

#[tokio::test]
async fn close_endpoint_over_h2_is_a_goaway() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let response = fetch_h2(&mut h2, get(&server.url("/close")))
        .await
        .expect("answered");
    assert_eq!(response.status, StatusCode::OK);
    assert!(response.headers.get("connection").is_none());
    bounded("client connection ends", task)
        .await
        .expect("join")
        .expect("clean close");
    server.shutdown().await;
}

#[tokio::test]
async fn goaway_all_drains_every_connection() {
    let server = server(ServerConfig::default()).await;
    let mut slow = Vec::new();
    let mut tasks = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..2 {
        let (h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
        slow.push(spawn_fetch_h2(&h2, get(&server.url("/delay/300"))));
        tasks.push(task);
        senders.push(h2);
    }
    let (mut idle_h1, h1_task) = clients::h1(clients::tcp(server.local_addr()).await).await;
    fetch_h1(&mut idle_h1, get(&server.url("/bytes/1")))
        .await
        .expect("h1 response");
    wait_until("delays dispatched", || server.requests_served() == 3).await;

    server.goaway_all();

    for response in slow {
        let response = response.await.expect("join").expect("in-flight finished");
        assert_eq!(response.status, StatusCode::OK);
    }
    for task in tasks {
        bounded("h2 connection ends", task)
            .await
            .expect("join")
            .expect("clean close");
    }
    bounded("h1 connection ends", h1_task)
        .await
        .expect("join")
        .expect("clean close");
    for mut sender in senders {
        assert!(fetch_h2(&mut sender, get(&server.url("/bytes/1")))
            .await
            .is_err());
    }
    wait_until("all closed", || server.connections_open() == 0).await;
    // Still accepting.
    let (mut h2, _task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    assert!(fetch_h2(&mut h2, get(&server.url("/bytes/1")))
        .await
        .is_ok());
    server.shutdown().await;
}

#[tokio::test]
async fn rst_stream_resets_only_that_stream() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, _task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let err = fetch_h2(&mut h2, get(&server.url("/fault/rst-stream")))
        .await
        .expect_err("stream reset");
    assert_eq!(h2_reason(&err), Some(h2::Reason::INTERNAL_ERROR), "{err:?}");
    let after = fetch_h2(&mut h2, get(&server.url("/bytes/3")))
        .await
        .expect("connection still usable");
    assert_eq!(after.body.len(), 3);
    assert_eq!(server.connections_accepted(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn fault_close_over_h2_drops_the_whole_connection() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let slow = spawn_fetch_h2(&h2, get(&server.url("/delay/60000")));
    wait_until("delay dispatched", || server.requests_served() == 1).await;

    assert!(fetch_h2(&mut h2, get(&server.url("/fault/close")))
        .await
        .is_err());
    assert!(slow.await.expect("join").is_err(), "other streams die too");
    let _ = bounded("client connection ends", task).await;
    wait_until("server closed it", || server.connections_open() == 0).await;
    server.shutdown().await;
}

#[tokio::test]
async fn fault_reset_over_h2_resets_the_tcp_connection() {
    let server = server(ServerConfig::default()).await;
    let (_sender, conn, response) = h2_raw_get(&server, "/fault/reset").await;
    let conn = tokio::spawn(conn);
    assert!(bounded("response", response).await.is_err());
    let err = bounded("connection", conn)
        .await
        .expect("join")
        .expect_err("connection error");
    let io = err.get_io().map(std::io::Error::kind);
    assert_eq!(io, Some(std::io::ErrorKind::ConnectionReset), "{err:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn mid_body_faults_send_part_of_the_body_then_close() {
    let server = server(ServerConfig::default()).await;
    for (path, length, received) in [
        ("/fault/close-mid-body", Some("1000"), 500),
        ("/fault/chunked-mid-body", None, 32),
    ] {
        let (_sender, conn, response) = h2_raw_get(&server, path).await;
        let conn = tokio::spawn(conn);
        let response = bounded("head", response).await.expect("head arrives");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response
                .headers()
                .get("content-length")
                .map(|v| v.to_str().expect("ascii")),
            length
        );
        let mut body = response.into_body();
        let mut got = 0;
        let err = loop {
            match bounded("data", body.data()).await {
                Some(Ok(chunk)) => {
                    got += chunk.len();
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                Some(Err(err)) => break err,
                None => panic!("{path}: body ended normally after {got} bytes"),
            }
        };
        assert_eq!(got, received, "{path}: {err:?}");
        // The connection is gone, without a GOAWAY.
        let _ = bounded("connection ends", conn).await.expect("join");
    }
    wait_until("server closed them", || server.connections_open() == 0).await;
    server.shutdown().await;
}

#[tokio::test]
async fn http1_framing_faults_answer_400_over_h2() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, _task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    for path in ["/fault/malformed-status", "/fault/garbage"] {
        let response = fetch_h2(&mut h2, get(&server.url(path)))
            .await
            .expect("answered");
        assert_eq!(response.status, StatusCode::BAD_REQUEST, "{path}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn no_answer_over_h2_hangs_only_its_stream() {
    let server = server(ServerConfig::default()).await;
    let (mut h2, _task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let mut hung = Box::pin(h2.send_request(get(&server.url("/fault/no-answer"))));
    wait_until("no-answer dispatched", || server.requests_served() == 1).await;
    let other = fetch_h2(&mut h2, get(&server.url("/bytes/2")))
        .await
        .expect("other streams still served");
    assert_eq!(other.body.len(), 2);
    assert!(futures_poll_once(&mut hung).await.is_none(), "no answer");
    server.shutdown().await;
}

/// Polls a future once: `Some` if it was ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(fut: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *fut).poll(cx) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

#[tokio::test]
async fn keep_alive_off_sends_goaway_after_the_first_request() {
    let config = ServerConfig {
        keep_alive: false,
        ..Default::default()
    };
    let server = server(config).await;
    let (mut h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let response = fetch_h2(&mut h2, get(&server.url("/bytes/5")))
        .await
        .expect("first request served");
    assert_eq!(response.body.len(), 5);
    bounded("client connection ends", task)
        .await
        .expect("join")
        .expect("clean close");
    server.shutdown().await;
}

#[tokio::test]
async fn idle_timeout_and_close_idle_apply_to_h2() {
    let config = ServerConfig {
        idle_timeout: Some(Duration::from_millis(150)),
        ..Default::default()
    };
    let server = server(config).await;
    let (mut h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    fetch_h2(&mut h2, get(&server.url("/bytes/1")))
        .await
        .expect("response");
    bounded("idle h2 connection closed", task)
        .await
        .expect("join")
        .expect("clean close");
    server.shutdown().await;

    let server = self::server(ServerConfig::default()).await;
    let (mut idle, idle_task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    fetch_h2(&mut idle, get(&server.url("/bytes/1")))
        .await
        .expect("response");
    let (busy, busy_task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let slow = spawn_fetch_h2(&busy, get(&server.url("/delay/300")));
    wait_until("delay dispatched", || server.requests_served() == 2).await;

    server.close_idle_connections();

    bounded("idle connection closed", idle_task)
        .await
        .expect("join")
        .expect("clean close");
    assert_eq!(
        slow.await.expect("join").expect("busy one served").status,
        StatusCode::OK
    );
    assert!(!busy_task.is_finished());
    server.shutdown().await;
}

/// Tasks alive on this test's runtime (hyper runs each HTTP/2 stream as
/// its own task).
fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test]
async fn stream_tasks_end_with_their_connection() {
    let server = server(ServerConfig::default()).await;
    let baseline = alive_tasks();
    let (h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let mut pending = Vec::new();
    for path in ["/delay/600000", "/fault/no-answer", "/fault/close"] {
        pending.push(spawn_fetch_h2(&h2, get(&server.url(path))));
    }
    // `/fault/close` drops the connection with two streams still pending.
    for response in pending {
        assert!(response.await.expect("join").is_err());
    }
    let _ = bounded("client connection ends", task).await;
    drop(h2);
    wait_until("server-side stream tasks ended", || {
        alive_tasks() == baseline
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_pending_streams() {
    let server = server(ServerConfig::default()).await;
    let (h2, task) = clients::h2(clients::tcp(server.local_addr()).await).await;
    let slow = spawn_fetch_h2(&h2, get(&server.url("/delay/600000")));
    wait_until("delay dispatched", || server.requests_served() == 1).await;
    bounded("shutdown", server.shutdown()).await;
    assert!(slow.await.expect("join").is_err());
    let _ = bounded("client connection ends", task).await;
    drop(h2);
    // Only the test's own task is left.
    wait_until("no tasks left", || alive_tasks() == 0).await;
}
