//! Minimal raw HTTP/1.1 client for the server's tests.
//!
//! Deliberately hand-rolled on a `TcpStream`: fault endpoints produce bytes
//! that a real HTTP client would reject, and the tests need to see exactly
//! what went over the wire. Every IO step is bounded by [`IO_TIMEOUT`].

pub mod clients;
pub mod h3client;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upper bound for any single wait in the tests.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `fut`, failing the test if it takes longer than [`IO_TIMEOUT`].
pub async fn bounded<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(IO_TIMEOUT, fut).await {
        Ok(out) => out,
        Err(_) => panic!("timed out: {what}"),
    }
}

/// Polls `cond` until it holds, failing the test after [`IO_TIMEOUT`].
/// For server-side state that has no event to await (counters).
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    bounded(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn connection_id(&self) -> u64 {
        self.header("x-connection-id")
            .expect("x-connection-id header")
            .parse()
            .expect("numeric connection id")
    }
}

pub struct RawConn {
    stream: TcpStream,
    /// Bytes read but not consumed yet.
    buf: Vec<u8>,
}

impl RawConn {
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = bounded("connect", TcpStream::connect(addr))
            .await
            .expect("connect");
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes one request. `body` gets a content-length.
    pub async fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nhost: test\r\n");
        for (name, value) in headers {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            req.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        bounded("write request", self.stream.write_all(&bytes))
            .await
            .expect("write request");
    }

    pub async fn get(&mut self, path: &str) -> RawResponse {
        self.send("GET", path, &[], b"").await;
        self.read_response().await
    }

    /// Reads more bytes into the buffer; `Ok(0)` is EOF.
    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = bounded("read", self.stream.read(&mut chunk)).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads through the blank line ending a response head.
    pub async fn read_head(&mut self) -> (u16, Vec<(String, String)>) {
        let end = loop {
            if let Some(pos) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos;
            }
            let n = self.fill().await.expect("read head");
            assert!(
                n > 0,
                "EOF inside response head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head: Vec<u8> = self.buf.drain(..end + 4).collect();
        let head = String::from_utf8(head).expect("utf-8 head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().expect("status line");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').expect("header colon");
                (n.trim().to_ascii_lowercase(), v.trim().to_owned())
            })
            .collect();
        (status, headers)
    }

    /// Reads exactly `n` body bytes.
    async fn read_exact(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            let got = self.fill().await.expect("read body");
            assert!(got > 0, "EOF after {} of {n} body bytes", self.buf.len());
        }
        self.buf.drain(..n).collect()
    }

    async fn read_line(&mut self) -> String {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..pos + 2).collect();
                return String::from_utf8_lossy(&line[..pos]).into_owned();
            }
            let n = self.fill().await.expect("read line");
            assert!(n > 0, "EOF inside chunked framing");
        }
    }

    /// Reads one complete response: content-length, chunked, or (without
    /// either) a body delimited by EOF.
    pub async fn read_response(&mut self) -> RawResponse {
        let (status, headers) = self.read_head().await;
        let mut response = RawResponse {
            status,
            headers,
            body: Vec::new(),
        };
        if let Some(len) = response.header("content-length") {
            let len = len.parse().expect("numeric content-length");
            response.body = self.read_exact(len).await;
        } else if response.header("transfer-encoding") == Some("chunked") {
            loop {
                let size_line = self.read_line().await;
                let size = usize::from_str_radix(size_line.trim(), 16).expect("chunk size");
                if size == 0 {
                    assert_eq!(self.read_line().await, "", "no trailers expected");
                    break;
                }
                let data = self.read_exact(size).await;
                response.body.extend_from_slice(&data);
                assert_eq!(self.read_line().await, "", "chunk must end with CRLF");
            }
        } else if !matches!(status, 204 | 304) {
            response.body = self.read_to_end().await.expect("read until EOF");
        }
        response
    }

    /// Everything up to EOF, including bytes already buffered. A reset
    /// surfaces as the error.
    pub async fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        while self.fill().await? > 0 {}
        Ok(std::mem::take(&mut self.buf))
    }

    /// True if nothing arrives within `wait` (the connection stays silent
    /// and open). Only for asserting the absence of an answer.
    pub async fn silent_for(&mut self, wait: Duration) -> bool {
        let mut byte = [0u8; 1];
        tokio::time::timeout(wait, self.stream.read(&mut byte))
            .await
            .is_err()
    }

    pub fn into_stream(self) -> TcpStream {
        self.stream
    }
}

/// The byte `/bytes/{n}` bodies have at offset `i`.
pub fn pattern_byte(i: usize) -> u8 {
    courier_server::BYTES_ALPHABET[i % 64]
}
