//! HTTP/2 at the wire level: what the client reads, writes and tolerates,
//! pinned against servers written frame by frame (h2c by prior knowledge on
//! loopback), so any HTTP/2 implementation under courier is held to the same
//! behaviour: padding and priority, CONTINUATION, trailers, 1xx responses,
//! flow control both ways, PING, GOAWAY, RST_STREAM, malformed responses,
//! header and frame size limits, the client's SETTINGS, stream ids and
//! cancellation, the request headers it sends; and the cases a review of
//! courier's own HTTP/2 found wrong: a stream that fails before its head is
//! read, a reset that crosses END_STREAM, a connection whose task is dropped,
//! an upload's end held behind another upload out of window.
//!
//! Each test's server is a script run on a task of its own; the test awaits
//! that task at its end, so an assertion that fails in the server fails the
//! test. Every wait is bounded by [`LIMIT`]: a hang fails, it does not block.
//! Servers read until the client closes (the client is dropped first), so a
//! server never closes a socket with unread bytes in it (which would reset
//! the connection under the client).

use bytes::Bytes;
use courier::{Client, ErrorKind};
use http_body_util::BodyExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::h2::*;

/// The default SETTINGS_MAX_FRAME_SIZE, which courier does not change.
const MAX_FRAME: usize = 16_384;

/// `:status: 200` and `content-length`, one HEADERS frame (END_HEADERS).
fn head_200(stream: u32, content_length: usize) -> Vec<u8> {
    head_200_declaring(stream, &content_length.to_string())
}

/// The body `len` bytes long that the flow-control tests send (a pattern, so
/// lost, repeated or reordered bytes show).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Drops the client (closing its connections) and waits for the server's
/// script to end, failing the test if the script failed.
async fn finish<T>(client: Client, server: JoinHandle<T>) -> T {
    drop(client);
    within("the server script to end", server)
        .await
        .expect("the server script failed")
}

/// The flow-control tests' client side: the body `len` bytes long arrives
/// whole and unaltered; returns the WINDOW_UPDATEs the server counted
/// (stream, connection) once its script ended.
async fn fetch_the_pattern(
    client: Client,
    url: &str,
    server: JoinHandle<(usize, usize)>,
    len: usize,
) -> (usize, usize) {
    let body = within("the body", fetch(&client, url)).await.unwrap();
    assert_eq!(body.len(), len);
    assert!(body[..] == pattern(len)[..], "the body arrived altered");
    finish(client, server).await
}

/// The header-list tests' client side (a 4 KiB limit): the oversized
/// response fails with `HeadersTooLarge`, the next request is answered
/// `small`; returns the client for the test's own checks.
async fn headers_too_large_then_small(url: &str) -> Client {
    let client = h2c().max_response_headers_size(4 * 1024).build().unwrap();
    let err = within("the oversized response", client.get(url).send())
        .await
        .expect_err("a header list over the limit must fail");
    // Only the kind is pinned: the current client may also lose the
    // connection (and with it any other stream on it), which need not stay so.
    assert_eq!(err.kind(), ErrorKind::HeadersTooLarge, "{err}");
    assert_eq!(fetch(&client, url).await.unwrap(), "small");
    client
}

/// Starts a GET of `url` on a task of its own, reading the body to its end.
fn spawn_fetch(client: &Client, url: &str) -> JoinHandle<Result<Bytes, courier::Error>> {
    let request = client.get(url);
    tokio::spawn(async move { request.send().await?.bytes().await })
}

// ---------------------------------------------------------------------------
// 1. Padding and priority.

#[tokio::test]
async fn padded_and_priority_frames_are_read_exactly() {
    let (url, server) = serve_one(|mut peer| async move {
        // HEADERS with PADDED and PRIORITY: pad length, stream dependency
        // (exclusive bit, stream 0), weight, block, padding.
        let s = peer.expect_request().await;
        let mut payload = vec![5, 0x80, 0, 0, 0, 200];
        payload.push(STATUS_200);
        payload.extend(field("x-case", b"padded+priority"));
        payload.extend([0; 5]);
        let mut out = frame(HEADERS, END_HEADERS | PADDED | PRIORITY, s, &payload);
        // DATA with padding, with zero-length padding, and padding alone.
        let mut data = vec![7];
        data.extend_from_slice(b"hello ");
        data.extend([0; 7]);
        out.extend(frame(DATA, PADDED, s, &data));
        out.extend(frame(DATA, PADDED, s, &[0, b'w', b'o']));
        let mut only_padding = vec![10];
        only_padding.extend([0; 10]);
        out.extend(frame(DATA, PADDED, s, &only_padding));
        let mut last = vec![255];
        last.extend_from_slice(b"rld");
        last.extend([0; 255]);
        out.extend(frame(DATA, PADDED | END_STREAM, s, &last));
        peer.send(&out).await;

        // HEADERS with PRIORITY alone, and with PADDED alone.
        let s = peer.expect_request().await;
        let mut payload = vec![0, 0, 0, 0, 16];
        payload.push(STATUS_200);
        payload.extend(field("x-case", b"priority"));
        peer.send(&frame(HEADERS, END_HEADERS | PRIORITY, s, &payload))
            .await;
        peer.send(&frame(DATA, END_STREAM, s, b"second")).await;

        let s = peer.expect_request().await;
        let mut payload = vec![3, STATUS_200];
        payload.extend(field("x-case", b"padded"));
        payload.extend([0; 3]);
        peer.send(&frame(
            HEADERS,
            END_HEADERS | END_STREAM | PADDED,
            s,
            &payload,
        ))
        .await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();

    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-case"], "padded+priority");
    assert_eq!(res.bytes().await.unwrap(), "hello world");

    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.headers()["x-case"], "priority");
    assert_eq!(res.bytes().await.unwrap(), "second");

    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.headers()["x-case"], "padded");
    assert_eq!(res.bytes().await.unwrap(), "");

    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 2. CONTINUATION.

#[tokio::test]
async fn a_header_block_split_over_continuation_frames_arrives_whole() {
    let value: Vec<u8> = (0..20_000).map(|i| b'a' + (i % 26) as u8).collect();
    let expected = value.clone();
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut block = vec![STATUS_200];
        block.extend(field("x-big", &value));
        block.extend(field("x-after", b"still here"));
        // Cut inside the value's length integer, then inside the value.
        let (first, rest) = block.split_at(9);
        let (second, third) = rest.split_at(12_000);
        let mut out = frame(HEADERS, 0, s, first);
        out.extend(frame(CONTINUATION, 0, s, second));
        out.extend(frame(CONTINUATION, END_HEADERS, s, third));
        out.extend(frame(DATA, END_STREAM, s, b"ok"));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().max_response_headers_size(64 * 1024).build().unwrap();
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-big"].as_bytes(), &expected[..]);
    assert_eq!(res.headers()["x-after"], "still here");
    assert_eq!(res.bytes().await.unwrap(), "ok");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 3. Trailers.

#[tokio::test]
async fn response_trailers_are_exposed_as_a_trailers_frame() {
    let (url, server) = serve_one(|mut peer| async move {
        for _ in 0..2 {
            let s = peer.expect_request().await;
            let mut out = frame(HEADERS, END_HEADERS, s, &[STATUS_200]);
            out.extend(frame(DATA, 0, s, b"body "));
            out.extend(frame(DATA, 0, s, b"bytes"));
            let mut trailers = field("x-checksum", b"abc123");
            trailers.extend(field("grpc-status", b"0"));
            out.extend(frame(HEADERS, END_HEADERS | END_STREAM, s, &trailers));
            peer.send(&out).await;
        }
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();

    // Through `http_body::Body`: the data, then the trailers.
    let res = client.get(&url).send().await.unwrap();
    let collected = within("the body", res.into_body().collect()).await.unwrap();
    let trailers = collected.trailers().expect("trailers").clone();
    assert_eq!(trailers["x-checksum"], "abc123");
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(collected.to_bytes(), "body bytes");

    // `bytes()` skips the trailers and keeps the data.
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap(), "body bytes");

    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
}

/// Fields that cannot be trailers (RFC 9110 §6.5.1: they frame, route,
/// authenticate or describe the content) are dropped, as over HTTP/1.1,
/// so a caller sees the same trailers whichever protocol carried them.
#[tokio::test]
async fn fields_that_cannot_be_trailers_are_dropped_as_over_http1() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut out = frame(HEADERS, END_HEADERS, s, &[STATUS_200]);
        out.extend(frame(DATA, 0, s, b"body"));
        let mut trailers = field("set-cookie", b"session=stolen");
        trailers.extend(field("content-length", b"99"));
        trailers.extend(field("authorization", b"Bearer x"));
        trailers.extend(field("content-type", b"text/evil"));
        trailers.extend(field("grpc-status", b"0"));
        out.extend(frame(HEADERS, END_HEADERS | END_STREAM, s, &trailers));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let res = client.get(&url).send().await.unwrap();
    let collected = within("the body", res.into_body().collect()).await.unwrap();
    let trailers = collected.trailers().expect("trailers").clone();
    let names: Vec<&str> = trailers.keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["grpc-status"]);
    assert_eq!(collected.to_bytes(), "body");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 4. 1xx.

#[tokio::test]
async fn informational_responses_are_skipped_for_the_final_one() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut out = frame(HEADERS, END_HEADERS, s, &status(100));
        let mut hints = status(103);
        hints.extend(field("link", b"</style.css>; rel=preload"));
        out.extend(frame(HEADERS, END_HEADERS, s, &hints));
        let mut last = vec![STATUS_200];
        last.extend(field("x-final", b"yes"));
        out.extend(frame(HEADERS, END_HEADERS, s, &last));
        out.extend(frame(DATA, END_STREAM, s, b"final"));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-final"], "yes");
    assert!(res.headers().get("link").is_none(), "{:?}", res.headers());
    assert_eq!(res.bytes().await.unwrap(), "final");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 5. Download flow control.

/// Serves one GET with a `len`-byte body in frames of at most 16 KiB, never
/// sending past the client's stream or connection window: when either runs
/// out it reads frames until WINDOW_UPDATEs open it again. Returns how many
/// stream and connection WINDOW_UPDATEs the client sent.
async fn serve_within_the_client_windows(listener: TcpListener, len: usize) -> (usize, usize) {
    let mut peer = Peer::accept(&listener, &[]).await;
    // RFC 9113 §6.9.2: both windows start at 65,535; the client's SETTINGS
    // may change the streams' initial window, never the connection's.
    let mut initial: i64 = 65_535;
    let mut conn: i64 = 65_535;
    let mut stream: Option<(u32, i64)> = None;
    let (mut stream_updates, mut conn_updates) = (0, 0);
    let body = pattern(len);
    let mut sent = 0;
    loop {
        if let Some((s, window)) = stream {
            let n = (len - sent)
                .min(MAX_FRAME)
                .min(window.min(conn).max(0) as usize);
            if n > 0 {
                let end = sent + n == len;
                let flags = if end { END_STREAM } else { 0 };
                peer.send(&frame(DATA, flags, s, &body[sent..sent + n]))
                    .await;
                sent += n;
                conn -= n as i64;
                stream = Some((s, window - n as i64));
                if end {
                    break;
                }
                continue;
            }
        }
        // Out of window (or no request yet): read what the client says.
        let f = peer.read().await;
        match f.ty {
            SETTINGS if !f.has(ACK) => {
                for (id, value) in f.params() {
                    if id == SETTINGS_INITIAL_WINDOW_SIZE {
                        let delta = i64::from(value) - initial;
                        initial = i64::from(value);
                        if let Some((_, window)) = stream.as_mut() {
                            *window += delta;
                        }
                    }
                }
                peer.send(&frame(SETTINGS, ACK, 0, &[])).await;
            }
            WINDOW_UPDATE => {
                let increment = i64::from(f.u32_at(0) & 0x7fff_ffff);
                assert!(increment > 0, "a zero WINDOW_UPDATE: {f:?}");
                match stream.as_mut() {
                    _ if f.stream == 0 => {
                        conn += increment;
                        conn_updates += 1;
                    }
                    Some((s, window)) if *s == f.stream => {
                        *window += increment;
                        stream_updates += 1;
                    }
                    _ => panic!("WINDOW_UPDATE for an unknown stream: {f:?}"),
                }
            }
            HEADERS => {
                assert!(stream.is_none(), "one request expected");
                peer.send(&head_200(f.stream, len)).await;
                stream = Some((f.stream, initial));
            }
            SETTINGS | PING => {}
            _ => panic!("unexpected frame: {f:?}"),
        }
    }
    peer.drain().await;
    (stream_updates, conn_updates)
}

#[tokio::test]
async fn a_body_beyond_the_initial_windows_is_pulled_with_window_updates() {
    const LEN: usize = 1024 * 1024;
    let (url, server) = serve(|l| serve_within_the_client_windows(l, LEN)).await;
    // The RFC's initial windows (65,535 bytes), so the client must open both
    // again and again to take 1 MiB.
    let client = h2c()
        .http2_initial_stream_window_size(65_535)
        .http2_initial_connection_window_size(65_535)
        .build()
        .unwrap();
    let (stream_updates, conn_updates) = fetch_the_pattern(client, &url, server, LEN).await;
    assert!(stream_updates > 0, "no stream WINDOW_UPDATE");
    assert!(conn_updates > 0, "no connection WINDOW_UPDATE");
}

#[tokio::test]
async fn a_body_beyond_the_default_stream_window_is_pulled_with_window_updates() {
    // A 2 MiB stream window (the default until issue 30; 32 MiB now): 3 MiB
    // needs it opened again.
    const LEN: usize = 3 * 1024 * 1024;
    let (url, server) = serve(|l| serve_within_the_client_windows(l, LEN)).await;
    let client = h2c()
        .http2_initial_stream_window_size(2 << 20)
        .http2_initial_connection_window_size(8 << 20)
        .build()
        .unwrap();
    let (stream_updates, conn_updates) = fetch_the_pattern(client, &url, server, LEN).await;
    assert!(stream_updates > 0, "no stream WINDOW_UPDATE");
    // The connection window is opened up front (8 MiB here).
    assert!(conn_updates > 0, "no connection WINDOW_UPDATE");
}

// ---------------------------------------------------------------------------
// 6. Upload flow control.

#[tokio::test]
async fn an_upload_never_exceeds_the_window_the_server_granted() {
    const LEN: usize = 100 * 1024;
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[(SETTINGS_INITIAL_WINDOW_SIZE, 1_000)]).await;
        // The connection window is not changed by SETTINGS: 65,535.
        let mut conn: usize = 65_535;
        // A stream's window starts at 65,535 until the client has applied
        // the SETTINGS, which it acknowledges then (it may send before it
        // read them, RFC 9113 §6.9.2); at the ACK it shrinks by the change,
        // below zero if the client had sent more than 1,000 bytes.
        let mut initial: i64 = 65_535;
        let mut stream: Option<(u32, i64)> = None;
        let mut received = Vec::new();
        let mut frames = 0;
        loop {
            let f = peer.read().await;
            match f.ty {
                SETTINGS if !f.has(ACK) => peer.send(&frame(SETTINGS, ACK, 0, &[])).await,
                SETTINGS => {
                    if let Some((_, window)) = stream.as_mut() {
                        *window -= initial - 1_000;
                    }
                    initial = 1_000;
                }
                HEADERS => {
                    assert!(stream.is_none(), "one request expected");
                    assert!(f.has(END_HEADERS) && !f.has(END_STREAM), "{f:?}");
                    stream = Some((f.stream, initial));
                }
                DATA => {
                    let (s, window) = stream.as_mut().expect("DATA before HEADERS");
                    assert_eq!(f.stream, *s);
                    let len = f.payload.len();
                    assert!(
                        len as i64 <= *window,
                        "a {len}-byte DATA frame with a stream window of {window}"
                    );
                    assert!(
                        len <= conn,
                        "a {len}-byte DATA frame with a connection window of {conn}"
                    );
                    *window -= len as i64;
                    conn -= len;
                    frames += 1;
                    let data = if f.has(PADDED) {
                        let pad = usize::from(f.payload[0]);
                        &f.payload[1..len - pad]
                    } else {
                        &f.payload[..]
                    };
                    received.extend_from_slice(data);
                    if f.has(END_STREAM) {
                        let s = *s;
                        peer.respond(s, b"got it").await;
                        break;
                    }
                    // Read: grant exactly what was consumed, on both levels.
                    if len > 0 {
                        let mut out = window_update(*s, len as u32);
                        out.extend(window_update(0, len as u32));
                        *window += len as i64;
                        conn += len;
                        peer.send(&out).await;
                    }
                }
                WINDOW_UPDATE => {}
                _ => panic!("unexpected frame: {f:?}"),
            }
        }
        peer.drain().await;
        (received, frames)
    })
    .await;
    let client = h2c().build().unwrap();
    let res = within(
        "the upload's response",
        client.post(&url).body(pattern(LEN)).send(),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap(), "got it");
    let (received, frames) = finish(client, server).await;
    assert_eq!(received.len(), LEN);
    assert!(received == pattern(LEN), "the upload arrived altered");
    // What went past the default window went 1,000 bytes at a time.
    assert!(
        frames >= (LEN - 65_535) / 1_000,
        "{frames} DATA frames for {LEN} bytes"
    );
}

// ---------------------------------------------------------------------------
// 7. PING.

#[tokio::test]
async fn a_server_ping_is_acknowledged_with_the_same_payload() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let opaque = *b"\x01courier";
        peer.send(&frame(PING, 0, 0, &opaque)).await;
        let pong = loop {
            let f = peer.next().await.expect("the client closed the connection");
            if f.ty == PING {
                break f;
            }
        };
        assert!(pong.has(ACK), "a PING that is not an ACK: {pong:?}");
        assert_eq!(pong.stream, 0);
        assert_eq!(pong.payload, opaque);
        peer.respond(s, b"pong seen").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "pong seen");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 8. GOAWAY.

#[tokio::test]
async fn goaway_retries_the_streams_past_last_stream_id_on_a_new_connection() {
    let (first_seen, first_seen_rx) = oneshot::channel();
    let (url, server) = serve(|listener| async move {
        let mut one = Peer::accept(&listener, &[]).await;
        assert_eq!(one.expect_request().await, 1);
        first_seen.send(()).unwrap();
        assert_eq!(one.expect_request().await, 3);
        // Stream 1 was processed; stream 3 was not. (Answered before the
        // GOAWAY: a GOAWAY ahead of its last stream's answer would teach the
        // pool a one-stream budget per connection, see http2_refusal.rs.)
        let mut out = head_200(1, 3);
        out.extend(frame(DATA, END_STREAM, 1, b"one"));
        out.extend(goaway(1, NO_ERROR));
        one.send(&out).await;
        let mut two = Peer::accept(&listener, &[]).await;
        let s = two.expect_request().await;
        assert_eq!(s, 1, "the retry is the new connection's first stream");
        two.respond(s, b"three").await;
        // Until the client closes both: no third connection.
        let mut accepted = 2;
        let drained = async {
            tokio::join!(one.drain(), two.drain());
        };
        tokio::pin!(drained);
        loop {
            tokio::select! {
                () = &mut drained => break,
                _ = listener.accept() => accepted += 1,
            }
        }
        accepted
    })
    .await;
    let client = h2c().build().unwrap();
    let first = spawn_fetch(&client, &url);
    within("stream 1 on the wire", first_seen_rx).await.unwrap();
    let second = spawn_fetch(&client, &url);
    let first = within("the first request", first).await.unwrap();
    let second = within("the second request", second).await.unwrap();
    assert_eq!(first.unwrap(), "one");
    assert_eq!(second.unwrap(), "three");
    let m = client.metrics();
    assert_eq!(m.connections_established, 2, "{m:?}");
    assert_eq!(m.refused_stream_retries, 1, "{m:?}");
    assert_eq!(finish(client, server).await, 2, "connections accepted");
}

// ---------------------------------------------------------------------------
// 9. RST_STREAM mid-body.

#[tokio::test]
async fn rst_stream_mid_body_fails_the_body_and_the_connection_serves_on() {
    let (reset_now, reset_now_rx) = oneshot::channel::<()>();
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut out = head_200(s, 100);
        out.extend(frame(DATA, 0, s, b"partial"));
        peer.send(&out).await;
        within("the client reading the body", reset_now_rx)
            .await
            .unwrap();
        peer.send(&rst_stream(s, INTERNAL_ERROR)).await;
        let s = peer.expect_request().await;
        assert_eq!(s, 3, "the next request on the same connection");
        peer.respond(s, b"fine").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let mut res = client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        within("the first chunk", res.chunk())
            .await
            .unwrap()
            .unwrap(),
        "partial"
    );
    reset_now.send(()).unwrap();
    let err = within("the reset", res.chunk())
        .await
        .expect_err("a reset stream's body must fail");
    assert_eq!(err.kind(), ErrorKind::Body, "{err}");
    drop(res);
    assert_eq!(fetch(&client, &url).await.unwrap(), "fine");
    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 10. Malformed responses.

/// A malformed answer for a stream: frames sent at once, and frames sent once
/// the client has the response head (when the head itself is fine).
type Malformed = fn(u32) -> (Vec<u8>, Option<Vec<u8>>);

/// Runs request A (held by the server), then request B answered with `bad`,
/// then, after B failed, answers A, then request C: all on one connection.
/// Returns B's error kind; A and C must succeed on the same connection.
async fn malformed_fails_only_its_stream(bad: Malformed) -> ErrorKind {
    let (a_seen, a_seen_rx) = oneshot::channel();
    let (b_head, b_head_rx) = oneshot::channel::<()>();
    let (b_failed, b_failed_rx) = oneshot::channel::<()>();
    let (url, server) = serve_one(move |mut peer| async move {
        let a = peer.expect_request().await;
        a_seen.send(()).unwrap();
        let b = peer.expect_request().await;
        let (now, later) = bad(b);
        peer.send(&now).await;
        if let Some(later) = later {
            within("the client to read B's head", b_head_rx)
                .await
                .unwrap();
            peer.send(&later).await;
        }
        within("B to fail", b_failed_rx).await.unwrap();
        peer.respond(a, b"a").await;
        let c = peer.expect_request().await;
        peer.respond(c, b"c").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let a = spawn_fetch(&client, &url);
    within("request A on the wire", a_seen_rx).await.unwrap();
    let b = async {
        let res = client.get(&url).send().await?;
        let _ = b_head.send(());
        res.bytes().await
    };
    let err = within("request B", b)
        .await
        .expect_err("a malformed response must fail");
    b_failed.send(()).unwrap();
    let a = within("request A", a).await.unwrap();
    assert_eq!(a.expect("request A survives B's failure"), "a");
    assert_eq!(
        fetch(&client, &url)
            .await
            .expect("request C after B's failure"),
        "c"
    );
    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
    err.kind()
}

/// Sends request B alone, answered with `bad`, and returns its error kind.
async fn malformed_alone(bad: Malformed) -> ErrorKind {
    let (head, head_rx) = oneshot::channel::<()>();
    let (url, server) = serve_one(move |mut peer| async move {
        let s = peer.expect_request().await;
        let (now, later) = bad(s);
        peer.send(&now).await;
        if let Some(later) = later {
            within("the client to read the head", head_rx)
                .await
                .unwrap();
            peer.send(&later).await;
        }
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let request = async {
        let res = client.get(&url).send().await?;
        let _ = head.send(());
        res.bytes().await
    };
    let err = within("the request", request)
        .await
        .expect_err("a malformed response must fail");
    finish(client, server).await;
    err.kind()
}

fn no_status(s: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    let block = field("x-no-status", b"1");
    (frame(HEADERS, END_HEADERS | END_STREAM, s, &block), None)
}

fn uppercase_name(s: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut block = vec![STATUS_200];
    block.extend(field("X-Bad", b"1"));
    (frame(HEADERS, END_HEADERS | END_STREAM, s, &block), None)
}

fn shorter_than_content_length(s: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    (head_200(s, 10), Some(frame(DATA, END_STREAM, s, b"short")))
}

fn longer_than_content_length(s: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        head_200(s, 10),
        Some(frame(DATA, END_STREAM, s, b"twenty bytes of body")),
    )
}

#[tokio::test]
async fn a_response_without_status_fails_only_its_request() {
    let kind = malformed_fails_only_its_stream(no_status).await;
    assert_eq!(kind, ErrorKind::Protocol);
}

#[tokio::test]
async fn a_response_with_an_uppercase_header_name_fails_the_request() {
    let kind = malformed_alone(uppercase_name).await;
    assert_eq!(kind, ErrorKind::Protocol);
}

#[tokio::test]
async fn a_response_with_an_uppercase_header_name_fails_only_its_request() {
    let kind = malformed_fails_only_its_stream(uppercase_name).await;
    assert_eq!(kind, ErrorKind::Protocol);
}

#[tokio::test]
async fn a_body_not_matching_content_length_fails_only_its_request() {
    let kind = malformed_fails_only_its_stream(shorter_than_content_length).await;
    assert_eq!(kind, ErrorKind::Body, "shorter than content-length");
    let kind = malformed_fails_only_its_stream(longer_than_content_length).await;
    assert_eq!(kind, ErrorKind::Body, "longer than content-length");
}

/// A status that allows no content (RFC 9110 §15.3.5, §15.4.5), with DATA.
fn no_content_with_data(code: u16) -> impl Fn(u32) -> (Vec<u8>, Option<Vec<u8>>) {
    move |s| {
        let head = frame(HEADERS, END_HEADERS, s, &status(code));
        (head, Some(frame(DATA, END_STREAM, s, b"EVIL")))
    }
}

#[tokio::test]
async fn data_on_a_response_that_allows_no_content_fails_only_its_request() {
    fn no_content(s: u32) -> (Vec<u8>, Option<Vec<u8>>) {
        no_content_with_data(204)(s)
    }
    fn not_modified(s: u32) -> (Vec<u8>, Option<Vec<u8>>) {
        no_content_with_data(304)(s)
    }
    let kind = malformed_fails_only_its_stream(no_content).await;
    assert_eq!(kind, ErrorKind::Body, "204");
    let kind = malformed_fails_only_its_stream(not_modified).await;
    assert_eq!(kind, ErrorKind::Body, "304");
}

#[tokio::test]
async fn data_on_a_head_response_fails_the_request() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut out = head_200(s, 4);
        out.extend(frame(DATA, END_STREAM, s, b"EVIL"));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let request = async { client.head(&url).send().await?.bytes().await };
    let err = within("the request", request)
        .await
        .expect_err("DATA on a HEAD response must fail");
    assert_eq!(err.kind(), ErrorKind::Body);
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 11. Header list size limit.

#[tokio::test]
async fn a_header_list_over_the_limit_fails_with_headers_too_large() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut block = vec![STATUS_200];
        block.extend(field("x-big", &[b'b'; 10_000]));
        peer.send(&frame(HEADERS, END_HEADERS | END_STREAM, s, &block))
            .await;
        let s = peer.expect_request().await;
        assert_eq!(s, 3, "the next request on the same connection");
        peer.respond(s, b"small").await;
        peer.drain().await;
    })
    .await;
    let client = headers_too_large_then_small(&url).await;
    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
}

#[tokio::test]
async fn a_header_list_far_over_the_limit_fails_with_headers_too_large() {
    let (url, server) = serve(|listener| async move {
        let mut one = Peer::accept(&listener, &[]).await;
        let s = one.expect_request().await;
        // 20 KB against a 4 KiB limit: over four times it, in two frames.
        let mut block = vec![STATUS_200];
        block.extend(field("x-big", &[b'b'; 20_000]));
        let (first, rest) = block.split_at(MAX_FRAME - 384);
        let mut out = frame(HEADERS, END_STREAM, s, first);
        out.extend(frame(CONTINUATION, END_HEADERS, s, rest));
        one.send(&out).await;
        // The next request, on this connection if the client kept it, else
        // on a new one (h2 ends the connection: GOAWAY ENHANCE_YOUR_CALM).
        let (mut peer, s) = match one.next_request().await {
            Some(s) => (one, s),
            None => {
                let mut two = Peer::accept(&listener, &[]).await;
                let s = two.expect_request().await;
                (two, s)
            }
        };
        peer.respond(s, b"small").await;
        peer.drain().await;
    })
    .await;
    // The current client also loses the connection here.
    let client = headers_too_large_then_small(&url).await;
    finish(client, server).await;
}

/// The server's SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 §6.5.2): a request
/// head over it fails with `InvalidRequest` and never goes out (the server
/// said it would refuse it, and an intermediary may close the connection
/// on it); heads within it go out on the same connection. Trailers over it
/// reset their stream. Both used to be sent regardless.
#[tokio::test]
async fn a_request_head_over_the_servers_header_list_limit_is_not_sent() {
    const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[(SETTINGS_MAX_HEADER_LIST_SIZE, 1_000)]).await;
        // (frame type, stream, payload length) of what the client sent.
        let mut seen = Vec::new();
        while let Some(f) = peer.next().await {
            seen.push((f.ty, f.stream, f.payload.len()));
            // A GET's head, or an upload's end: answered.
            if f.has(END_STREAM) {
                peer.respond(f.stream, b"small").await;
            }
        }
        seen
    })
    .await;
    let client = h2c().build().unwrap();
    // The first answer comes after the server's SETTINGS: applied from here.
    assert_eq!(fetch(&client, &url).await.unwrap(), "small");
    let big = "b".repeat(1_000);
    let err = within(
        "the oversized request",
        client.get(&url).header("x-big", &big).send(),
    )
    .await
    .expect_err("a head over the server's limit must fail");
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
    assert!(
        format!("{err:#}").contains("MAX_HEADER_LIST_SIZE 1000"),
        "{err:#}"
    );
    // Well within: 500 bytes of it.
    let fits = "b".repeat(500);
    let res = client
        .get(&url)
        .header("x-big", &fits)
        .send()
        .await
        .unwrap();
    assert_eq!(res.bytes().await.unwrap(), "small");
    // Trailers over the limit: the upload's stream is reset, its trailers
    // never sent.
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-big", big.parse().unwrap());
    let upload = Trailed(Some(Bytes::from_static(b"hi")), Some(trailers));
    let err = within(
        "the upload with oversized trailers",
        client.post(&url).body(courier::Body::wrap(upload)).send(),
    )
    .await
    .expect_err("trailers over the server's limit must fail");
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err:#}");
    assert_eq!(client.metrics().connections_established, 1);
    let seen = finish(client, server).await;
    let headers: Vec<_> = seen.iter().filter(|f| f.0 == HEADERS).collect();
    assert!(
        headers.len() == 3 && headers[1].2 > 300,
        "what the server saw: {seen:?}"
    );
    let upload = headers[2].1;
    let on_upload: Vec<u8> = seen.iter().filter(|f| f.1 == upload).map(|f| f.0).collect();
    // Its head, perhaps its data, then the reset: never a second HEADERS.
    let heads = on_upload.iter().filter(|&&ty| ty == HEADERS).count();
    assert!(
        heads == 1 && on_upload.last() == Some(&RST_STREAM),
        "{seen:?}"
    );
}

/// A streamed body: its data, then its trailers.
struct Trailed(Option<Bytes>, Option<http::HeaderMap>);

impl http_body::Body for Trailed {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let frame = match self.0.take() {
            Some(data) => Some(http_body::Frame::data(data)),
            None => self.1.take().map(http_body::Frame::trailers),
        };
        std::task::Poll::Ready(frame.map(Ok))
    }
}

// ---------------------------------------------------------------------------
// 12. Frame size limit.

#[tokio::test]
async fn a_frame_over_max_frame_size_is_a_connection_error() {
    let (head, head_rx) = oneshot::channel::<()>();
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        peer.send(&head_200(s, 20_000)).await;
        within("the client to read the head", head_rx)
            .await
            .unwrap();
        peer.send(&frame(DATA, END_STREAM, s, &[b'x'; 20_000]))
            .await;
        let goaway = loop {
            let f = peer.next().await.expect("the client closed the connection");
            if f.ty == GOAWAY {
                break f;
            }
        };
        assert_eq!(goaway.stream, 0);
        assert_eq!(
            goaway.u32_at(4),
            FRAME_SIZE_ERROR,
            "GOAWAY error code: {goaway:?}"
        );
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let res = within("the head", client.get(&url).send()).await.unwrap();
    head.send(()).unwrap();
    let err = within("the body", res.bytes())
        .await
        .expect_err("an oversized frame must fail the request");
    assert_eq!(err.kind(), ErrorKind::Body, "{err}");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 13. The client's SETTINGS.

#[tokio::test]
async fn the_client_sends_settings_without_push_first_and_acks_the_servers() {
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(
            &listener,
            &[
                (SETTINGS_MAX_CONCURRENT_STREAMS, 50),
                (SETTINGS_INITIAL_WINDOW_SIZE, 100_000),
            ],
        )
        .await;
        let first = peer.read().await;
        assert_eq!(
            (first.ty, first.flags, first.stream),
            (SETTINGS, 0, 0),
            "the first frame after the preface: {first:?}"
        );
        let params = first.params();
        assert!(
            params.contains(&(SETTINGS_ENABLE_PUSH, 0)),
            "SETTINGS_ENABLE_PUSH=0 expected in {params:?}"
        );
        peer.send(&frame(SETTINGS, ACK, 0, &[])).await;
        let mut request = None;
        let ack = loop {
            let f = peer.read().await;
            match f.ty {
                SETTINGS if f.has(ACK) => break f,
                SETTINGS => panic!("a second SETTINGS before the ACK: {f:?}"),
                HEADERS => request = Some(f.stream),
                _ => {}
            }
        };
        assert!(ack.payload.is_empty(), "a SETTINGS ACK has no payload");
        assert_eq!(ack.stream, 0);
        let s = match request {
            Some(s) => s,
            None => peer.expect_request().await,
        };
        peer.respond(s, b"settled").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "settled");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 14. Stream ids and cancellation.

#[tokio::test]
async fn stream_ids_increase_and_a_dropped_request_is_cancelled() {
    let (in_flight, in_flight_rx) = oneshot::channel();
    let (reset_seen, reset_seen_rx) = oneshot::channel();
    let (url, server) = serve_one(|mut peer| async move {
        for expected in [1, 3, 5] {
            let s = peer.expect_request().await;
            assert_eq!(s, expected, "stream ids are odd and increasing");
            peer.respond(s, b"ok").await;
        }
        let s = peer.expect_request().await;
        assert_eq!(s, 7);
        in_flight.send(()).unwrap();
        let rst = loop {
            let f = peer.next().await.expect("the client closed the connection");
            match f.ty {
                RST_STREAM => break f,
                HEADERS => panic!("a request before the RST_STREAM: {f:?}"),
                _ => {}
            }
        };
        assert_eq!(rst.stream, 7);
        assert_eq!(rst.u32_at(0), CANCEL, "RST_STREAM error code: {rst:?}");
        reset_seen.send(()).unwrap();
        let s = peer.expect_request().await;
        assert_eq!(s, 9, "the connection serves on after the cancel");
        peer.respond(s, b"after").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    for _ in 0..3 {
        assert_eq!(fetch(&client, &url).await.unwrap(), "ok");
    }
    let dropped = spawn_fetch(&client, &url);
    within("stream 7 on the wire", in_flight_rx).await.unwrap();
    dropped.abort();
    let joined = within("the dropped request", dropped).await;
    assert!(joined.unwrap_err().is_cancelled());
    within("the RST_STREAM", reset_seen_rx).await.unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "after");
    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// 15. Request headers.

#[tokio::test]
async fn request_headers_arrive_without_connection_specific_fields() {
    let (url, server) = serve(|listener| async move {
        let (tcp, _) = within("a connection", listener.accept()).await.unwrap();
        let mut conn = within("the h2 handshake", h2::server::handshake(tcp))
            .await
            .unwrap();
        let (req, mut respond) = within("a request", conn.accept())
            .await
            .expect("a request")
            .expect("a well-formed request");
        respond
            .send_response(http::Response::new(()), true)
            .unwrap();
        // Keep the connection going until the client closes it.
        tokio::spawn(async move { while let Some(Ok(_)) = conn.accept().await {} });
        req.into_parts().0
    })
    .await;
    let client = h2c().build().unwrap();
    let res = client
        .get(format!("{url}some/path?q=1&r=2"))
        .header("x-custom", "forty-two")
        .header("connection", "keep-alive")
        .header("keep-alive", "timeout=5")
        .header("proxy-connection", "keep-alive")
        .header("transfer-encoding", "chunked")
        .header("upgrade", "h2c")
        .header("te", "gzip")
        .header("host", "example.test")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let head = finish(client, server).await;
    assert_eq!(head.version, http::Version::HTTP_2);
    assert_eq!(head.method, http::Method::GET);
    assert_eq!(head.uri.scheme_str(), Some("http"));
    // The `Host` set on the request names the virtual host: it is sent as
    // `:authority` (as HTTP/1.1 sends it), not as a header, and the
    // connection is still the URL's.
    assert_eq!(
        head.uri.authority().map(|a| a.as_str()),
        Some("example.test")
    );
    assert_eq!(head.uri.path(), "/some/path");
    assert_eq!(head.uri.query(), Some("q=1&r=2"));
    assert_eq!(head.headers["x-custom"], "forty-two");
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "te",
        "host",
    ] {
        assert!(
            !head.headers.contains_key(name),
            "{name} sent over HTTP/2: {:?}",
            head.headers
        );
    }
}

// ---------------------------------------------------------------------------
// A stream that failed before its request read the head.

/// Answers one request with `answer(stream)` in a single write, then a
/// second request normally; returns what the client made of the first.
async fn answered_at_once(answer: fn(u32) -> Vec<u8>) -> Result<Bytes, courier::Error> {
    let (url, server) = serve_one(move |mut peer| async move {
        let s = peer.expect_request().await;
        peer.send(&answer(s)).await;
        let s = peer.expect_request().await;
        peer.respond(s, b"next").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let first = within("the first request", fetch(&client, &url)).await;
    assert_eq!(fetch(&client, &url).await.unwrap(), "next");
    finish(client, server).await;
    first
}

#[tokio::test]
async fn a_body_shorter_than_its_content_length_fails_even_when_it_came_with_the_head() {
    let result = answered_at_once(|s| {
        let mut out = head_200(s, 10);
        out.extend(frame(DATA, END_STREAM, s, b"short"));
        out
    })
    .await;
    let err = result.expect_err("a body cut short must fail, not read as empty");
    assert_eq!(err.kind(), ErrorKind::Body, "{err}");
}

#[tokio::test]
async fn a_stream_reset_right_after_its_head_fails_the_body() {
    let result = answered_at_once(|s| {
        let mut out = frame(HEADERS, END_HEADERS, s, &[STATUS_200]);
        out.extend(frame(DATA, 0, s, b"partial"));
        out.extend(rst_stream(s, INTERNAL_ERROR));
        out
    })
    .await;
    let err = result.expect_err("a reset body must fail, not read as empty");
    assert_eq!(err.kind(), ErrorKind::Body, "{err}");
}

/// The server goes away right after a head: a body with no declared length
/// must fail, not look complete and empty.
#[tokio::test]
async fn a_connection_closed_right_after_a_head_fails_the_body() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        peer.send(&frame(HEADERS, END_HEADERS, s, &[STATUS_200]))
            .await;
        within("the shutdown", peer.shutdown()).await.unwrap();
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let result = within("the request", fetch(&client, &url)).await;
    let err = result.expect_err("a body cut by the connection's end must fail");
    assert_eq!(err.kind(), ErrorKind::Body, "{err}");
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// A connection whose driver is gone.

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A client used from one runtime, then another (a shared client and a test
/// runtime per test, say): the connection's task ended with the first
/// runtime, and a request on the second must not wait on it forever.
#[test]
fn a_connection_whose_task_was_dropped_is_not_waited_on() {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (url, server) = server_rt.block_on(serve(|listener| async move {
        let mut one = Peer::accept(&listener, &[]).await;
        let s = one.expect_request().await;
        one.respond(s, b"first").await;
        let mut two = Peer::accept(&listener, &[]).await;
        let s = two.expect_request().await;
        two.respond(s, b"second").await;
        two.drain().await;
        one.drain().await;
    }));
    let client = h2c().build().unwrap();

    let first = runtime();
    assert_eq!(first.block_on(fetch(&client, &url)).unwrap(), "first");
    // Drops the connection's driver task (and its socket) unfinished.
    drop(first);

    let second = runtime();
    let body = second.block_on(async {
        let body = within(
            "a request after the first runtime ended",
            fetch(&client, &url),
        )
        .await;
        drop(client);
        body
    });
    assert_eq!(body.unwrap(), "second");
    // Closes the second connection too (the server drains until then).
    drop(second);
    server_rt
        .block_on(within("the server script to end", server))
        .expect("the server script failed");
}

// ---------------------------------------------------------------------------
// RST_STREAM on a stream already closed both ways.

/// The request was sent whole (END_STREAM) and the response came whole; a
/// reset that crossed the client's END_STREAM (RFC 9113 §5.1, "closed")
/// must leave the response alone, as h2 did.
#[tokio::test]
async fn a_reset_after_both_ends_closed_keeps_the_response() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut out = head_200(s, 5);
        out.extend(frame(DATA, END_STREAM, s, b"whole"));
        out.extend(rst_stream(s, INTERNAL_ERROR));
        peer.send(&out).await;
        let s = peer.expect_request().await;
        peer.respond(s, b"next").await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let body = within("the response", async {
        client.post(&url).body("upload").send().await?.bytes().await
    })
    .await;
    assert_eq!(
        body.expect("a complete response survives a late reset"),
        "whole"
    );
    assert_eq!(fetch(&client, &url).await.unwrap(), "next");
    assert_eq!(client.metrics().connections_established, 1);
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// The end of one upload is not held behind another upload's window.

#[tokio::test]
async fn an_upload_end_is_not_held_behind_another_upload_out_of_window() {
    let (a_opened_tx, a_opened) = tokio::sync::oneshot::channel::<()>();
    let (url, server) = serve_one(move |mut peer| async move {
        let a = peer.expect_request().await;
        let _ = a_opened_tx.send(());
        // The server never grants window: upload A stops at 65,535 bytes,
        // with the connection's window spent. Upload B is empty; its
        // END_STREAM needs no window and must still arrive.
        loop {
            let f = peer.try_read().await.expect("B's END_STREAM");
            if f.stream != a && f.has(END_STREAM) && (f.ty == DATA || f.ty == HEADERS) {
                peer.respond(f.stream, b"b").await;
                break;
            }
        }
        peer.drain().await;
    })
    .await;
    // Upload A never finishes; its timeout must not be what frees B.
    let client = Client::builder()
        .http2_prior_knowledge()
        .timeout(LIMIT * 12)
        .build()
        .unwrap();
    let upload_a = {
        let client = client.clone();
        let url = url.clone();
        tokio::spawn(async move { client.post(&url).body(vec![b'a'; 100_000]).send().await })
    };
    within("upload A's stream", a_opened).await.unwrap();
    let empty = courier::Body::wrap(http_body_util::Empty::<Bytes>::new());
    let b = within("upload B", client.post(&url).body(empty).send())
        .await
        .expect("B is answered");
    assert_eq!(b.bytes().await.unwrap(), "b");
    upload_a.abort();
    finish(client, server).await;
}
