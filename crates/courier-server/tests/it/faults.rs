//! Fault endpoints, each used as the SECOND request on a kept-alive
//! connection (the case a connection pool actually meets).

use std::io::ErrorKind;
use std::time::Duration;

use crate::support::{bounded, wait_until, RawConn};
use courier_server::{start, ServerConfig, ServerHandle};
use tokio::io::AsyncReadExt;

async fn server() -> ServerHandle {
    start(ServerConfig::default()).await.expect("start server")
}

/// Connects and completes one normal request, so the fault comes second.
async fn warmed_up(server: &ServerHandle) -> RawConn {
    let mut conn = RawConn::connect(server.local_addr()).await;
    let response = conn.get("/bytes/10").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body.len(), 10);
    conn
}

#[tokio::test]
async fn close_gives_eof_without_bytes() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/close", &[], b"").await;
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    wait_until("server closed it", || server.connections_open() == 0).await;
    server.shutdown().await;
}

#[tokio::test]
async fn close_works_on_the_first_request_too() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    conn.send("POST", "/fault/close", &[], b"some body").await;
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    server.shutdown().await;
}

#[tokio::test]
async fn reset_gives_connection_reset() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/reset", &[], b"").await;
    let err = conn.read_to_end().await.expect_err("reset, not EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    server.shutdown().await;
}

#[tokio::test]
async fn close_mid_body_sends_half_the_promised_body() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/close-mid-body", &[], b"").await;
    let (status, headers) = conn.read_head().await;
    assert_eq!(status, 200);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("content-length").as_deref(), Some("1000"));
    assert_eq!(header("x-connection-id").as_deref(), Some("1"));
    let body = conn.read_to_end().await.expect("EOF after partial body");
    assert_eq!(body.len(), 500);
    server.shutdown().await;
}

#[tokio::test]
async fn chunked_mid_body_never_terminates_the_body() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/chunked-mid-body", &[], b"").await;
    let (status, headers) = conn.read_head().await;
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked"));
    let rest = conn.read_to_end().await.expect("EOF");
    let text = String::from_utf8(rest).expect("ascii framing");
    assert!(text.starts_with("10\r\n"), "{text:?}");
    assert_eq!(text.matches("\r\n10\r\n").count(), 1, "two chunks");
    assert!(
        !text.contains("\r\n0\r\n"),
        "no terminating chunk: {text:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_status_writes_the_garbage_line() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/malformed-status", &[], b"").await;
    let bytes = conn.read_to_end().await.expect("EOF");
    assert_eq!(bytes, b"HTTP/1.1 abc nonsense\r\n\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn garbage_is_not_http() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/garbage", &[], b"").await;
    let bytes = conn.read_to_end().await.expect("EOF");
    assert!(!bytes.is_empty());
    assert!(!bytes.starts_with(b"HTTP/"));
    server.shutdown().await;
}

#[tokio::test]
async fn no_answer_holds_the_connection_until_the_client_closes() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/no-answer", &[], b"").await;
    assert!(conn.silent_for(Duration::from_millis(200)).await);
    assert_eq!(server.connections_open(), 1);
    drop(conn);
    wait_until("server noticed the close", || {
        server.connections_open() == 0
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn endless_streams_until_the_client_leaves() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    conn.send("GET", "/fault/endless", &[], b"").await;
    let (status, headers) = conn.read_head().await;
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked"));
    let mut stream = conn.into_stream();
    let mut total = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    while total < 4 * 1024 * 1024 {
        let n = bounded("endless read", stream.read(&mut buf))
            .await
            .expect("read");
        assert!(n > 0, "endless body ended");
        total += n;
    }
    drop(stream);
    wait_until("server stopped streaming", || {
        server.connections_open() == 0
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn huge_headers_sends_a_header_of_n_bytes() {
    let server = server().await;
    let mut conn = warmed_up(&server).await;
    let response = conn.get("/fault/huge-headers/100000").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("x-huge").map(str::len), Some(100_000));
    assert_eq!(response.connection_id(), 1);
    // The connection is still fine afterwards.
    let response = conn.get("/bytes/1").await;
    assert_eq!(response.body.len(), 1);

    let response = conn.get("/fault/huge-headers/nope").await;
    assert_eq!(response.status, 400);
    let response = conn.get("/fault/unknown").await;
    assert_eq!(response.status, 404);
    assert_eq!(response.connection_id(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn fault_after_a_large_response_does_not_cut_that_response() {
    // A pipelined pair: the fault request is already on the wire while the
    // big response is being written; that response must arrive complete
    // before the fault takes over the socket.
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    conn.send("GET", "/bytes/4000000", &[], b"").await;
    conn.send("GET", "/fault/malformed-status", &[], b"").await;
    let response = conn.read_response().await;
    assert_eq!(response.body.len(), 4_000_000);
    let bytes = conn.read_to_end().await.expect("EOF");
    assert_eq!(bytes, b"HTTP/1.1 abc nonsense\r\n\r\n");
    server.shutdown().await;
}
