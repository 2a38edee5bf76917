//! HTTP/1.1 behaviours real servers exposed (issue 13, items 3 to 5):
//!
//! - servers close connections that never carried a request (h2o, hypercorn,
//!   Apache, nginx all do, on a timer of their own): such a connection, left
//!   unused in the idle stack by a burst, must be probed at checkout, and a
//!   request it fails before any response byte must be retried;
//! - a server may answer before it has read the whole upload (`/echo` streams
//!   back what it reads): courier keeps sending while it reads, unless the
//!   answer says the server will not read the rest (an error status with
//!   `Connection: close`; see also `http1_half_duplex.rs`);
//! - chunked response trailers reach the caller, as over HTTP/2.
//!
//! The servers are scripted on raw TCP (loopback), or courier's own.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use crate::support::{eventually, Pieces};
use bytes::Bytes;
use courier::{Body, Client, ErrorKind};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const LIMIT: Duration = Duration::from_secs(5);

/// Reads one request head and its `content-length` body; `None` at EOF.
/// `Some(true)` if the request asked to close.
async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> Option<bool> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.ok()?;
    Some(text.contains("connection: close"))
}

/// How the scripted server treats a connection that carried no request yet.
#[derive(Clone, Copy)]
enum Unused {
    /// Closes it once it has been idle this long (h2o's, hypercorn's timer).
    CloseAfter(Duration),
    /// Keeps it open until the test says the timer has fired; a request that
    /// arrives after that is read and the connection closed unanswered: the
    /// server's timer and the request crossed on the wire, which no probe can see.
    CloseOnRequestAfterSignal,
}

/// A keep-alive server that answers `ok`, and closes connections that carried
/// no request as `unused` says.
struct IdleCloser {
    url: String,
    accepted: Arc<AtomicUsize>,
    closed_unused: Arc<AtomicUsize>,
    expired: Arc<AtomicBool>,
}

async fn idle_closer(unused: Unused) -> IdleCloser {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = IdleCloser {
        url: format!("http://{}/", listener.local_addr().unwrap()),
        accepted: Arc::default(),
        closed_unused: Arc::default(),
        expired: Arc::default(),
    };
    let (accepted, closed, expired) = (
        server.accepted.clone(),
        server.closed_unused.clone(),
        server.expired.clone(),
    );
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            let (closed, expired) = (closed.clone(), expired.clone());
            tokio::spawn(async move {
                let first = match unused {
                    Unused::CloseAfter(idle) => {
                        match tokio::time::timeout(idle, read_request(&mut stream)).await {
                            Ok(first) => first,
                            Err(_) => {
                                closed.fetch_add(1, Ordering::SeqCst);
                                return; // dropped: FIN
                            }
                        }
                    }
                    Unused::CloseOnRequestAfterSignal => {
                        // Only connections that were open when the timer fired.
                        let dialed_after = expired.load(Ordering::SeqCst);
                        let first = read_request(&mut stream).await;
                        if !dialed_after && expired.load(Ordering::SeqCst) {
                            closed.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        first
                    }
                };
                let mut close = match first {
                    Some(close) => close,
                    None => return,
                };
                loop {
                    let reply: &[u8] = if close {
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                    } else {
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
                    };
                    if stream.write_all(reply).await.is_err() || close {
                        return;
                    }
                    close = match read_request(&mut stream).await {
                        Some(close) => close,
                        None => return,
                    };
                }
            });
        }
    });
    server
}

fn http1_client() -> Client {
    Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .build()
        .unwrap()
}

/// Leaves `n` new connections unused in the idle stack: `n` requests join the
/// line (each asks for a connection of its own) and are dropped before their
/// connections arrive, as a burst's surplus is.
async fn dial_unused(client: &Client, server: &IdleCloser, n: usize) {
    // The first request settles the protocol (HTTP/1.1) and closes its
    // connection, so that the pool dials one connection per waiter.
    let res = client
        .get(&server.url)
        .header("connection", "close")
        .send()
        .await
        .unwrap();
    assert_eq!(res.bytes().await.unwrap(), "ok");
    eventually("the first connection closed", LIMIT, || {
        client.metrics().connections_open == 0
    })
    .await;
    let mut waiting: Vec<_> = (0..n)
        .map(|_| Box::pin(client.get(&server.url).send()))
        .collect();
    for request in &mut waiting {
        // One poll: the request joins the line and connections are dialed.
        std::future::poll_fn(|cx| {
            assert!(request.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
    }
    drop(waiting);
    eventually("the burst's connections idle", LIMIT, || {
        client.metrics().connections_idle == n as u64
    })
    .await;
    assert_eq!(server.accepted.load(Ordering::SeqCst), n + 1);
}

#[tokio::test]
async fn unused_connections_the_server_closed_are_probed_away() {
    const N: usize = 6;
    let server = idle_closer(Unused::CloseAfter(Duration::from_millis(300))).await;
    let client = http1_client();
    dial_unused(&client, &server, N).await;
    let established = client.metrics().connections_established;
    // The server's timer, not a sleep: wait until it says it closed them all.
    eventually("the server closed the unused connections", LIMIT, || {
        server.closed_unused.load(Ordering::SeqCst) == N
    })
    .await;
    for i in 0..N + 2 {
        let res = client.get(&server.url).send().await;
        let body = res.unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert_eq!(body.bytes().await.unwrap(), "ok");
    }
    let m = client.metrics();
    // Every closed connection was found closed at checkout, not by a request:
    // one new connection served them all, and none needed a retry.
    assert_eq!(m.stale_retries, 0);
    assert_eq!(m.connections_established, established + 1);
    assert_eq!(m.requests_failed, 0);
}

#[tokio::test]
async fn an_unused_connection_closed_as_the_request_arrives_is_retried() {
    let server = idle_closer(Unused::CloseOnRequestAfterSignal).await;
    let client = http1_client();
    dial_unused(&client, &server, 1).await;
    // The server's timer fires now; the connection still looks open.
    server.expired.store(true, Ordering::SeqCst);
    let res = client.get(&server.url).send().await.expect("retried");
    assert_eq!(res.bytes().await.unwrap(), "ok");
    assert_eq!(server.closed_unused.load(Ordering::SeqCst), 1);
    assert_eq!(client.metrics().stale_retries, 1);
}

/// `len` bytes of a pattern that a shifted or truncated copy does not match.
fn pattern(len: usize) -> Bytes {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
        .collect()
}

/// A streamed body whose producer is not always ready (a file, a channel):
/// every piece comes after one `Pending`.
struct Yielding<I> {
    pieces: I,
    ready: bool,
}

impl<I: Iterator<Item = Bytes> + Unpin> http_body::Body for Yielding<I> {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.ready = !self.ready;
        if self.ready {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.pieces.next().map(|p| Ok(http_body::Frame::data(p))))
    }
}

/// Uploads `len` bytes to `/echo`, built by `body`, and checks they come back.
async fn echo_round_trips(body: impl Fn(Bytes) -> Body) {
    let server = crate::support::server().await;
    let url = server.url("/echo");
    let client = http1_client();
    for len in [100 * 1024, 1024 * 1024, 5 * 1024 * 1024] {
        let data = pattern(len);
        let res = client.post(&url).body(body(data.clone())).send().await;
        let res = res.unwrap_or_else(|e| panic!("{len}: {e}"));
        assert_eq!(res.status(), 200);
        let echoed = res.bytes().await.unwrap_or_else(|e| panic!("{len}: {e}"));
        assert!(echoed == data, "{len}: {} bytes back", echoed.len());
    }
    // Both directions finished each time: one connection served every upload.
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn streamed_uploads_to_echo_arrive_back_whole_over_http1() {
    echo_round_trips(|data| {
        let pieces: Vec<Bytes> = data.chunks(64 * 1024).map(Bytes::copy_from_slice).collect();
        Body::wrap(Yielding {
            pieces: pieces.into_iter(),
            ready: false,
        })
    })
    .await;
}

#[tokio::test]
async fn buffered_uploads_to_echo_arrive_back_whole_over_http1() {
    echo_round_trips(Body::from).await;
}

/// A server that answers `200` as soon as it has a request head (a proxy
/// that forwards heads, a handler that streams), then reads the
/// `content-length` body to its end and finishes the response with how many
/// bytes it got; keep-alive.
async fn early_200_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                loop {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                    let length: usize = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    let early = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                    if stream.write_all(early).await.is_err() {
                        return;
                    }
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut got = 0;
                    while got < length {
                        match stream.read(&mut buf[..(length - got).min(64 * 1024)]).await {
                            Ok(n @ 1..) => got += n,
                            _ => return,
                        }
                    }
                    let count = got.to_string();
                    let end = format!("{:x}\r\n{count}\r\n0\r\n\r\n", count.len());
                    if stream.write_all(end.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn uploads_go_on_after_an_early_answer_that_does_not_say_close() {
    const LEN: usize = 16 * 1024 * 1024;
    let url = early_200_server().await;
    let client = http1_client();
    let data = pattern(LEN);
    for what in ["buffered", "streamed"] {
        let body = if what == "buffered" {
            Body::from(data.clone())
        } else {
            let pieces: Vec<Bytes> = data
                .chunks(256 * 1024)
                .map(Bytes::copy_from_slice)
                .collect();
            Body::wrap(Yielding {
                pieces: pieces.into_iter(),
                ready: false,
            })
        };
        // Of known length either way, so the server can count to its end.
        let res = client
            .post(&url)
            .header("content-length", LEN.to_string())
            .body(body)
            .send()
            .await;
        let res = res.unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = res.text().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got, LEN.to_string(), "{what}");
    }
    // The uploads ended, then the responses: the connection was reused.
    assert_eq!(client.metrics().connections_established, 1);
}

/// A server that answers `413` with `Connection: close` right after the head
/// and then reads on, counting what still arrives; and `ok` to a plain GET.
#[tokio::test]
async fn an_early_413_with_close_stops_the_upload_and_the_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let after_answer = Arc::new(AtomicUsize::new(0));
    let (acc, after) = (accepted.clone(), after_answer.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            acc.fetch_add(1, Ordering::SeqCst);
            let after = after.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                if head.starts_with(b"GET") {
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                        .await;
                    return;
                }
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 413 Content Too Large\r\nconnection: close\r\ncontent-length: 8\r\n\r\ntoo long",
                    )
                    .await;
                // Read what the client still sends until it closes.
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = stream.read(&mut buf).await {
                    after.fetch_add(n, Ordering::SeqCst);
                }
            });
        }
    });
    let client = http1_client();
    // An endless upload: only stopping on the answer ends this request.
    let endless = Body::wrap(Pieces {
        pieces: std::iter::repeat(Bytes::from(vec![b'x'; 16 * 1024])),
        stall: false,
    });
    let res = client.post(&url).body(endless).send().await.unwrap();
    assert_eq!(res.status(), 413);
    assert_eq!(res.bytes().await.unwrap(), "too long");
    // Not reused: the next request dials again.
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap(), "ok");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    // Whatever was on the wire when the answer came is bounded by the socket
    // buffers, not the endless body.
    assert!(after_answer.load(Ordering::SeqCst) < 64 * 1024 * 1024);
}

/// A chunked response with `trailers` after its body, then the connection
/// stays open.
async fn trailer_server(trailers: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                while read_request(&mut stream).await.is_some() {
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-checksum\r\n\r\n\
                         5\r\nhello\r\n6\r\n world\r\n0\r\n{trailers}\r\n"
                    );
                    if stream.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

async fn read_frames(res: courier::Response) -> Result<(Vec<u8>, Vec<http::HeaderMap>), ErrorKind> {
    let mut body = res.into_http().into_body();
    let (mut data, mut trailers) = (Vec::new(), Vec::new());
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.kind())?;
        match frame.into_data() {
            Ok(d) => data.extend_from_slice(&d),
            Err(frame) => trailers.push(frame.into_trailers().unwrap()),
        }
    }
    Ok((data, trailers))
}

#[tokio::test]
async fn chunked_trailers_are_surfaced_as_a_trailers_frame() {
    let url = trailer_server(
        "x-checksum: 5eb63bbbe01eeed0\r\nx-multi: 1\r\nx-multi: 2\r\n\
         content-length: 99\r\ntransfer-encoding: gzip\r\nhost: elsewhere\r\n",
    )
    .await;
    let client = http1_client();
    for _ in 0..2 {
        let res = client.get(&url).send().await.unwrap();
        let (data, trailers) = read_frames(res).await.unwrap();
        assert_eq!(data, b"hello world");
        assert_eq!(trailers.len(), 1, "{trailers:?}");
        let t = &trailers[0];
        assert_eq!(t["x-checksum"], "5eb63bbbe01eeed0");
        let multi: Vec<_> = t.get_all("x-multi").iter().collect();
        assert_eq!(multi, ["1", "2"]);
        // Fields that cannot be trailers (RFC 9110 §6.5.1) are dropped.
        for forbidden in ["content-length", "transfer-encoding", "host"] {
            assert!(!t.contains_key(forbidden), "{forbidden} kept: {t:?}");
        }
    }
    // The trailers were read to their end: one connection served both.
    assert_eq!(client.metrics().connections_established, 1);

    // No trailers: no trailers frame; `bytes()` ignores them either way.
    let url = trailer_server("").await;
    let (data, trailers) = read_frames(client.get(&url).send().await.unwrap())
        .await
        .unwrap();
    assert_eq!((data.as_slice(), trailers.len()), (&b"hello world"[..], 0));
}

#[tokio::test]
async fn trailers_past_max_response_headers_size_are_a_typed_error() {
    let big: &'static str = Box::leak(format!("x-big: {}\r\n", "a".repeat(3000)).into_boxed_str());
    let url = trailer_server(big).await;
    let client = Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .max_response_headers_size(2048)
        .build()
        .unwrap();
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(
        read_frames(res).await.unwrap_err(),
        ErrorKind::HeadersTooLarge
    );
    // Under the limit, the same client takes them.
    let url = trailer_server("x-small: 1\r\n").await;
    let (_, trailers) = read_frames(client.get(&url).send().await.unwrap())
        .await
        .unwrap();
    assert_eq!(trailers[0]["x-small"], "1");
}

/// A server that answers `413` + `Connection: close` to the head and closes
/// at once, unread body and all (which resets the connection).
#[tokio::test]
async fn an_early_413_then_a_reset_is_still_the_answer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 413 Content Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
                    .await;
                // Dropped with the body unread: the kernel answers it with RST.
            });
        }
    });
    let client = http1_client();
    for what in ["buffered", "streamed"] {
        let data = pattern(8 * 1024 * 1024);
        let body = if what == "buffered" {
            Body::from(data)
        } else {
            let pieces: Vec<Bytes> = data.chunks(64 * 1024).map(Bytes::copy_from_slice).collect();
            Body::wrap(Pieces {
                pieces: pieces.into_iter(),
                stall: false,
            })
        };
        let res = client.post(&url).body(body).send().await;
        let res = res.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(res.status(), 413, "{what}");
    }
}

/// A server that answers `401` to the head without `Connection: close` and
/// never reads the body: the upload stalls, the answer does not, and the
/// connection, with half a request on it, is not reused.
#[tokio::test]
async fn an_early_error_that_keeps_the_connection_is_read_and_the_connection_dropped() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let acc = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            acc.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 6\r\n\r\nwho?\r\n")
                    .await;
                // Holds the connection open, reading nothing, until the client closes it.
                std::future::pending::<()>().await;
            });
        }
    });
    let client = http1_client();
    for _ in 0..2 {
        let endless = Body::wrap(Pieces {
            pieces: std::iter::repeat(Bytes::from(vec![b'x'; 16 * 1024])),
            stall: false,
        });
        let res = client.post(&url).body(endless).send().await.unwrap();
        assert_eq!(res.status(), 401);
        assert_eq!(res.bytes().await.unwrap(), "who?\r\n");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}
