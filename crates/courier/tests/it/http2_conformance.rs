//! HTTP/2 conformance at the wire level: what RFC 9113 requires of a client
//! when the server sends frames on streams that are closed, each case found
//! by h2specd (tests/h2spec.rs) and pinned here against a server written
//! frame by frame (h2c by prior knowledge on loopback), so it fails without
//! h2specd installed too.
//!
//! - A stream the server closed (END_STREAM or RST_STREAM) takes no more
//!   DATA or HEADERS: courier answers with a STREAM_CLOSED error (RFC 9113
//!   §5.1, §6.1, §6.2; h2specd 5.1/5, 5.1/6, 5.1/8, 5.1/9, 6.1/2).
//! - A stream courier reset itself may still see frames the server sent
//!   before it learned of the reset: they are ignored (§5.1, "closed").
//! - A malformed frame on a closed stream is still a stream error, answered
//!   with RST_STREAM (§5.4.2, §6.3; h2specd 6.3/2).
//!
//! Each server script runs on a task of its own, awaited at the test's end;
//! every wait is bounded by [`LIMIT`], so a client that stays silent fails the
//! test instead of hanging it.

use courier::Client;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::h2::*;

/// `:status: 200`, one HEADERS frame (END_HEADERS, and END_STREAM if `end`).
fn head_200(stream: u32, end: bool) -> Vec<u8> {
    let flags = END_HEADERS | if end { END_STREAM } else { 0 };
    frame(HEADERS, flags, stream, &[STATUS_200])
}

/// Waits for the server's script (the client stays alive meanwhile, so its
/// connection can still answer), then drops the client.
async fn finish<T>(client: Client, server: JoinHandle<T>) -> T {
    let out = within("the server script to end", server)
        .await
        .expect("the server script failed");
    drop(client);
    out
}

/// `frame` is a connection error of type STREAM_CLOSED.
fn assert_goaway_stream_closed(f: &Frame) {
    assert_eq!(f.ty, GOAWAY, "a GOAWAY: {f:?}");
    assert_eq!(f.code(), STREAM_CLOSED, "GOAWAY's error code: {f:?}");
}

/// `frame` is a stream error (or a connection error) of type STREAM_CLOSED.
fn assert_stream_closed(f: &Frame, stream: u32) {
    match f.ty {
        RST_STREAM => assert_eq!(f.stream, stream, "{f:?}"),
        GOAWAY => {}
        _ => panic!("a RST_STREAM or GOAWAY: {f:?}"),
    }
    assert_eq!(f.code(), STREAM_CLOSED, "error code: {f:?}");
}

// ---------------------------------------------------------------------------
// Frames after the server's END_STREAM (h2specd 5.1/8, 5.1/9, 6.1/2).

/// The server ends the response with its head, then sends `late` on the same
/// stream; courier must keep the whole response and close the connection
/// with STREAM_CLOSED.
async fn after_end_stream(late: fn(u32) -> Vec<u8>) {
    let (url, server) = serve_one(move |mut peer| async move {
        let s = peer.expect_request_next().await;
        let mut out = head_200(s, true);
        out.extend(late(s));
        peer.send(&out).await;
        let answer = peer.expect_error().await;
        assert_goaway_stream_closed(&answer);
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let body = fetch(&client, &url).await;
    assert_eq!(
        body.expect("the response was whole before the late frame"),
        ""
    );
    finish(client, server).await;
}

#[tokio::test]
async fn data_after_the_servers_end_stream_is_a_connection_error() {
    after_end_stream(|s| frame(DATA, END_STREAM, s, b"late")).await;
}

#[tokio::test]
async fn headers_after_the_servers_end_stream_are_a_connection_error() {
    after_end_stream(|s| head_200(s, true)).await;
}

#[tokio::test]
async fn data_on_a_stream_the_server_ended_long_ago_is_a_connection_error() {
    // The first response is read and its stream freed before the late DATA:
    // courier no longer holds the stream, but knows the server closed it.
    let (url, server) = serve_one(|mut peer| async move {
        let first = peer.expect_request_next().await;
        let mut out = head_200(first, false);
        out.extend(frame(DATA, END_STREAM, first, b"one"));
        peer.send(&out).await;
        let second = peer.expect_request_next().await;
        assert!(second > first);
        peer.send(&frame(DATA, END_STREAM, first, b"late")).await;
        let answer = peer.expect_error().await;
        assert_goaway_stream_closed(&answer);
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.unwrap(), "one");
    let second = fetch(&client, &url).await;
    assert!(
        second.is_err(),
        "the connection failed under it: {second:?}"
    );
    finish(client, server).await;
}

// ---------------------------------------------------------------------------
// Frames after the server's RST_STREAM (h2specd 5.1/5, 5.1/6).

/// The server sends a head, resets the stream, then sends `late` on it.
async fn after_rst_stream(late: fn(u32) -> Vec<u8>) {
    let (url, server) = serve_one(move |mut peer| async move {
        let s = peer.expect_request_next().await;
        let mut out = head_200(s, false);
        out.extend(rst_stream(s, CANCEL));
        out.extend(late(s));
        peer.send(&out).await;
        let answer = peer.expect_error().await;
        assert_stream_closed(&answer, s);
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let body = fetch(&client, &url).await;
    assert!(body.is_err(), "the stream was reset: {body:?}");
    finish(client, server).await;
}

#[tokio::test]
async fn data_after_the_servers_rst_stream_is_a_stream_closed_error() {
    after_rst_stream(|s| frame(DATA, END_STREAM, s, b"late")).await;
}

#[tokio::test]
async fn headers_after_the_servers_rst_stream_are_a_stream_closed_error() {
    after_rst_stream(|s| head_200(s, true)).await;
}

// ---------------------------------------------------------------------------
// Frames on a stream courier reset: the server may not have known yet.

#[tokio::test]
async fn data_on_a_stream_courier_cancelled_is_ignored() {
    let (in_flight, in_flight_rx) = oneshot::channel();
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request_next().await;
        peer.send(&head_200(s, false)).await;
        in_flight.send(()).unwrap();
        let rst = peer.next().await.expect("the cancel");
        assert_eq!((rst.ty, rst.stream, rst.code()), (RST_STREAM, s, CANCEL));
        // Sent as if before the RST_STREAM arrived: courier must not mind.
        peer.send(&frame(DATA, 0, s, b"in flight")).await;
        peer.send(&head_200(s, true)).await;
        let next = peer.expect_request_next().await;
        let mut out = head_200(next, false);
        out.extend(frame(DATA, END_STREAM, next, b"served on"));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    let response = client.get(&url).send().await.unwrap();
    within("the head on the wire", in_flight_rx).await.unwrap();
    drop(response);
    assert_eq!(fetch(&client, &url).await.unwrap(), "served on");
    assert_eq!(client.metrics().connections_established, 1);
    drop(client);
    within("the server script to end", server).await.unwrap();
}

// ---------------------------------------------------------------------------
// A malformed frame on a closed stream (h2specd 6.3/2).

#[tokio::test]
async fn a_priority_frame_of_the_wrong_length_on_a_closed_stream_is_reset() {
    let (url, server) = serve_one(|mut peer| async move {
        let s = peer.expect_request_next().await;
        let mut out = head_200(s, true);
        out.extend(frame(PRIORITY_FRAME, 0, s, &[0x80, 0, 0, 1]));
        peer.send(&out).await;
        let answer = peer.expect_error().await;
        assert_eq!(answer.code(), FRAME_SIZE_ERROR, "{answer:?}");
        assert_eq!((answer.ty, answer.stream), (RST_STREAM, s), "{answer:?}");
        // A stream error: the connection serves on.
        let next = peer.expect_request_next().await;
        let mut out = head_200(next, false);
        out.extend(frame(DATA, END_STREAM, next, b"served on"));
        peer.send(&out).await;
        peer.drain().await;
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(
        fetch(&client, &url).await.expect("the response was whole"),
        ""
    );
    assert_eq!(fetch(&client, &url).await.unwrap(), "served on");
    drop(client);
    within("the server script to end", server).await.unwrap();
}
