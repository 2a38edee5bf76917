//! The well-behaved endpoints, checked over loopback.

use std::time::{Duration, Instant};

use crate::support::{bounded, clients, pattern_byte, wait_until, RawConn};
use bytes::Bytes;
use courier_server::{start, ServerConfig, ServerHandle};
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;

async fn server() -> ServerHandle {
    start(ServerConfig::default()).await.expect("start server")
}

/// A real HTTP/1.1 client connection (hyper), for checks that should not
/// depend on the hand-rolled parser.
async fn hyper_client(server: &ServerHandle) -> SendRequest<Full<Bytes>> {
    // The connection's task runs on, detached.
    let (sender, _conn) = clients::h1(clients::tcp(server.local_addr()).await).await;
    sender
}

async fn hyper_get(
    sender: &mut SendRequest<Full<Bytes>>,
    path: &str,
) -> (http::response::Parts, Bytes) {
    let req = Request::get(path)
        .header("host", "test")
        .body(Full::new(Bytes::new()))
        .expect("request");
    let response = bounded("hyper request", sender.send_request(req))
        .await
        .expect("response");
    let (parts, body) = response.into_parts();
    let body = bounded("hyper body", body.collect())
        .await
        .expect("body")
        .to_bytes();
    (parts, body)
}

#[tokio::test]
async fn bytes_has_content_length_and_the_pattern() {
    let server = server().await;
    let mut client = hyper_client(&server).await;
    // Larger than the 64 KiB shared buffer, so it spans several frames.
    let n = 200_001;
    let (parts, body) = hyper_get(&mut client, &format!("/bytes/{n}")).await;
    assert_eq!(parts.status, StatusCode::OK);
    assert_eq!(parts.headers["content-length"], n.to_string().as_str());
    assert_eq!(parts.headers["content-type"], "application/octet-stream");
    assert_eq!(body.len(), n);
    assert!(body.iter().enumerate().all(|(i, b)| *b == pattern_byte(i)));

    let (parts, body) = hyper_get(&mut client, "/bytes/0").await;
    assert_eq!(parts.headers["content-length"], "0");
    assert!(body.is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn bytes_chunked_uses_transfer_encoding() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    for n in [70_000usize, 5, 0] {
        let response = conn.get(&format!("/bytes/{n}?chunked=1")).await;
        assert_eq!(response.status, 200);
        assert_eq!(response.header("transfer-encoding"), Some("chunked"));
        assert_eq!(response.header("content-length"), None);
        assert_eq!(response.body.len(), n);
        assert!(response
            .body
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern_byte(i)));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn json_is_valid_and_exactly_n_bytes() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    for n in [12usize, 11, 5, 2, 100, 100_000] {
        let response = conn.get(&format!("/json/{n}")).await;
        assert_eq!(response.status, 200);
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.body.len(), n, "n = {n}");
        let value: serde_json::Value = serde_json::from_slice(&response.body).expect("valid JSON");
        assert!(value.is_object());
    }
    server.shutdown().await;
}

#[tokio::test]
async fn connection_id_is_stable_per_connection_and_differs_across() {
    let server = server().await;
    let mut first = hyper_client(&server).await;
    let (a, _) = hyper_get(&mut first, "/bytes/1").await;
    let (b, _) = hyper_get(&mut first, "/status/404").await;
    let mut second = hyper_client(&server).await;
    let (c, _) = hyper_get(&mut second, "/bytes/1").await;
    let id = |p: &http::response::Parts| p.headers["x-connection-id"].clone();
    assert_eq!(id(&a), id(&b));
    assert_ne!(id(&a), id(&c));
    assert_eq!(id(&a), "1");
    assert_eq!(id(&c), "2");
    assert_eq!(server.connections_accepted(), 2);
    assert_eq!(server.requests_served(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn delay_waits_at_least_the_given_time() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    let started = Instant::now();
    let response = conn.get("/delay/150").await;
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"ok");
    assert_eq!(response.connection_id(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn delay_takes_a_unit_too() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    for (path, at_least) in [
        ("/delay/120ms", 120),
        ("/delay/0.15s", 150),
        ("/delay/0s", 0),
    ] {
        let started = Instant::now();
        let response = conn.get(path).await;
        assert_eq!(response.status, 200, "{path}");
        assert!(
            started.elapsed() >= Duration::from_millis(at_least),
            "{path}"
        );
    }
    for bad in ["/delay/5m", "/delay/-1s", "/delay/fast", "/delay/1e400s"] {
        assert_eq!(conn.get(bad).await.status, 400, "{bad}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn echo_returns_body_and_content_type() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    conn.send(
        "POST",
        "/echo",
        &[("content-type", "text/x-test")],
        b"hello courier",
    )
    .await;
    let response = conn.read_response().await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/x-test"));
    assert_eq!(response.body, b"hello courier");

    // A body far larger than any buffer, through a real client.
    let mut client = hyper_client(&server).await;
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let req = Request::put("/echo")
        .header("host", "test")
        .body(Full::new(Bytes::from(big.clone())))
        .expect("request");
    let response = bounded("echo", client.send_request(req))
        .await
        .expect("echo");
    let body = bounded("echo body", response.into_body().collect())
        .await
        .expect("body")
        .to_bytes();
    assert!(body == big, "echoed body differs");
    server.shutdown().await;
}

#[tokio::test]
async fn status_endpoint() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    let response = conn.get("/status/418").await;
    assert_eq!(response.status, 418);
    assert!(!response.body.is_empty());
    assert_eq!(response.connection_id(), 1);

    let response = conn.get("/status/204").await;
    assert_eq!(response.status, 204);
    assert!(response.body.is_empty());

    for bad in ["/status/abc", "/status/99", "/status/1000", "/status/100"] {
        let response = conn.get(bad).await;
        assert_eq!(response.status, 400, "{bad}");
        assert_eq!(response.connection_id(), 1, "error responses carry the id");
    }

    let response = conn.get("/no/such/thing").await;
    assert_eq!(response.status, 404);
    assert_eq!(response.connection_id(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn headers_endpoint_reports_request_headers() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    conn.send(
        "GET",
        "/headers",
        &[("x-one", "1"), ("x-multi", "a"), ("x-multi", "b")],
        b"",
    )
    .await;
    let response = conn.read_response().await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let json: serde_json::Value = serde_json::from_slice(&response.body).expect("JSON");
    assert_eq!(json["x-one"], "1");
    assert_eq!(json["x-multi"], "a, b");
    assert_eq!(json["host"], "test");
    server.shutdown().await;
}

#[tokio::test]
async fn close_endpoint_closes_after_the_response() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    let response = conn.get("/close").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), Some("close"));
    assert_eq!(response.body, b"ok");
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    wait_until("connection closed server-side", || {
        server.connections_open() == 0
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn keep_alive_off_closes_every_connection() {
    let config = ServerConfig {
        keep_alive: false,
        ..ServerConfig::default()
    };
    let server = start(config).await.expect("start");
    let mut conn = RawConn::connect(server.local_addr()).await;
    let response = conn.get("/bytes/3").await;
    assert_eq!(response.body.len(), 3);
    assert_eq!(response.header("connection"), Some("close"));
    assert_eq!(conn.read_to_end().await.expect("clean EOF"), b"");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_delays() {
    let server = server().await;
    let addr = server.local_addr();
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            tokio::spawn(async move {
                let mut conn = RawConn::connect(addr).await;
                conn.get("/delay/50").await.status
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.expect("task"), 200);
    }
    assert_eq!(server.requests_served(), 200);
    server.shutdown().await;
}

#[tokio::test]
async fn redirect_endpoints_point_where_asked() {
    let server = server().await;
    let mut conn = RawConn::connect(server.local_addr()).await;
    let response = conn.get("/redirect/2").await;
    assert_eq!(response.status, 302);
    assert_eq!(response.header("location"), Some("/redirect/1"));
    let response = conn.get("/redirect/0").await;
    assert_eq!(response.status, 200);
    let response = conn
        .get("/redirect-to/307?http://127.0.0.1:1/landing?x=1")
        .await;
    assert_eq!(response.status, 307);
    assert_eq!(
        response.header("location"),
        Some("http://127.0.0.1:1/landing?x=1")
    );
    assert_eq!(conn.get("/redirect-to/200?/x").await.status, 400);
    assert_eq!(conn.get("/redirect-to/302").await.status, 400);
    server.shutdown().await;
}

/// `/get` answers its query (decoded), headers and URL as httpbin's does.
#[tokio::test]
async fn get_answers_its_query_headers_and_url_as_json() {
    let server = server().await;
    let mut client = hyper_client(&server).await;
    let (parts, body) = hyper_get(&mut client, "/get?q=a%26b+c&lang=en").await;
    assert_eq!(parts.status, StatusCode::OK);
    assert_eq!(parts.headers["content-type"], "application/json");
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(v["args"]["q"], "a&b c");
    assert_eq!(v["args"]["lang"], "en");
    assert_eq!(v["headers"]["host"], "test");
    assert_eq!(v["url"], "http://test/get?q=a%26b+c&lang=en");
}

/// `/gzip` answers gzip-encoded JSON, whatever the request asked for.
#[tokio::test]
async fn gzip_answers_gzip_encoded_json() {
    use std::io::Read;
    let server = server().await;
    let mut client = hyper_client(&server).await;
    let (parts, body) = hyper_get(&mut client, "/gzip").await;
    assert_eq!(parts.status, StatusCode::OK);
    assert_eq!(parts.headers["content-encoding"], "gzip");
    assert_eq!(
        parts.headers["content-length"],
        body.len().to_string().as_str()
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut text)
        .expect("gzip");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["gzipped"], true);
    assert_eq!(v["method"], "GET");
}
