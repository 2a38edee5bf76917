//! A reused connection that dies before answering: idempotent requests are
//! retried once on a new connection, others fail with a clear error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use courier::ErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::fetch;

/// A server that answers the first request on each connection and closes the
/// connection, without answering, on the second: the classic race with a
/// keep-alive timeout that fired while the client was sending.
async fn one_answer_per_connection() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream));
        }
    });
    (url, accepted)
}

async fn serve(mut stream: TcpStream) {
    let mut buf = Vec::new();
    for n in 0.. {
        if read_request(&mut stream, &mut buf).await.is_none() {
            return;
        }
        if n > 0 {
            return; // drop the connection with the request unanswered
        }
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .await;
    }
}

/// Reads one request head and its Content-Length body.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap_or(0));
            while buf.len() < end + 4 + len {
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            buf.drain(..end + 4 + len);
            return Some(());
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test]
async fn idempotent_request_on_a_dead_reused_connection_is_retried_once() {
    let (url, accepted) = one_answer_per_connection().await;
    let client = courier::Client::new();
    for _ in 0..5 {
        let res = client.get(format!("{url}/")).send().await.unwrap();
        assert_eq!(res.text().await.unwrap(), "ok");
    }
    // First request: new connection. Each later one: the reused connection
    // dies, the retry gets a new connection.
    let m = client.metrics();
    assert_eq!(m.stale_retries, 4);
    assert_eq!(m.connections_established, 5);
    assert_eq!(accepted.load(Ordering::SeqCst), 5);
    assert_eq!(m.requests_failed, 0);
}

#[tokio::test]
async fn non_idempotent_request_that_was_sent_is_not_replayed() {
    let (url, accepted) = one_answer_per_connection().await;
    let client = courier::Client::new();
    let res = client.get(format!("{url}/")).send().await.unwrap();
    res.bytes().await.unwrap();
    let err = client
        .post(format!("{url}/"))
        .body("charge the card")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed, "{err}");
    assert_eq!(client.metrics().stale_retries, 0);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

/// `idempotent()` means "safe to send more than once" to the pool as to
/// the middleware and a cluster: a POST so marked is sent again on a new
/// connection, as a GET is (before, only the method counted here).
#[tokio::test]
async fn a_post_marked_idempotent_is_replayed_on_a_new_connection() {
    let (url, accepted) = one_answer_per_connection().await;
    let client = courier::Client::new();
    let res = client.get(format!("{url}/")).send().await.unwrap();
    res.bytes().await.unwrap();
    let res = client
        .post(format!("{url}/"))
        .body("the same order, keyed")
        .idempotent()
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(client.metrics().stale_retries, 1);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn retry_can_be_turned_off() {
    let (url, _) = one_answer_per_connection().await;
    let client = courier::Client::builder()
        .retry_stale_connections(false)
        .build()
        .unwrap();
    fetch(&client, format!("{url}/")).await;
    let err = client.get(format!("{url}/")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed);
}
