//! HTTP/2 at the frame level, for tests whose server is a script written
//! frame by frame (h2c by prior knowledge on loopback): frame constants,
//! builders that return the bytes of one frame or header block, and
//! [`Peer`], the server side of one connection.
//!
//! The builders write exactly what they are asked to, malformed or not, so
//! a test can send what no real server would. Every wait a [`Peer`] makes is
//! bounded by [`LIMIT`] unless the test opts out ([`Peer::without_deadline`]).

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use courier::{Client, ClientBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

// Frame types (RFC 9113 §6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
/// The PRIORITY frame type (not the HEADERS flag [`PRIORITY`]).
pub const PRIORITY_FRAME: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
/// The HEADERS flag (not the frame type [`PRIORITY_FRAME`]).
pub const PRIORITY: u8 = 0x20;

// SETTINGS parameters.
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;

// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const INTERNAL_ERROR: u32 = 0x2;
pub const STREAM_CLOSED: u32 = 0x5;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The client connection preface.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// HPACK static table index 8, `:status: 200`, as an indexed field.
pub const STATUS_200: u8 = 0x88;

/// The bound on every wait.
pub const LIMIT: Duration = Duration::from_secs(5);

/// Awaits `f`, failing the test if it takes longer than [`LIMIT`].
pub async fn within<F: Future>(what: &str, f: F) -> F::Output {
    within_for(LIMIT, what, f).await
}

/// Awaits `f`, failing the test if it takes longer than `limit`.
pub async fn within_for<F: Future>(limit: Duration, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(limit, f).await {
        Ok(out) => out,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Awaits `f`, bounded by `limit` if there is one.
async fn bounded<F: Future>(limit: Option<Duration>, what: &str, f: F) -> F::Output {
    match limit {
        Some(limit) => within_for(limit, what, f).await,
        None => f.await,
    }
}

// ---------------------------------------------------------------------------
// Frames and HPACK, built by hand.

/// One frame: 9-byte header (length, type, flags, stream id) and payload.
pub fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    assert!(len < 1 << 24);
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A SETTINGS frame (not an ACK) carrying `params` in order.
pub fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in params {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &payload)
}

/// A WINDOW_UPDATE of `increment` on `stream` (0: the connection).
pub fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

/// A RST_STREAM of `stream` with error `code`.
pub fn rst_stream(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// A GOAWAY naming `last_stream` with error `code`, no debug data.
pub fn goaway(last_stream: u32, code: u32) -> Vec<u8> {
    let mut payload = last_stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&code.to_be_bytes());
    frame(GOAWAY, 0, 0, &payload)
}

/// A PING (or its ACK) with `opaque` data.
pub fn ping(ack: bool, opaque: [u8; 8]) -> Vec<u8> {
    frame(PING, if ack { ACK } else { 0 }, 0, &opaque)
}

/// An HPACK integer with a `prefix_bits`-bit prefix, the prefix's byte
/// starting with `flags` (RFC 7541 §5.1).
pub fn hpack_int(flags: u8, prefix_bits: u32, value: usize, out: &mut Vec<u8>) {
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
pub fn hpack_str(s: &[u8], out: &mut Vec<u8>) {
    hpack_int(0, 7, s.len(), out);
    out.extend_from_slice(s);
}

/// A literal field without indexing, with a new (literal) name (RFC 7541 §6.2.2).
pub fn field(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00];
    hpack_str(name.as_bytes(), &mut out);
    hpack_str(value, &mut out);
    out
}

/// `:status: <code>` as a literal without indexing, the name from static index 8.
pub fn status(code: u16) -> Vec<u8> {
    let mut out = Vec::new();
    hpack_int(0x00, 4, 8, &mut out);
    hpack_str(code.to_string().as_bytes(), &mut out);
    out
}

/// `:status: 200` with `content-length: <declared>` (whatever it says), one
/// HEADERS frame (END_HEADERS, no END_STREAM).
pub fn head_200_declaring(stream: u32, declared: &str) -> Vec<u8> {
    let mut block = vec![STATUS_200];
    block.extend(field("content-length", declared.as_bytes()));
    frame(HEADERS, END_HEADERS, stream, &block)
}

/// A whole response: `200` with `content-length` and `body`, ending the stream.
pub fn response(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = head_200_declaring(stream, &body.len().to_string());
    out.extend(frame(DATA, END_STREAM, stream, body));
    out
}

// ---------------------------------------------------------------------------
// Frames read off the wire.

/// A frame read off the wire.
#[derive(Debug, Clone)]
pub struct Frame {
    pub ty: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// Whether `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The big-endian u32 at `at` in the payload.
    pub fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }

    /// The error code of a RST_STREAM or GOAWAY frame.
    pub fn code(&self) -> u32 {
        self.u32_at(if self.ty == GOAWAY { 4 } else { 0 })
    }

    /// A SETTINGS frame's parameters, in order.
    pub fn params(&self) -> Vec<(u16, u32)> {
        assert_eq!(self.payload.len() % 6, 0, "SETTINGS payload: {self:?}");
        self.payload
            .chunks(6)
            .map(|p| {
                let id = u16::from_be_bytes([p[0], p[1]]);
                (id, u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
            })
            .collect()
    }

    /// Whether the (raw-literal HPACK, as courier writes it) payload holds `needle`.
    pub fn contains(&self, needle: &[u8]) -> bool {
        self.payload.windows(needle.len()).any(|w| w == needle)
    }
}

// ---------------------------------------------------------------------------
// The server side of one connection.

/// One accepted HTTP/2 connection, seen from the server.
pub struct Peer {
    io: TcpStream,
    /// The bound on each read and write: [`LIMIT`], or none for a
    /// connection that may idle in the client's pool as long as the test
    /// likes (the test's own deadline bounds it then).
    limit: Option<Duration>,
}

impl Peer {
    /// Accepts the next connection, checks the client preface, and sends the
    /// server's SETTINGS (`params`; empty: all defaults).
    pub async fn accept(listener: &TcpListener, params: &[(u16, u32)]) -> Peer {
        let mut peer = Peer::accept_raw(listener).await;
        peer.send(&settings(params)).await;
        peer
    }

    /// Accepts the next connection and checks the client preface; sends nothing.
    pub async fn accept_raw(listener: &TcpListener) -> Peer {
        let (mut io, _) = within("a connection", listener.accept())
            .await
            .expect("accept");
        let mut preface = [0u8; 24];
        within("the client preface", io.read_exact(&mut preface))
            .await
            .expect("read the client preface");
        assert_eq!(&preface, PREFACE, "client connection preface");
        Peer {
            io,
            limit: Some(LIMIT),
        }
    }

    /// Reads the client preface off an accepted `io` (without a deadline:
    /// for accept loops) and sends the server's SETTINGS (`params`); `None`
    /// if the client closed before its preface. A write the client missed
    /// does not matter: the next read sees the close.
    pub async fn handshake(mut io: TcpStream, params: &[(u16, u32)]) -> Option<Peer> {
        let mut preface = [0u8; 24];
        io.read_exact(&mut preface).await.ok()?;
        assert_eq!(&preface, PREFACE, "client connection preface");
        let mut peer = Peer {
            io,
            limit: Some(LIMIT),
        };
        peer.try_send(&settings(params)).await;
        Some(peer)
    }

    /// This peer with no bound on its reads and writes, for a connection that
    /// may sit idle in the client's pool for as long as the test runs.
    pub fn without_deadline(mut self) -> Peer {
        self.limit = None;
        self
    }

    /// Writes `bytes`; fails the test if the write fails.
    pub async fn send(&mut self, bytes: &[u8]) {
        assert!(self.try_send(bytes).await, "write to the client");
    }

    /// Writes `bytes`; false if the client has closed the connection.
    pub async fn try_send(&mut self, bytes: &[u8]) -> bool {
        bounded(
            self.limit,
            "a write to the client",
            self.io.write_all(bytes),
        )
        .await
        .is_ok()
    }

    /// Closes the server's side for writing (a FIN), keeping the read side
    /// open. Not bounded here: the caller bounds it.
    pub async fn shutdown(&mut self) -> std::io::Result<()> {
        self.io.shutdown().await
    }

    /// The next frame, or `None` once the client closed the connection.
    pub async fn try_read(&mut self) -> Option<Frame> {
        bounded(self.limit, "a frame from the client", async {
            let mut head = [0u8; 9];
            self.io.read_exact(&mut head).await.ok()?;
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let mut payload = vec![0u8; len];
            self.io.read_exact(&mut payload).await.ok()?;
            Some(Frame {
                ty: head[3],
                flags: head[4],
                stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
                payload,
            })
        })
        .await
    }

    /// The next frame, exactly as sent; fails the test if the client closed.
    pub async fn read(&mut self) -> Frame {
        self.try_read()
            .await
            .expect("the client closed the connection")
    }

    /// The next frame that is not housekeeping (the client's SETTINGS are
    /// acknowledged; SETTINGS ACKs and WINDOW_UPDATEs skipped), or `None`
    /// once the client closed the connection.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            let f = self.try_read().await?;
            match f.ty {
                SETTINGS if !f.has(ACK) => self.send(&frame(SETTINGS, ACK, 0, &[])).await,
                SETTINGS | WINDOW_UPDATE => {}
                _ => return Some(f),
            }
        }
    }

    /// Waits for the next request's HEADERS (skipping DATA and RST_STREAM
    /// of other streams) and returns its stream id. Fails the test on a
    /// GOAWAY, a close, or request headers split over CONTINUATION.
    pub async fn expect_request(&mut self) -> u32 {
        loop {
            let f = self.next().await.expect("the client closed the connection");
            match f.ty {
                HEADERS => {
                    assert!(f.has(END_HEADERS), "request headers in one frame: {f:?}");
                    return f.stream;
                }
                GOAWAY => panic!(
                    "the client sent GOAWAY (error code {:#x}) instead of a request",
                    f.u32_at(4)
                ),
                _ => {}
            }
        }
    }

    /// The next request's stream id, where the next frame that is not
    /// housekeeping must be that request's HEADERS (nothing skipped).
    pub async fn expect_request_next(&mut self) -> u32 {
        let f = self
            .next()
            .await
            .expect("a request, not a closed connection");
        assert_eq!(f.ty, HEADERS, "a request: {f:?}");
        f.stream
    }

    /// The next request's stream id, skipping everything else (GOAWAY
    /// included), or `None` if the client closes the connection first (a
    /// SETTINGS ACK the client missed does not matter then).
    pub async fn next_request(&mut self) -> Option<u32> {
        loop {
            let f = self.try_read().await?;
            match f.ty {
                SETTINGS if !f.has(ACK) => {
                    self.try_send(&frame(SETTINGS, ACK, 0, &[])).await;
                }
                HEADERS => return Some(f.stream),
                _ => {}
            }
        }
    }

    /// The client's answer to a frame it must not accept: the first
    /// RST_STREAM or GOAWAY it sends. Fails the test if the client closes first.
    pub async fn expect_error(&mut self) -> Frame {
        loop {
            let f = self
                .next()
                .await
                .expect("a RST_STREAM or GOAWAY before the client closed the connection");
            if f.ty == RST_STREAM || f.ty == GOAWAY {
                return f;
            }
        }
    }

    /// Answers `stream` with `200`, `content-length` and `body`, ending the stream.
    pub async fn respond(&mut self, stream: u32, body: &[u8]) {
        self.send(&response(stream, body)).await;
    }

    /// Reads until the client closes the connection; the first GOAWAY's
    /// error code if one came.
    pub async fn until_closed(&mut self) -> Option<u32> {
        let mut code = None;
        while let Some(f) = self.try_read().await {
            if f.ty == GOAWAY && code.is_none() {
                code = Some(f.u32_at(4));
            }
        }
        code
    }

    /// Reads (and ignores) everything until the client closes the
    /// connection. Not bounded here: the test bounds it (awaiting the script).
    pub async fn drain(mut self) {
        let mut buf = [0u8; 16 * 1024];
        while matches!(self.io.read(&mut buf).await, Ok(n) if n > 0) {}
    }
}

// ---------------------------------------------------------------------------
// Servers and clients.

/// 127.0.0.1 on an ephemeral port, and its URL (no trailing slash).
pub async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Binds 127.0.0.1 on an ephemeral port and runs `script` on the listener
/// on a task of its own; returns the URL (with a trailing slash) and the task.
pub async fn serve<T, F, Fut>(script: F) -> (String, JoinHandle<T>)
where
    F: FnOnce(TcpListener) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (listener, url) = listen().await;
    (format!("{url}/"), tokio::spawn(script(listener)))
}

/// [`serve`] for a script that talks to one connection: the script gets the
/// first connection's peer (default SETTINGS exchanged), on the server's task.
pub async fn serve_one<T, F, Fut>(script: F) -> (String, JoinHandle<T>)
where
    F: FnOnce(Peer) -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    serve(|listener| async move { script(Peer::accept(&listener, &[]).await).await }).await
}

/// An h2c client whose requests are bounded by [`LIMIT`].
pub fn h2c() -> ClientBuilder {
    Client::builder().http2_prior_knowledge().timeout(LIMIT)
}

/// GETs `url` and reads the whole body.
pub async fn fetch(client: &Client, url: &str) -> Result<Bytes, courier::Error> {
    client.get(url).send().await?.bytes().await
}
