//! The suite's gates, tested with checks that fail on purpose: a check
//! that needed a second run is flaky (never ok) and bounded; only a passed
//! deadline is run again, and only in the short run; a tolerance applies
//! only within its scope (typed error, protocol, caps), and one over its
//! bound, per check or per run, fails the run.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Duration;

use super::super::matrix::{Counts, Matrix, Row};
use super::super::servers::Caps;
use super::super::target::{Mode, Proto, Target};
use super::super::tolerance::{Tolerance, MAX_FLAKY};
use super::{load, run_with, uploads, CheckFuture, CheckResult, Failure, Outcome};
use crate::support::h2::{self, frame, goaway, Peer, END_HEADERS, HEADERS, NO_ERROR, STATUS_200};

fn target(full: bool, proto: Proto, caps: Caps) -> Target {
    let mut mode = Mode::from_env();
    mode.full = full;
    Target {
        base: "http://127.0.0.1:1".into(),
        proto,
        ca_pem: String::new(),
        caps,
        mode,
    }
}

/// Runs one fake check whose runs give `script`'s results in turn: its
/// outcome, and how many times it ran.
async fn run_fake(t: &Target, script: Vec<CheckResult>) -> (Outcome, usize) {
    let runs = AtomicUsize::new(0);
    let script = Mutex::new(script.into_iter());
    let mut out = run_with(t, vec!["fake"], |_, _| -> CheckFuture<'_> {
        runs.fetch_add(1, SeqCst);
        let result = script
            .lock()
            .unwrap()
            .next()
            .expect("run more than scripted");
        Box::pin(async move { result })
    })
    .await;
    assert_eq!(out.len(), 1);
    (out.pop().unwrap().1, runs.load(SeqCst))
}

fn timeout() -> CheckResult {
    Err(Failure::new("timeout", "request timed out"))
}

fn passed() -> CheckResult {
    Ok(Outcome::Ok(String::new()))
}

fn matrix_of(outcomes: Vec<Outcome>) -> Matrix {
    Matrix {
        checks: vec!["fake"],
        rows: outcomes
            .into_iter()
            .enumerate()
            .map(|(i, outcome)| Row {
                server: format!("server{i}"),
                profile: "default",
                proto: "h1",
                cells: vec![("fake", outcome)],
                restarts: 0,
            })
            .collect(),
        ..Matrix::default()
    }
}

fn flaky() -> Outcome {
    Outcome::Flaky {
        first: "timeout: request timed out".into(),
        then: Box::new(Outcome::Ok(String::new())),
    }
}

fn tolerated(tolerance: Tolerance, count: u64) -> Outcome {
    Outcome::Tolerated {
        tolerance,
        count,
        note: String::new(),
    }
}

#[tokio::test]
async fn a_check_that_passes_on_its_second_run_is_flaky_never_ok() {
    let t = target(false, Proto::H1, Caps::default());
    let (outcome, runs) = run_fake(&t, vec![timeout(), passed()]).await;
    assert_eq!(runs, 2);
    let Outcome::Flaky { first, then } = &outcome else {
        panic!("not flaky: {outcome:?}");
    };
    assert!(first.starts_with("timeout: "), "{first}");
    assert!(matches!(**then, Outcome::Ok(_)), "{then:?}");
    let m = matrix_of(vec![outcome]);
    assert_eq!(
        m.counts(),
        Counts {
            flaky: 1,
            ..Counts::default()
        }
    );
    assert!(m.markdown().contains("| flaky |"), "{}", m.markdown());
    assert!(m.summary().contains("first timeout: request timed out"));
    assert!(m.failures().is_empty(), "{:?}", m.failures());
}

#[tokio::test]
async fn a_mismatch_is_not_run_again() {
    let t = target(false, Proto::H1, Caps::default());
    let wrong = Err(super::mismatch("bytes differ"));
    let (outcome, runs) = run_fake(&t, vec![wrong, passed()]).await;
    assert_eq!(runs, 1);
    assert!(
        matches!(&outcome, Outcome::Fail { kind, .. } if kind == "mismatch"),
        "{outcome:?}"
    );
    assert_eq!(matrix_of(vec![outcome]).failures().len(), 1);
}

#[tokio::test]
async fn a_body_or_protocol_error_is_not_run_again() {
    let t = target(false, Proto::H1, Caps::default());
    for kind in ["body", "protocol", "connection_closed", "metrics"] {
        let (outcome, runs) = run_fake(&t, vec![Err(Failure::new(kind, "x")), passed()]).await;
        assert_eq!(runs, 1, "{kind}");
        assert!(
            matches!(outcome, Outcome::Fail { .. }),
            "{kind}: {outcome:?}"
        );
    }
}

#[tokio::test]
async fn a_check_that_fails_twice_fails_with_both_failures() {
    let t = target(false, Proto::H1, Caps::default());
    let (outcome, runs) = run_fake(&t, vec![timeout(), timeout()]).await;
    assert_eq!(runs, 2);
    let Outcome::Fail { kind, detail } = &outcome else {
        panic!("not failed: {outcome:?}");
    };
    assert_eq!(kind, "timeout");
    assert!(detail.contains("second run; first: timeout"), "{detail}");
    assert_eq!(matrix_of(vec![outcome]).counts().failed, 1);
}

#[tokio::test]
async fn the_full_run_runs_nothing_again() {
    let t = target(true, Proto::H1, Caps::default());
    let (outcome, runs) = run_fake(&t, vec![timeout(), passed()]).await;
    assert_eq!(runs, 1);
    assert!(matches!(outcome, Outcome::Fail { .. }), "{outcome:?}");
}

#[tokio::test]
async fn an_absorbed_failure_is_tolerated_and_counted_not_run_again() {
    let t = target(false, Proto::H1, Caps::default());
    let stall = Failure {
        absorbed: Some(Tolerance::UploadStall),
        ..Failure::new("timeout", "no response head")
    };
    let (outcome, runs) = run_fake(&t, vec![Err(stall), passed()]).await;
    assert_eq!(runs, 1);
    assert!(
        matches!(
            outcome,
            Outcome::Tolerated {
                tolerance: Tolerance::UploadStall,
                count: 1,
                ..
            }
        ),
        "{outcome:?}"
    );
    let m = matrix_of(vec![outcome]);
    assert_eq!(m.counts().tolerated, 1);
    let stalls = &m.absorbed()[0];
    assert_eq!(
        (stalls.tolerance, stalls.count),
        (Tolerance::UploadStall, 1)
    );
    assert!(m.failures().is_empty());
}

#[test]
fn more_flaky_cells_than_the_bound_fail_the_run() {
    let within = matrix_of((0..MAX_FLAKY).map(|_| flaky()).collect());
    assert!(within.failures().is_empty(), "{:?}", within.failures());
    let over = matrix_of((0..=MAX_FLAKY).map(|_| flaky()).collect());
    let failures = over.failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("flaky cells, more than the bound"));
}

#[test]
fn a_tolerance_over_its_run_bound_fails_the_run() {
    for t in Tolerance::ALL {
        let per_cell = t.per_check();
        let cells = t.per_run().div_ceil(per_cell);
        // Exactly the bound, spread over cells each within theirs.
        let mut outcomes: Vec<_> = (0..cells).map(|_| tolerated(t, per_cell)).collect();
        let over_by = cells * per_cell - t.per_run();
        if over_by > 0 {
            outcomes[0] = tolerated(t, per_cell - over_by);
        }
        let m = matrix_of(outcomes.clone());
        assert_eq!(
            m.absorbed().iter().map(|a| a.count).sum::<u64>(),
            t.per_run()
        );
        assert!(m.failures().is_empty(), "{}: {:?}", t.name(), m.failures());
        // One more, in a cell of its own.
        outcomes.push(tolerated(t, 1));
        let failures = matrix_of(outcomes).failures();
        assert_eq!(failures.len(), 1, "{}: {failures:?}", t.name());
        assert!(failures[0].contains("more than its bound"), "{failures:?}");
    }
}

#[test]
fn a_tolerance_over_its_check_bound_fails_the_run() {
    for t in Tolerance::ALL {
        let m = matrix_of(vec![tolerated(t, t.per_check())]);
        assert!(m.failures().is_empty(), "{}: {:?}", t.name(), m.failures());
        let failures = matrix_of(vec![tolerated(t, t.per_check() + 1)]).failures();
        assert!(
            failures.iter().any(|f| f.contains("in one check")),
            "{}: {failures:?}",
            t.name()
        );
    }
}

#[test]
fn a_flaky_cells_tolerated_second_run_counts_for_its_tolerance() {
    let t = Tolerance::GoawayCut;
    let second = Outcome::Flaky {
        first: "timeout: x".into(),
        then: Box::new(tolerated(t, t.per_check())),
    };
    let m = matrix_of(vec![second, tolerated(t, t.per_run())]);
    assert_eq!(m.counts().flaky, 1);
    assert!(
        m.failures().iter().any(|f| f.contains(t.name())),
        "{:?}",
        m.failures()
    );
}

#[test]
fn the_gates_goaway_cut_per_check_bound_fails_the_check() {
    let t = target(true, Proto::H2c, hypercorn_caps(Some(100)));
    let within = load::with_cuts(&t, "n".into(), Tolerance::GoawayCut.per_check());
    assert!(
        matches!(within, Ok(Outcome::Tolerated { .. })),
        "{within:?}"
    );
    assert!(matches!(
        load::with_cuts(&t, "n".into(), 0),
        Ok(Outcome::Ok(_))
    ));
    let over = load::with_cuts(&t, "n".into(), Tolerance::GoawayCut.per_check() + 1);
    assert!(matches!(&over, Err(f) if f.kind == "mismatch"), "{over:?}");
}

fn hypercorn_caps(request_limit: Option<u32>) -> Caps {
    Caps {
        request_limit,
        drops_streams_at_goaway: Some("python-h2"),
        ..Caps::default()
    }
}

#[test]
fn goaway_cuts_are_expected_over_http2_where_the_server_has_a_request_limit() {
    let limited = hypercorn_caps(Some(100));
    assert!(load::cuts_expected(&target(
        true,
        Proto::H2c,
        limited.clone()
    )));
    assert!(load::cuts_expected(&target(
        true,
        Proto::TlsH2,
        limited.clone()
    )));
    assert!(!load::cuts_expected(&target(
        true,
        Proto::H1,
        limited.clone()
    )));
    assert!(!load::cuts_expected(&target(true, Proto::TlsH1, limited)));
    let unlimited = hypercorn_caps(None);
    assert!(!load::cuts_expected(&target(true, Proto::H2c, unlimited)));
    let other = Caps {
        request_limit: Some(100),
        ..Caps::default()
    };
    assert!(!load::cuts_expected(&target(true, Proto::H2c, other)));
}

/// One HTTP/2 response whose head the server sends, then its GOAWAY
/// keeping the stream, then `after`: the error reading the body.
async fn body_error_after_goaway<F, Fut>(client: courier::ClientBuilder, after: F) -> courier::Error
where
    F: FnOnce(Peer) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (url, server) = h2::serve_one(|mut peer| async move {
        let s = peer.expect_request().await;
        let mut out = frame(HEADERS, END_HEADERS, s, &[STATUS_200]);
        out.extend(goaway(s, NO_ERROR));
        peer.send(&out).await;
        after(peer).await;
    })
    .await;
    let client = client.build().unwrap();
    let res = h2::within("the response head", client.get(&url).send())
        .await
        .expect("the head");
    let err = h2::within("the body's end", res.bytes())
        .await
        .expect_err("the body was cut");
    drop(client);
    h2::within("the server script", server).await.unwrap();
    err
}

#[tokio::test]
async fn a_body_the_server_cut_by_closing_after_its_goaway_is_a_goaway_cut() {
    // The server closes its side (python-h2 closes on the next frame it
    // reads: here courier's PING), and reads on until courier closes.
    let err = body_error_after_goaway(h2::h2c(), |mut peer| async move {
        let _ = peer.shutdown().await;
        peer.drain().await;
    })
    .await;
    assert_eq!(err.kind(), courier::ErrorKind::Body, "{err}");
    assert!(load::cut_by_goaway(&err), "{err}");
}

#[tokio::test]
async fn courier_closing_a_server_silent_after_its_goaway_is_no_goaway_cut() {
    // Neither answers courier's PING nor closes: courier closes at its
    // keep-alive timeout, and says "the server went silent after its
    // GOAWAY", which a substring match took for the server's cut.
    let client = h2::h2c().http2_keep_alive_timeout(Duration::from_millis(200));
    let err = body_error_after_goaway(client, |peer| peer.drain()).await;
    assert_eq!(err.kind(), courier::ErrorKind::Body, "{err}");
    assert!(format!("{err:#}").contains("after its GOAWAY"), "{err}");
    assert!(!load::cut_by_goaway(&err), "{err}");
}

/// A `timeout` from a real request: a server that accepts and never answers.
async fn a_timeout() -> courier::Error {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move { listener.accept().await });
    let client = courier::Client::builder()
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let err = h2::within("the timeout", client.get(&url).send())
        .await
        .expect_err("no answer");
    hold.abort();
    assert_eq!(err.kind(), courier::ErrorKind::Timeout, "{err}");
    err
}

#[tokio::test]
async fn an_upload_stall_is_absorbed_only_within_its_scope() {
    let caddy = Caps {
        upload_stalls: Some("Caddy 2.6.2"),
        ..Caps::default()
    };
    let absorbed = |proto, caps: &Caps, expect| {
        let t = target(false, proto, caps.clone());
        async move { uploads::stalled(&t, expect, "no response head", a_timeout().await).absorbed }
    };
    for proto in [Proto::H1, Proto::TlsH1] {
        assert_eq!(
            absorbed(proto, &caddy, true).await,
            Some(Tolerance::UploadStall)
        );
        // No Expect sent: not what the evidence shows.
        assert_eq!(absorbed(proto, &caddy, false).await, None);
        // Another server.
        assert_eq!(absorbed(proto, &Caps::default(), true).await, None);
    }
    // courier sends Expect over HTTP/1.1 only.
    for proto in [Proto::H2c, Proto::TlsH2] {
        let t = target(false, proto, caddy.clone());
        assert!(!uploads::sends_expect(&t, true, None));
    }
    // Not a timeout.
    let t = target(false, Proto::H1, caddy.clone());
    let refused = courier::Client::new()
        .get("http://127.0.0.1:1/")
        .send()
        .await
        .expect_err("nothing listens on port 1");
    assert_eq!(uploads::stalled(&t, true, "x", refused).absorbed, None);
}

#[test]
fn uploads_send_expect_by_courier_rule() {
    let t = target(false, Proto::H1, Caps::default());
    assert!(uploads::sends_expect(&t, false, None), "streamed");
    assert!(uploads::sends_expect(&t, false, Some(64 * 1024)));
    assert!(!uploads::sends_expect(&t, false, Some(1024)));
    assert!(
        uploads::sends_expect(&t, true, Some(1024)),
        "the caller's header"
    );
    let off = Caps {
        expect_broken: Some("HAProxy 2.6"),
        ..Caps::default()
    };
    let t = target(false, Proto::H1, off);
    assert!(!uploads::sends_expect(&t, false, None));
    assert!(uploads::sends_expect(&t, true, None));
}

#[tokio::test]
async fn a_server_that_stops_answering_fails_requests_in_a_row_at_the_first_timeout() {
    // Accepts every connection and answers nothing: each request runs to
    // its timeout. The check's 150 requests in a row once waited for each
    // (15 s here), past the check's own limit: a `hang`, which no
    // tolerance may absorb, instead of the `timeout` it is.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let mut t = target(false, Proto::H1, Caps::default());
    t.base = base;
    t.mode.timeout = Duration::from_millis(100);
    let mut out = run_with(&t, vec!["req-limit"], super::check).await;
    hold.abort();
    match out.pop().map(|(_, o)| o) {
        Some(Outcome::Fail { kind, detail }) => {
            assert_eq!(kind, "timeout", "{detail}");
            assert!(detail.contains(": 1 of "), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

/// A UDP relay to `server` that forwards both ways until `silent` is set,
/// then drops everything: a server that stops answering and acknowledging.
#[cfg(feature = "http3")]
async fn silencing_relay(
    server: std::net::SocketAddr,
    silent: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use std::sync::Arc;
    use tokio::net::UdpSocket;
    let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let back = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    back.connect(server).await.unwrap();
    let addr = front.local_addr().unwrap();
    let relay = tokio::spawn(async move {
        let mut client = None;
        let (mut up, mut down) = (vec![0u8; 65536], vec![0u8; 65536]);
        loop {
            tokio::select! {
                Ok((n, from)) = front.recv_from(&mut up) => {
                    client = Some(from);
                    if !silent.load(SeqCst) {
                        let _ = back.send(&up[..n]).await;
                    }
                }
                Ok(n) = back.recv(&mut down) => {
                    if let (Some(to), false) = (client, silent.load(SeqCst)) {
                        let _ = front.send_to(&down[..n], to).await;
                    }
                }
            }
        }
    });
    (addr, relay)
}

#[cfg(feature = "http3")]
#[tokio::test]
async fn only_a_quic_idle_timeout_counts_as_an_idle_stall() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let pki = courier_server::TestPki::new();
    let server = crate::support::server_with(courier_server::ServerConfig {
        tls: Some(pki.server_config(&["127.0.0.1"])),
        http3: true,
        ..Default::default()
    })
    .await;
    let silent = Arc::new(AtomicBool::new(false));
    let (relay, task) = silencing_relay(server.http3_addr().unwrap(), Arc::clone(&silent)).await;
    let client = courier::Client::builder()
        .add_root_certificate(pki.ca_pem())
        .http3_prior_knowledge()
        .http3_max_idle_timeout(Duration::from_millis(600))
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("https://{relay}/bytes/10");
    let first = h2::within("the first request", client.get(&url).send()).await;
    assert_eq!(first.expect("answered").status(), 200);
    silent.store(true, SeqCst);
    // Not idempotent: lost, it is not sent again (on a new connection
    // that the silent relay would fail otherwise).
    let err = h2::within("the idle timeout", client.post(&url).body("x").send())
        .await
        .expect_err("the server went silent");
    task.abort();
    assert!(load::idle_stalled(&err), "{err:#}");
    assert!(!load::idle_stalled(&a_timeout().await));
}
