//! Streamed uploads to a half-duplex HTTP/1.1 server: Go's net/http (Caddy
//! 2.6.2 is built with Go 1.19; later Go still does it unless a handler
//! enables full duplex), when a handler writes its response head before it
//! has read the whole request body, first reads and *discards* up to
//! 256 KiB and a byte of what is left of it (`maxPostHandlerReadBytes`), and answers
//! `Connection: close` if more remains. A proxy that streams (Caddy's
//! `reverse_proxy` to an echo) thus loses up to 256 KiB of the upload in the
//! middle: the response is a well-framed `200` with a shorter body, nothing
//! on the wire says so. With `Expect: 100-continue` in the request, Go skips
//! the discard and only answers `Connection: close`, reading on.
//!
//! So courier sends `Expect: 100-continue` with HTTP/1.1 bodies that do not
//! go out with the head (streamed, as curl does, or buffered past 16 KiB),
//! and keeps sending after a success answer that says it will close (the
//! server is reading, it will just not reuse the connection).
//!
//! And, as curl does, it waits for the `100 Continue` (or a final answer, or
//! a second) before the body: HAProxy 2.6 in front of nginx loses a body
//! that comes before nginx's `100 Continue` reached it, and answers the
//! echo a well-framed, empty `200` (68 of 100 paced 1 MiB uploads that did
//! not wait; none of 100 without `Expect`).
//!
//! The servers here are scripted on raw TCP (loopback) to do what Go and
//! HAProxy do.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use courier::{Body, Client};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(5);
/// Go's `maxPostHandlerReadBytes`.
const DISCARD: usize = 256 * 1024;
const PIECE: usize = 16 * 1024;

/// A request body as the server reads it: chunked, or of a `Content-Length`.
struct ReqBody {
    io: BufReader<OwnedReadHalf>,
    /// Bytes of a `Content-Length` body still to come; `None` if chunked.
    length: Option<usize>,
    /// Read from the current chunk and not yet handed out.
    left: Vec<u8>,
    ended: bool,
}

impl ReqBody {
    /// Up to `max` bytes of body; empty at its end (or on a broken stream).
    async fn read(&mut self, max: usize) -> Vec<u8> {
        if let Some(rest) = self.length {
            let mut buf = vec![0u8; rest.min(max)];
            let n = match buf.len() {
                0 => 0,
                _ => self.io.read(&mut buf).await.unwrap_or(0),
            };
            self.length = Some(rest - n);
            self.ended = n == 0;
            buf.truncate(n);
            return buf;
        }
        if self.left.is_empty() && !self.ended {
            self.left = self.chunk().await.unwrap_or_default();
            self.ended = self.left.is_empty();
        }
        let n = self.left.len().min(max);
        self.left.drain(..n).collect()
    }

    /// Read to its end (`Content-Length` bodies have no marker for it).
    fn at_end(&self) -> bool {
        self.ended || self.length == Some(0)
    }

    async fn chunk(&mut self) -> Option<Vec<u8>> {
        let mut line = String::new();
        self.io.read_line(&mut line).await.ok()?;
        let size = usize::from_str_radix(line.trim(), 16).ok()?;
        // The data and its CRLF; for the last chunk, the CRLF that ends an
        // empty trailer section.
        let mut data = vec![0u8; size + 2];
        self.io.read_exact(&mut data).await.ok()?;
        data.truncate(size);
        Some(data)
    }
}

/// Go's HTTP/1.1 server with a handler that echoes a body as it
/// reads it, flushing each piece: the head goes out once the first piece is
/// read. One request per connection. `answered` is told when the head is out.
async fn go_echo_server(answered: Arc<Notify>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/echo", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answered = answered.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut io = BufReader::new(read);
                let mut head = String::new();
                while !head.ends_with("\r\n\r\n") {
                    if io.read_line(&mut head).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
                let head = head.to_ascii_lowercase();
                let expect = head.contains("expect: 100-continue");
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse().unwrap());
                let mut body = ReqBody {
                    io,
                    length,
                    left: Vec::new(),
                    ended: false,
                };
                // Go writes the 100 on the handler's first read of the body.
                if expect
                    && write
                        .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                        .await
                        .is_err()
                {
                    return;
                }
                let first = body.read(PIECE).await;
                // The head is about to go out with the body unread: Go's
                // `chunkWriter.writeHeader`.
                let close = if expect {
                    !body.at_end()
                } else {
                    let mut discarded = 0;
                    while discarded <= DISCARD {
                        match body.read(DISCARD + 1 - discarded).await.len() {
                            0 => break,
                            n => discarded += n,
                        }
                    }
                    discarded > DISCARD
                };
                let mut out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n".to_vec();
                if close {
                    out.extend_from_slice(b"connection: close\r\n");
                }
                out.extend_from_slice(b"\r\n");
                let mut piece = first;
                loop {
                    if !piece.is_empty() {
                        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                        out.extend_from_slice(&piece);
                        out.extend_from_slice(b"\r\n");
                    }
                    if write.write_all(&out).await.is_err() {
                        return;
                    }
                    out.clear();
                    answered.notify_one();
                    if piece.is_empty() {
                        break;
                    }
                    piece = body.read(PIECE).await;
                }
                let _ = write.write_all(b"0\r\n\r\n").await;
                let _ = write.shutdown().await;
            });
        }
    });
    url
}

/// `len` bytes of a pattern that a shifted or truncated copy does not match.
fn pattern(len: usize) -> Bytes {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 12) as u8)
        .collect()
}

/// A streamed body fed by a channel (its length unknown: chunked).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|p| p.map(|p| Ok(http_body::Frame::data(p))))
    }
}

/// `data` in `PIECE`s; the pieces from `gate` on are produced only once the
/// server has answered (so the answer surely comes mid-upload).
fn streamed(data: Bytes, gate: usize, answered: Arc<Notify>) -> Body {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        for start in (0..data.len()).step_by(PIECE) {
            if start == gate {
                answered.notified().await;
            }
            let end = (start + PIECE).min(data.len());
            if tx.send(data.slice(start..end)).await.is_err() {
                return;
            }
        }
    });
    Body::wrap(ChannelBody(rx))
}

fn client() -> Client {
    Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .build()
        .unwrap()
}

/// Uploads `len` bytes, streamed with the part from `gate` on after the
/// answer (or buffered if `gate` is `None`), and checks the echo is whole.
async fn echo_through_go(len: usize, gate: Option<usize>) {
    let answered = Arc::new(Notify::new());
    let url = go_echo_server(answered.clone()).await;
    let data = pattern(len);
    let body = match gate {
        Some(gate) => streamed(data.clone(), gate, answered),
        None => Body::from(data.clone()),
    };
    let res = client()
        .put(&url)
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{len}: {e}"));
    assert_eq!(res.status(), 200);
    let echoed = res.bytes().await.unwrap_or_else(|e| panic!("{len}: {e}"));
    assert!(echoed == data, "{len}: {} bytes back", echoed.len());
}

/// A large upload: without `Expect`, Go discards 256 KiB + 1 and answers
/// `Connection: close`; with it, it answers `Connection: close` and reads
/// on, so the upload must go on after that success answer.
#[tokio::test]
async fn a_large_streamed_upload_to_a_go_server_is_echoed_whole() {
    echo_through_go(1024 * 1024, Some(512 * 1024)).await;
}

/// A small upload, all of it sent before the answer: without `Expect`, Go
/// discards the rest of it and answers a short, well-framed `200`.
#[tokio::test]
async fn a_small_streamed_upload_to_a_go_server_is_echoed_whole() {
    echo_through_go(64 * 1024, Some(usize::MAX)).await;
}

/// A buffered body past what goes out with the head: the server may answer
/// with part of it unread just the same, and Go discards that part (up to
/// 256 KiB: all of this one).
#[tokio::test]
async fn a_buffered_upload_to_a_go_server_is_echoed_whole() {
    for len in [64 * 1024, 1024 * 1024] {
        echo_through_go(len, None).await;
    }
}

/// A request head, lower-cased, and its Content-Length (0 if none); `None`
/// if the client closed first.
async fn read_head(io: &mut BufReader<OwnedReadHalf>) -> Option<(String, usize)> {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        if io.read_line(&mut head).await.unwrap_or(0) == 0 {
            return None;
        }
    }
    let head = head.to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    Some((head, length))
}

/// HAProxy 2.6 before nginx, as seen from the client: a request with
/// `Expect: 100-continue` whose body starts before the `100 Continue` is
/// answered a well-framed empty `200`, its body lost; one that waits (the
/// server sends its `100` once no body came for 200 ms) is echoed whole.
/// Length-framed bodies only. One request per connection.
async fn continue_dropping_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/echo", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut io = BufReader::new(read);
                let Some((head, length)) = read_head(&mut io).await else {
                    return;
                };
                if head.contains("expect: 100-continue") {
                    let early = timeout(Duration::from_millis(200), io.fill_buf()).await;
                    if matches!(early, Ok(Ok(b)) if !b.is_empty()) {
                        let empty = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        let _ = write.write_all(empty).await;
                        return;
                    }
                    if write
                        .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                let mut body = vec![0u8; length];
                if io.read_exact(&mut body).await.is_err() {
                    return;
                }
                let out = format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n");
                let _ = write.write_all(out.as_bytes()).await;
                let _ = write.write_all(&body).await;
            });
        }
    });
    url
}

/// The body waits for the `100 Continue` its head asked for.
#[tokio::test]
async fn a_body_behind_expect_waits_for_100_continue() {
    let url = continue_dropping_server().await;
    let data = pattern(64 * 1024);
    let res = client().put(&url).body(data.clone()).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let echoed = res.bytes().await.unwrap();
    assert!(echoed == data, "{} bytes back", echoed.len());
}

/// A server that ignores `Expect` (never sends `100 Continue`): it reads the
/// head and a Content-Length body, echoes it, and reports each head it read.
async fn expect_ignoring_server() -> (String, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/echo", listener.local_addr().unwrap());
    let (heads, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let heads = heads.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut io = BufReader::new(read);
                let Some((head, length)) = read_head(&mut io).await else {
                    return;
                };
                let _ = heads.send(head);
                let mut body = vec![0u8; length];
                if io.read_exact(&mut body).await.is_err() {
                    return;
                }
                let out = format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n");
                let _ = write.write_all(out.as_bytes()).await;
                let _ = write.write_all(&body).await;
            });
        }
    });
    (url, rx)
}

/// PUTs `len` bytes (buffered) with `client`, checks the echo, and returns
/// the head the server read.
async fn put_and_head(client: &Client, len: usize) -> String {
    let (url, mut heads) = expect_ignoring_server().await;
    let data = pattern(len);
    let res = client.put(&url).body(data.clone()).send().await.unwrap();
    let echoed = res.bytes().await.unwrap();
    assert!(echoed == data, "{len}: {} bytes back", echoed.len());
    heads.recv().await.expect("the server read a head")
}

/// A server that never answers the expectation gets the body once the
/// client's `expect_continue_timeout` passes.
#[tokio::test]
async fn a_body_goes_after_the_continue_timeout_when_no_100_comes() {
    let client = Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .expect_continue_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let head = put_and_head(&client, 64 * 1024).await;
    assert!(head.contains("expect: 100-continue"), "{head}");
}

/// `expect_continue(None)` adds no expectation; a larger `min_size` adds it
/// only past that size.
#[tokio::test]
async fn expect_continue_follows_its_setting() {
    let never = Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .expect_continue(None)
        .build()
        .unwrap();
    let head = put_and_head(&never, 1024 * 1024).await;
    assert!(!head.contains("expect:"), "{head}");

    let past_1m = Client::builder()
        .http1_only()
        .timeout(LIMIT)
        .expect_continue(Some(1024 * 1024))
        .expect_continue_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let head = put_and_head(&past_1m, 64 * 1024).await;
    assert!(!head.contains("expect:"), "64 KiB: {head}");
    let head = put_and_head(&past_1m, 2 * 1024 * 1024).await;
    assert!(head.contains("expect: 100-continue"), "2 MiB: {head}");
}
