//! HTTP/2 by hand (h2c by prior knowledge): frames, a little HPACK, and the
//! server side of one connection (the style of tests/http2_wire.rs).

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use courier::{Client, ClientBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{within, LIMIT};

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

pub const CANCEL: u32 = 0x8;

const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// HPACK static table index 8, `:status: 200`, as an indexed field.
const STATUS_200: u8 = 0x88;

/// One frame: 9-byte header (length, type, flags, stream id) and payload.
pub fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    assert!(len < 1 << 24);
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in params {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &payload)
}

pub fn rst_stream(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

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

/// A literal field without indexing, with a literal name (RFC 7541 §6.2.2).
fn field(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00];
    hpack_int(0, 7, name.len(), &mut out);
    out.extend_from_slice(name.as_bytes());
    hpack_int(0, 7, value.len(), &mut out);
    out.extend_from_slice(value);
    out
}

/// `:status: 200` with `content-length: <declared>`, one HEADERS frame.
pub fn head_200(stream: u32, declared: &str) -> Vec<u8> {
    let mut block = vec![STATUS_200];
    block.extend(field("content-length", declared.as_bytes()));
    frame(HEADERS, END_HEADERS, stream, &block)
}

/// A frame read off the wire.
#[derive(Debug, Clone)]
pub struct Frame {
    pub ty: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The big-endian u32 at `at` in the payload.
    pub fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }

    /// Whether the (raw-literal HPACK, as courier writes it) payload holds `needle`.
    pub fn contains(&self, needle: &[u8]) -> bool {
        self.payload.windows(needle.len()).any(|w| w == needle)
    }
}

/// One accepted HTTP/2 connection, seen from the server.
pub struct Peer {
    io: TcpStream,
}

impl Peer {
    /// Accepts a connection and checks the client preface; sends nothing.
    pub async fn accept_raw(listener: &TcpListener) -> Peer {
        let (mut io, _) = within("a connection", listener.accept())
            .await
            .expect("accept");
        let mut preface = [0u8; 24];
        within("the client preface", io.read_exact(&mut preface))
            .await
            .expect("read the client preface");
        assert_eq!(&preface, PREFACE, "client connection preface");
        Peer { io }
    }

    /// Reads the client preface off `io` and sends default SETTINGS; `None`
    /// if the preface is not there.
    pub async fn handshake(mut io: TcpStream) -> Option<Peer> {
        let mut preface = [0u8; 24];
        if io.read_exact(&mut preface).await.is_err() || &preface != PREFACE {
            return None;
        }
        let mut peer = Peer { io };
        peer.send(&settings(&[])).await;
        Some(peer)
    }

    /// Accepts a connection and sends default SETTINGS.
    pub async fn accept(listener: &TcpListener) -> Peer {
        let mut peer = Peer::accept_raw(listener).await;
        peer.send(&settings(&[])).await;
        peer
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        within("a write to the client", self.io.write_all(bytes))
            .await
            .expect("write to the client");
    }

    /// The next frame, or `None` once the client closed the connection.
    pub async fn try_read(&mut self) -> Option<Frame> {
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
                payload,
            })
        })
        .await
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

    /// Reads (and ignores) everything until the client closes.
    pub async fn drain(mut self) {
        let mut buf = [0u8; 16 * 1024];
        while matches!(self.io.read(&mut buf).await, Ok(n) if n > 0) {}
    }
}

/// 127.0.0.1 on an ephemeral port, and its URL.
pub async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// An h2c client whose requests are bounded by [`LIMIT`].
pub fn h2c() -> ClientBuilder {
    Client::builder().http2_prior_knowledge().timeout(LIMIT)
}

/// Answers a request: its stream id and HEADERS frame in, the bytes to send out.
pub type Route = fn(u32, &Frame) -> Vec<u8>;

/// A server on every connection it accepts: logs each frame the client
/// sends (but housekeeping) with its connection's accept order, and answers
/// each request with `route` once the request has ended (END_STREAM).
pub struct Server {
    pub url: String,
    log: Arc<Mutex<Vec<(usize, Frame)>>>,
}

impl Server {
    pub async fn start(route: Route) -> Server {
        let (listener, url) = listen().await;
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            let mut conn = 0;
            while let Ok((io, _)) = listener.accept().await {
                let log = Arc::clone(&shared);
                tokio::spawn(async move {
                    if let Some(peer) = Peer::handshake(io).await {
                        peer.serve(conn, route, log).await;
                    }
                });
                conn += 1;
            }
        });
        Server { url, log }
    }

    /// Every frame seen so far, in order, with its connection.
    pub fn seen(&self) -> Vec<(usize, Frame)> {
        self.log.lock().unwrap().clone()
    }
}

impl Peer {
    async fn serve(mut self, conn: usize, route: Route, log: Arc<Mutex<Vec<(usize, Frame)>>>) {
        let mut heads: HashMap<u32, Frame> = HashMap::new();
        while let Some(f) = self.next().await {
            log.lock().unwrap().push((conn, f.clone()));
            let ended = f.has(END_STREAM) && matches!(f.ty, HEADERS | DATA);
            if f.ty == HEADERS && !heads.contains_key(&f.stream) {
                heads.insert(f.stream, f.clone());
            }
            if ended {
                if let Some(head) = heads.get(&f.stream) {
                    let out = route(f.stream, head);
                    self.send(&out).await;
                }
            }
        }
    }
}

/// `200` with `content-length` and `body`, ending the stream.
pub fn respond(stream: u32, body: &[u8]) -> Vec<u8> {
    let mut out = head_200(stream, &body.len().to_string());
    out.extend(frame(DATA, END_STREAM, stream, body));
    out
}
