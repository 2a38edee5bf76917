//! Connection reuse: read bodies, unread bodies (drain on drop), LIFO idle order.

use std::time::Duration;

use crate::support::{connection_id, eventually, server, Pieces};

#[tokio::test]
async fn sequential_requests_share_one_connection() {
    let srv = server().await;
    let client = courier::Client::new();
    let mut ids = std::collections::HashSet::new();
    for _ in 0..200 {
        let res = client.get(srv.url("/bytes/128")).send().await.unwrap();
        ids.insert(connection_id(&res));
        assert_eq!(res.bytes().await.unwrap().len(), 128);
    }
    assert_eq!(ids.len(), 1);
    let m = client.metrics();
    assert_eq!(m.connections_established, 1);
    assert_eq!(m.requests_total, 200);
    assert_eq!(m.request_duration.count(), 200);
    assert_eq!(srv.connections_accepted(), 1);
}

#[tokio::test]
async fn unread_bodies_are_drained_and_the_connection_reused() {
    let srv = server().await;
    let client = courier::Client::new();
    for _ in 0..200 {
        let res = client.get(srv.url("/bytes/10240")).send().await.unwrap();
        assert_eq!(res.status(), 200);
        drop(res); // read nothing
    }
    let m = client.metrics();
    assert_eq!(m.connections_established, 1, "{m:?}");
    assert_eq!(srv.connections_accepted(), 1);
    eventually("all drains counted", Duration::from_secs(5), || {
        client.metrics().drains_completed == 200
    })
    .await;
    assert_eq!(client.metrics().drains_aborted, 0);
}

#[tokio::test]
async fn bodies_over_the_drain_limit_close_their_connection() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_response_drain_size(4096)
        .build()
        .unwrap();
    for _ in 0..200 {
        let res = client.get(srv.url("/bytes/10240")).send().await.unwrap();
        drop(res);
    }
    let m = client.metrics();
    assert_eq!(m.connections_established, 200);
    assert_eq!(m.drains_aborted, 200);
    assert_eq!(m.drains_completed, 0);
    eventually(
        "closed connections reported",
        Duration::from_secs(5),
        || client.metrics().connections_open == 0,
    )
    .await;
}

#[tokio::test]
async fn reading_exactly_content_length_keeps_the_connection() {
    let srv = server().await;
    let client = courier::Client::new();
    for _ in 0..200 {
        let mut res = client.get(srv.url("/json/300")).send().await.unwrap();
        let len = res.content_length().unwrap() as usize;
        // Like a JSON decoder: stop as soon as the object is complete, never
        // asking for the end of the stream.
        let mut buf = Vec::new();
        while buf.len() < len {
            buf.extend_from_slice(&res.chunk().await.unwrap().unwrap());
        }
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert!(v.is_object());
        drop(res);
    }
    let m = client.metrics();
    assert_eq!(m.connections_established, 1);
    assert_eq!(
        m.drains_completed + m.drains_aborted,
        0,
        "no drain was needed"
    );
}

#[tokio::test]
async fn idle_connections_are_reused_most_recent_first() {
    let srv = server().await;
    let client = courier::Client::new();
    // Two connections; the one whose request ends last goes on top of the stack.
    let early = client.get(srv.url("/delay/10")).send();
    let late = client.get(srv.url("/delay/200")).send();
    let (early, late) = tokio::join!(early, late);
    let (early, late) = (early.unwrap(), late.unwrap());
    let (early_id, late_id) = (connection_id(&early), connection_id(&late));
    assert_ne!(early_id, late_id);
    early.bytes().await.unwrap();
    late.bytes().await.unwrap();
    eventually("both idle", Duration::from_secs(2), || {
        client.metrics().connections_idle == 2
    })
    .await;
    let next = client.get(srv.url("/bytes/1")).send().await.unwrap();
    assert_eq!(connection_id(&next), late_id);
}

#[tokio::test]
async fn head_and_empty_bodies_release_the_connection_at_once() {
    let srv = server().await;
    let client = courier::Client::new();
    for _ in 0..20 {
        let res = client.head(srv.url("/bytes/1000")).send().await.unwrap();
        assert_eq!(res.status(), 200);
        let res = client.get(srv.url("/status/204")).send().await.unwrap();
        assert_eq!(res.status(), 204);
    }
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn post_json_and_echo_roundtrip() {
    let srv = server().await;
    let client = courier::Client::new();
    let res = client
        .post(srv.url("/echo"))
        .json(&serde_json::json!({"hello": "world"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["content-type"], "application/json");
    let back: serde_json::Value = res.json().await.unwrap();
    assert_eq!(back["hello"], "world");

    let res = client
        .post(srv.url("/echo"))
        .body(vec![7u8; 100_000])
        .send()
        .await
        .unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 100_000);
}

#[tokio::test]
async fn chunked_bodies_stream() {
    let srv = server().await;
    let client = courier::Client::new();
    let res = client
        .get(srv.url("/bytes/200000?chunked=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.content_length(), None);
    assert_eq!(res.bytes().await.unwrap().len(), 200_000);
}

#[tokio::test]
async fn streamed_uploads_arrive_whole_and_leave_the_connection_reusable() {
    let srv = server().await;
    for http2 in [false, true] {
        let builder = courier::Client::builder();
        let client = if http2 {
            builder.http2_prior_knowledge()
        } else {
            builder
        }
        .build()
        .unwrap();
        let pieces: Vec<bytes::Bytes> = (0..40u8).map(|i| vec![i; 5_000].into()).collect();
        let expected: Vec<u8> = pieces.concat();
        for _ in 0..3 {
            let body = courier::Body::wrap(Pieces {
                pieces: pieces.clone().into_iter(),
                stall: false,
            });
            let res = client
                .post(srv.url("/echo"))
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "http2: {http2}");
            assert_eq!(res.bytes().await.unwrap(), expected, "http2: {http2}");
        }
        assert_eq!(
            client.metrics().connections_established,
            1,
            "http2: {http2}"
        );
    }
}

/// HTTP/1.1 shares the connection's last head's header map with a response
/// whose head has the same bytes (`proto/h1/names.rs`): a caller that changes
/// one response's headers changes its own copy, never the next response's,
/// and every response reads the headers that were sent.
#[tokio::test]
async fn a_changed_response_header_stays_with_its_response_on_a_reused_connection() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        while crate::support::read_head(&mut stream).await {
            let head = b"HTTP/1.1 200 OK\r\nServer: t\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nok";
            if stream.write_all(head).await.is_err() {
                break;
            }
        }
    });
    let client = courier::Client::new();
    let url = format!("http://{addr}/");
    let requests = async {
        for i in 0..8 {
            let mut res = client.get(&url).send().await.unwrap();
            assert_eq!(res.headers().get("x-a").unwrap(), "1", "response {i}");
            assert!(
                res.headers().get("x-mine").is_none(),
                "response {i}: {:?}",
                res.headers()
            );
            res.headers_mut()
                .insert("x-mine", http::HeaderValue::from_static("changed"));
            res.headers_mut().remove("x-a");
            assert_eq!(res.headers().get("x-mine").unwrap(), "changed");
            assert!(res.headers().get("x-a").is_none());
            let http = res.into_http();
            assert_eq!(http.headers().get("x-mine").unwrap(), "changed");
            let res = courier::Response::from_http(http);
            assert_eq!(&res.bytes().await.unwrap()[..], b"ok");
        }
    };
    tokio::time::timeout(Duration::from_secs(20), requests)
        .await
        .expect("8 requests within 20 s");
    assert_eq!(client.metrics().connections_established, 1);
    server.abort();
}
