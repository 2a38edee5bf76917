//! The HTTP/1.1 differential harness: one scripted server's bytes read by
//! courier and by hyper's client, both reduced to one record, and compared.
//!
//! Shared by `tests/differential.rs` (the corpus) and
//! `fuzz/fuzz_targets/http1_differential.rs` (arbitrary bytes), so both hold
//! courier to the same rules.
//!
//! The server answers the first request with the case's bytes, verbatim, and
//! then either closes (a close-delimited body needs that) or waits for a
//! second request on the same connection and answers it with [`SECOND`]. A
//! client that reuses the connection must then read exactly [`SECOND`]: any
//! other second answer means it took a wrong end for the first response (a
//! desync), whatever the other client did. Where the two clients disagree
//! about the first response or about reuse, [`compare`] says whether that is
//! a framing disagreement or a difference of policy (one refuses what the
//! other accepts), which the corpus must then allowlist with a reason.

use std::time::Duration;

use bytes::Bytes;
use courier::fuzzing::{Http1Answer, Http1Outcome, Http1Read};
use courier::ErrorKind;
use http::Method;
use http_body_util::{BodyExt, Empty};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The second response: well formed, with a status no case uses first, so
/// a client that reads anything else for it lost track of where the first
/// one ended.
pub const SECOND: &[u8] = b"HTTP/1.1 202 Accepted\r\nContent-Length: 6\r\n\r\nsecond";

/// The second response to a HEAD request: the same head, no body.
pub const SECOND_HEAD: &[u8] = b"HTTP/1.1 202 Accepted\r\nContent-Length: 6\r\n\r\n";

/// How long each step may take (on tokio's paused clock in the corpus).
const STEP: Duration = Duration::from_secs(1);

/// Bodies are read up to this much.
const MAX_BODY: usize = 1 << 20;

/// What the scripted server does on one connection.
#[derive(Debug, Clone, Copy)]
pub struct Script<'a> {
    /// The method of both requests (GET or HEAD).
    pub method: &'a Method,
    /// The answer to the first request, verbatim.
    pub first: &'a [u8],
    /// The server closes its side after `first` (else it waits for a second request).
    pub close: bool,
}

/// How a response head was refused (or never came).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The head was malformed.
    Malformed,
    /// The head was too large.
    TooLarge,
    /// The connection ended before a whole head.
    Closed,
    /// No whole head before the deadline.
    Timeout,
    /// Any other reason (courier's error kind, or hyper's message).
    Other,
}

/// How a body ended, if not well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The body was cut short or malformed.
    Failed,
    /// The body did not end before the deadline.
    Timeout,
}

/// The first answer, as both clients report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum First {
    /// No response.
    Refused(Refusal),
    /// A response and how its body ended.
    Response {
        /// Status code.
        status: u16,
        /// The body, or how it failed.
        body: Result<Vec<u8>, BodyEnd>,
    },
}

/// What the second request on the same connection got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Second {
    /// The connection was not reused (closed or not trusted).
    NotReused,
    /// The connection was reused and the second answer read exactly.
    Served,
    /// The connection was reused and something other than [`SECOND`] was read:
    /// the first response's end was misplaced.
    Desync(String),
}

/// One client's reading of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The first answer.
    pub first: First,
    /// The second request on the same connection.
    pub second: Second,
}

/// courier's record, with what its connection left unread after the first answer.
#[derive(Debug, Clone)]
pub struct CourierRecord {
    /// Normalised like hyper's.
    pub record: Record,
    /// courier's own outcome (through the pool).
    pub outcome: Http1Outcome,
    /// courier's connection alone: the first answer, reuse, unread bytes.
    pub read: Http1Read,
}

/// How the two readings compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The same record.
    Agree,
    /// Both refused the head, for reasons classed differently (courier's, hyper's).
    BothRefuse(Refusal, Refusal),
    /// courier refused a head hyper accepted.
    CourierRefuses,
    /// hyper refused a head courier accepted.
    HyperRefuses,
    /// Both read the same head and neither took its body as complete (nor
    /// reused the connection), but they stopped for different reasons
    /// (courier's, hyper's): one found the body malformed, the other waited.
    BothFailBody(BodyEnd, BodyEnd),
    /// Both read the same head; courier refused the body hyper took whole
    /// (a refusal, not a wait: a wait means another framing).
    CourierRejectsBody,
    /// Both read the same head; hyper refused the body courier took whole
    /// (courier is laxer: a finding).
    HyperRejectsBody,
    /// Both read the same first answer; courier did not reuse the connection
    /// and hyper did (courier is stricter about reuse).
    CourierCloses,
    /// Where the first response ends, or whether the connection can be reused,
    /// differs (or one client desynced on its own): a desync bug on one side.
    Framing(String),
}

/// Runs the script against a fresh connection for each reading and compares them.
pub async fn run(script: Script<'_>) -> (CourierRecord, Record, Verdict) {
    let courier = courier_reads(script).await;
    let hyper = hyper_reads(script).await;
    let verdict = compare(&courier, &hyper);
    (courier, hyper, verdict)
}

/// A connection whose far end plays `script`.
fn connection(script: Script<'_>) -> DuplexStream {
    let (near, far) = tokio::io::duplex(64 * 1024);
    let second = match *script.method == Method::HEAD {
        true => SECOND_HEAD,
        false => SECOND,
    };
    tokio::spawn(serve(far, script.first.to_vec(), script.close, second));
    near
}

async fn serve(mut far: DuplexStream, first: Vec<u8>, close: bool, second: &'static [u8]) {
    let mut buf = Vec::new();
    if !read_request(&mut far, &mut buf).await || far.write_all(&first).await.is_err() {
        return;
    }
    if close {
        let _ = far.shutdown().await;
    } else if read_request(&mut far, &mut buf).await && far.write_all(second).await.is_err() {
        return;
    }
    // Reads on so the client's writes never block, until it goes.
    let mut sink = [0u8; 1024];
    while far.read(&mut sink).await.unwrap_or(0) > 0 {}
}

/// Reads one request head (requests here have no body); false at the end of the stream.
async fn read_request(far: &mut DuplexStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            return true;
        }
        match far.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// courier's reading: the pool's two requests, and its connection alone for
/// the unread bytes.
pub async fn courier_reads(script: Script<'_>) -> CourierRecord {
    let outcome =
        courier::fuzzing::http1_two_requests(connection(script), script.method.clone()).await;
    let read = courier::fuzzing::http1_read_one(connection(script), script.method.clone()).await;
    let first = courier_first(&outcome.first);
    let expected: &[u8] = match *script.method == Method::HEAD {
        true => b"",
        false => b"second",
    };
    let second = match &outcome.second {
        None | Some(Http1Answer::Refused(ErrorKind::ConnectionClosed | ErrorKind::Canceled)) => {
            Second::NotReused
        }
        Some(Http1Answer::Response {
            status: 202,
            body: Ok(body),
            ..
        }) if body == expected => Second::Served,
        Some(other) => Second::Desync(format!("{other:?}")),
    };
    CourierRecord {
        record: Record { first, second },
        outcome,
        read,
    }
}

fn courier_first(answer: &Http1Answer) -> First {
    match answer {
        Http1Answer::Refused(kind) => First::Refused(match kind {
            ErrorKind::Protocol => Refusal::Malformed,
            ErrorKind::HeadersTooLarge => Refusal::TooLarge,
            // Dns: courier retried elsewhere a request the connection closed on unanswered.
            ErrorKind::ConnectionClosed | ErrorKind::Dns => Refusal::Closed,
            ErrorKind::Timeout => Refusal::Timeout,
            _ => Refusal::Other,
        }),
        Http1Answer::Response { status, body, .. } => First::Response {
            status: *status,
            body: match body {
                Ok(bytes) => Ok(bytes.clone()),
                Err(ErrorKind::Timeout) => Err(BodyEnd::Timeout),
                Err(_) => Err(BodyEnd::Failed),
            },
        },
    }
}

/// hyper's reading: two requests on one `hyper::client::conn::http1` connection.
pub async fn hyper_reads(script: Script<'_>) -> Record {
    let io = hyper_util::rt::TokioIo::new(connection(script));
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(io)
        .await
        .expect("handshake over a duplex");
    let driver = tokio::spawn(conn);
    let first = match hyper_answer(&mut sender, script.method).await {
        Ok((status, body)) => First::Response { status, body },
        Err(refusal) => First::Refused(refusal),
    };
    let reusable = matches!(tokio::time::timeout(STEP, sender.ready()).await, Ok(Ok(())));
    let expected: &[u8] = match *script.method == Method::HEAD {
        true => b"",
        false => b"second",
    };
    let second = if !reusable {
        Second::NotReused
    } else {
        match hyper_answer(&mut sender, script.method).await {
            Ok((202, Ok(body))) if body == expected => Second::Served,
            // Sent on a connection that closed first: not reused.
            Err(Refusal::Closed) => Second::NotReused,
            other => Second::Desync(format!("{other:?}")),
        }
    };
    driver.abort();
    Record { first, second }
}

async fn hyper_answer(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    method: &Method,
) -> Result<(u16, Result<Vec<u8>, BodyEnd>), Refusal> {
    let req = http::Request::builder()
        .method(method.clone())
        .uri("/")
        .header("host", "fuzz.invalid")
        .body(Empty::new())
        .expect("valid request");
    let res = match tokio::time::timeout(STEP, sender.send_request(req)).await {
        Ok(Ok(res)) => res,
        Ok(Err(e)) => return Err(hyper_refusal(&e)),
        Err(_) => return Err(Refusal::Timeout),
    };
    let status = res.status().as_u16();
    let mut body = res.into_body();
    let mut bytes = Vec::new();
    let reading = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| BodyEnd::Failed)?;
            if let Ok(data) = frame.into_data() {
                bytes.extend_from_slice(&data);
                if bytes.len() > MAX_BODY {
                    return Err(BodyEnd::Failed);
                }
            }
        }
        Ok(())
    };
    let body = match tokio::time::timeout(STEP, reading).await {
        Ok(Ok(())) => Ok(bytes),
        Ok(Err(end)) => Err(end),
        Err(_) => Err(BodyEnd::Timeout),
    };
    Ok((status, body))
}

fn hyper_refusal(e: &hyper::Error) -> Refusal {
    // `is_parse_too_large` exists only with hyper's server feature, which the
    // fuzz target does without: its message tells the same.
    if e.is_parse() && e.to_string().contains("too large") {
        Refusal::TooLarge
    } else if e.is_parse() || e.is_parse_status() {
        Refusal::Malformed
    } else if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        Refusal::Closed
    } else {
        Refusal::Other
    }
}

/// Compares courier's reading with hyper's (see [`Verdict`]).
pub fn compare(courier: &CourierRecord, hyper: &Record) -> Verdict {
    let c = &courier.record;
    if let Some(problem) = courier_inconsistent(courier) {
        return Verdict::Framing(problem);
    }
    if let Second::Desync(what) = &c.second {
        return Verdict::Framing(format!("courier desynced: second answer {what}"));
    }
    if let Second::Desync(what) = &hyper.second {
        return Verdict::Framing(format!("hyper desynced: second answer {what}"));
    }
    match (&c.first, &hyper.first) {
        (First::Refused(a), First::Refused(b)) if a == b => Verdict::Agree,
        (First::Refused(a), First::Refused(b)) => Verdict::BothRefuse(*a, *b),
        (First::Refused(_), First::Response { .. }) => Verdict::CourierRefuses,
        (First::Response { .. }, First::Refused(_)) => Verdict::HyperRefuses,
        (
            First::Response {
                status: a,
                body: Err(x),
            },
            First::Response {
                status: b,
                body: Err(y),
            },
        ) if a == b && x != y && c.second == hyper.second => Verdict::BothFailBody(*x, *y),
        (
            First::Response {
                status: a,
                body: Err(BodyEnd::Failed),
            },
            First::Response {
                status: b,
                body: Ok(_),
            },
        ) if a == b && c.second == Second::NotReused => Verdict::CourierRejectsBody,
        (
            First::Response {
                status: a,
                body: Ok(_),
            },
            First::Response {
                status: b,
                body: Err(BodyEnd::Failed),
            },
        ) if a == b && hyper.second == Second::NotReused => Verdict::HyperRejectsBody,
        (a, b) if a != b => Verdict::Framing(format!("first answer: courier {a:?}, hyper {b:?}")),
        _ => match (&c.second, &hyper.second) {
            (a, b) if a == b => Verdict::Agree,
            (Second::NotReused, Second::Served) => Verdict::CourierCloses,
            (a, b) => Verdict::Framing(format!("reuse: courier {a:?}, hyper {b:?}")),
        },
    }
}

/// courier's two readings (the pool's, the connection's alone) must agree
/// with each other, and a connection kept for reuse must have nothing unread.
fn courier_inconsistent(courier: &CourierRecord) -> Option<String> {
    let read = &courier.read;
    if read.reusable && !read.unread.is_empty() {
        return Some(format!(
            "courier's connection is reusable with {:?} unread",
            String::from_utf8_lossy(&read.unread)
        ));
    }
    // The pool refuses a declared length over its body limit before reading
    // it; the connection alone has no such limit and waits for the bytes.
    let limited = matches!(
        courier.outcome.first,
        Http1Answer::Response {
            body: Err(ErrorKind::BodyTooLarge),
            ..
        }
    );
    if !limited && courier_first(&read.answer) != courier_first(&courier.outcome.first) {
        return Some(format!(
            "courier's pool read {:?}, its connection alone {:?}",
            courier.outcome.first, read.answer
        ));
    }
    None
}

/// Where hyper is known to be wrong about framing: the reason, and the
/// same bytes corrected so that hyper reads them right. The fuzz target and
/// the corpus do not take hyper's reading of such bytes as the reference;
/// they hold courier to the corrected bytes instead ([`known_wrong_holds`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownWrong {
    /// Why hyper is wrong (each corpus case for it must name it).
    pub reason: &'static str,
    /// The bytes with what hyper misreads taken out.
    pub corrected: Vec<u8>,
}

/// Recognises the bytes hyper is known to frame wrongly:
///
/// - A `Transfer-Encoding` list whose last element is empty (`chunked,`):
///   hyper takes the last element, empty, as the final coding and reads the
///   body to the close; RFC 9110 §5.6.1 has recipients ignore empty list
///   elements, which leaves `chunked` final, so RFC 9112 §6.3 frames the body
///   as chunked (courier). Corrected: the empty elements at the end of each
///   `Transfer-Encoding` line of the final head removed (a line with no
///   element at all removed whole), which RFC 9110 §5.6.1 makes the same
///   field.
pub fn hyper_known_wrong(bytes: &[u8]) -> Option<KnownWrong> {
    let mut any_coding = false;
    let mut empty_last = false;
    let mut interim = false;
    // Byte ranges to cut from the final head.
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    // Only the final head counts: 1xx heads go before it, the body after.
    for raw in bytes.split(|&b| b == b'\n') {
        let line_start = start;
        start += raw.len() + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.starts_with(b"HTTP/") {
            interim = line.get(9) == Some(&b'1');
            (any_coding, empty_last) = (false, false);
            cuts.clear();
            continue;
        }
        if line.is_empty() {
            if interim {
                continue;
            }
            break;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon].eq_ignore_ascii_case(b"transfer-encoding") {
            continue;
        }
        let value = &line[colon + 1..];
        let mut elements = value.split(|&b| b == b',').map(<[u8]>::trim_ascii);
        any_coding |= elements.clone().any(|e| !e.is_empty());
        empty_last = elements.next_back().is_some_and(<[u8]>::is_empty);
        match value
            .iter()
            .rposition(|&b| !matches!(b, b',' | b' ' | b'\t'))
        {
            // Keeps the last element, drops the empty ones and blanks after it.
            Some(last) => cuts.push((
                line_start + colon + 2 + last,
                line_start + colon + 1 + value.len(),
            )),
            // No element at all: the whole line goes, its LF included.
            None => cuts.push((line_start, (line_start + raw.len() + 1).min(bytes.len()))),
        }
    }
    if !(any_coding && empty_last) {
        return None;
    }
    let mut corrected = Vec::with_capacity(bytes.len());
    let mut from = 0;
    for (cut_start, cut_end) in cuts {
        corrected.extend_from_slice(&bytes[from..cut_start]);
        from = cut_end;
    }
    corrected.extend_from_slice(&bytes[from..]);
    Some(KnownWrong {
        reason: "hyper ignores no empty element at the end of Transfer-Encoding (RFC 9110 §5.6.1)",
        corrected,
    })
}

/// For bytes hyper is known to misread: courier must read them exactly as it
/// reads the corrected bytes (the one framing RFC 9110 §5.6.1 allows), or
/// refuse them as malformed without reusing the connection; and on the
/// corrected bytes courier and hyper must not disagree about framing.
/// `Ok` with what was checked, or the finding.
pub async fn known_wrong_holds(
    script: Script<'_>,
    courier: &CourierRecord,
    known: &KnownWrong,
) -> Result<(), String> {
    let corrected = Script {
        first: &known.corrected,
        ..script
    };
    let (courier_fixed, hyper_fixed, fixed_verdict) = run(corrected).await;
    known_wrong_verdict(courier, &courier_fixed, &hyper_fixed, &fixed_verdict)
}

/// The rule of [`known_wrong_holds`] on records already read.
pub fn known_wrong_verdict(
    courier: &CourierRecord,
    courier_fixed: &CourierRecord,
    hyper_fixed: &Record,
    fixed_verdict: &Verdict,
) -> Result<(), String> {
    if let Some(problem) = courier_inconsistent(courier) {
        return Err(problem);
    }
    let refused = courier.record
        == Record {
            first: First::Refused(Refusal::Malformed),
            second: Second::NotReused,
        };
    if !refused && courier.record != courier_fixed.record {
        return Err(format!(
            "courier read {:?}, but {:?} once the empty codings are removed",
            courier.record, courier_fixed.record
        ));
    }
    if matches!(
        fixed_verdict,
        Verdict::Framing(_) | Verdict::HyperRejectsBody
    ) {
        return Err(format!(
            "corrected bytes: {fixed_verdict:?}: courier {:?}, hyper {hyper_fixed:?}",
            courier_fixed.record
        ));
    }
    Ok(())
}
