//! The `/fault/...` endpoints: precise misbehaviour for the client's
//! reliability tests.
//!
//! Three kinds exist. Faults expressible as an HTTP response (`endless`,
//! `huge-headers`) are ordinary responses served by hyper. Raw faults
//! ([`RawFault`]) abandon HTTP: on HTTP/1.1 the connection task takes the
//! transport back from hyper and [`execute`] acts on it directly, which
//! works on any request of a kept-alive connection. Connection-level faults
//! (`goaway`, `rst-stream`) are carried out by the service and the
//! connection driver with hyper's own means.
//!
//! | endpoint | HTTP/1.1 | HTTP/2 | HTTP/3 |
//! |---|---|---|---|
//! | `close` | FIN, nothing written (TLS: `close_notify` first) | whole connection dropped at once: FIN, no GOAWAY (other streams die too) | CONNECTION_CLOSE (H3_NO_ERROR) at once: every stream dies |
//! | `reset` | RST (SO_LINGER 0) | whole connection reset (RST) | CONNECTION_CLOSE (H3_INTERNAL_ERROR) |
//! | `close-mid-body` | `content-length: 1000`, 500 bytes, FIN | `content-length: 1000`, 500 bytes (written out), then as `close` | as HTTP/2; the queued bytes may not all leave before the close |
//! | `chunked-mid-body` | two chunks, no terminator, FIN | no length, two 16-byte DATA frames (written out), then as `close` | as HTTP/2 (no length); likewise |
//! | `malformed-status` | `HTTP/1.1 abc nonsense`, FIN | 400 (HTTP/2 has no status line to break) | 400 |
//! | `garbage` | 256 non-HTTP bytes, FIN | 400 (hyper owns the framing) | 400 |
//! | `no-answer` | silence until the client closes | the stream never answers; the connection stays usable | as HTTP/2 |
//! | `goaway` | 200 with `connection: close` (same as `/close`) | 200, then GOAWAY: in-flight streams finish, the connection closes | 200, then GOAWAY; the connection closes when the client does (or 2 s after the last response) |
//! | `rst-stream` | same as `reset` | RST_STREAM (INTERNAL_ERROR) instead of a response | stream reset (H3_INTERNAL_ERROR) instead of a response |
//!
//! HTTP/3 (`http3.rs`) reuses the HTTP/2 mapping ([`over_http2`]): it has
//! streams too, and no bytes of its own to break.
//!
//! Over TLS the HTTP/1.1 raw bytes go through TLS, as a broken server's
//! would; `reset` still resets the TCP connection underneath.

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::body::{pattern, ResponseBody};
use crate::fault::{Fault, RawFault};
use crate::reply::{self, Outcome, OCTET_STREAM, TEXT_PLAIN};
use crate::state::ConnState;
use crate::transport::Transport;

/// Largest `/fault/huge-headers/{n}` served; beyond it the server would
/// only be exhausting its own memory.
const MAX_HUGE_HEADER: usize = 64 * 1024 * 1024;

/// Chunk size of `/fault/endless`.
const ENDLESS_CHUNK: usize = 16 * 1024;

/// How an HTTP/2 connection acts out a [`RawFault`].
pub(crate) enum Http2Fault {
    /// Hand it to the connection task, which drops the connection.
    Connection(RawFault),
    /// Answer with this (possibly deliberately broken) response.
    Respond(http::Response<ResponseBody>),
    /// Never answer this stream.
    Hang,
}

/// Maps a raw HTTP/1.1 fault onto its HTTP/2 counterpart (see the table in
/// the module docs).
pub(crate) fn over_http2(fault: RawFault, conn_id: u64) -> Http2Fault {
    match fault {
        RawFault::Close | RawFault::Reset => Http2Fault::Connection(fault),
        RawFault::NoAnswer => Http2Fault::Hang,
        RawFault::CloseMidBody => {
            let chunks = vec![pattern().slice(..500)];
            let body = ResponseBody::then_fault(chunks, fault);
            let mut response = reply::response(StatusCode::OK, &OCTET_STREAM, body);
            response
                .headers_mut()
                .insert(http::header::CONTENT_LENGTH, HeaderValue::from(1000u32));
            Http2Fault::Respond(response)
        }
        RawFault::ChunkedMidBody => {
            let chunk = pattern().slice(..16);
            let body = ResponseBody::then_fault(vec![chunk.clone(), chunk], fault);
            Http2Fault::Respond(reply::response(StatusCode::OK, &OCTET_STREAM, body))
        }
        RawFault::MalformedStatus | RawFault::Garbage => {
            tracing::trace!(conn = conn_id, "{fault:?} answered with 400 over HTTP/2");
            let why = "this fault breaks HTTP/1.1 framing and does not exist over HTTP/2\n";
            Http2Fault::Respond(reply::response(
                StatusCode::BAD_REQUEST,
                &TEXT_PLAIN,
                ResponseBody::full(Bytes::from_static(why.as_bytes())),
            ))
        }
    }
}

/// Routes the part of the path after `/fault/`.
pub(crate) fn route(name: &str) -> Outcome {
    let raw = match name {
        "goaway" => return Outcome::Fault(Fault::GoAway),
        "rst-stream" => return Outcome::Fault(Fault::RstStream),
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
                None => reply::not_found(),
            }
        }
    };
    Outcome::Fault(Fault::Raw(raw))
}

/// `/fault/endless`: 200 with a chunked body that never ends. hyper asks
/// for the next chunk only when its buffer has room and stops (dropping the
/// body) as soon as a write fails, so it neither buffers without bound nor
/// outlives the client.
fn endless() -> Outcome {
    let chunk = pattern().slice(..ENDLESS_CHUNK);
    reply::respond(StatusCode::OK, &OCTET_STREAM, ResponseBody::endless(chunk))
}

/// `/fault/huge-headers/{n}`: 200 with an `x-huge` header of `n` bytes.
fn huge_headers(n: &str) -> Outcome {
    let n = match n.parse::<usize>() {
        Ok(n) if n <= MAX_HUGE_HEADER => n,
        _ => return reply::bad_request("invalid size: expected /fault/huge-headers/{n}"),
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
                reply::response(StatusCode::OK, &TEXT_PLAIN, ResponseBody::full("ok"));
            outcome.headers_mut().insert("x-huge", value);
            Outcome::Respond(outcome)
        }
        // The pattern is printable ASCII, so this cannot happen; still no panic.
        Err(_) => reply::bad_request("cannot build header"),
    }
}

/// Acts out `fault` on the transport hyper gave back. Errors only mean the
/// client went away first, which is fine for a fault. The caller closes
/// the connection afterwards.
pub(crate) async fn execute(fault: RawFault, io: &mut Transport, conn: &ConnState) {
    let id = conn.id();
    let result = match fault {
        // The caller's close becomes a reset; what TLS still buffers is lost,
        // as with any reset.
        RawFault::Reset => {
            conn.set_reset_on_close();
            Ok(())
        }
        // TLS may still buffer the end of an earlier response: flush it.
        RawFault::Close => io.shutdown().await,
        RawFault::CloseMidBody => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                 content-length: 1000\r\nx-connection-id: {id}\r\n\r\n"
            );
            write_then_close(io, &[head.as_bytes(), &pattern()[..500]]).await
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
            write_then_close(io, &parts).await
        }
        RawFault::MalformedStatus => {
            write_then_close(io, &[b"HTTP/1.1 abc nonsense\r\n\r\n"]).await
        }
        RawFault::Garbage => write_then_close(io, &[&garbage(id)]).await,
        RawFault::NoAnswer => match io.flush().await {
            Ok(()) => hold_until_client_closes(io).await,
            Err(err) => Err(err),
        },
    };
    if let Err(err) = result {
        tracing::debug!(conn = id, "fault {fault:?} cut short: {err}");
    }
}

async fn write_then_close(io: &mut Transport, parts: &[&[u8]]) -> std::io::Result<()> {
    for part in parts {
        io.write_all(part).await?;
    }
    io.flush().await?;
    io.shutdown().await
}

/// Reads and discards until EOF or an error. Server shutdown ends it from
/// outside by dropping the connection task's future.
async fn hold_until_client_closes(io: &mut Transport) -> std::io::Result<()> {
    let mut sink = [0u8; 4096];
    while io.read(&mut sink).await? != 0 {}
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
