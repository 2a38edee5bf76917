//! nginx (Debian package): static files, gzip, `/echo` & co. proxied.

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{static_caps, Caps, Ctx, NotStarted, Profile, Running, Server};

pub fn server() -> Server {
    Server {
        name: "nginx",
        version,
        launch: |ctx| start(ctx, true),
    }
}

fn version() -> Result<String, String> {
    if !installed("nginx") {
        return Err("nginx is not installed (interop/install-debian.sh)".into());
    }
    Ok(version_of("nginx", &["-v"]))
}

/// nginx for `ctx.profile`; with `all_ports` false, HTTP/1.1 only (the
/// origin behind HAProxy).
pub fn start(ctx: &Ctx, all_ports: bool) -> Result<Running, NotStarted> {
    version().map_err(NotStarted::Missing)?;
    let dir = temp_dir("nginx");
    let d = s(&dir);
    let www = s(&ctx.fx.www);
    let (h1, h2c, tls) = (free_port(), free_port(), free_port());
    let tight = match ctx.profile {
        Profile::Default => "",
        Profile::Tight => {
            "keepalive_timeout 2s; keepalive_requests 100; client_header_timeout 2s;
             client_body_timeout 5s; send_timeout 5s; http2_idle_timeout 2s; http2_recv_timeout 2s;"
        }
    };
    let extra = if all_ports {
        format!(
            "server {{ listen 127.0.0.1:{h2c} http2; include {d}/site.conf; }}
             server {{ listen 127.0.0.1:{tls} ssl http2; ssl_certificate {cert};
                      ssl_certificate_key {key}; include {d}/site.conf; }}",
            cert = s(&ctx.fx.cert),
            key = s(&ctx.fx.key),
        )
    } else {
        String::new()
    };
    let conf = format!(
        r#"
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    gzip on;
    gzip_types text/plain;
    {tight}
    server {{ listen 127.0.0.1:{h1}; include {d}/site.conf; }}
    {extra}
}}
"#
    );
    let site = format!(
        r#"
root {www};
location ~ ^/(echo|status/|redirect/|delay/) {{
    proxy_pass http://127.0.0.1:{backend};
    proxy_http_version 1.1;
    proxy_request_buffering off;
    proxy_buffering off;
    client_max_body_size 0;
}}
"#,
        backend = ctx.backend
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    std::fs::write(dir.join("site.conf"), site).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.args(["-p", d, "-c", "nginx.conf", "-e", "error.log"]);
    let mut proc = Proc::spawn("nginx", cmd, &dir).map_err(NotStarted::Failed)?;
    let ports = if all_ports {
        vec![h1, h2c, tls]
    } else {
        vec![h1]
    };
    proc.wait_ready(&ports, None).map_err(NotStarted::Failed)?;
    let limit = match ctx.profile {
        Profile::Default => 1000,
        Profile::Tight => 100,
    };
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: all_ports.then_some(h2c),
        tls: all_ports.then_some(tls),
        caps: Caps {
            // http2_max_concurrent_streams' default.
            max_streams: Some(128),
            ..static_caps(ctx.profile, None, Some(limit))
        },
        h3: None,
    })
}
