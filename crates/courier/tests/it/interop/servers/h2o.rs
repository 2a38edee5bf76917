//! h2o 2.2 (Debian package): files, `compress`, `/echo` & co. through
//! `proxy.reverse.url`. Its plain port also takes the HTTP/2 preface.
//! No `pid-file`: h2o writes it after dropping root, where the temp dir
//! is not writable, and the suite holds the process anyway.

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{static_caps, Ctx, NotStarted, Profile, Running, Server, PROXIED};

pub fn server() -> Server {
    Server {
        name: "h2o",
        version,
        launch: start,
    }
}

fn version() -> Result<String, String> {
    if !installed("h2o") {
        return Err("h2o is not installed (interop/install-debian.sh)".into());
    }
    Ok(version_of("h2o", &["--version"]))
}

fn start(ctx: &Ctx) -> Result<Running, NotStarted> {
    version().map_err(NotStarted::Missing)?;
    let dir = temp_dir("h2o");
    let d = s(&dir);
    let (h1, tls) = (free_port(), free_port());
    let proxied: String = PROXIED
        .iter()
        .map(|p| {
            let p = p.trim_end_matches('/');
            format!(
                "      {p}:\n        proxy.reverse.url: http://127.0.0.1:{}{p}\n",
                ctx.backend
            )
        })
        .collect();
    let tight = match ctx.profile {
        Profile::Default => "",
        Profile::Tight => "http1-request-timeout: 2\nhttp2-idle-timeout: 2\n",
    };
    let conf = format!(
        r#"error-log: {d}/error.log
num-threads: 1
compress: ON
{tight}listen:
  host: 127.0.0.1
  port: {h1}
listen:
  host: 127.0.0.1
  port: {tls}
  ssl:
    certificate-file: {cert}
    key-file: {key}
hosts:
  "localhost":
    paths:
      /static:
        file.dir: {www}/static
{proxied}"#,
        cert = s(&ctx.fx.cert),
        key = s(&ctx.fx.key),
        www = s(&ctx.fx.www),
    );
    std::fs::write(dir.join("h2o.conf"), conf).unwrap();
    let mut cmd = Command::new("h2o");
    cmd.args(["-c", &format!("{d}/h2o.conf")]);
    let mut proc = Proc::spawn("h2o", cmd, &dir).map_err(NotStarted::Failed)?;
    proc.wait_ready(&[h1, tls], None)
        .map_err(NotStarted::Failed)?;
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: Some(h1),
        tls: Some(tls),
        // h2o has no per-connection request limit.
        caps: static_caps(ctx.profile, Some(10), None),
        h3: None,
    })
}
