//! HAProxy 2.6 (Debian package) in front of nginx (nginx's defaults,
//! HTTP/1.1): HAProxy terminates HTTP/1.1, h2c and TLS itself and
//! compresses (`compression offload`).

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{nginx, static_caps, Ctx, NotStarted, Profile, Running, Server};

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
        // HAProxy has no per-connection request limit on the client side.
        caps: static_caps(ctx.profile, None, None),
    })
}
