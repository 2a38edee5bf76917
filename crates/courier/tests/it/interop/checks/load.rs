//! Connections under use: many requests at once, a burst then an idle gap
//! longer than the server's timeouts, runs past the per-connection request
//! limit, and a load run that must end with 0 errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use courier::ServiceClient;

use super::super::fixtures::SMALL;
use super::super::target::Target;
use super::super::tolerance::Tolerance;
use super::{na, CheckResult, Failure, Outcome};

/// What requests sent together came to.
#[derive(Default)]
struct Burst {
    failed: usize,
    first: Option<Failure>,
    /// Responses the server itself cut after its GOAWAY, where it is known
    /// to (see [`cuts_expected`]): counted for [`Tolerance::GoawayCut`].
    cut: u64,
}

impl Burst {
    fn add(&mut self, other: Burst) {
        self.failed += other.failed;
        self.first = self.first.take().or(other.first);
        self.cut += other.cut;
    }
}

/// `n` GETs of small.txt at once.
async fn burst(t: &Target, client: &ServiceClient, n: usize) -> Burst {
    let cuts_expected = cuts_expected(t);
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let request = client.get(t.url("/static/small.txt"));
            tokio::spawn(async move {
                let res = request.send().await?;
                let status = res.status();
                Ok::<_, courier::Error>((status, res.text().await?))
            })
        })
        .collect();
    let mut b = Burst::default();
    for task in tasks {
        let outcome = match task.await.expect("request task") {
            Ok((status, text)) if status == 200 && text == SMALL => None,
            Ok((status, text)) => Some(super::mismatch(format!(
                "small.txt answered {status} with {} bytes",
                text.len()
            ))),
            Err(err) if cuts_expected && cut_by_goaway(&err) => {
                b.cut += 1;
                None
            }
            Err(err) => Some(Failure::from(err)),
        };
        if let Some(f) = outcome {
            b.failed += 1;
            b.first.get_or_insert(f);
        }
    }
    b
}

/// `n` GETs one after another, up to the first that fails: a server that
/// stopped answering fails the check at its first request timeout, not
/// after `n` of them (which is past the check's limit: a `hang`).
async fn in_a_row(t: &Target, client: &ServiceClient, n: usize) -> Burst {
    let mut all = Burst::default();
    for _ in 0..n {
        all.add(burst(t, client, 1).await);
        if all.failed > 0 {
            break;
        }
    }
    all
}

fn verdict(t: &Target, what: &str, of: usize, b: Burst) -> CheckResult {
    let note = format!("{of} requests");
    match b.first {
        Some(f) => Err(Failure::new(
            f.kind,
            format!("{what}: {} of {of} failed, first: {}", b.failed, f.detail),
        )),
        None => with_cuts(t, note, b.cut),
    }
}

/// A check that passed with `cut` responses cut by the server after its
/// GOAWAY: ok with none, tolerated up to [`Tolerance::GoawayCut`]'s bound
/// per check, failed past it.
pub(super) fn with_cuts(t: &Target, note: String, cut: u64) -> CheckResult {
    if cut == 0 {
        return Ok(Outcome::Ok(note));
    }
    let why = format!(
        "cut by the server after its GOAWAY ({})",
        t.caps.drops_streams_at_goaway.unwrap_or_default()
    );
    absorbed(note, Tolerance::GoawayCut, cut, &why)
}

/// A check that passed but for `count` failures `tolerance` absorbs
/// (`why`, said in the note): tolerated up to its bound per check, failed
/// past it.
fn absorbed(note: String, tolerance: Tolerance, count: u64, why: &str) -> CheckResult {
    let note = format!("{note}; {count} {why}");
    if count > tolerance.per_check() {
        return Err(super::mismatch(format!(
            "{note}: more than {}'s bound of {} per check",
            tolerance.name(),
            tolerance.per_check()
        )));
    }
    Ok(Outcome::Tolerated {
        tolerance,
        count,
        note,
    })
}

/// A load check that passed but for `stalled` requests lost to the QUIC
/// idle timeout of connections the server left silent: tolerated up to
/// [`Tolerance::H3IdleStall`]'s bound per check, failed past it.
pub(super) fn with_stalls(t: &Target, note: String, stalled: u64) -> CheckResult {
    let why = format!(
        "lost to the QUIC idle timeout ({})",
        t.caps.h3_idle_stall.unwrap_or_default()
    );
    absorbed(note, Tolerance::H3IdleStall, stalled, &why)
}

/// A request lost because its HTTP/3 connection reached QUIC's idle
/// timeout: nothing came from the server for that long, not even an
/// acknowledgement of the PINGs courier sends while requests wait. courier
/// words it with quinn's "timed out"; no public error type says it, so
/// the words are matched here, in the suite only.
pub(super) fn idle_stalled(err: &courier::Error) -> bool {
    err.kind() == courier::ErrorKind::ConnectionClosed && worded_as_idle_stall(&format!("{err:#}"))
}

/// How courier words a request lost to its HTTP/3 connection's QUIC idle
/// timeout, within the error's message: on its stream (reading or
/// writing), or still waiting for the server's credit to open one (a
/// loaded hypercorn grants it late, so a request meets the stall there
/// too; the connection keeps itself alive for such a request, so it is
/// the server's silence all the same).
const IDLE_STALL_WORDS: [&str; 2] = ["connection lost: timed out", "HTTP/3: timed out"];

/// `message` is a QUIC idle timeout as courier words it ([`IDLE_STALL_WORDS`]).
pub(super) fn worded_as_idle_stall(message: &str) -> bool {
    IDLE_STALL_WORDS.iter().any(|words| message.contains(words))
}

/// `mode.concurrent` requests in flight at once on one client, on
/// connections of the expected version only; over HTTP/2 no more
/// connections than the server's stream limit (and request limit) call for.
pub async fn concurrent(t: &Target) -> CheckResult {
    let n = t.mode.concurrent;
    let client = t.client();
    let outcome = verdict(t, "concurrent", n, burst(t, &client, n).await)?;
    // Connections dialed for requests that others already served may
    // still be connecting: compare counts once they are done.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut m = client.metrics();
    while (m.connect_attempts_current > 0 || m.tls_handshakes_current > 0)
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        m = client.metrics();
    }
    if t.proto.is_h2() {
        super::ensure(m.connections_established_http1 == 0, || format!("{m:?}"))?;
        let per_connection = t
            .caps
            .max_streams
            .map(|streams| t.caps.request_limit.map_or(streams, |r| r.min(streams)));
        if let Some(per) = per_connection {
            let most = (n as u64).div_ceil(u64::from(per)) + 1;
            super::ensure(
                (1..=most).contains(&m.connections_established_http2),
                || {
                    format!(
                        "{} HTTP/2 connections, at most {most} expected: {m:?}",
                        m.connections_established_http2
                    )
                },
            )?;
        }
    } else if t.proto.is_multiplexed() {
        // HTTP/3: every connection HTTP/3, and no more of them than the
        // default stream limit (100, until the server's is learnt) calls for.
        let most = (n as u64).div_ceil(100) + 1;
        super::ensure(
            m.connections_established_http1 == 0
                && m.connections_established_http2 == 0
                && (1..=most).contains(&m.connections_established_http3),
            || format!("HTTP/3 connections, at most {most} expected: {m:?}"),
        )?;
    } else {
        super::ensure(m.connections_established_http2 == 0, || format!("{m:?}"))?;
    }
    if t.base.starts_with("https") {
        super::ensure(m.tls_handshakes == m.connections_established, || {
            format!("{m:?}")
        })?;
    }
    super::ensure(m.requests_failed == 0, || format!("{m:?}"))?;
    Ok(outcome)
}

/// A burst (which leaves connections idle in the pool, some never used),
/// then a pause longer than the server's idle and request-header timeouts,
/// then another burst and requests in a row: none may fail.
pub async fn idle_gap(t: &Target) -> CheckResult {
    let Some(idle) = t.caps.idle else {
        return na("this profile's timeouts are the server's (longer than the suite waits)");
    };
    let gap = idle + Duration::from_millis(1500);
    if gap > t.mode.idle_max {
        return na(format!("gap {gap:?} longer than this mode waits"));
    }
    let client = t.client();
    let n = 50;
    let mut before = burst(t, &client, n).await;
    // Counted with the rest below.
    let cut_before = std::mem::take(&mut before.cut);
    verdict(t, "first burst", n, before)?;
    tokio::time::sleep(gap).await;
    let mut after = burst(t, &client, n).await;
    after.add(in_a_row(t, &client, 10).await);
    after.cut += cut_before;
    verdict(t, &format!("after {gap:?} idle"), n + 10, after)
}

/// More requests in a row on one client than the tight profile's
/// per-connection limit (100): the server closes connections (or sends
/// GOAWAY) along the way.
pub async fn request_limit(t: &Target) -> CheckResult {
    let client = t.client();
    let n = t.mode.sequential;
    let all = in_a_row(t, &client, n).await;
    let limit = match t.caps.request_limit {
        Some(limit) => format!("{n} in a row, limit {limit}"),
        None => format!("{n} in a row (no limit)"),
    };
    let named = |note: String| note.replacen(&format!("{n} requests"), &limit, 1);
    verdict(t, &limit, n, all).map(|o| match o {
        Outcome::Ok(note) => Outcome::Ok(named(note)),
        Outcome::Tolerated {
            tolerance,
            count,
            note,
        } => Outcome::Tolerated {
            tolerance,
            count,
            note: named(note),
        },
        other => other,
    })
}

/// A load run like `courier bench`: `c` requests in flight for
/// `mode.load_for` on one client; 0 errors.
pub async fn load(t: &Target) -> CheckResult {
    let c = if t.proto.is_multiplexed() {
        t.mode.load_concurrency_h2
    } else {
        t.mode.load_concurrency_h1
    };
    let client = t.client();
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    // Responses the server itself cut after its GOAWAY, where it is known
    // to (see `cuts_expected`): counted, and bounded by `with_cuts`.
    let cut = Arc::new(AtomicU64::new(0));
    let cuts_expected = cuts_expected(t);
    // Requests lost to a connection hypercorn left silent (see
    // `idle_stalled`): counted, and bounded by `Tolerance::H3IdleStall`.
    let stalled = Arc::new(AtomicU64::new(0));
    let stalls_expected = t.caps.h3_idle_stall.is_some();
    let until = Instant::now() + t.mode.load_for;
    let first = Arc::new(std::sync::Mutex::new(None::<Failure>));
    let workers: Vec<_> = (0..c)
        .map(|_| {
            let (client, url) = (client.clone(), t.url("/static/small.txt"));
            let (done, errors, first) = (done.clone(), errors.clone(), first.clone());
            let (cut, stalled) = (cut.clone(), stalled.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    let outcome = match client.get(&url).send().await {
                        Ok(res) => res.bytes().await.map(|b| b.len()),
                        Err(err) => Err(err),
                    };
                    match outcome {
                        Ok(len) if len == SMALL.len() => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(len) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            let f = super::mismatch(format!("{len} bytes"));
                            first.lock().unwrap().get_or_insert(f);
                        }
                        Err(err) if cuts_expected && cut_by_goaway(&err) => {
                            cut.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(err) if stalls_expected && idle_stalled(&err) => {
                            stalled.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(err) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            first.lock().unwrap().get_or_insert(Failure::from(err));
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("load worker");
    }
    settled(&client).await?;
    let (done, errors) = (done.load(Ordering::Relaxed), errors.load(Ordering::Relaxed));
    let secs = t.mode.load_for.as_secs_f64();
    let note = format!("-c {c} {secs:.1}s: {done} ok, {errors} errors");
    let cut = cut.load(Ordering::Relaxed);
    let stalled = stalled.load(Ordering::Relaxed);
    let first = first.lock().unwrap().take();
    match first {
        None if done > 0 && stalled > 0 => with_stalls(t, note, stalled),
        None if done > 0 => with_cuts(t, note, cut),
        None => Err(super::mismatch(format!("{note}: nothing completed"))),
        Some(f) => Err(Failure::new(
            f.kind,
            format!("{note}, {cut} cut; first: {}", f.detail),
        )),
    }
}

/// Whether [`Tolerance::GoawayCut`] applies to `t`: HTTP/2 to a server
/// known to cut responses at its request limit
/// (`Caps::drops_streams_at_goaway`), in a profile where it has one.
pub(super) fn cuts_expected(t: &Target) -> bool {
    t.proto.is_h2() && t.caps.drops_streams_at_goaway.is_some() && t.caps.request_limit.is_some()
}

/// A response whose body the server cut by closing the connection after
/// its GOAWAY: a `body` error (the head was read; a request with no answer
/// yet is resent) that courier's error types as such, not courier's own
/// close of a server silent after its GOAWAY.
pub(super) fn cut_by_goaway(err: &courier::Error) -> bool {
    err.kind() == courier::ErrorKind::Body && err.is_closed_after_goaway()
}

/// After a run, the pool's gauges come back to rest within a bounded wait:
/// nothing in flight, queued or connecting, no stream counted as open (a
/// gauge decremented more often than incremented shows up here as a huge
/// count).
async fn settled(client: &ServiceClient) -> Result<(), Failure> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let m = client.metrics();
        let at_rest = m.requests_active == 0
            && m.requests_queued == 0
            && m.http2_streams_active == 0
            && m.connect_attempts_current == 0
            && m.connections_active == 0;
        if at_rest {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Failure::new(
                "metrics",
                format!(
                    "pool not at rest after the run: {} requests active, {} queued, {} streams, {} connecting, {} connections active",
                    m.requests_active,
                    m.requests_queued,
                    m.http2_streams_active,
                    m.connect_attempts_current,
                    m.connections_active
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
