//! Misbehaving servers give a clear error kind and leave the pool usable.

use std::time::Duration;

use crate::support::{eventually, server};
use courier::{Client, ErrorKind};

/// After a fault, the same client must still work.
async fn still_works(client: &Client, srv: &courier_server::ServerHandle) {
    let res = client.get(srv.url("/bytes/16")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 16);
}

async fn head_error(client: &Client, url: String) -> courier::Error {
    match client.get(url).send().await {
        Ok(res) => panic!("expected an error, got {}", res.status()),
        Err(e) => e,
    }
}

#[tokio::test]
async fn faults_before_the_response_head() {
    let srv = server().await;
    let client = Client::builder()
        .timeout(Duration::from_secs(5))
        .max_response_headers_size(16 * 1024)
        .build()
        .unwrap();
    let cases = [
        ("/fault/close", ErrorKind::ConnectionClosed),
        ("/fault/reset", ErrorKind::ConnectionClosed),
        ("/fault/malformed-status", ErrorKind::Protocol),
        ("/fault/garbage", ErrorKind::Protocol),
        ("/fault/huge-headers/100000", ErrorKind::HeadersTooLarge),
    ];
    for (path, kind) in cases {
        // Twice: once on a fresh connection, once on a reused one.
        for _ in 0..2 {
            still_works(&client, &srv).await;
            let err = head_error(&client, srv.url(path)).await;
            assert_eq!(err.kind(), kind, "{path}: {err}");
        }
    }
    still_works(&client, &srv).await;
    eventually(
        "only healthy connections remain",
        Duration::from_secs(2),
        || {
            let m = client.metrics();
            m.connections_open == 1 && m.connections_idle == 1 && m.requests_active == 0
        },
    )
    .await;
}

#[tokio::test]
async fn headers_under_the_limit_are_fine() {
    let srv = server().await;
    let client = Client::new();
    let res = client
        .get(srv.url("/fault/huge-headers/30000"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-huge"].len(), 30000);
}

#[tokio::test]
async fn faults_in_the_body() {
    let srv = server().await;
    let client = Client::new();
    for path in ["/fault/close-mid-body", "/fault/chunked-mid-body"] {
        let res = client.get(srv.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 200);
        let err = res.bytes().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Body, "{path}: {err}");
        still_works(&client, &srv).await;
    }
    eventually("broken connections closed", Duration::from_secs(2), || {
        client.metrics().connections_open == 1
    })
    .await;
}

#[tokio::test]
async fn endless_body_is_bounded() {
    let srv = server().await;
    let client = Client::builder()
        .max_response_body_size(Some(1024 * 1024))
        .max_response_drain_size(64 * 1024)
        .build()
        .unwrap();
    // Buffering stops at the limit.
    let res = client.get(srv.url("/fault/endless")).send().await.unwrap();
    let err = res.bytes().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BodyTooLarge);
    // Dropped unread: the drain gives up at its byte limit and closes.
    let res = client.get(srv.url("/fault/endless")).send().await.unwrap();
    drop(res);
    eventually("drain aborted", Duration::from_secs(3), || {
        client.metrics().drains_aborted == 1
    })
    .await;
    still_works(&client, &srv).await;
    eventually("endless connections closed", Duration::from_secs(2), || {
        client.metrics().connections_open == 1
    })
    .await;
}

#[tokio::test]
async fn declared_body_over_the_buffer_limit_fails_before_reading() {
    let srv = server().await;
    let client = Client::builder()
        .max_response_body_size(Some(1000))
        .build()
        .unwrap();
    let res = client.get(srv.url("/bytes/5000")).send().await.unwrap();
    assert_eq!(
        res.bytes().await.unwrap_err().kind(),
        ErrorKind::BodyTooLarge
    );
    let res = client.get(srv.url("/bytes/1000")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 1000);
}

#[tokio::test]
async fn server_that_never_answers_hits_the_timeout() {
    let srv = server().await;
    let client = Client::new();
    let err = client
        .get(srv.url("/fault/no-answer"))
        .timeout(Duration::from_millis(200))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    still_works(&client, &srv).await;
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = Client::new();
    let err = client
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(err.is_connect());
    assert!(std::error::Error::source(&err).is_some());
    let m = client.metrics();
    assert_eq!(m.connect_failures, 1);
    assert_eq!(m.connections_open, 0);
    assert_eq!(m.requests_queued, 0);
}

#[tokio::test]
async fn invalid_requests_are_rejected_before_the_network() {
    let client = Client::new();
    let err = client.get("not a url").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidUrl);
    let err = client.get("ftp://127.0.0.1/").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidUrl);
    let err = client.get("/relative").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidUrl);
    // Credentials belong in a header; also once the same host has a pool.
    let other = Client::new();
    for _ in 0..2 {
        let _ = other.get("http://127.0.0.1:1/").send().await;
        let err = other
            .get("http://u:p@127.0.0.1:1/")
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidUrl);
    }
    let err = client
        .get("http://127.0.0.1:1/")
        .header("x-evil", "a\r\nInjected: yes")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    assert_eq!(client.metrics().connect_attempts_total, 0);
}
