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

/// How a request failed (see the module doc for the mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Stream,
    Connection,
    Refused,
    TooLarge,
    Body,
    Timeout,
    Other,
}

/// A response read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The selected headers (`x-*`, `content-length`, `content-type`), sorted.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub trailers: Option<Vec<(String, String)>>,
}

/// What a fresh request after the first exchange got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Second {
    /// Exactly [`second`], on the first connection.
    Reused,
    /// Exactly [`second`], on a new connection.
    Redialed,
    /// No answer (h2 tries a new connection first unless its own only
    /// made the request wait).
    Failed(Class),
    /// An answer that is not [`second`]: the client lost track.
    Wrong(String),
}

/// One client's reading of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub first: Result<Answer, Class>,
    pub second: Second,
    /// courier's error kind for the first request, when it failed (h2's
    /// reading has none: its class says all the allowlist pins of it).
    pub kind: Option<ErrorKind>,
}

/// How the two readings compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    /// courier failed the request h2 read (courier is stricter).
    CourierRefuses,
    /// h2 failed the request courier read (courier is laxer: a finding).
    H2Refuses,
    /// Both failed, classed differently (courier's, h2's).
    BothFail(Class, Class),
    /// courier retried a refused request on a new connection (and so read
    /// [`second`] for it); h2 reported the refusal.
    CourierRetries,
    /// The same first answer; courier opened a new connection for the
    /// next request, h2 kept its own.
    CourierCloses,
    /// The same first answer; h2 opened a new connection, courier kept its own.
    H2Closes,
    /// Different answers read, a wrong second answer, or a client that could
    /// not send a next request at all: a defect on one side.
    Differ(String),
}

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

pub(super) fn selected(headers: &http::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<_> = headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name.starts_with("x-") || name == "content-length" || name == "content-type"
        })
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect();
    out.sort();
    out
}

pub(super) fn is_second(answer: &Answer) -> bool {
    answer.status == 202 && answer.body == b"second"
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

fn courier_class(kind: ErrorKind) -> Class {
    match kind {
        ErrorKind::Protocol => Class::Stream,
        ErrorKind::ConnectionClosed => Class::Connection,
        ErrorKind::Refused => Class::Refused,
        ErrorKind::HeadersTooLarge => Class::TooLarge,
        ErrorKind::Body => Class::Body,
        ErrorKind::Timeout => Class::Timeout,
        _ => Class::Other,
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

/// Trailers are all kept (not only the selected headers).
pub(super) fn selected_trailers(map: &http::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<_> = map
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_owned(), value)
        })
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------

/// Compares courier's reading with h2's (see [`Verdict`]).
pub fn compare(courier: &Record, h2: &Record) -> Verdict {
    for (who, record) in [("courier", courier), ("h2", h2)] {
        if let Second::Wrong(what) = &record.second {
            return Verdict::Differ(format!("{who} read a wrong second answer: {what}"));
        }
    }
    // Both may be unable to send a next request (the server allows no
    // stream), but alike: one alone is stuck where the other is not.
    if courier.second != h2.second {
        for (who, record) in [("courier", courier), ("h2", h2)] {
            if let Second::Failed(class) = &record.second {
                return Verdict::Differ(format!(
                    "{who} alone could not send a next request: {class:?}"
                ));
            }
        }
    }
    match (&courier.first, &h2.first) {
        (Ok(a), Err(_)) if is_second(a) => Verdict::CourierRetries,
        (Err(a), Err(b)) if a != b => Verdict::BothFail(*a, *b),
        (Err(_), Ok(_)) => Verdict::CourierRefuses,
        (Ok(_), Err(_)) => Verdict::H2Refuses,
        (a, b) if a != b => Verdict::Differ(format!("first: courier {a:?}, h2 {b:?}")),
        _ => match (&courier.second, &h2.second) {
            (a, b) if a == b => Verdict::Agree,
            (Second::Redialed, Second::Reused) => Verdict::CourierCloses,
            (Second::Reused, Second::Redialed) => Verdict::H2Closes,
            (a, b) => Verdict::Differ(format!("second: courier {a:?}, h2 {b:?}")),
        },
    }
}
