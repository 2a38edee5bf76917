//! Connection lifecycle: idle timeout, closing idle connections, shutdown.

use std::time::{Duration, Instant};

use crate::support::{bounded, wait_until, RawConn};
use courier_server::{start, ServerConfig};
use tokio::net::TcpStream;

#[tokio::test]
async fn idle_timeout_closes_an_idle_connection() {
    let timeout = Duration::from_millis(200);
    let config = ServerConfig {
        idle_timeout: Some(timeout),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("start");
    let mut conn = RawConn::connect(server.local_addr()).await;
    assert_eq!(conn.get("/bytes/1").await.status, 200);
    let idle_since = Instant::now();
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    // The server measures from when it finished the response, slightly
    // before the client saw it; allow for that.
    assert!(idle_since.elapsed() >= timeout - Duration::from_millis(50));
    wait_until("server closed it", || server.connections_open() == 0).await;
    server.shutdown().await;
}

#[tokio::test]
async fn idle_timeout_spares_a_request_in_progress() {
    let config = ServerConfig {
        idle_timeout: Some(Duration::from_millis(100)),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("start");
    let mut conn = RawConn::connect(server.local_addr()).await;
    // Longer than the idle timeout, but the connection is busy throughout.
    let response = conn.get("/delay/400").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"ok");
    // Idle again afterwards: now it does get closed.
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    server.shutdown().await;
}

#[tokio::test]
async fn close_idle_connections_spares_busy_ones() {
    let server = start(ServerConfig::default()).await.expect("start");
    let mut idle = RawConn::connect(server.local_addr()).await;
    assert_eq!(idle.get("/bytes/1").await.status, 200);
    let mut busy = RawConn::connect(server.local_addr()).await;
    busy.send("GET", "/delay/300", &[], b"").await;
    wait_until("delay request dispatched", || server.requests_served() == 2).await;

    server.close_idle_connections();

    assert_eq!(idle.read_to_end().await.expect("clean EOF"), b"");
    let response = busy.read_response().await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"ok");
    // Still open and still the same connection.
    let again = busy.get("/bytes/2").await;
    assert_eq!(again.body.len(), 2);
    assert_eq!(again.connection_id(), response.connection_id());
    assert_eq!(server.connections_open(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_everything_and_stops_accepting() {
    let server = start(ServerConfig::default()).await.expect("start");
    let addr = server.local_addr();
    let mut idle = RawConn::connect(addr).await;
    assert_eq!(idle.get("/bytes/1").await.status, 200);
    let mut hung = RawConn::connect(addr).await;
    hung.send("GET", "/fault/no-answer", &[], b"").await;
    let mut delayed = RawConn::connect(addr).await;
    delayed.send("GET", "/delay/600000", &[], b"").await;
    wait_until("requests dispatched", || server.requests_served() == 3).await;
    assert_eq!(server.connections_open(), 3);

    bounded("shutdown", server.shutdown()).await;

    // Closed server-side: EOF (or a reset if data was unread).
    for conn in [&mut idle, &mut hung, &mut delayed] {
        if let Ok(rest) = conn.read_to_end().await {
            assert!(rest.is_empty());
        }
    }
    let err = TcpStream::connect(addr).await.expect_err("listener closed");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server() {
    let server = start(ServerConfig::default()).await.expect("start");
    let addr = server.local_addr();
    let mut conn = RawConn::connect(addr).await;
    assert_eq!(conn.get("/bytes/1").await.status, 200);
    drop(server);
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    // The listener goes away asynchronously; wait for refusals.
    bounded("listener closed", async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test]
async fn counters_track_connections_and_requests() {
    let server = start(ServerConfig::default()).await.expect("start");
    let mut a = RawConn::connect(server.local_addr()).await;
    let mut b = RawConn::connect(server.local_addr()).await;
    a.get("/bytes/1").await;
    a.get("/bytes/1").await;
    b.get("/status/500").await;
    assert_eq!(server.connections_accepted(), 2);
    assert_eq!(server.connections_open(), 2);
    assert_eq!(server.requests_served(), 3);
    drop(a);
    wait_until("one closed", || server.connections_open() == 1).await;
    assert_eq!(server.connections_accepted(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn url_points_at_the_server() {
    let server = start(ServerConfig::default()).await.expect("start");
    let port = server.local_addr().port();
    assert_eq!(
        server.url("/bytes/1"),
        format!("http://127.0.0.1:{port}/bytes/1")
    );
    assert_eq!(server.url("echo"), format!("http://127.0.0.1:{port}/echo"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_idle() {
    // Protocol detection waits for the first bytes; that wait is idle time.
    let config = ServerConfig {
        idle_timeout: Some(Duration::from_millis(100)),
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("start");
    let mut silent = RawConn::connect(server.local_addr()).await;
    assert_eq!(silent.read_to_end().await.expect("clean EOF"), b"");
    server.shutdown().await;

    let server = start(ServerConfig::default()).await.expect("start");
    let mut silent = RawConn::connect(server.local_addr()).await;
    wait_until("accepted", || server.connections_open() == 1).await;
    server.close_idle_connections();
    assert_eq!(silent.read_to_end().await.expect("clean EOF"), b"");
    server.shutdown().await;
}

#[tokio::test]
async fn goaway_all_lets_a_busy_http1_response_finish() {
    let server = start(ServerConfig::default()).await.expect("start");
    let mut busy = RawConn::connect(server.local_addr()).await;
    busy.send("GET", "/delay/300", &[], b"").await;
    wait_until("delay dispatched", || server.requests_served() == 1).await;
    server.goaway_all();
    let response = busy.read_response().await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"ok");
    assert_eq!(busy.read_to_end().await.expect("clean EOF"), b"");
    server.shutdown().await;
}
