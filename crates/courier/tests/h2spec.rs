//! HTTP/2 client conformance: summerwind/h2spec's `h2specd` (57 cases) against
//! courier, over h2c (prior knowledge) and TLS (ALPN h2), plain and `--strict`.
//!
//! h2specd listens on one port per case and runs a command per case with the
//! case's URL appended; it then judges the client by the frames it sent. The
//! command is this very test binary (`harness = false`), re-run with
//! `--h2specd-visit`: it GETs the URL with courier and exits, so each case has a
//! fresh process, client and connection, as h2specd expects.
//!
//! A visit stays until the server closes the connection (h2specd does, a
//! second after each case) or its deadline, as a long-lived client would: the
//! cases that send a PING or a bad frame after the response judge what courier
//! answers, not the socket closing under the process's exit.
//!
//! `--strict` adds no cases to h2specd v2.2.1's client suite (strict cases
//! exist in its server suite only); it is run anyway, so a later h2specd that
//! has some gets them checked.
//!
//! h2specd is found as `$H2SPECD` or `h2specd` on `PATH`
//! (`interop/install-h2spec.sh` installs it). Without it the test is skipped
//! with a message, except under CI (`CI` set to any yes value, as
//! `it/support/ci.rs` reads it), where it fails.

#[path = "it/support/ci.rs"]
mod ci;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The number of cases in h2specd v2.2.1's client suite.
const CASES: u32 = 57;
/// First argument of the re-run that visits one case.
const VISIT: &str = "--h2specd-visit";
/// The whole run of one mode; h2specd itself gives each case 3 s at most.
const RUN_DEADLINE: Duration = Duration::from_secs(240);
/// A visit ends well inside h2specd's per-case 3 s, so a hung client shows up
/// as a failed case, not as h2specd aborting the run.
const VISIT_DEADLINE: Duration = Duration::from_millis(2500);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(VISIT) {
        return visit(&args[1..]);
    }
    // libtest's conventions, as far as a single test needs them.
    if args.iter().any(|a| a == "--list") {
        println!("h2specd: test");
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "h2specd".contains(f.as_str())) {
        return ExitCode::SUCCESS;
    }
    let Some(h2specd) = find_h2specd() else {
        if ci::is_ci() {
            eprintln!("h2specd: not found and CI is set: run interop/install-h2spec.sh");
            return ExitCode::FAILURE;
        }
        eprintln!("skipping h2specd: not found (set $H2SPECD or run interop/install-h2spec.sh)");
        return ExitCode::SUCCESS;
    };
    run_all(&h2specd)
}

/// The four modes, concurrently (each waits mostly on h2specd's timers).
fn run_all(h2specd: &Path) -> ExitCode {
    let dir = std::env::temp_dir().join(format!("courier-h2specd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(dir.join("server.crt"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), cert.signing_key.serialize_pem()).unwrap();

    let modes = [
        Mode {
            tls: false,
            strict: false,
        },
        Mode {
            tls: false,
            strict: true,
        },
        Mode {
            tls: true,
            strict: false,
        },
        Mode {
            tls: true,
            strict: true,
        },
    ];
    let started = Instant::now();
    let results: Vec<(Mode, Result<u32, String>)> = std::thread::scope(|s| {
        let runs: Vec<_> = modes
            .iter()
            .enumerate()
            .map(|(i, mode)| {
                let dir = &dir;
                s.spawn(move || (*mode, run_mode(h2specd, dir, *mode, i as u16)))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let _ = std::fs::remove_dir_all(&dir);

    let mut ok = true;
    for (mode, result) in &results {
        match result {
            Ok(passed) => println!("h2specd {}: {passed}/{CASES} passed", mode.name()),
            Err(e) => {
                ok = false;
                println!("h2specd {}: FAILED\n{e}", mode.name());
            }
        }
    }
    println!("h2specd: {:.1}s", started.elapsed().as_secs_f64());
    if ok {
        println!("test h2specd ... ok");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[derive(Clone, Copy)]
struct Mode {
    tls: bool,
    strict: bool,
}

impl Mode {
    fn name(self) -> String {
        format!(
            "{} {}",
            if self.tls { "tls" } else { "h2c" },
            if self.strict { "strict" } else { "plain" }
        )
    }
}

/// Runs h2specd once in `mode`; the number of passed cases if all passed.
fn run_mode(h2specd: &Path, dir: &Path, mode: Mode, slot: u16) -> Result<u32, String> {
    let exe = std::env::current_exe().unwrap();
    let exe = exe.to_str().expect("utf-8 test binary path");
    let cert = dir.join("server.crt");
    let cert_s = cert.to_str().expect("utf-8 temp path");
    // h2specd splits --exec on spaces.
    assert!(
        !exe.contains(' ') && !cert_s.contains(' '),
        "h2specd cannot run a command whose path has spaces: {exe}, {cert_s}"
    );
    let scheme = if mode.tls { "tls" } else { "h2c" };
    let exec = format!("{exe} {VISIT} {scheme} {cert_s}");
    let mut last = String::new();
    // Another process may take one of the ports between the probe and
    // h2specd's listen: a second range is tried then.
    for attempt in 0..3 {
        let from = free_port_range(slot * 3 + attempt);
        let mut cmd = Command::new(h2specd);
        cmd.args(["--host", "127.0.0.1", "--from-port", &from.to_string()])
            .args(["--exec", &exec]);
        if mode.tls {
            cmd.arg("--tls")
                .args(["--cert-file", cert_s])
                .args(["--cert-key-file", dir.join("server.key").to_str().unwrap()]);
        }
        if mode.strict {
            cmd.arg("--strict");
        }
        let output = run_with_deadline(cmd, RUN_DEADLINE)?;
        // After the run, h2specd's accept loops log their closed listeners
        // until it exits: noise.
        let output: String = output
            .lines()
            .filter(|l| !l.contains("use of closed network connection"))
            .flat_map(|l| [l, "\n"])
            .collect();
        if output.contains("address already in use") {
            last = output;
            continue;
        }
        return judge(&output);
    }
    Err(format!("no free port range for h2specd:\n{last}"))
}

/// Reads h2specd's summary line: `57 tests, 57 passed, 0 skipped, 0 failed`.
fn judge(output: &str) -> Result<u32, String> {
    let summary = output
        .lines()
        .find_map(|l| {
            let n: Vec<u32> = l
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            (l.contains("tests,") && l.contains("passed") && n.len() == 4).then_some(n)
        })
        .ok_or_else(|| format!("no summary from h2specd:\n{output}"))?;
    let (total, passed) = (summary[0], summary[1]);
    if total == CASES && passed == CASES {
        Ok(passed)
    } else {
        Err(format!(
            "{passed}/{total} passed (expected {CASES}/{CASES}):\n{output}"
        ))
    }
}

/// Runs `cmd` to its end or the deadline (then kills it), returning its
/// stdout and stderr.
fn run_with_deadline(mut cmd: Command, deadline: Duration) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn h2specd: {e}"))?;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    match status {
        Some(_) => Ok(text),
        None => Err(format!("h2specd still running after {deadline:?}:\n{text}")),
    }
}

/// A base port with the next [`CASES`] ports free on loopback. `salt`
/// separates the concurrent modes' ranges.
fn free_port_range(salt: u16) -> u16 {
    let start = 20_000 + (std::process::id() % 97) as u16 * 256 + salt * 64;
    let mut base = start;
    loop {
        let held: Vec<_> = (base..base + CASES as u16)
            .map_while(|p| TcpListener::bind(("127.0.0.1", p)).ok())
            .collect();
        if held.len() == CASES as usize {
            return base;
        }
        base += 64 * 12;
        assert!(base < 60_000, "no {CASES} free ports from {start}");
    }
}

fn find_h2specd() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("H2SPECD") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("h2specd"))
        .find(|p| p.is_file())
}

/// One case: GET the URL h2specd appended, read the body, exit. The exit
/// status is informative only: h2specd judges by what went over the wire.
fn visit(args: &[String]) -> ExitCode {
    let [scheme, cert, url] = args else {
        eprintln!("usage: {VISIT} h2c|tls <server.crt> <url>");
        return ExitCode::FAILURE;
    };
    let mut builder = courier::Client::builder()
        .http2_prior_knowledge()
        .timeout(VISIT_DEADLINE)
        .connect_timeout(VISIT_DEADLINE);
    if scheme == "tls" {
        let pem = std::fs::read(cert).expect("read h2specd's certificate");
        builder = builder
            .tls_built_in_root_certs(false)
            .add_root_certificate(pem);
    }
    let client = builder.build().expect("client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let result = rt.block_on(async {
        let result = async {
            let res = client.get(url.as_str()).send().await?;
            let status = res.status();
            let body = res.bytes().await?;
            Ok::<_, courier::Error>((status, body.len()))
        }
        .await;
        // A long-lived client keeps its connection and answers what follows
        // the response (a PING, a frame on a closed stream): stay until the
        // connection is gone or the visit's time is up.
        while client.metrics().connections_open > 0 && started.elapsed() < VISIT_DEADLINE {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        result
    });
    let took = started.elapsed();
    match result {
        Ok((status, len)) => {
            eprintln!("{url}: {status}, {len} bytes, {took:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{url}: {e} ({:?}), {took:?}", e.kind());
            ExitCode::FAILURE
        }
    }
}
