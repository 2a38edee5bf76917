//! The `/fault/...` endpoints: precise misbehaviour for the client's
//! reliability tests.
//!
//! Two kinds exist. Faults expressible as an HTTP response (`endless`,
//! `huge-headers`) are ordinary responses served by hyper. Raw faults
//! ([`RawFault`]) abandon HTTP: the connection task takes the socket back
//! from hyper and [`execute`] acts on it directly, which works on any
//! request of a kept-alive connection.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::body::{pattern, ResponseBody};
use crate::conn::ConnState;
use crate::endpoints::{self, Outcome, OCTET_STREAM, TEXT_PLAIN};

/// Largest `/fault/huge-headers/{n}` served; beyond it the server would
/// only be exhausting its own memory.
const MAX_HUGE_HEADER: usize = 64 * 1024 * 1024;

/// Chunk size of `/fault/endless`.
const ENDLESS_CHUNK: usize = 16 * 1024;

/// A fault acted out on the raw socket instead of through hyper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawFault {
    /// Close (FIN) without writing anything.
    Close,
    /// Reset (RST via SO_LINGER 0) without writing anything.
    Reset,
    /// Head with `content-length: 1000`, 500 body bytes, close.
    CloseMidBody,
    /// Chunked head, two chunks, close without the terminating chunk.
    ChunkedMidBody,
    /// `HTTP/1.1 abc nonsense`, close.
    MalformedStatus,
    /// Bytes that are not HTTP at all, close.
    Garbage,
    /// Never answer; hold the connection until the client closes it.
    NoAnswer,
}

/// Routes the part of the path after `/fault/`.
pub(crate) fn route(name: &str) -> Outcome {
    let raw = match name {
        "close" => RawFault::Close,
        "reset" => RawFault::Reset,
        "close-mid-body" => RawFault::CloseMidBody,
        "chunked-mid-body" => RawFault::ChunkedMidBody,
        "malformed-status" => RawFault::MalformedStatus,
        "garbage" => RawFault::Garbage,
        "no-answer" => RawFault::NoAnswer,
        "endless" => return endless(),
        _ => {
            return match name.strip_prefix("huge-headers/") {
                Some(n) => huge_headers(n),
                None => endpoints::not_found(),
            }
        }
    };
    Outcome::Fault(raw)
}

/// `/fault/endless`: 200 with a chunked body that never ends. hyper asks
/// for the next chunk only when its buffer has room and stops (dropping the
/// body) as soon as a write fails, so it neither buffers without bound nor
/// outlives the client.
fn endless() -> Outcome {
    let chunk = pattern().slice(..ENDLESS_CHUNK);
    endpoints::respond(StatusCode::OK, &OCTET_STREAM, ResponseBody::endless(chunk))
}

/// `/fault/huge-headers/{n}`: 200 with an `x-huge` header of `n` bytes.
fn huge_headers(n: &str) -> Outcome {
    let n = match n.parse::<usize>() {
        Ok(n) if n <= MAX_HUGE_HEADER => n,
        _ => return endpoints::bad_request("invalid size: expected /fault/huge-headers/{n}"),
    };
    let shared = pattern();
    let value = if n <= shared.len() {
        shared.slice(..n)
    } else {
        Bytes::from(shared.iter().copied().cycle().take(n).collect::<Vec<u8>>())
    };
    match HeaderValue::from_maybe_shared(value) {
        Ok(value) => {
            let mut outcome =
                endpoints::response(StatusCode::OK, &TEXT_PLAIN, ResponseBody::full("ok"));
            outcome.headers_mut().insert("x-huge", value);
            Outcome::Respond(outcome)
        }
        // The pattern is printable ASCII, so this cannot happen; still no panic.
        Err(_) => endpoints::bad_request("cannot build header"),
    }
}

/// Acts out `fault` on the socket hyper gave back. Errors only mean the
/// client went away first, which is fine for a fault.
pub(crate) async fn execute(fault: RawFault, mut stream: TcpStream, conn: &ConnState) {
    let id = conn.id();
    let result = match fault {
        RawFault::Close => stream.shutdown().await,
        RawFault::Reset => {
            // SO_LINGER 0 turns close() into an abortive close (RST).
            // Linger 0 never blocks, unlike other linger values.
            socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO))
        }
        RawFault::CloseMidBody => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                 content-length: 1000\r\nx-connection-id: {id}\r\n\r\n"
            );
            write_then_close(&mut stream, &[head.as_bytes(), &pattern()[..500]]).await
        }
        RawFault::ChunkedMidBody => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                 transfer-encoding: chunked\r\nx-connection-id: {id}\r\n\r\n"
            );
            let chunk = &pattern()[..16];
            let parts: [&[u8]; 6] = [
                head.as_bytes(),
                b"10\r\n",
                chunk,
                b"\r\n10\r\n",
                chunk,
                b"\r\n",
            ];
            write_then_close(&mut stream, &parts).await
        }
        RawFault::MalformedStatus => {
            write_then_close(&mut stream, &[b"HTTP/1.1 abc nonsense\r\n\r\n"]).await
        }
        RawFault::Garbage => write_then_close(&mut stream, &[&garbage(id)]).await,
        RawFault::NoAnswer => hold_until_client_closes(&mut stream).await,
    };
    if let Err(err) = result {
        tracing::debug!(conn = id, "fault {fault:?} cut short: {err}");
    }
    // Dropping the stream closes it (with RST for `Reset`).
}

async fn write_then_close(stream: &mut TcpStream, parts: &[&[u8]]) -> std::io::Result<()> {
    for part in parts {
        stream.write_all(part).await?;
    }
    stream.flush().await?;
    stream.shutdown().await
}

/// Reads and discards until EOF or an error. Server shutdown ends it from
/// outside by dropping the connection task's future.
async fn hold_until_client_closes(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut sink = [0u8; 4096];
    while stream.read(&mut sink).await? != 0 {}
    Ok(())
}

/// 256 deterministic pseudo-random bytes (xorshift), never starting with
/// anything a client could take for an HTTP status line.
fn garbage(seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(256);
    while out.len() < 256 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    // 0x00 is never valid at the start of an HTTP response.
    out[0] = 0;
    out
}
