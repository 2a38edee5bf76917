//! HTTP/1.1 side of the scripted server: reads requests (head, then a
//! Content-Length or chunked body), answers `/hostile` with the script and
//! everything else with a good response, on one connection for as long as
//! neither side closes it. Bytes that do not parse as a request are
//! counted as garbage and end the connection (a real server would answer
//! 400 and close).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::case::Script;
use super::io::{self, Conn, Cutter};
use super::server::{good_body, Log};

/// A head bigger than this is garbage.
const MAX_HEAD: usize = 1 << 20;

/// Serves connection number `n` (for the log).
pub async fn serve(conn: Conn, n: usize, cutter: Cutter, script: Script, log: Arc<Log>) {
    let (mut r, mut w) = tokio::io::split(conn);
    let mut buf = Vec::new();
    loop {
        let Some(request) = read_request(&mut r, &mut buf, &log).await else {
            return;
        };
        log.served_on(n);
        let steps = match (&script, request.starts_with("/hostile")) {
            (Script::H1(steps), true) => {
                log.next_hostile();
                Some(&steps[..])
            }
            (Script::H1Turns(turns), true) => {
                let turn = log.next_hostile();
                Some(turns.get(turn).or(turns.last()).map_or(&[][..], |s| &s[..]))
            }
            _ => None,
        };
        match steps {
            Some(steps) => {
                let after = io::run(&mut w, &cutter, steps).await;
                log.scripts_done.fetch_add(1, Ordering::Relaxed);
                if after == io::After::Closed {
                    io::drain(&mut r).await;
                    return;
                }
            }
            None => {
                log.good.fetch_add(1, Ordering::Relaxed);
                let body = good_body();
                let mut out = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len())
                    .into_bytes();
                out.extend_from_slice(&body);
                if w.write_all(&out).await.is_err() || w.flush().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The next request's path, its head and body consumed from `buf`; `None`
/// at the end of the connection or on garbage (counted).
async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    log: &Log,
) -> Option<String> {
    let head_len = loop {
        if let Some(at) = find(buf, b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > MAX_HEAD || !fill(r, buf).await {
            log.garbage.fetch_add(buf.len(), Ordering::Relaxed);
            return None;
        }
    };
    let mut fields = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut fields);
    let (path, framing) = match req.parse(&buf[..head_len]) {
        Ok(httparse::Status::Complete(_)) => {
            let path = origin_form(req.path.unwrap_or("")).to_string();
            log.heads.record(&path, req.headers);
            let mut framing = Framing::Length(0);
            for h in req.headers.iter() {
                if h.name.eq_ignore_ascii_case("content-length") {
                    let n = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.parse().ok());
                    let Some(n) = n else {
                        log.garbage.fetch_add(buf.len(), Ordering::Relaxed);
                        return None;
                    };
                    framing = Framing::Length(n);
                } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                    framing = Framing::Chunked;
                }
            }
            (path, framing)
        }
        _ => {
            log.garbage.fetch_add(buf.len(), Ordering::Relaxed);
            return None;
        }
    };
    buf.drain(..head_len);
    let body_len = loop {
        let have = match framing {
            Framing::Length(n) => (buf.len() >= n).then_some(n),
            // The corpus's requests have no trailers: the body ends at the
            // last chunk's empty line.
            Framing::Chunked => find(buf, b"0\r\n\r\n").map(|at| at + 5),
        };
        if let Some(n) = have {
            break n;
        }
        if !fill(r, buf).await {
            log.garbage.fetch_add(buf.len(), Ordering::Relaxed);
            return None;
        }
    };
    buf.drain(..body_len);
    Some(path)
}

enum Framing {
    Length(usize),
    Chunked,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn fill<R: AsyncRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match r.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// The path of a request target: the absolute form a forward proxy relays
/// (`http://host:port/path`, RFC 9112 §3.2.2) reduced to its path.
fn origin_form(target: &str) -> &str {
    match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    }
}
