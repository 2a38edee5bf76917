//! The HTTP/2 differential harness: one scripted h2c server per client and
//! case, courier's and the `h2` crate's readings reduced to a [`Record`]
//! each, and compared ([`compare`]).
//!
//! The server (prior knowledge, loopback) sends its SETTINGS, acknowledges
//! the client's, waits for the first request and answers it with the case's
//! frames, verbatim. Every later request, on that connection or a new one,
//! gets [`second`]: a client that reads anything else for it lost track of
//! the first exchange. A closing case shuts the connection after its frames.
//!
//! Error classes ([`Class`]), how each client's failure maps onto them:
//!
//! | class        | courier (`ErrorKind`)                                  | h2 (`h2::Error`)                                      |
//! |--------------|--------------------------------------------------------|-------------------------------------------------------|
//! | `Stream`     | `Protocol`, the connection then still used             | `is_reset()` (not REFUSED_STREAM from the server)     |
//! | `Connection` | `Protocol` and a new connection for the next request; `ConnectionClosed` | `is_go_away()` sent by h2 itself; `is_io()` |
//! | `Refused`    | `Refused`                                              | reset with REFUSED_STREAM or GOAWAY from the server   |
//! | `TooLarge`   | `HeadersTooLarge`                                      | -                                                     |
//! | `Body`       | any error reading the body after the head              | any error from `data()`/`trailers()`                  |
//! | `Timeout`    | `Timeout`                                              | no answer within [`STEP`]                             |
//! | `Other`      | anything else                                          | anything else                                         |
//!
//! courier's `Protocol` covers both a malformed response (a stream error)
//! and a connection error, so whether its connection survived decides.
//! courier runs with its defaults, retries included: a request it sends
//! again and that then gets [`second`] is `Verdict::CourierRetries`.
//!
//! Real time, not paused: on real sockets tokio's auto-advance would fire
//! while a client waits for loopback bytes. Every wait is bounded by
//! [`STEP`] (the clients) or ended by the case (the server's tasks).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use courier::{Client, ErrorKind};
use http_body_util::BodyExt;
use tokio::net::TcpListener;

use crate::support::h2::{field, frame, h2c, listen, Peer, DATA, END_HEADERS, END_STREAM, HEADERS};

pub use super::record::{
    compare, courier_class, is_second, selected, selected_trailers, Answer, Class, Record, Second,
    Verdict,
};

/// How long each step may take: loopback answers in well under this, and a
/// case where a client waits for what never comes costs one step.
pub const STEP: Duration = Duration::from_millis(500);

/// The answer to every request after the first: well formed, a status and
/// body no case uses first.
pub fn second(stream: u32) -> Vec<u8> {
    let mut block = crate::support::h2::status(202);
    block.extend(field("content-length", b"6"));
    let mut out = frame(HEADERS, END_HEADERS, stream, &block);
    out.extend(frame(DATA, END_STREAM, stream, b"second"));
    out
}

/// A case's frames for the first request, given its stream id.
pub type Frames = fn(u32) -> Vec<u8>;

/// Runs `frames` against each client, each with a server of its own.
pub async fn run(frames: Frames, close: bool) -> (Record, Record, Verdict) {
    let (courier, h2) = tokio::join!(
        courier_reads(frames, close),
        super::h2_reader::h2_reads(frames, close)
    );
    let verdict = compare(&courier, &h2);
    (courier, h2, verdict)
}

/// A scripted server on its own task; aborted when dropped.
pub(super) struct Server {
    pub(super) addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(super) async fn server(frames: Frames, close: bool) -> Server {
    let (listener, _) = listen().await;
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(accept_loop(listener, frames, close));
    Server { addr, task }
}

/// Serves every connection (a client may dial again): the very first
/// request gets the case's frames, every other one [`second`]. Unbounded:
/// the case's end aborts it.
async fn accept_loop(listener: TcpListener, frames: Frames, close: bool) {
    let first = Arc::new(AtomicBool::new(true));
    while let Ok((io, _)) = listener.accept().await {
        let first = first.clone();
        tokio::spawn(async move {
            let Some(peer) = Peer::handshake(io, &[]).await else {
                return;
            };
            let mut peer = peer.without_deadline();
            // Skips the client's WINDOW_UPDATE, PING, RST_STREAM and the
            // like, and acknowledges its SETTINGS.
            while let Some(stream) = peer.next_request().await {
                if first.swap(false, Ordering::SeqCst) {
                    if !peer.try_send(&frames(stream)).await {
                        return;
                    }
                    if close {
                        let _ = peer.shutdown().await;
                        peer.drain().await;
                        return;
                    }
                } else if !peer.try_send(&second(stream)).await {
                    return;
                }
            }
        });
    }
}

// ---------------------------------------------------------------------------
// courier.

/// courier's reading: two requests through one client; whether the second
/// went on a new connection is read off its metrics.
pub async fn courier_reads(frames: Frames, close: bool) -> Record {
    let server = server(frames, close).await;
    let url = format!("http://{}/", server.addr);
    let client = h2c().timeout(STEP).build().unwrap();
    // The client's own timeout bounds each request; this one only the test.
    let first = crate::support::h2::within("courier's first", courier_answer(&client, &url)).await;
    let before = client.metrics().connections_established;
    let second =
        match crate::support::h2::within("courier's second", courier_answer(&client, &url)).await {
            Ok(answer) if is_second(&answer) => {
                if client.metrics().connections_established == before {
                    Second::Reused
                } else {
                    Second::Redialed
                }
            }
            Ok(answer) => Second::Wrong(format!("{answer:?}")),
            Err(kind) => Second::Failed(courier_class(kind)),
        };
    let kind = first.as_ref().err().copied();
    let first = first.map_err(|kind| match kind {
        // Whether the connection survived tells a stream error from a connection error.
        ErrorKind::Protocol if second == Second::Reused => Class::Stream,
        ErrorKind::Protocol | ErrorKind::ConnectionClosed => Class::Connection,
        other => courier_class(other),
    });
    drop(server);
    Record {
        first,
        second,
        kind,
    }
}

/// One GET read whole, or the kind of its failure (a failure after the head
/// is `Body`, or `Timeout`).
async fn courier_answer(client: &Client, url: &str) -> Result<Answer, ErrorKind> {
    let res = client.get(url).send().await.map_err(|e| e.kind())?;
    let status = res.status().as_u16();
    let headers = selected(res.headers());
    let collected = res
        .into_body()
        .collect()
        .await
        .map_err(|e| match e.kind() {
            ErrorKind::Timeout => ErrorKind::Timeout,
            _ => ErrorKind::Body,
        })?;
    let trailers = collected.trailers().map(selected_trailers);
    Ok(Answer {
        status,
        headers,
        body: collected.to_bytes().to_vec(),
        trailers,
    })
}

// ---------------------------------------------------------------------------
