//! HTTP/2 review cases: behaviour of courier's own HTTP/2 connection that
//! the wire tests (tests/http2_wire.rs) leave out, each against a server
//! written frame by frame (h2c by prior knowledge on loopback).
//!
//! The server's frames that matter to a case are sent in one write, so they
//! reach the client's connection together, before the request's task runs
//! again: what a response head looks like depends on what came with it.
//! Every wait is bounded by [`LIMIT`].

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use courier::{Client, ClientBuilder, ErrorKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

// Frame types (RFC 9113 §6).
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;

// Flags.
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

// Error codes.
const INTERNAL_ERROR: u32 = 0x2;

const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// HPACK static table index 8, `:status: 200`, as an indexed field.
const STATUS_200: u8 = 0x88;

/// The bound on every wait.
const LIMIT: Duration = Duration::from_secs(5);

/// Awaits `f`, failing the test if it takes longer than [`LIMIT`].
async fn within<F: Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(LIMIT, f).await {
        Ok(out) => out,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

// ---------------------------------------------------------------------------
// Frames and HPACK, built by hand (as in tests/http2_wire.rs).

/// One frame: 9-byte header (length, type, flags, stream id) and payload.
fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    assert!(len < 1 << 24);
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn rst_stream(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// An HPACK integer with a `prefix_bits`-bit prefix (RFC 7541 §5.1).
fn hpack_int(flags: u8, prefix_bits: u32, value: usize, out: &mut Vec<u8>) {
    let max = (1usize << prefix_bits) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A raw (non-Huffman) HPACK string.
fn hpack_str(s: &[u8], out: &mut Vec<u8>) {
    hpack_int(0, 7, s.len(), out);
    out.extend_from_slice(s);
}

/// A literal field without indexing, with a new (literal) name (RFC 7541 §6.2.2).
fn field(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00];
    hpack_str(name.as_bytes(), &mut out);
    hpack_str(value, &mut out);
    out
}

/// `:status: 200` and `content-length`, one HEADERS frame (END_HEADERS).
fn head_200(stream: u32, content_length: usize) -> Vec<u8> {
    let mut block = vec![STATUS_200];
    block.extend(field(
        "content-length",
        content_length.to_string().as_bytes(),
    ));
    frame(HEADERS, END_HEADERS, stream, &block)
}

// ---------------------------------------------------------------------------
// The server side of one connection.

/// A frame read off the wire.
#[derive(Debug)]
struct Frame {
    ty: u8,
    flags: u8,
    stream: u32,
}

impl Frame {
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// One accepted HTTP/2 connection, seen from the server.
struct Peer {
    io: TcpStream,
}

impl Peer {
    /// Accepts the next connection, checks the client preface, and sends the
    /// server's SETTINGS (all defaults).
    async fn accept(listener: &TcpListener) -> Peer {
        let (mut io, _) = within("a connection", listener.accept())
            .await
            .expect("accept");
        let mut preface = [0u8; 24];
        within("the client preface", io.read_exact(&mut preface))
            .await
            .expect("read the client preface");
        assert_eq!(&preface, PREFACE, "client connection preface");
        let mut peer = Peer { io };
        peer.send(&frame(SETTINGS, 0, 0, &[])).await;
        peer
    }

    async fn send(&mut self, bytes: &[u8]) {
        within("a write to the client", self.io.write_all(bytes))
            .await
            .expect("write to the client");
    }

    /// The next frame, or `None` once the client closed the connection.
    async fn try_read(&mut self) -> Option<Frame> {
        within("a frame from the client", async {
            let mut head = [0u8; 9];
            self.io.read_exact(&mut head).await.ok()?;
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let mut payload = vec![0u8; len];
            self.io.read_exact(&mut payload).await.ok()?;
            Some(Frame {
                ty: head[3],
                flags: head[4],
                stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
            })
        })
        .await
    }

    /// The next request's stream id (the client's SETTINGS acknowledged,
    /// everything else skipped), or `None` if the client closes first.
    async fn next_request(&mut self) -> Option<u32> {
        loop {
            let f = self.try_read().await?;
            match f.ty {
                SETTINGS if !f.has(ACK) => self.send(&frame(SETTINGS, ACK, 0, &[])).await,
                HEADERS => return Some(f.stream),
                _ => {}
            }
        }
    }

    async fn expect_request(&mut self) -> u32 {
        self.next_request()
            .await
            .expect("the client closed the connection before a request")
    }

    /// Answers `stream` with `200`, `content-length` and `body`, ending the stream.
    async fn respond(&mut self, stream: u32, body: &[u8]) {
        let mut out = head_200(stream, body.len());
        out.extend(frame(DATA, END_STREAM, stream, body));
        self.send(&out).await;
    }

    /// Reads (and ignores) everything until the client closes the
    /// connection. Not bounded here: [`finish`] bounds it.
    async fn drain(mut self) {
        let mut buf = [0u8; 16 * 1024];
        while matches!(self.io.read(&mut buf).await, Ok(n) if n > 0) {}
    }
}

/// Binds 127.0.0.1 on an ephemeral port and runs `script` on the listener
/// on a task of its own; returns the URL and the task.
async fn serve<T, F, Fut>(script: F) -> (String, JoinHandle<T>)
where
    F: FnOnce(TcpListener) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    (url, tokio::spawn(script(listener)))
}

/// Drops the client (closing its connections) and waits for the server's
/// script to end, failing the test if the script failed.
async fn finish<T>(client: Client, server: JoinHandle<T>) -> T {
    drop(client);
    within("the server script to end", server)
        .await
        .expect("the server script failed")
}

/// An h2c client whose requests are bounded by [`LIMIT`].
fn h2c() -> ClientBuilder {
    Client::builder().http2_prior_knowledge().timeout(LIMIT)
}

/// GETs `url` and reads the whole body.
async fn fetch(client: &Client, url: &str) -> Result<Bytes, courier::Error> {
    client.get(url).send().await?.bytes().await
}

// ---------------------------------------------------------------------------
// A stream that failed before its request read the head.

/// Answers one request with `answer(stream)` in a single write, then a
/// second request normally; returns what the client made of the first.
async fn answered_at_once(answer: fn(u32) -> Vec<u8>) -> Result<Bytes, courier::Error> {
    let (url, server) = serve(move |listener| async move {
        let mut peer = Peer::accept(&listener).await;
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
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener).await;
        let s = peer.expect_request().await;
        peer.send(&frame(HEADERS, END_HEADERS, s, &[STATUS_200]))
            .await;
        within("the shutdown", peer.io.shutdown()).await.unwrap();
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
        let mut one = Peer::accept(&listener).await;
        let s = one.expect_request().await;
        one.respond(s, b"first").await;
        let mut two = Peer::accept(&listener).await;
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
    let (url, server) = serve(|listener| async move {
        let mut peer = Peer::accept(&listener).await;
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
    let (url, server) = serve(move |listener| async move {
        let mut peer = Peer::accept(&listener).await;
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
