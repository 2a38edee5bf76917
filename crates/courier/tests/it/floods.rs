//! Floods: servers that send frames (or HTTP/1.1 interim heads) that cost the
//! client work and do nothing (issue 14, defect 4). Each kind is sent while a
//! request is in flight and, where it can be, after the request ended, while
//! the connection sits in the pool.
//!
//! The client must end such a connection (GOAWAY with ENHANCE_YOUR_CALM, then
//! close) after a bounded number of frames, fail the request in flight with
//! a typed error, and serve the next request on a fresh connection. The bound
//! is counted, not timed: the server sends its flood in batches of
//! [`BATCH`] frames, each followed by a PING, and waits for that PING's ACK
//! (the client has handled the whole batch) or for a GOAWAY; so the frames
//! written before the GOAWAY are what the client put up with, give or take
//! one batch, whatever the machine's speed. DATA or HEADERS on a stream the
//! server itself closed is not a flood but an error (STREAM_CLOSED, RFC 9113
//! §5.1): those connections end on the first such frame.
//!
//! Also: a healthy, long-lived connection (many requests, many small DATA
//! frames, the odd PING, SETTINGS, WINDOW_UPDATE or empty DATA frame) is
//! never cut, so the limit does not hit real traffic.
//!
//! Every wait is bounded by [`LIMIT`]; servers are scripts on their own
//! tasks, awaited at the end so their assertions fail the test.

use std::time::Duration;

use courier::{Client, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::h2::*;
use crate::support::read_head;

/// A frame type no RFC defines (extensions must be ignored, §5.5).
const UNKNOWN: u8 = 0xfa;

/// Frames of one kind per batch.
const BATCH: usize = 100;

/// Batches sent before the test gives up on the client ever ending the flood.
const MAX_BATCHES: usize = 100;

/// The most flood frames a client may take before ending the connection: its
/// budget (1000 frames, more earned back by useful work and with time) and
/// slack for a slow machine. Far below what the flood would send
/// (`BATCH * MAX_BATCHES`).
const MAX_FLOOD: usize = 2_500;

/// `:status: 200`, one HEADERS frame (END_HEADERS), no END_STREAM.
fn head_200(stream: u32) -> Vec<u8> {
    frame(HEADERS, END_HEADERS, stream, &[STATUS_200])
}

/// A `103 Early Hints` head, one HEADERS frame.
fn head_103(stream: u32) -> Vec<u8> {
    frame(HEADERS, END_HEADERS, stream, &status(103))
}

impl Peer {
    /// Sends `batch()` until the client ends the connection, each batch
    /// followed by a PING whose ACK (or a GOAWAY) is awaited. Returns how many
    /// flood frames were written before the client's GOAWAY, and its code.
    async fn flood(&mut self, batch: impl Fn() -> Vec<u8>) -> (usize, u32) {
        let mut sent = 0;
        for n in 0..MAX_BATCHES {
            let marker = (n as u64 | 0xf100_d000_0000_0000).to_be_bytes();
            let mut out = batch();
            out.extend(ping(false, marker));
            let written = self.try_send(&out).await;
            if written {
                sent += BATCH;
            }
            loop {
                let Some(f) = self.try_read().await else {
                    panic!("the client closed after {sent} flood frames without a GOAWAY");
                };
                match f.ty {
                    GOAWAY => {
                        let code = f.u32_at(4);
                        let after = self.until_closed().await;
                        assert!(after.is_none(), "a second GOAWAY ({after:?})");
                        return (sent, code);
                    }
                    PING if f.has(ACK) && f.payload == marker => break,
                    _ => {}
                }
            }
        }
        panic!("the client took {sent} flood frames and never ended the connection");
    }
}

/// The error and its sources, as one line.
fn chain(e: &courier::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Asserts the client's GOAWAY and the number of frames it took.
fn assert_cut(what: &str, expected: u32, (sent, code): (usize, u32)) {
    eprintln!("{what}: the client ended the connection within the first {sent} flood frames");
    assert_eq!(code, expected, "{what}: GOAWAY error code");
    assert!(
        sent <= MAX_FLOOD,
        "{what}: the client took {sent} frames before ending the connection"
    );
}

/// Serves a good request on the next connection: the client recovered.
async fn serve_fresh(listener: &TcpListener) {
    let mut peer = Peer::accept(listener, &[]).await;
    let s = peer.expect_request().await;
    peer.respond(s, b"fresh").await;
    peer.until_closed().await;
}

// ---------------------------------------------------------------------------
// Floods while a request is in flight.

/// Whether the server sends the response head before flooding.
#[derive(Clone, Copy, PartialEq)]
enum Head {
    First,
    Never,
}

/// A request in flight while the server floods with `batch(stream)`: the
/// connection is ended, the request fails with `kind` and a message that
/// says "flooded", and the next request goes to a new connection.
async fn in_flight(what: &str, head: Head, kind: ErrorKind, batch: fn(u32) -> Vec<u8>) {
    in_flight_failing(what, head, kind, "flooded", ENHANCE_YOUR_CALM, batch).await;
}

/// [`in_flight`], the request's error saying `says`.
async fn in_flight_failing(
    what: &str,
    head: Head,
    kind: ErrorKind,
    says: &str,
    code: u32,
    batch: fn(u32) -> Vec<u8>,
) {
    let (cut_tx, cut_rx) = oneshot::channel::<()>();
    let what_ = what.to_owned();
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[]).await;
        let s = peer.expect_request().await;
        if head == Head::First {
            assert!(peer.try_send(&head_200(s)).await);
        }
        let cut = peer.flood(|| batch(s)).await;
        assert_cut(&what_, code, cut);
        cut_tx.send(()).unwrap();
        serve_fresh(&listener).await;
    })
    .await;
    let client = h2c().build().unwrap();
    let err = fetch(&client, &url).await.expect_err(what);
    assert_eq!(err.kind(), kind, "{what}: {err:?}");
    let message = chain(&err);
    assert!(message.contains(says), "{what}: {message}");
    // The request may fail before the flood is over (a reset): the next one
    // is sent once the connection is gone.
    within("the flood to end", cut_rx).await.expect(what);
    assert_eq!(fetch(&client, &url).await.expect(what), "fresh", "{what}");
    drop(client);
    within("the server script", server).await.expect(what);
}

fn repeat(frame: Vec<u8>) -> Vec<u8> {
    frame.repeat(BATCH)
}

#[tokio::test]
async fn empty_data_frames_in_flight_end_the_connection() {
    in_flight("empty DATA", Head::First, ErrorKind::Body, |s| {
        repeat(frame(DATA, 0, s, &[]))
    })
    .await;
}

#[tokio::test]
async fn padding_only_data_frames_in_flight_end_the_connection() {
    in_flight("padding-only DATA", Head::First, ErrorKind::Body, |s| {
        repeat(frame(DATA, PADDED, s, &[4, 0, 0, 0, 0]))
    })
    .await;
}

#[tokio::test]
async fn unknown_frames_in_flight_end_the_connection() {
    in_flight("unknown frames", Head::Never, ErrorKind::Protocol, |s| {
        repeat(frame(UNKNOWN, 0, s, b"nothing"))
    })
    .await;
}

#[tokio::test]
async fn priority_frames_in_flight_end_the_connection() {
    in_flight("PRIORITY", Head::Never, ErrorKind::Protocol, |s| {
        repeat(frame(PRIORITY_FRAME, 0, s, &[0, 0, 0, 0, 16]))
    })
    .await;
}

#[tokio::test]
async fn informational_heads_in_flight_end_the_connection() {
    in_flight("1xx HEADERS", Head::Never, ErrorKind::Protocol, |s| {
        repeat(head_103(s))
    })
    .await;
}

#[tokio::test]
async fn settings_frames_in_flight_end_the_connection() {
    in_flight("SETTINGS", Head::Never, ErrorKind::Protocol, |_| {
        repeat(settings(&[]))
    })
    .await;
}

#[tokio::test]
async fn pings_in_flight_end_the_connection() {
    in_flight("PING", Head::Never, ErrorKind::Protocol, |_| {
        repeat(ping(false, *b"flooding"))
    })
    .await;
}

#[tokio::test]
async fn window_updates_in_flight_end_the_connection() {
    in_flight("WINDOW_UPDATE", Head::Never, ErrorKind::Protocol, |s| {
        let mut out = Vec::new();
        for _ in 0..BATCH / 2 {
            out.extend(window_update(0, 1));
            out.extend(window_update(s, 1));
        }
        out
    })
    .await;
}

#[tokio::test]
async fn repeated_goaways_in_flight_end_the_connection() {
    in_flight("GOAWAY", Head::Never, ErrorKind::Protocol, |s| {
        repeat(goaway(s, NO_ERROR))
    })
    .await;
}

#[tokio::test]
async fn frames_for_a_reset_stream_end_the_connection() {
    // The server resets the stream (which fails the request), then keeps
    // sending on it.
    in_flight_failing(
        "frames on a reset stream",
        Head::First,
        ErrorKind::Body,
        "reset",
        STREAM_CLOSED,
        |s| {
            let mut out = Vec::new();
            for _ in 0..BATCH / 4 {
                out.extend(rst_stream(s, CANCEL));
                out.extend(frame(DATA, 0, s, b"x"));
                out.extend(head_103(s));
                out.extend(window_update(s, 1));
            }
            out
        },
    )
    .await;
}

/// The CONTINUATION flood (2024): one header block that never ends, in
/// empty frames. No PING may interrupt a header block, so the flood is one
/// batch and the client must end the connection within it.
#[tokio::test]
async fn empty_continuation_frames_end_the_connection() {
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[]).await;
        let s = peer.expect_request().await;
        let mut out = frame(HEADERS, 0, s, &[STATUS_200]);
        out.extend(repeat(frame(CONTINUATION, 0, s, &[])));
        peer.try_send(&out).await;
        assert_eq!(peer.until_closed().await, Some(ENHANCE_YOUR_CALM));
        serve_fresh(&listener).await;
    })
    .await;
    let client = h2c().build().unwrap();
    let err = fetch(&client, &url).await.expect_err("CONTINUATION flood");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err:?}");
    assert!(chain(&err).contains("flooded"), "{}", chain(&err));
    assert_eq!(fetch(&client, &url).await.unwrap(), "fresh");
    drop(client);
    within("the server script", server).await.unwrap();
}

/// One byte per CONTINUATION frame: as costly per frame as empty ones.
#[tokio::test]
async fn tiny_continuation_frames_end_the_connection() {
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[]).await;
        let s = peer.expect_request().await;
        let mut out = frame(HEADERS, 0, s, &[STATUS_200]);
        // An indexed field repeated: `accept-encoding: gzip, deflate` (31).
        out.extend(repeat(frame(CONTINUATION, 0, s, &[0x80 | 16])));
        peer.try_send(&out).await;
        assert_eq!(peer.until_closed().await, Some(ENHANCE_YOUR_CALM));
        serve_fresh(&listener).await;
    })
    .await;
    let client = h2c().build().unwrap();
    let err = fetch(&client, &url).await.expect_err("CONTINUATION flood");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err:?}");
    assert_eq!(fetch(&client, &url).await.unwrap(), "fresh");
    drop(client);
    within("the server script", server).await.unwrap();
}

// ---------------------------------------------------------------------------
// Floods on a pooled connection, after the request ended.

/// A request answered in full; then, with the connection idle in the pool,
/// the server floods with `batch(stream)` (the ended stream's id). The client
/// ends the connection and the next request goes to a new one.
async fn pooled(what: &str, batch: fn(u32) -> Vec<u8>) {
    pooled_cut_with(what, ENHANCE_YOUR_CALM, batch).await;
}

/// [`pooled`], the connection ended with GOAWAY(`code`).
async fn pooled_cut_with(what: &str, code: u32, batch: fn(u32) -> Vec<u8>) {
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let (cut_tx, cut_rx) = oneshot::channel::<()>();
    let what_ = what.to_owned();
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[]).await;
        let s = peer.expect_request().await;
        peer.respond(s, b"ok").await;
        within("the client to read the response", done_rx)
            .await
            .unwrap();
        let cut = peer.flood(|| batch(s)).await;
        assert_cut(&what_, code, cut);
        cut_tx.send(()).unwrap();
        serve_fresh(&listener).await;
    })
    .await;
    let client = h2c().build().unwrap();
    assert_eq!(fetch(&client, &url).await.expect(what), "ok", "{what}");
    done_tx.send(()).unwrap();
    within("the flood to end", cut_rx).await.expect(what);
    assert_eq!(fetch(&client, &url).await.expect(what), "fresh", "{what}");
    drop(client);
    within("the server script", server).await.expect(what);
}

#[tokio::test]
async fn empty_data_on_an_ended_stream_ends_the_pooled_connection() {
    pooled_cut_with("empty DATA on an ended stream", STREAM_CLOSED, |s| {
        repeat(frame(DATA, 0, s, &[]))
    })
    .await;
}

#[tokio::test]
async fn data_on_an_ended_stream_ends_the_pooled_connection() {
    pooled_cut_with("DATA on an ended stream", STREAM_CLOSED, |s| {
        repeat(frame(DATA, 0, s, b"x"))
    })
    .await;
}

#[tokio::test]
async fn headers_on_an_ended_stream_end_the_pooled_connection() {
    pooled_cut_with("HEADERS on an ended stream", STREAM_CLOSED, |s| {
        repeat(head_103(s))
    })
    .await;
}

#[tokio::test]
async fn resets_of_an_ended_stream_end_the_pooled_connection() {
    pooled("RST_STREAM on an ended stream", |s| {
        repeat(rst_stream(s, CANCEL))
    })
    .await;
}

/// A response read whole by the connection but not yet by its caller: its
/// stream is still held, and RST_STREAM(NO_ERROR) on it does nothing after
/// the first. The connection ends; the response, whole, still reads.
#[tokio::test]
async fn resets_of_a_finished_stream_still_held_end_the_connection() {
    let (held_tx, held_rx) = oneshot::channel::<()>();
    let (cut_tx, cut_rx) = oneshot::channel::<()>();
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener, &[]).await;
        let s = peer.expect_request().await;
        peer.respond(s, b"ok").await;
        within("the client to hold the response", held_rx)
            .await
            .unwrap();
        let cut = peer.flood(|| repeat(rst_stream(s, NO_ERROR))).await;
        assert_cut(
            "RST_STREAM(NO_ERROR) on a held stream",
            ENHANCE_YOUR_CALM,
            cut,
        );
        cut_tx.send(()).unwrap();
        serve_fresh(&listener).await;
    })
    .await;
    let client = h2c().build().unwrap();
    let res = client.get(&url).send().await.unwrap();
    held_tx.send(()).unwrap();
    within("the flood to end", cut_rx).await.unwrap();
    let fresh = fetch(&client, &url).await.unwrap();
    assert_eq!(fresh, "fresh");
    assert_eq!(res.bytes().await.unwrap(), "ok");
    drop(client);
    within("the server script", server).await.unwrap();
}

#[tokio::test]
async fn window_updates_end_the_pooled_connection() {
    pooled("WINDOW_UPDATE", |s| {
        let mut out = Vec::new();
        for _ in 0..BATCH / 2 {
            out.extend(window_update(0, 1));
            out.extend(window_update(s, 1));
        }
        out
    })
    .await;
}

#[tokio::test]
async fn unknown_and_priority_frames_end_the_pooled_connection() {
    pooled("unknown and PRIORITY frames", |s| {
        let mut out = Vec::new();
        for _ in 0..BATCH / 2 {
            out.extend(frame(UNKNOWN, 0, 0, b""));
            out.extend(frame(PRIORITY_FRAME, 0, s, &[0, 0, 0, 0, 16]));
        }
        out
    })
    .await;
}

#[tokio::test]
async fn pings_end_the_pooled_connection() {
    pooled("PING", |_| repeat(ping(false, *b"flooding"))).await;
}

#[tokio::test]
async fn unsolicited_ping_acks_end_the_pooled_connection() {
    pooled("PING ACK", |_| repeat(ping(true, *b"flooding"))).await;
}

#[tokio::test]
async fn settings_end_the_pooled_connection() {
    pooled("SETTINGS", |_| {
        let mut out = Vec::new();
        for _ in 0..BATCH / 2 {
            out.extend(settings(&[(0x3, 100)]));
            out.extend(frame(SETTINGS, ACK, 0, &[]));
        }
        out
    })
    .await;
}

/// A SETTINGS frame may hold 2730 parameters, each applied (an
/// INITIAL_WINDOW_SIZE one touches every stream): one such frame is enough.
#[tokio::test]
async fn a_settings_frame_with_thousands_of_parameters_ends_the_connection() {
    pooled("SETTINGS parameters", |_| {
        let params = vec![(0x4u16, 65_535u32); 2_000];
        settings(&params)
    })
    .await;
}

// ---------------------------------------------------------------------------
// Real traffic is never cut.

/// 600 requests on one connection, each answered in 20 small DATA frames,
/// with what real servers send now and then: an empty DATA frame before the
/// end, WINDOW_UPDATEs for nothing, a PING, SETTINGS. Together more than
/// the flood budget, which useful work earns back.
#[tokio::test]
async fn a_busy_healthy_connection_is_never_cut() {
    const REQUESTS: usize = 600;
    let (url, server) = serve_one(|mut peer| async move {
        for n in 0..REQUESTS {
            let s = peer.expect_request().await;
            let mut out = head_200(s);
            for _ in 0..20 {
                out.extend(frame(DATA, 0, s, b"0123456789"));
            }
            out.extend(frame(DATA, 0, s, &[]));
            out.extend(window_update(0, 1));
            out.extend(window_update(s, 1));
            if n % 10 == 0 {
                out.extend(ping(false, *b"liveness"));
                out.extend(settings(&[(0x3, 100)]));
                out.extend(frame(UNKNOWN, 0, 0, b""));
            }
            out.extend(frame(DATA, END_STREAM, s, &[]));
            assert!(
                peer.try_send(&out).await,
                "the client closed at request {n}"
            );
        }
        assert_eq!(peer.until_closed().await, Some(NO_ERROR));
    })
    .await;
    let client = h2c().build().unwrap();
    for n in 0..REQUESTS {
        let body = fetch(&client, &url)
            .await
            .unwrap_or_else(|e| panic!("request {n}: {}", chain(&e)));
        assert_eq!(body.len(), 200, "request {n}");
    }
    drop(client);
    within("the server script", server).await.unwrap();
}

/// A 20 MiB upload to a server that opened its windows wide and sends a
/// connection WINDOW_UPDATE for every DATA frame it reads (1,280 of them, none
/// needed to unblock anything): each gives back window courier used, which
/// is no flood.
#[tokio::test]
async fn window_updates_that_give_back_what_an_upload_used_are_no_flood() {
    const BODY: usize = 20 << 20;
    let (url, server) = serve_one(|mut peer| async move {
        let max = (1u32 << 31) - 1;
        let mut out = settings(&[(0x4, max)]);
        out.extend(window_update(0, max - 65_535));
        assert!(peer.try_send(&out).await);
        let s = peer.expect_request().await;
        let mut received = 0;
        loop {
            let f = peer.try_read().await.expect("the client closed");
            assert_ne!(f.ty, GOAWAY, "GOAWAY after {received} bytes");
            if f.ty != DATA {
                continue;
            }
            received += f.payload.len();
            if f.has(END_STREAM) {
                break;
            }
            assert!(
                peer.try_send(&window_update(0, f.payload.len() as u32))
                    .await
            );
        }
        assert_eq!(received, BODY);
        peer.respond(s, b"done").await;
        assert_eq!(peer.until_closed().await, Some(NO_ERROR));
    })
    .await;
    let client = h2c().build().unwrap();
    let res = client.post(&url).body(vec![b'u'; BODY]).send().await;
    let body = res.unwrap().bytes().await.unwrap();
    assert_eq!(body, "done");
    drop(client);
    within("the server script", server).await.unwrap();
}

/// Responses dropped after their head, the server sending what it had
/// queued (128 DATA frames) after it saw courier's RST_STREAM: frames for
/// closed streams, but what a reset is bound to cross, 40 times over.
#[tokio::test]
async fn data_crossing_courier_s_resets_is_no_flood() {
    const DROPPED: usize = 40;
    let (url, server) = serve_one(|mut peer| async move {
        for n in 0..DROPPED {
            let s = peer.expect_request().await;
            assert!(peer.try_send(&head_200(s)).await);
            loop {
                let f = peer.try_read().await.expect("the client closed");
                if f.ty == RST_STREAM && f.stream == s {
                    assert_eq!(f.u32_at(0), CANCEL);
                    break;
                }
                assert_ne!(f.ty, GOAWAY, "the client sent GOAWAY at response {n}");
            }
            let chunk = frame(DATA, 0, s, &[b'x'; 1024]);
            assert!(peer.try_send(&chunk.repeat(128)).await);
        }
        let s = peer.expect_request().await;
        peer.respond(s, b"still here").await;
        assert_eq!(peer.until_closed().await, Some(NO_ERROR));
    })
    .await;
    let client = h2c().build().unwrap();
    for _ in 0..DROPPED {
        let res = client.get(&url).send().await.unwrap();
        assert_eq!(res.status(), 200);
        drop(res);
    }
    assert_eq!(fetch(&client, &url).await.unwrap(), "still here");
    drop(client);
    within("the server script", server).await.unwrap();
}

// ---------------------------------------------------------------------------
// HTTP/1.1: endless interim (1xx) heads.

/// An HTTP/1.1 server whose first connection answers with `interim`
/// repeated (up to `times`) and whose later ones answer `200 fresh`.
async fn h1_interim_server(interim: Vec<u8>, times: usize) -> (String, JoinHandle<()>) {
    serve(|listener| async move {
        let (mut io, _) = within("a connection", listener.accept()).await.unwrap();
        assert!(read_head(&mut io).await);
        for _ in 0..times {
            if io.write_all(&interim).await.is_err() {
                break;
            }
        }
        drop(io);
        let (mut io, _) = within("a second connection", listener.accept())
            .await
            .unwrap();
        assert!(within("a request", read_head(&mut io)).await);
        io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfresh")
            .await
            .unwrap();
        let mut rest = Vec::new();
        let _ = within("the client to close", io.read_to_end(&mut rest)).await;
    })
    .await
}

#[tokio::test]
async fn endless_100_continue_heads_fail_the_request() {
    let (url, server) = h1_interim_server(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec(), 100_000).await;
    let client = Client::builder().timeout(LIMIT).build().unwrap();
    let err = fetch(&client, &url).await.expect_err("1xx flood");
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err:?}");
    assert!(chain(&err).contains("flooded"), "{}", chain(&err));
    assert_eq!(fetch(&client, &url).await.unwrap(), "fresh");
    drop(client);
    within("the server script", server).await.unwrap();
}

#[tokio::test]
async fn large_103_heads_are_bounded_in_bytes() {
    let mut hint = b"HTTP/1.1 103 Early Hints\r\nlink: <".to_vec();
    hint.extend(vec![b'a'; 4000]);
    hint.extend_from_slice(b">; rel=preload\r\n\r\n");
    // 20 of them: fewer than the count limit, more bytes than a head may have.
    let (url, server) = h1_interim_server(hint, 20).await;
    let client = Client::builder().timeout(LIMIT).build().unwrap();
    let err = fetch(&client, &url).await.expect_err("1xx bytes");
    assert_eq!(err.kind(), ErrorKind::HeadersTooLarge, "{err:?}");
    assert_eq!(fetch(&client, &url).await.unwrap(), "fresh");
    drop(client);
    within("the server script", server).await.unwrap();
}

// ---------------------------------------------------------------------------
// CPU, measured (Linux; ignored: 13 s). Run with
// `cargo test -p courier-http --test it floods:: -- --ignored --nocapture`.

/// The calling thread's user + system CPU time, from /proc (clock ticks,
/// taken as the usual 100 Hz).
#[cfg(target_os = "linux")]
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// A pooled connection flooded for 3 s at full speed with `glitch` by a
/// server on a thread of its own: the CPU the client's thread spends, and
/// the frames the server wrote.
#[cfg(target_os = "linux")]
fn cpu_of_a_flood(glitch: Vec<u8>) -> (Duration, u64) {
    use std::io::{Read, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (answered_tx, answered_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let (mut io, _) = listener.accept().unwrap();
        io.set_read_timeout(Some(LIMIT)).unwrap();
        io.set_write_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut preface = [0u8; 24];
        io.read_exact(&mut preface).unwrap();
        io.write_all(&settings(&[])).unwrap();
        loop {
            let mut head = [0u8; 9];
            io.read_exact(&mut head).unwrap();
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            io.read_exact(&mut vec![0; len]).unwrap();
            if head[3] == HEADERS {
                break;
            }
        }
        let mut out = head_200(1);
        out.extend(frame(DATA, END_STREAM, 1, b"ok"));
        io.write_all(&out).unwrap();
        // The client has read the response: the connection is in the pool.
        answered_rx.recv_timeout(LIMIT).unwrap();
        let batch = glitch.repeat(64 * 1024 / glitch.len());
        let start = std::time::Instant::now();
        let mut frames = 0;
        while start.elapsed() < Duration::from_secs(3) {
            match io.write(&batch) {
                Ok(n) => frames += (n / glitch.len()) as u64,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
        }
        frames
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = h2c().build().unwrap();
        assert_eq!(fetch(&client, &url).await.unwrap(), "ok");
        answered_tx.send(()).unwrap();
        let before = thread_cpu();
        // The client's runtime is this thread: it idles, or handles the flood.
        tokio::time::sleep(Duration::from_millis(3200)).await;
        let cpu = thread_cpu() - before;
        let frames = tokio::task::spawn_blocking(move || server.join().unwrap())
            .await
            .unwrap();
        (cpu, frames)
    })
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "measures CPU for 13 s"]
fn a_flooded_pooled_connection_costs_the_client_no_cpu() {
    for (what, glitch) in [
        ("empty DATA on an ended stream", frame(DATA, 0, 1, &[])),
        ("unknown frames", frame(UNKNOWN, 0, 0, &[])),
        ("SETTINGS", settings(&[])),
        ("PING", ping(false, *b"flooding")),
    ] {
        let (cpu, frames) = cpu_of_a_flood(glitch);
        eprintln!("{what}: client thread CPU {cpu:?} in 3.2 s; the server wrote {frames} frames");
        // Before the flood budget: 1.5-1.8 s (DATA, unknown), 430 ms (SETTINGS).
        assert!(cpu < Duration::from_millis(300), "{what}: {cpu:?}");
    }
}
