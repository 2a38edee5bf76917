//! Arbitrary HTTP/2 frames as a server's answer to the first request, read
//! by courier and by the `h2` crate's client (the records and comparison of
//! `tests/it/differential_h2`, shared through `record.rs`), each over an
//! in-memory connection on tokio's paused clock, so a client that waits
//! costs no real time. Different answers read, a wrong answer to the next
//! request, a client stuck alone, or h2 failing a request courier read
//! whole (courier laxer) is a finding; so is either client hanging past its
//! bound.
//!
//! The input is a small program, so that most inputs are frames both
//! clients take for HTTP/2 (raw bytes would mostly be a broken connection):
//! the first byte's bit 0 closes the connection after the frames; then ops,
//! each a byte `op` and its operands (missing bytes read as 0):
//!
//! | op % 8 | frame                                                            |
//! |--------|------------------------------------------------------------------|
//! | 0      | HEADERS: flags, n (% 8) fields, each a name (from [`NAMES`]) and a value (length % 32) |
//! | 1      | DATA: flags, a payload (length % 64)                             |
//! | 2      | RST_STREAM: stream, error code                                   |
//! | 3      | GOAWAY: last stream id, error code                               |
//! | 4      | SETTINGS: identifier, value (4 bytes)                            |
//! | 5      | WINDOW_UPDATE: stream, increment (4 bytes)                       |
//! | 6      | PING: flags                                                      |
//! | 7      | any frame: type, flags, stream, payload (length % 64)            |
//!
//! A stream operand `b` is `[0, 1, 3, 2][b % 4]`: the connection, the
//! request's stream (1), one never opened, one the client never uses.
#![no_main]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use courier::connect::{AsyncIo, Connect, Connecting};
use courier::{Client, ErrorKind};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

#[allow(dead_code)]
#[path = "../../crates/courier/tests/it/differential_h2/record.rs"]
mod record;

use record::{compare, courier_class, is_second, Answer, Class, Record, Second, Verdict};

/// Each step's bound (virtual: the clock is paused).
const STEP: Duration = Duration::from_millis(500);

/// Header names a HEADERS op picks from: the pseudo-fields, the framing
/// fields, connection-specific ones (malformed in HTTP/2), uppercase and
/// empty names, and plain ones.
const NAMES: &[&str] = &[
    ":status",
    "content-length",
    "x-a",
    "content-type",
    ":path",
    "connection",
    "te",
    "transfer-encoding",
    "X-Upper",
    "",
    ":unknown",
    "trailer",
];

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1).
fn hpack_int(first: u8, n: u8, mut value: usize, out: &mut Vec<u8>) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128 + 128) as u8);
        value /= 128;
    }
    out.push(value as u8);
}

/// A literal field without indexing, with a literal name (RFC 7541 §6.2.2).
fn field(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00];
    hpack_int(0, 7, name.len(), &mut out);
    out.extend_from_slice(name);
    hpack_int(0, 7, value.len(), &mut out);
    out.extend_from_slice(value);
    out
}

/// The answer to every request after the first: a status and body no
/// input's first answer is taken for (see `record::is_second`).
fn second(stream: u32) -> Vec<u8> {
    let mut block = field(b":status", b"202");
    block.extend(field(b"content-length", b"6"));
    let mut out = frame(HEADERS, END_HEADERS, stream, &block);
    out.extend(frame(DATA, END_STREAM, stream, b"second"));
    out
}

/// Reads the input's program.
struct Ops<'a>(&'a [u8]);

impl Ops<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = (usize::from(self.byte()) % max).min(self.0.len());
        let (taken, rest) = self.0.split_at(len);
        self.0 = rest;
        taken.to_vec()
    }
    fn stream(&mut self) -> u32 {
        [0, 1, 3, 2][usize::from(self.byte() % 4)]
    }
}

/// The frames the program writes (for the first request, on stream 1).
fn frames(program: &[u8]) -> Vec<u8> {
    let mut ops = Ops(program);
    let mut out = Vec::new();
    // Bounded by the input's length: every op takes at least one byte.
    while !ops.0.is_empty() {
        match ops.byte() % 8 {
            0 => {
                let flags = ops.byte();
                let mut block = Vec::new();
                for _ in 0..ops.byte() % 8 {
                    let name = NAMES[usize::from(ops.byte()) % NAMES.len()];
                    let value = ops.bytes(32);
                    block.extend(field(name.as_bytes(), &value));
                }
                out.extend(frame(HEADERS, flags, 1, &block));
            }
            1 => {
                let flags = ops.byte();
                let payload = ops.bytes(64);
                out.extend(frame(DATA, flags, 1, &payload));
            }
            2 => {
                let stream = ops.stream();
                let code = u32::from(ops.byte());
                out.extend(frame(RST_STREAM, 0, stream, &code.to_be_bytes()));
            }
            3 => {
                let mut payload = u32::from(ops.byte() % 4).to_be_bytes().to_vec();
                payload.extend_from_slice(&u32::from(ops.byte()).to_be_bytes());
                out.extend(frame(GOAWAY, 0, 0, &payload));
            }
            4 => {
                let mut payload = u16::from(ops.byte() % 8).to_be_bytes().to_vec();
                payload.extend_from_slice(&ops.u32().to_be_bytes());
                out.extend(frame(SETTINGS, 0, 0, &payload));
            }
            5 => {
                let stream = ops.stream();
                let increment = ops.u32();
                out.extend(frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes()));
            }
            6 => {
                let flags = ops.byte() & 1;
                out.extend(frame(PING, flags, 0, b"fuzzping"));
            }
            _ => {
                let (ty, flags, stream) = (ops.byte(), ops.byte(), ops.stream());
                let payload = ops.bytes(64);
                out.extend(frame(ty, flags, stream, &payload));
            }
        }
    }
    out
}

/// One case: the frames for the first request ever, and whether the server
/// closes after them. Every connection (a client may dial again) is served
/// from the same case, and every later request gets [`second`].
struct Case {
    frames: Vec<u8>,
    close: bool,
    first: AtomicBool,
}

/// A new in-memory connection to the case's server.
fn dial(case: &Arc<Case>) -> DuplexStream {
    let (near, far) = tokio::io::duplex(256 * 1024);
    tokio::spawn(serve(far, Arc::clone(case)));
    near
}

async fn serve(mut io: DuplexStream, case: Arc<Case>) {
    if io.write_all(&frame(SETTINGS, 0, 0, &[])).await.is_err() {
        return;
    }
    let mut preface = [0u8; 24];
    if io.read_exact(&mut preface).await.is_err() {
        return;
    }
    loop {
        let mut head = [0u8; 9];
        if io.read_exact(&mut head).await.is_err() {
            return;
        }
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        if io.read_exact(&mut payload).await.is_err() {
            return;
        }
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let answer = match head[3] {
            SETTINGS if head[4] & 1 == 0 => frame(SETTINGS, 1, 0, &[]),
            HEADERS if case.first.swap(false, Ordering::SeqCst) => {
                if io.write_all(&case.frames).await.is_err() {
                    return;
                }
                if case.close {
                    let _ = io.shutdown().await;
                    let mut sink = [0u8; 1024];
                    while io.read(&mut sink).await.unwrap_or(0) > 0 {}
                    return;
                }
                continue;
            }
            HEADERS => second(stream),
            _ => continue,
        };
        if io.write_all(&answer).await.is_err() {
            return;
        }
    }
}

/// courier's connections: to the case's server, in memory.
struct Memory(Arc<Case>);

impl Connect for Memory {
    fn connect(&self, _host: &str, _port: u16) -> Connecting {
        let io = dial(&self.0);
        Box::pin(async move { Ok(Box::new(io) as Box<dyn AsyncIo>) })
    }
}

/// courier's reading, as `differential_h2/harness.rs` makes it.
async fn courier_reads(case: Arc<Case>) -> Record {
    let client = Client::builder()
        .http2_prior_knowledge()
        .timeout(STEP)
        .no_env_proxy()
        .connector(Memory(case))
        .build()
        .expect("valid configuration");
    let url = "http://fuzz.invalid/";
    let first = courier_answer(&client, url).await;
    let before = client.metrics().connections_established;
    let second = match courier_answer(&client, url).await {
        Ok(answer) if is_second(&answer) => match client.metrics().connections_established {
            n if n == before => Second::Reused,
            _ => Second::Redialed,
        },
        Ok(answer) => Second::Wrong(format!("{answer:?}")),
        Err(kind) => Second::Failed(courier_class(kind)),
    };
    let kind = first.as_ref().err().copied();
    let first = first.map_err(|kind| match kind {
        ErrorKind::Protocol if second == Second::Reused => Class::Stream,
        ErrorKind::Protocol | ErrorKind::ConnectionClosed => Class::Connection,
        other => courier_class(other),
    });
    Record {
        first,
        second,
        kind,
    }
}

async fn courier_answer(client: &Client, url: &str) -> Result<Answer, ErrorKind> {
    // The client's own timeout bounds it; this only the harness.
    let res = tokio::time::timeout(4 * STEP, client.get(url).send())
        .await
        .expect("courier answers or fails within its timeout")
        .map_err(|e| e.kind())?;
    let status = res.status().as_u16();
    let headers = record::selected(res.headers());
    let collected = tokio::time::timeout(4 * STEP, res.into_body().collect())
        .await
        .expect("courier's body ends or fails within its timeout")
        .map_err(|e| match e.kind() {
            ErrorKind::Timeout => ErrorKind::Timeout,
            _ => ErrorKind::Body,
        })?;
    let trailers = collected.trailers().map(record::selected_trailers);
    Ok(Answer {
        status,
        headers,
        body: collected.to_bytes().to_vec(),
        trailers,
    })
}

type SendRequest = h2::client::SendRequest<Bytes>;

async fn h2_connect(case: &Arc<Case>) -> Option<SendRequest> {
    let (send, conn) = tokio::time::timeout(
        STEP,
        h2::client::Builder::new()
            .enable_push(false)
            .handshake(dial(case)),
    )
    .await
    .ok()?
    .ok()?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Some(send)
}

/// h2's reading, as `differential_h2/h2_reader.rs` makes it.
async fn h2_reads(case: Arc<Case>) -> Record {
    let mut send = h2_connect(&case).await.expect("h2 handshake in memory");
    let first = record::h2_answer(&mut send, "http://fuzz.invalid/", STEP).await;
    let second = match record::h2_answer(&mut send, "http://fuzz.invalid/", STEP).await {
        Ok(answer) if is_second(&answer) => Second::Reused,
        Ok(answer) => Second::Wrong(format!("{answer:?}")),
        Err(Class::Timeout) => Second::Failed(Class::Timeout),
        Err(_) => match h2_connect(&case).await {
            None => Second::Failed(Class::Connection),
            Some(mut fresh) => match record::h2_answer(&mut fresh, "http://fuzz.invalid/", STEP).await {
                Ok(answer) if is_second(&answer) => Second::Redialed,
                Ok(answer) => Second::Wrong(format!("{answer:?}")),
                Err(class) => Second::Failed(class),
            },
        },
    };
    Record {
        first,
        second,
        kind: None,
    }
}


/// Whether a PRIORITY frame, or HEADERS with priority fields, makes a
/// stream depend on itself (h2 resets the stream; courier ignores the
/// deprecated fields, RFC 9113 §5.3.2).
fn self_dependency(mut frames: &[u8]) -> bool {
    while frames.len() >= 9 {
        let len = usize::from(frames[0]) << 16 | usize::from(frames[1]) << 8 | usize::from(frames[2]);
        let (ty, flags) = (frames[3], frames[4]);
        let stream = u32::from_be_bytes([frames[5], frames[6], frames[7], frames[8]]) & 0x7fff_ffff;
        let payload = &frames[9..(9 + len).min(frames.len())];
        let at = match (ty, flags & 0x8 != 0) {
            (0x2, _) => Some(0),
            (HEADERS, padded) if flags & 0x20 != 0 => Some(usize::from(padded)),
            _ => None,
        };
        let dependency = at
            .and_then(|at| payload.get(at..at + 4))
            .map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7fff_ffff);
        if dependency == Some(stream) {
            return true;
        }
        frames = &frames[(9 + len).min(frames.len())..];
    }
    false
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, program)) = data.split_first() else {
        return;
    };
    // Longer programs add frames, not kinds of disagreement.
    if program.len() > 2048 {
        return;
    }
    let frames = frames(program);
    let case = |frames: &Vec<u8>| {
        Arc::new(Case {
            frames: frames.clone(),
            close: flags & 1 == 1,
            first: AtomicBool::new(true),
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let courier = rt.block_on(courier_reads(case(&frames)));
    let h2 = rt.block_on(h2_reads(case(&frames)));
    let verdict = compare(&courier, &h2);
    // Policy differences (courier stricter, a retry, who keeps the
    // connection) are listed with their reasons in the corpus; here only
    // what cannot be one: a wrong answer to the next request (a desync),
    // different answers both read whole, h2 refusing what courier read, and
    // courier unable to send a next request after an answer it read whole.
    // (After a first request that failed on both sides, the connection may
    // be broken mid-exchange, e.g. in a header block the server never
    // ends: whether a client then tries it again is a matter of policy.)
    let wrong = |r: &Record| matches!(r.second, Second::Wrong(_));
    let finding = wrong(&courier)
        || wrong(&h2)
        || match verdict {
            Verdict::Differ(_) => courier.first.is_ok() || h2.first.is_ok(),
            // The corpus's priority_self_dependency: courier skips the
            // deprecated priority fields on purpose (RFC 9113 §5.3.2).
            Verdict::H2Refuses => !self_dependency(&frames),
            _ => false,
        };
    assert!(
        !finding,
        "{verdict:?}\ncourier {courier:?}\nh2      {h2:?}\nframes {frames:02x?}"
    );
});
