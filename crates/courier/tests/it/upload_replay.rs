//! Streamed uploads that a server refuses unprocessed, or a stale
//! connection loses, after their first bytes went out (issue 27): a server
//! closing an idle HTTP/2 connection answers the stream that raced its
//! close with GOAWAY naming the streams before it (lighttpd's idle timer,
//! see `lighttpd.rs`); RFC 9113 §8.7 says such a stream was not processed
//! and may be sent again, but a streamed body cannot be read twice. courier
//! keeps what it took of a streamed body (up to a bound) until the response
//! head shows the server took the request, and sends it again from those
//! bytes and the rest of the stream.
//!
//! Servers are scripts written frame by frame (h2c by prior knowledge) or
//! byte by byte (HTTP/1.1) on loopback; every wait is bounded.

use bytes::Bytes;
use courier::{Body, Client, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::support::channel_body;
use crate::support::h2::*;

/// Reads frames until some DATA of `stream` arrived; the bytes read.
async fn some_data(peer: &mut Peer, stream: u32) -> Vec<u8> {
    loop {
        let f = peer.next().await.expect("DATA before the client closed");
        if f.ty == DATA && f.stream == stream && !f.payload.is_empty() {
            return f.payload;
        }
    }
}

/// Reads a whole request (HEADERS, then DATA until END_STREAM), granting
/// window as it reads; its stream and body.
async fn whole_request(peer: &mut Peer) -> (u32, Vec<u8>) {
    let stream = peer.expect_request().await;
    let mut body = Vec::new();
    loop {
        let f = peer.next().await.expect("the request's body");
        if f.stream != stream {
            continue;
        }
        match f.ty {
            DATA => {
                body.extend_from_slice(&f.payload);
                if !f.payload.is_empty() {
                    let n = f.payload.len() as u32;
                    let mut grant = window_update(0, n);
                    grant.extend(window_update(stream, n));
                    peer.send(&grant).await;
                }
                if f.has(END_STREAM) {
                    return (stream, body);
                }
            }
            RST_STREAM => panic!("the client reset its request: {f:?}"),
            _ => {}
        }
    }
}

/// The lighttpd case, scripted: the server reads a streamed POST's HEADERS
/// and its first DATA, then goes away naming no stream (its idle close
/// raced the request), before the rest of the body was even produced. The
/// POST goes again on a new connection, whole.
#[tokio::test]
async fn a_streamed_post_refused_by_goaway_after_its_first_bytes_is_sent_again_whole() {
    let (gone_tx, gone_rx) = oneshot::channel();
    let (url, server) = serve(|listener| async move {
        let mut first = Peer::accept(&listener, &[]).await;
        let s = first.expect_request().await;
        let early = some_data(&mut first, s).await;
        first.send(&goaway(0, NO_ERROR)).await;
        gone_tx.send(()).unwrap();
        let mut second = Peer::accept(&listener, &[]).await;
        let (s2, body) = whole_request(&mut second).await;
        second.respond(s2, &body).await;
        (early, body, first, second)
    })
    .await;
    let client = h2c().build().unwrap();
    let (tx, body) = channel_body();
    tx.send(Bytes::from_static(b"first piece, ")).unwrap();
    let feed = tokio::spawn(async move {
        // The rest comes only once the first connection has gone away.
        within("the GOAWAY", gone_rx).await.unwrap();
        tx.send(Bytes::from_static(b"second piece, ")).unwrap();
        tx.send(Bytes::from_static(b"the end")).unwrap();
    });
    let res = within("the response", client.post(&url).body(body).send())
        .await
        .expect("the refused upload is sent again");
    let echoed = res.bytes().await.unwrap();
    assert_eq!(echoed, "first piece, second piece, the end");
    feed.await.unwrap();
    let (early, received, _first, _second) = within("the server", server).await.unwrap();
    assert_eq!(
        early, b"first piece, ",
        "the first bytes went out on the refused stream"
    );
    assert_eq!(received, b"first piece, second piece, the end");
    let m = client.metrics();
    assert_eq!(m.refused_stream_retries, 1, "{m:?}");
    assert_eq!(m.connections_established, 2, "{m:?}");
}

/// The same refusal by RST_STREAM(REFUSED_STREAM) on a connection that
/// stays: the body goes again on a new stream.
#[tokio::test]
async fn a_streamed_put_refused_by_rst_stream_after_its_first_bytes_is_sent_again_whole() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        some_data(&mut peer, s).await;
        peer.send(&rst_stream(s, REFUSED_STREAM)).await;
        let (s2, body) = whole_request(&mut peer).await;
        peer.respond(s2, &body).await;
        (s, s2, body, peer)
    })
    .await;
    let client = h2c().build().unwrap();
    let pieces = [&b"ab"[..], b"cd", b"ef"].map(Bytes::from_static);
    let body = Body::wrap(crate::support::Pieces {
        pieces: pieces.into_iter(),
        stall: false,
    });
    let res = within("the response", client.put(&url).body(body).send())
        .await
        .expect("the refused upload is sent again");
    assert_eq!(res.bytes().await.unwrap(), "abcdef");
    let (s, s2, received, _peer) = within("the server", server).await.unwrap();
    assert!(s2 > s, "{s} then {s2}");
    assert_eq!(received, b"abcdef");
}

/// What courier keeps of a streamed body for a resend is bounded: a server
/// that refuses a stream after more than that went out gets no second
/// attempt, and the request fails as refused, saying why.
#[tokio::test]
async fn a_streamed_body_refused_past_the_replay_bound_fails_as_refused() {
    const PIECE: usize = 16 * 1024;
    const PIECES: usize = 64; // 1 MiB, far past the bound
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut got = 0;
        // Read (and grant back) 512 KiB of it, then refuse it.
        while got < 512 * 1024 {
            let n = some_data(&mut peer, s).await.len();
            got += n;
            let mut grant = window_update(0, n as u32);
            grant.extend(window_update(s, n as u32));
            peer.send(&grant).await;
        }
        peer.send(&goaway(0, NO_ERROR)).await;
        peer.drain().await;
        got
    })
    .await;
    let client = h2c().build().unwrap();
    let pieces = (0..PIECES).map(|_| Bytes::from(vec![b'x'; PIECE]));
    let body = Body::wrap(crate::support::Pieces {
        pieces,
        stall: false,
    });
    let err = within("the response", client.post(&url).body(body).send())
        .await
        .expect_err("too much of it went out to be kept");
    assert_eq!(err.kind(), ErrorKind::Refused, "{err:?}");
    let why = std::error::Error::source(&err).map(|e| e.to_string());
    let why = why.unwrap_or_default();
    assert!(why.contains("not sent again"), "{why}");
    let got = within("the server", server).await.unwrap();
    assert!(got >= 512 * 1024, "{got}");
    let m = client.metrics();
    assert_eq!(m.refused_stream_retries, 0, "{m:?}");
    assert_eq!(m.connections_established, 1, "{m:?}");
}

/// An idempotent streamed upload on an HTTP/2 connection that breaks after
/// its first bytes, before any answer, is sent again once, like a buffered
/// one (a POST is not: the server may have acted on it).
#[tokio::test]
async fn a_streamed_put_lost_with_its_connection_is_sent_again_once() {
    let (url, server) = serve(|listener| async move {
        let mut first = Peer::accept(&listener, &[]).await;
        // A request first, so that the connection has shown it speaks HTTP/2.
        let s = first.expect_request().await;
        first.respond(s, b"warm").await;
        let s = first.expect_request().await;
        some_data(&mut first, s).await;
        drop(first);
        let mut second = Peer::accept(&listener, &[]).await;
        let (s2, body) = whole_request(&mut second).await;
        second.respond(s2, &body).await;
        (body, second)
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "warm");
    let pieces = [&b"put "[..], b"it ", b"again"].map(Bytes::from_static);
    let body = Body::wrap(crate::support::Pieces {
        pieces: pieces.into_iter(),
        stall: false,
    });
    let res = within("the response", client.put(&url).body(body).send())
        .await
        .expect("the lost upload is sent again");
    assert_eq!(res.bytes().await.unwrap(), "put it again");
    let (received, _second) = within("the server", server).await.unwrap();
    assert_eq!(received, b"put it again");
}

/// A streamed body that fails mid-way is not sent again, whatever the
/// method: what was kept of it is let go with the failure.
#[tokio::test]
async fn a_streamed_body_that_fails_is_not_sent_again() {
    let (url, server) = serve_one(|peer| async move {
        let mut peer = peer.without_deadline();
        let mut requests = 0;
        // Until the client closes the connection (the test drops it).
        while let Some(f) = peer.next().await {
            requests += usize::from(f.ty == HEADERS);
        }
        requests
    })
    .await;
    let client = h2c().build().unwrap();
    let pieces = [
        Ok(Bytes::from_static(b"ab")),
        Err(std::io::Error::other("the producer failed")),
    ];
    let body = Body::wrap_stream(futures_util::stream::iter(pieces));
    let err = within("the failure", client.put(&url).body(body).send())
        .await
        .expect_err("the body failed");
    let m = client.metrics();
    assert_eq!(
        m.refused_stream_retries + m.stale_retries,
        0,
        "{err:?} {m:?}"
    );
    drop(client);
    assert_eq!(within("the server", server).await.unwrap(), 1, "{err:?}");
}

// ---------------------------------------------------------------------------
// HTTP/1.1: a reused connection the server closed while idle.

/// Reads one HTTP/1.1 request head (to its blank line), and what followed.
async fn read_head(io: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = io.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the client closed before a request head");
        buf.extend_from_slice(&chunk[..n]);
    }
    buf
}

/// Reads a chunked request body to its last chunk; the body's bytes.
async fn read_chunked(io: &mut tokio::net::TcpStream, mut buf: Vec<u8>) -> Vec<u8> {
    let start = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    buf.drain(..start);
    let mut chunk = [0u8; 4096];
    while !buf.ends_with(b"0\r\n\r\n") {
        let n = io.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the client closed mid-body");
        buf.extend_from_slice(&chunk[..n]);
    }
    // Undo the chunked coding.
    let mut body = Vec::new();
    let mut rest = &buf[..];
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap(), 16).unwrap();
        rest = &rest[line + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// A streamed PUT on a kept-alive HTTP/1.1 connection that the server
/// closes as the request comes in (its idle close racing the request,
/// after the pool's check): the first bytes go into a dead connection, and
/// the PUT goes again on a new one, whole, like a buffered PUT.
#[tokio::test]
async fn a_streamed_put_on_a_stale_http1_connection_is_sent_again_whole() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (gone_tx, gone_rx) = oneshot::channel();
    let server = tokio::spawn(async move {
        let (mut first, _) = within("a connection", listener.accept()).await.unwrap();
        within("a request", read_head(&mut first)).await;
        first
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nwarm")
            .await
            .unwrap();
        // The next request's head (and maybe some of its body), then the
        // close, unanswered.
        within("the upload", read_head(&mut first)).await;
        drop(first);
        gone_tx.send(()).unwrap();
        let (mut second, _) = within("a connection", listener.accept()).await.unwrap();
        let head = within("the upload again", read_head(&mut second)).await;
        let body = within("its body", read_chunked(&mut second, head)).await;
        let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
        second.write_all(answer.as_bytes()).await.unwrap();
        second.write_all(&body).await.unwrap();
        (body, second)
    });
    let client = Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .build()
        .unwrap();
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap(), "warm");
    let (tx, body) = channel_body();
    tx.send(Bytes::from_static(b"first, ")).unwrap();
    let feed = tokio::spawn(async move {
        // The rest only once the first connection is gone.
        within("the close", gone_rx).await.unwrap();
        tx.send(Bytes::from_static(b"then the rest")).unwrap();
    });
    let res = within("the response", client.put(&url).body(body).send())
        .await
        .expect("the upload is sent again on a new connection");
    assert_eq!(res.bytes().await.unwrap(), "first, then the rest");
    feed.await.unwrap();
    let (received, _second) = within("the server", server).await.unwrap();
    assert_eq!(received, b"first, then the rest");
    let m = client.metrics();
    assert_eq!(m.stale_retries, 1, "{m:?}");
}
