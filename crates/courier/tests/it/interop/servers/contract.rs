//! The programmable servers under `interop/servers/` (Node, hypercorn,
//! Go), started as their shared contract says:
//! `<program> --h1 P --h2c P --tls P --cert C --key K --docroot D --profile
//! default|tight`, printing `ready` once listening, stopping on SIGTERM;
//! hypercorn (aioquic) and Go (quic-go's http3) also take `--h3 P`, HTTP/3
//! on that UDP port with the same certificate (feature `http3`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{
    h3_port, idle_of, Caps, Ctx, H3Port, NotStarted, Profile, Restartable, Running, Server,
};

/// The repository root (crates/courier/../..), or `COURIER_INTEROP_ROOT`
/// (servers from another checkout).
fn repo() -> PathBuf {
    std::env::var_os("COURIER_INTEROP_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn script(rel: &str) -> Result<PathBuf, String> {
    let path = repo().join(rel);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{rel} is missing (interop/servers/ holds the servers; interop/install.sh builds the Go one)"
        ))
    }
}

pub fn node() -> Server {
    Server {
        name: "node",
        version: || {
            script("interop/servers/node/server.js")?;
            if !installed("node") {
                return Err("node is not installed".into());
            }
            Ok(format!("Node {}", version_of("node", &["--version"])))
        },
        launch: |ctx| {
            let js = script("interop/servers/node/server.js").map_err(NotStarted::Missing)?;
            let mut cmd = Command::new("node");
            cmd.arg(js);
            // keepAliveTimeout: 5 s by default. Node has no HTTP/3.
            start(ctx, "node", cmd, Some(5), Some(100), None)
        },
    }
}

pub fn hypercorn() -> Server {
    Server {
        name: "hypercorn",
        version: || {
            script("interop/servers/hypercorn/serve.py")?;
            let v = version_of(
                "python3",
                &[
                    "-c",
                    "import importlib.metadata as m; print(m.version('hypercorn'))",
                ],
            );
            if v.is_empty() || v.contains("Error") {
                return Err("hypercorn is not installed (interop/install.sh)".into());
            }
            Ok(format!("hypercorn {v}"))
        },
        launch: |ctx| {
            let py = script("interop/servers/hypercorn/serve.py").map_err(NotStarted::Missing)?;
            let mut cmd = Command::new("python3");
            cmd.arg(&py);
            // keep_alive_timeout: 5 s by default. Over HTTP/3 (aioquic)
            // QUIC's idle timeout instead: aioquic's 60 s, 2 s in the tight
            // profile (serve.py), and no request limit (hypercorn's
            // keep_alive settings do not reach its QUIC).
            let h3 = H3Idle {
                default: Duration::from_secs(60),
            };
            // HTTP/3 from a process of its own, which the run restarts
            // when its QUIC listener dies (HYPERCORN_H3_LATE_FIN): one
            // process for every protocol lost the row's later checks.
            let own = move || {
                let mut cmd = Command::new("python3");
                cmd.arg(&py);
                cmd
            };
            let own: Box<dyn Fn() -> Command + Send + Sync> = Box::new(own);
            let h3 = (h3, Some(own));
            let mut running = start(ctx, "hypercorn", cmd, Some(5), Some(100), Some(h3))?;
            if ctx.profile == Profile::Default {
                // hypercorn's own keep_alive_max_requests (Config's default
                // since 0.15; serve.py sets 100 for the tight profile only).
                running.caps.request_limit = Some(HYPERCORN_DEFAULT_LIMIT);
            }
            running.caps.h1_trailers = false;
            running.caps.drops_streams_at_goaway = Some(PYTHON_H2_GOAWAY);
            if let Some(h3) = running.h3.as_mut() {
                h3.caps.h3_trailers_unended = Some(HYPERCORN_H3_TRAILERS);
                h3.caps.h3_late_fin_kills = Some(HYPERCORN_H3_LATE_FIN);
                if ctx.profile == Profile::Tight {
                    h3.caps.h3_idle_stall = Some(HYPERCORN_H3_IDLE_STALL);
                }
            }
            Ok(running)
        },
    }
}

pub fn go() -> Server {
    const BIN: &str = "interop/servers/go/interop-server";
    Server {
        name: "go",
        version: || {
            script(BIN)?;
            Ok(version_of("go", &["version"]))
        },
        launch: |ctx| {
            let bin = script(BIN).map_err(NotStarted::Missing)?;
            // net/http has no per-connection request limit, nor has quic-go;
            // QUIC's idle timeout is quic-go's 30 s, 2 s in the tight profile.
            let h3 = H3Idle {
                default: Duration::from_secs(30),
            };
            start(ctx, "go", Command::new(bin), None, None, Some((h3, None)))
        },
    }
}

/// A contract server's HTTP/3: QUIC's idle timeout in the default profile
/// (the tight one sets 2 s, [`super::TIGHT_IDLE`]); no request limit.
struct H3Idle {
    default: Duration,
}

/// The command of a process that serves HTTP/3 alone (the contract's
/// flags with `--h3` only), when a server's HTTP/3 runs apart.
type OwnH3 = Option<Box<dyn Fn() -> Command + Send + Sync>>;

fn start(
    ctx: &Ctx,
    name: &str,
    mut cmd: Command,
    default_idle: Option<u64>,
    tight_limit: Option<u32>,
    h3: Option<(H3Idle, OwnH3)>,
) -> Result<Running, NotStarted> {
    let dir = temp_dir(name);
    let (h1, h2c, tls) = (free_port(), free_port(), free_port());
    let h3 = h3.and_then(|(idle, own)| Some((h3_port()?, idle, own)));
    if let Some((port, _, None)) = &h3 {
        cmd.args(["--h3", &port.to_string()]);
    }
    let docroot = ctx.fx.static_dir();
    cmd.args(["--h1", &h1.to_string()])
        .args(["--h2c", &h2c.to_string()])
        .args(["--tls", &tls.to_string()])
        .args(["--cert", s(&ctx.fx.cert), "--key", s(&ctx.fx.key)])
        .args(["--docroot", s(&docroot)])
        .args(["--profile", ctx.profile.name()])
        .current_dir(&dir);
    let mut proc = Proc::spawn(name, cmd, &dir).map_err(NotStarted::Failed)?;
    proc.wait_ready(&[h1, h2c, tls], Some("ready"))
        .map_err(NotStarted::Failed)?;
    let tight = ctx.profile == Profile::Tight;
    let caps = Caps {
        trailers: true,
        h1_trailers: true,
        early_hints: true,
        gzip_path: "/gzip",
        // The contract does not ask for conditional requests.
        conditional: false,
        redirect_done: "done",
        idle: idle_of(ctx.profile, default_idle),
        request_limit: if tight { tight_limit } else { None },
        max_streams: None,
        expect_broken: None,
        upload_stalls: None,
        drops_streams_at_goaway: None,
        h3_streamed_upload_dropped: None,
        h3_trailers_unended: None,
        h3_late_fin_kills: None,
        h3_idle_stall: None,
    };
    let own = match h3.as_ref() {
        Some((port, _, Some(own))) => Some(start_own(ctx, name, *port, own)?),
        _ => None,
    };
    let h3 = h3.map(|(port, idle, _)| H3Port {
        port,
        caps: Caps {
            idle: Some(if tight {
                super::TIGHT_IDLE
            } else {
                idle.default
            }),
            request_limit: None,
            ..caps.clone()
        },
        own,
    });
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: Some(h2c),
        tls: Some(tls),
        caps,
        h3,
    })
}

/// Starts `name`'s HTTP/3 alone on UDP `port` (`own`'s command with the
/// contract's flags and `--h3` only), restartable.
fn start_own(
    ctx: &Ctx,
    name: &str,
    port: u16,
    own: &(dyn Fn() -> Command + Send + Sync),
) -> Result<Arc<Restartable>, NotStarted> {
    let mut base = own();
    base.args(["--h3", &port.to_string()])
        .args(["--cert", s(&ctx.fx.cert), "--key", s(&ctx.fx.key)])
        .args(["--docroot", s(&ctx.fx.static_dir())])
        .args(["--profile", ctx.profile.name()]);
    let program = base.get_program().to_owned();
    let args: Vec<_> = base.get_args().map(ToOwned::to_owned).collect();
    let label = format!("{name}-h3");
    let spawn = move || {
        // A directory per start: a stopped process's is removed with it.
        let dir = temp_dir(&label);
        let mut cmd = Command::new(&program);
        cmd.args(&args).current_dir(&dir);
        let mut proc = Proc::spawn(&label, cmd, &dir)?;
        proc.wait_ready(&[], Some("ready"))?;
        Ok(proc)
    };
    Restartable::start(spawn)
        .map(Arc::new)
        .map_err(NotStarted::Failed)
}

/// hypercorn 0.18's HTTP/3 ends a response stream with an empty DATA frame
/// carrying FIN, also after the trailer section, where aioquic 1.7.2 refuses
/// it (`FrameUnexpected: DATA frame is not allowed in this state`, in the
/// server's log): the trailers are sent, the stream never ends. quic-go's
/// client (v0.65) reads the body and the trailers, then waits for the end
/// until its deadline (H3_REQUEST_CANCELLED); aioquic's client sees the
/// trailer HEADERS and no end within 5 s.
const HYPERCORN_H3_TRAILERS: &str =
    "hypercorn 0.18's HTTP/3 never ends a stream after its trailers (aioquic refuses its closing DATA frame)";

/// hypercorn 0.18's HTTP/3 looks a request stream up by id for every STREAM
/// frame and raises `KeyError` for one it has closed: a request's FIN that
/// comes after the response (RFC 9114 allows it: courier writes the HEADERS
/// and then finishes the stream, and quinn may send the two in separate
/// packets) ends hypercorn's whole UDP server task, and with it every
/// connection and handshake. aioquic's own client shows it: a GET whose FIN
/// is sent after its response, then another GET on the connection: no
/// answer, and a new connection's handshake none within 3 s (the traceback
/// in the server's log ends in `KeyError`). The process then serves TCP
/// still, but no QUIC: hence HTTP/3 in a process of its own, which the run
/// restarts.
const HYPERCORN_H3_LATE_FIN: &str =
    "hypercorn 0.18's QUIC listener dies of a request's FIN that comes after the response (KeyError on the closed stream)";

/// hypercorn 0.18 on aioquic 1.7.2, with QUIC's idle timeout at 2 s (the
/// tight profile) and more busy connections than its one Python thread
/// keeps up with, lets some of them go silent until the idle timeout ends
/// them: the server stops answering and stops acknowledging, while other
/// connections are served. Not courier's: quic-go's client (bench/peers'
/// go-load, four processes of 100 in flight each, one connection each)
/// lost 2 and 3 of its 4 connections in two runs to "timeout: no recent
/// network activity", with nothing in the server's log; one go-load of 512
/// on one connection did not (0 errors in 3 runs), nor did courier against
/// the default profile's 60 s timeout.
const HYPERCORN_H3_IDLE_STALL: &str =
    "hypercorn 0.18's QUIC under load leaves some busy connections silent until the 2 s idle timeout";

/// Requests per connection hypercorn serves by default (`Config`'s
/// `keep_alive_max_requests`).
const HYPERCORN_DEFAULT_LIMIT: u32 = 1000;

/// hypercorn's HTTP/2 is python-h2, whose connection state machine allows
/// nothing but another GOAWAY once it has sent one (python-hyper/h2#1181):
/// past `keep_alive_max_requests` every response in flight is cut, those
/// its GOAWAY named as processed included, and the next frame it reads
/// closes the connection. h2load loses them the same way (tight profile,
/// `h2load -n 200 -c 1 -m 8`: 101 succeeded, 5 cut, 94 never sent).
const PYTHON_H2_GOAWAY: &str = "python-h2 sends nothing after its own GOAWAY, python-hyper/h2#1181";
