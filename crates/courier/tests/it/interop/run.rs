//! The run: fixtures and the echo backend, then every server in both
//! profiles (a few at a time), its protocols checked side by side.
//! `COURIER_INTEROP_PROTOS=h3,h1` runs only those protocols' rows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::checks::{self, Outcome};
use super::fixtures::Fixtures;
use super::matrix::{Matrix, Row};
use super::process::temp_dir;
use super::servers::{self, Ctx, NotStarted, Profile, Restartable, Running};
use super::target::{Mode, Proto, Target};
use super::tolerance::Tolerance;

/// Removes the shared fixtures when the run ends, however it ends.
struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub async fn run(mode: Mode) -> Matrix {
    let ci = crate::support::ci::is_ci();
    let only: Option<Vec<String>> = std::env::var("COURIER_INTEROP_SERVERS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let dir = temp_dir("fixtures");
    let _cleanup = Cleanup(dir.clone());
    let fx = Arc::new(Fixtures::create(&dir));
    // courier's own server answers /echo, /status, /redirect and /delay
    // behind the static servers.
    let backend = courier_server::start(courier_server::ServerConfig::default())
        .await
        .expect("echo backend");
    let backend_port = backend.local_addr().port();

    let mut matrix = Matrix {
        checks: checks::names(mode.full),
        ..Matrix::default()
    };
    let mut jobs = Vec::new();
    let slots = Arc::new(Semaphore::new(mode.parallel_servers));
    for server in servers::all() {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == server.name))
        {
            continue;
        }
        match (server.version)() {
            Ok(version) => matrix.versions.push((server.name.into(), version)),
            Err(why) => {
                if ci {
                    matrix
                        .errors
                        .push(format!("{}: missing in CI: {why}", server.name));
                } else {
                    eprintln!("skipping {}: {why}", server.name);
                }
                matrix.skipped.push((server.name.into(), why));
                continue;
            }
        }
        for profile in [Profile::Default, Profile::Tight] {
            let (fx, mode, slots) = (fx.clone(), mode.clone(), slots.clone());
            let (name, launch) = (server.name, server.launch);
            jobs.push(tokio::spawn(async move {
                let _slot = slots.acquire_owned().await.expect("semaphore");
                let started = tokio::task::spawn_blocking(move || {
                    let ctx = Ctx {
                        fx: &fx,
                        profile,
                        backend: backend_port,
                    };
                    let running = launch(&ctx);
                    (running, fx.ca_pem.clone())
                })
                .await
                .expect("launch task");
                match started {
                    (Ok(running), ca_pem) => {
                        Ok(check_server(name, profile, running, ca_pem, mode).await)
                    }
                    (Err(NotStarted::Missing(why) | NotStarted::Failed(why)), _) => {
                        Err(format!("{name} {}: did not start: {why}", profile.name()))
                    }
                }
            }));
        }
    }
    for job in jobs {
        match job.await {
            Ok(Ok(rows)) => matrix.rows.extend(rows),
            Ok(Err(err)) => matrix.errors.push(err),
            Err(err) => matrix
                .errors
                .push(format!("a server's run panicked: {err}")),
        }
    }
    matrix.rows.sort_by_key(|r| {
        let server = servers::all().iter().position(|s| s.name == r.server);
        let proto = Proto::ALL.iter().position(|p| p.name() == r.proto);
        (server, r.profile == "tight", proto)
    });
    drop(backend);
    matrix
}

/// How long a server's HTTP/3 port gets to answer, and each try.
const H3_READY: Duration = Duration::from_secs(20);
const H3_TRY: Duration = Duration::from_secs(2);

/// Waits until the HTTP/3 port answers a real request (`small.txt`, with
/// the column's own client): a UDP port cannot be probed by connecting,
/// and a server may print `ready` before its QUIC listener runs. Bounded;
/// the last failure is the error.
async fn h3_ready(t: &Target) -> Result<(), String> {
    let deadline = Instant::now() + H3_READY;
    let mut tries = 0;
    loop {
        tries += 1;
        let request = t.client().get(t.url("/static/small.txt")).send();
        let why = match tokio::time::timeout(H3_TRY, request).await {
            Ok(Ok(res)) if res.status() == 200 => match res.bytes().await {
                Ok(_) => return Ok(()),
                Err(e) => format!("{e:#}"),
            },
            Ok(Ok(res)) => format!("status {}", res.status()),
            Ok(Err(e)) => format!("{e:#}"),
            Err(_) => format!("no answer within {H3_TRY:?}"),
        };
        if Instant::now() + Duration::from_millis(50) > deadline {
            return Err(format!(
                "HTTP/3 port not ready within {H3_READY:?} ({tries} tries); last: {why}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The checks against an HTTP/3 port whose listener may die of a client's
/// legal behaviour (`Caps::h3_late_fin_kills`): after a failed check, a
/// fresh request on a new connection tells whether the listener still
/// answers; if not, that check's failure is marked for
/// [`Tolerance::H3LateFinKills`] (one: the death). Where the port has a
/// process of its own (`H3Port::own`), it is restarted before the next
/// check (at most [`servers::MAX_RESTARTS`] times a row, counted in the
/// row), so a death costs only the check that found it. A listener that
/// could not be restarted stays dead: every later check is not run, shown
/// under the tolerance with a count of 0, so the bound counts deaths.
async fn run_watching_the_listener(
    t: &Target,
    own: Option<Arc<Restartable>>,
) -> Vec<(&'static str, Outcome)> {
    use std::sync::Mutex;
    let why = t.caps.h3_late_fin_kills.unwrap_or_default();
    // Whether the listener died, and why it stays dead (no restart).
    let died = Arc::new(Mutex::new((false, None::<String>)));
    checks::run_with(t, checks::names(t.mode.full), |name, t| {
        let (died, own) = (died.clone(), own.clone());
        let check = checks::check(name, t);
        Box::pin(async move {
            let absorbed = |kind: String, detail: String| checks::Failure {
                kind,
                detail: format!("{detail} (the QUIC listener died: {why})"),
                absorbed: Some(Tolerance::H3LateFinKills),
            };
            let state = died.lock().expect("state").clone();
            match state {
                (_, Some(dead)) => {
                    return Ok(Outcome::Tolerated {
                        tolerance: Tolerance::H3LateFinKills,
                        count: 0,
                        note: format!("not-run: not run (the QUIC listener died: {why}; {dead})"),
                    })
                }
                (true, None) => {
                    let restarted = restart(t, own).await;
                    let mut state = died.lock().expect("state");
                    match restarted {
                        Ok(n) => {
                            eprintln!(
                                "interop: {}: the QUIC listener restarted ({n} of {})",
                                t.base,
                                servers::MAX_RESTARTS
                            );
                            *state = (false, None);
                        }
                        Err(e) => {
                            let dead = format!("not restarted: {e}");
                            *state = (true, Some(dead.clone()));
                            return Ok(Outcome::Tolerated {
                                tolerance: Tolerance::H3LateFinKills,
                                count: 0,
                                note: format!(
                                    "not-run: not run (the QUIC listener died: {why}; {dead})"
                                ),
                            });
                        }
                    }
                }
                (false, None) => {}
            }
            let result = check.await;
            let failed = match &result {
                Err(f) => f.absorbed.is_none(),
                Ok(Outcome::Fail { .. }) => true,
                Ok(_) => false,
            };
            if failed && !answers(t, Duration::from_secs(3)).await {
                died.lock().expect("state").0 = true;
                return Err(match result {
                    Err(f) => absorbed(f.kind, f.detail),
                    Ok(Outcome::Fail { kind, detail }) => absorbed(kind, detail),
                    Ok(_) => unreachable!("a failure"),
                });
            }
            result
        })
    })
    .await
}

/// Restarts the port's own process, then waits until it answers; how many
/// restarts the row has made, or why there was none.
async fn restart(t: &Target, own: Option<Arc<Restartable>>) -> Result<u32, String> {
    let own = own.ok_or("its process serves every protocol of the server")?;
    let n = tokio::task::spawn_blocking(move || own.restart())
        .await
        .map_err(|e| format!("the restart panicked: {e}"))??;
    h3_ready(t).await?;
    Ok(n)
}

/// Whether a fresh client's request gets an answer within `limit`.
async fn answers(t: &Target, limit: Duration) -> bool {
    let request = t.client().get(t.url("/static/small.txt")).send();
    matches!(tokio::time::timeout(limit, request).await, Ok(Ok(_)))
}

/// Every protocol of one running server, side by side; the server is
/// stopped (off the runtime's threads) when they are done.
async fn check_server(
    name: &'static str,
    profile: Profile,
    running: Running,
    ca_pem: String,
    mode: Mode,
) -> Vec<Row> {
    let only: Option<Vec<String>> = std::env::var("COURIER_INTEROP_PROTOS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let mut tasks = Vec::new();
    for &proto in Proto::ALL {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|p| p == proto.name()))
        {
            continue;
        }
        if proto == Proto::H3 && running.h3.is_none() {
            // Not a cell: the server does not speak HTTP/3 at all.
            continue;
        }
        let port = match proto {
            Proto::H1 => Some(running.h1),
            Proto::H2c => running.h2c,
            Proto::TlsH2 | Proto::TlsH1 => running.tls,
            Proto::H3 => running.h3.as_ref().map(|h3| h3.port),
        };
        let Some(port) = port else {
            let cells = checks::names(mode.full)
                .into_iter()
                .map(|c| {
                    (
                        c,
                        Outcome::Na(format!("{name} has no {} port", proto.name())),
                    )
                })
                .collect();
            tasks.push((proto, None, Some(cells), None));
            continue;
        };
        let base = match proto {
            Proto::H1 | Proto::H2c => format!("http://127.0.0.1:{port}"),
            Proto::TlsH2 | Proto::TlsH1 | Proto::H3 => format!("https://localhost:{port}"),
        };
        let (caps, own) = match (proto, &running.h3) {
            (Proto::H3, Some(h3)) => (h3.caps.clone(), h3.own.clone()),
            _ => (running.caps.clone(), None),
        };
        let target = Target {
            base,
            proto,
            ca_pem: ca_pem.clone(),
            caps,
            mode: mode.clone(),
        };
        let restarts = own.clone();
        let task = tokio::spawn(async move {
            if proto == Proto::H3 {
                if let Err(why) = h3_ready(&target).await {
                    return checks::names(target.mode.full)
                        .into_iter()
                        .map(|c| {
                            let (kind, detail) = ("not-ready".to_owned(), why.clone());
                            (c, Outcome::Fail { kind, detail })
                        })
                        .collect();
                }
            }
            if target.caps.h3_late_fin_kills.is_some() {
                return run_watching_the_listener(&target, own).await;
            }
            checks::run(&target).await
        });
        tasks.push((proto, Some(task), None, restarts));
    }
    let mut rows = Vec::new();
    for (proto, task, cells, own) in tasks {
        let cells = match (task, cells) {
            (Some(task), _) => task.await.unwrap_or_else(|err| {
                let detail = err.to_string();
                checks::names(mode.full)
                    .into_iter()
                    .map(|c| {
                        let kind = "panic".to_owned();
                        let detail = detail.clone();
                        (c, Outcome::Fail { kind, detail })
                    })
                    .collect()
            }),
            (None, Some(cells)) => cells,
            (None, None) => unreachable!("a row has a task or its cells"),
        };
        rows.push(Row {
            server: name.into(),
            profile: profile.name(),
            proto: proto.name(),
            cells,
            restarts: own.map_or(0, |own| own.restarts()),
        });
    }
    let _ = tokio::task::spawn_blocking(move || drop(running)).await;
    rows
}
