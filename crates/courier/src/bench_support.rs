//! Hooks for the criterion micro-benchmarks in `benches/`: a client whose
//! pool holds HTTP/1.1 connections over in-memory pipes to a minimal
//! responder, so checkout/return and the request path can be timed without
//! the kernel's TCP stack in the numbers; and the HTTP/2 header path. Not
//! part of the public API.

use bytes::BytesMut;
use http::Uri;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use crate::{Client, Error, Response};

/// The origin the in-memory connections belong to.
pub const ORIGIN: &str = "http://bench.invalid";

/// A client with `connections` in-memory HTTP/1.1 connections to [`ORIGIN`].
pub struct InMemory {
    client: Client,
    uri: Uri,
}

impl InMemory {
    /// Starts `connections` pipe-backed connections, each answering every
    /// request with 200 and `body`.
    pub async fn new(connections: usize, body: &'static [u8]) -> Result<InMemory, Error> {
        let client = Client::new();
        let uri = Uri::from_static("http://bench.invalid/");
        let origin = client.pool().origin(&uri)?;
        for _ in 0..connections {
            let (near, far) = tokio::io::duplex(64 * 1024);
            tokio::spawn(respond(far, body));
            origin.adopt_exclusive(near);
        }
        Ok(InMemory { client, uri })
    }

    /// One checkout of an idle connection and its return, nothing sent.
    pub async fn checkout_release(&self) -> Result<(), Error> {
        let origin = self.client.pool().origin(&self.uri)?;
        origin.checkout(false, None).await?.release();
        Ok(())
    }

    /// A whole GET through the public request path.
    pub async fn get(&self) -> Result<Response, Error> {
        self.client.get(&self.uri).send().await
    }

    /// The client, for metrics.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// Answers each bodiless request head read from `io` with 200 and `body`:
/// as little server as a request needs, so the numbers are the client's.
async fn respond(mut io: DuplexStream, body: &'static [u8]) {
    let mut answer =
        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes();
    answer.extend_from_slice(body);
    let mut buf = BytesMut::with_capacity(8 * 1024);
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let _ = buf.split_to(end + 4);
            if io.write_all(&answer).await.is_err() {
                return;
            }
        }
        match io.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// `f` of an HTTPS GET of `path` with `headers` and no client defaults.
fn get<R>(
    path: &str,
    headers: &http::HeaderMap,
    f: impl FnOnce(&crate::proto::h2::conn::Head<'_>) -> R,
) -> R {
    f(&crate::proto::h2::conn::Head {
        method: &http::Method::GET,
        scheme: &http::uri::Scheme::HTTPS,
        authority: &http::uri::Authority::from_static("bench.invalid"),
        path,
        headers,
        defaults: &http::HeaderMap::new(),
        withheld: &[],
        content_length: None,
        protocol: None,
        deadline: None,
    })
}

/// The HTTP/2 header path without a connection: HPACK-encoding a request
/// head into HEADERS as a connection does, and decoding a response head
/// block into the `http::response::Parts` a request gets.
pub struct Http2Headers {
    encoder: crate::proto::h2::hpack::Encoder,
    /// The connection's last request head, as a connection keeps it.
    template: crate::proto::h2::template::Template,
    decoder: crate::proto::h2::head::BlockDecoder,
    out: bytes::BytesMut,
}

/// nginx 1.22's answer to an h2c GET of a 128-byte file, the first on its
/// connection (so every value is a Huffman-coded literal): `:status 200`,
/// `server`, `date`, `content-type`, `content-length`, `last-modified`,
/// `etag` and `accept-ranges`.
const NGINX_RESPONSE_HEAD: &str =
    "887689aa6355e580ae212e1f6196d07abe94132a693f75040138a01cb8cb7704\
    ca98b46f5f87497ca58ae819aa5c033132386c96d07abe94132a693f75040138a01cb8cb7704253168df00832a4737\
    8bfe5c8c0cc8518d6781fcff008919085ad2b583aa62a3848fd24a8f";

impl Http2Headers {
    /// A fresh encoder and decoder, as on a new connection.
    pub fn new() -> Http2Headers {
        Http2Headers {
            encoder: crate::proto::h2::hpack::Encoder::new(),
            template: crate::proto::h2::template::Template::default(),
            decoder: crate::proto::h2::head::BlockDecoder::new(4096, 64 * 1024),
            out: bytes::BytesMut::new(),
        }
    }

    /// Encodes a GET of `path` with `headers` (the connection's HPACK table
    /// as earlier calls left it); returns the frame's size.
    pub fn encode_request(&mut self, path: &str, headers: &http::HeaderMap) -> usize {
        self.out.clear();
        get(path, headers, |head| {
            crate::proto::h2::encode::request(
                &mut self.encoder,
                &mut self.template,
                &mut self.out,
                1,
                head,
                true,
                16_384,
            )
        });
        self.out.len()
    }

    /// The size of the same GET's header list as a server's
    /// SETTINGS_MAX_HEADER_LIST_SIZE counts it: what a request pays for a
    /// server that announces one.
    pub fn count_request(&self, path: &str, headers: &http::HeaderMap) -> u64 {
        get(path, headers, crate::proto::h2::header_list::size)
    }

    /// Decodes nginx's response head; returns how many headers it has.
    pub fn decode_nginx_response(&mut self) -> usize {
        let block = nginx_response_head();
        match self.decoder.decode(&block, false) {
            Ok(crate::proto::h2::head::Block::Response(head, _)) => head.headers().len(),
            _ => panic!("nginx's response head must decode"),
        }
    }
}

impl Default for Http2Headers {
    fn default() -> Http2Headers {
        Http2Headers::new()
    }
}

fn nginx_response_head() -> Vec<u8> {
    let hex: Vec<u8> = NGINX_RESPONSE_HEAD
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    hex.chunks(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).expect("ASCII hex");
            u8::from_str_radix(digits, 16).expect("hex digits")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http2_header_path_round_trips() {
        let mut h = Http2Headers::new();
        assert_eq!(h.decode_nginx_response(), 7);
        // Decoding again inserts into (and evicts from) the table: still whole.
        assert_eq!(h.decode_nginx_response(), 7);
        let mut headers = http::HeaderMap::new();
        headers.insert("user-agent", "bench".parse().unwrap());
        let first = h.encode_request("/", &headers);
        let again = h.encode_request("/", &headers);
        assert!(
            again < first,
            "repeated fields are indexed: {again} < {first}"
        );
    }
}
