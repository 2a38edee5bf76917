//! A scripted HTTP/1.1 server that logs, byte for byte, every request it
//! reads: the head and the body its framing delimits. Bytes that do not
//! parse as a request (what a smuggled body looks like to a server) are
//! logged as garbage, and a connection that ends mid-request as incomplete.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server saw on one connection (`conn`: its accept order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Request {
        conn: usize,
        /// The request line, e.g. `POST /good HTTP/1.1`.
        line: String,
        /// The head's header lines, lowercased names, as sent.
        headers: Vec<(String, Vec<u8>)>,
        /// The body as its framing delimits it (dechunked).
        body: Vec<u8>,
    },
    /// Bytes that are not a request.
    Garbage { conn: usize, bytes: Vec<u8> },
    /// The connection ended with these bytes of an unfinished request.
    Incomplete { conn: usize, bytes: Vec<u8> },
}

impl Seen {
    /// The request line, for requests.
    pub fn line(&self) -> Option<&str> {
        match self {
            Seen::Request { line, .. } => Some(line),
            _ => None,
        }
    }
}

/// What the server answers a request with.
pub enum Reply {
    /// These bytes, then the next request on the connection.
    Bytes(Vec<u8>),
    /// These bytes, then the connection is closed.
    Close(Vec<u8>),
}

/// `200 OK` with `body`, keeping the connection.
pub fn ok(body: &[u8]) -> Reply {
    let mut out = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    Reply::Bytes(out)
}

/// A server on 127.0.0.1 answering each request with `route(path)`.
pub struct Server {
    pub url: String,
    log: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub async fn start(route: fn(&str) -> Reply) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            let mut conn = 0;
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, conn, route, Arc::clone(&shared)));
                conn += 1;
            }
        });
        Server { url, log }
    }

    /// Everything seen so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
}

async fn serve(
    mut io: TcpStream,
    conn: usize,
    route: fn(&str) -> Reply,
    log: Arc<Mutex<Vec<Seen>>>,
) {
    let mut buf = Vec::new();
    loop {
        let parsed = loop {
            match parse(&buf) {
                Parse::Head(head) => break head,
                Parse::Garbage => {
                    log.lock().unwrap().push(Seen::Garbage { conn, bytes: buf });
                    return;
                }
                Parse::Partial => {}
            }
            if !fill(&mut io, &mut buf).await {
                if !buf.is_empty() {
                    log.lock()
                        .unwrap()
                        .push(Seen::Incomplete { conn, bytes: buf });
                }
                return;
            }
        };
        let Head {
            len,
            line,
            path,
            headers,
            framing,
        } = parsed;
        let body = loop {
            match framing.body(&buf[len..]) {
                Some(Ok((body, used))) => {
                    buf.drain(..len + used);
                    break body;
                }
                Some(Err(())) => {
                    log.lock().unwrap().push(Seen::Garbage { conn, bytes: buf });
                    return;
                }
                None => {}
            }
            if !fill(&mut io, &mut buf).await {
                log.lock()
                    .unwrap()
                    .push(Seen::Incomplete { conn, bytes: buf });
                return;
            }
        };
        log.lock().unwrap().push(Seen::Request {
            conn,
            line,
            headers,
            body,
        });
        match route(&path) {
            Reply::Bytes(bytes) => {
                if io.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            Reply::Close(bytes) => {
                let _ = io.write_all(&bytes).await;
                let _ = io.shutdown().await;
                // Reads on until the client closes, so the close is a FIN,
                // never a reset over unread bytes.
                let mut sink = [0u8; 1024];
                while matches!(io.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
        }
    }
}

/// Reads more; false at the end of the connection.
async fn fill(io: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match io.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

enum Parse {
    Head(Head),
    Partial,
    Garbage,
}

struct Head {
    len: usize,
    line: String,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
    framing: Framing,
}

enum Framing {
    Length(usize),
    Chunked,
}

fn parse(buf: &[u8]) -> Parse {
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut fields);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parse::Partial,
        Err(_) => return Parse::Garbage,
    };
    let (Some(method), Some(path)) = (req.method, req.path) else {
        return Parse::Garbage;
    };
    let line = format!("{method} {path} HTTP/1.{}", req.version.unwrap_or(1));
    let headers: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == b"chunked");
    let lengths: Vec<&Vec<u8>> = headers
        .iter()
        .filter(|(n, _)| n == "content-length")
        .map(|(_, v)| v)
        .collect();
    let framing = match (chunked, &lengths[..]) {
        (true, []) => Framing::Chunked,
        (false, []) => Framing::Length(0),
        (false, [one]) => match std::str::from_utf8(one).ok().and_then(|s| s.parse().ok()) {
            Some(n) => Framing::Length(n),
            None => return Parse::Garbage,
        },
        // Conflicting or repeated framing: a server must refuse it (400).
        _ => return Parse::Garbage,
    };
    Parse::Head(Head {
        len,
        line,
        path: path.to_string(),
        headers,
        framing,
    })
}

impl Framing {
    /// The body at the start of `buf` and the bytes it took, once all there.
    fn body(&self, buf: &[u8]) -> Option<Result<(Vec<u8>, usize), ()>> {
        match *self {
            Framing::Length(n) => (buf.len() >= n).then(|| Ok((buf[..n].to_vec(), n))),
            Framing::Chunked => dechunk(buf),
        }
    }
}

fn dechunk(buf: &[u8]) -> Option<Result<(Vec<u8>, usize), ()>> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let line_end = at + buf[at..].windows(2).position(|w| w == b"\r\n")?;
        let Some(size) = std::str::from_utf8(&buf[at..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s, 16).ok())
        else {
            return Some(Err(()));
        };
        at = line_end + 2;
        if size == 0 {
            if buf.len() < at + 2 {
                return None;
            }
            if &buf[at..at + 2] != b"\r\n" {
                return Some(Err(()));
            }
            return Some(Ok((body, at + 2)));
        }
        if buf.len() < at + size + 2 {
            return None;
        }
        body.extend_from_slice(&buf[at..at + size]);
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Some(Err(()));
        }
        at += size + 2;
    }
}
