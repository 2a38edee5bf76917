//! HAProxy 2.6 (Debian package) in front of nginx (nginx's defaults,
//! HTTP/1.1): HAProxy terminates HTTP/1.1, h2c and TLS itself and
//! compresses (`compression offload`).

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{nginx, static_caps, Caps, Ctx, NotStarted, Profile, Running, Server};

/// HAProxy 2.6.12 (Debian 12) forwards `Expect: 100-continue` to nginx,
/// which answers `100 Continue`; now and then HAProxy then resets its
/// connection to nginx right after the final head and the first body bytes
/// (a TCP RST from HAProxy on the nginx side, seen in `tcpdump -i lo`) and
/// either leaves the client waiting (HTTP/1.1: `200`, a few KiB, then
/// nothing until `timeout client`), closes it (tight profile), or ends the
/// HTTP/2 stream with END_STREAM short of its `content-length`. It is the
/// proxy, not the client: curl, which does wait for the 100, fails the same
/// way (64 KiB POSTs to `/echo`: 4/100 over HTTP/1.1, exit 28 after a 200
/// and 0 bytes; 11/100 over h2c, exit 92), while without `Expect` through
/// HAProxy, and with it straight to nginx, 0 of 100 (200) fail. Same family
/// as haproxy/haproxy#2587 (interim responses marked bodyless in the H1
/// multiplexer). courier reports each case as a typed error (timeout,
/// connection closed, malformed HTTP/2), which is right; the check would
/// only measure HAProxy's race.
const EXPECT_BROKEN: &str =
    "HAProxy 2.6 now and then aborts the origin connection after the origin's 100 Continue (curl fails too)";

pub fn server() -> Server {
    Server {
        name: "haproxy",
        version,
        launch: start,
    }
}

fn version() -> Result<String, String> {
    if !installed("haproxy") {
        return Err("haproxy is not installed (interop/install-debian.sh)".into());
    }
    Ok(format!(
        "{} (origin: nginx)",
        version_of("haproxy", &["-v"])
    ))
}

fn start(ctx: &Ctx) -> Result<Running, NotStarted> {
    version().map_err(NotStarted::Missing)?;
    let origin_ctx = Ctx {
        fx: ctx.fx,
        profile: Profile::Default,
        backend: ctx.backend,
    };
    let origin = nginx::start(&origin_ctx, false)?;
    let dir = temp_dir("haproxy");
    let d = s(&dir);
    let (h1, h2c, tls) = (free_port(), free_port(), free_port());
    // `timeout client/server/connect` are required in practice (HAProxy
    // warns without them); the keep-alive and request timeouts otherwise
    // default to `timeout client`.
    let tight = match ctx.profile {
        Profile::Default => "",
        Profile::Tight => "timeout http-keep-alive 2s\n    timeout http-request 2s",
    };
    let conf = format!(
        r#"global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    {tight}
frontend fe
    bind 127.0.0.1:{h1}
    bind 127.0.0.1:{h2c} proto h2
    bind 127.0.0.1:{tls} ssl crt {combined} alpn h2,http/1.1
    compression algo gzip
    compression type text/plain
    compression offload
    default_backend origin
backend origin
    server nginx 127.0.0.1:{origin}
"#,
        combined = s(&ctx.fx.combined),
        origin = origin.h1,
    );
    std::fs::write(dir.join("haproxy.cfg"), conf).unwrap();
    let mut cmd = Command::new("haproxy");
    cmd.args(["-db", "-f", &format!("{d}/haproxy.cfg")]);
    let mut proc = Proc::spawn("haproxy", cmd, &dir).map_err(NotStarted::Failed)?;
    proc.wait_ready(&[h1, h2c, tls], None)
        .map_err(NotStarted::Failed)?;
    let mut procs = vec![proc];
    procs.extend(origin.procs);
    Ok(Running {
        procs,
        h1,
        h2c: Some(h2c),
        tls: Some(tls),
        caps: Caps {
            expect_broken: Some(EXPECT_BROKEN),
            // HAProxy has no per-connection request limit on the client side.
            ..static_caps(ctx.profile, None, None)
        },
        h3: None,
    })
}
