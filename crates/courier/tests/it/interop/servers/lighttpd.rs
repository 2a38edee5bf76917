//! lighttpd 1.4 (Debian package) with its built-in HTTP/2 (`h2proto`,
//! `h2c`): files, mod_deflate, `/echo` & co. through mod_proxy.

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{static_caps, Caps, Ctx, NotStarted, Profile, Running, Server};

pub fn server() -> Server {
    Server {
        name: "lighttpd",
        version,
        launch: start,
    }
}

fn version() -> Result<String, String> {
    if !installed("lighttpd") {
        return Err("lighttpd is not installed (interop/install-debian.sh)".into());
    }
    Ok(version_of("lighttpd", &["-v"]))
}

fn start(ctx: &Ctx) -> Result<Running, NotStarted> {
    version().map_err(NotStarted::Missing)?;
    let dir = temp_dir("lighttpd");
    let d = s(&dir);
    let (h1, tls) = (free_port(), free_port());
    let (tight, limit) = match ctx.profile {
        Profile::Default => ("", 1000),
        Profile::Tight => (
            "server.max-keep-alive-idle = 2\nserver.max-keep-alive-requests = 100\nserver.max-read-idle = 2\n",
            100,
        ),
    };
    let conf = format!(
        r#"server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {h1}
server.pid-file = "{d}/lighttpd.pid"
server.errorlog = "{d}/error.log"
server.modules = ("mod_proxy", "mod_deflate", "mod_openssl")
server.feature-flags = ("server.h2proto" => "enable", "server.h2c" => "enable")
mimetype.assign = (".txt" => "text/plain", ".bin" => "application/octet-stream")
deflate.mimetypes = ("text/plain")
deflate.allowed-encodings = ("gzip")
{tight}
$SERVER["socket"] == "127.0.0.1:{tls}" {{
    ssl.engine = "enable"
    ssl.pemfile = "{cert}"
    ssl.privkey = "{key}"
}}
$HTTP["url"] =~ "^/(echo|status/|redirect/|delay/)" {{
    proxy.server = ("" => (("host" => "127.0.0.1", "port" => {backend})))
}}
"#,
        www = s(&ctx.fx.www),
        cert = s(&ctx.fx.cert),
        key = s(&ctx.fx.key),
        backend = ctx.backend,
    );
    std::fs::write(dir.join("lighttpd.conf"), conf).unwrap();
    let mut cmd = Command::new("lighttpd");
    cmd.args(["-D", "-f", &format!("{d}/lighttpd.conf")]);
    let mut proc = Proc::spawn("lighttpd", cmd, &dir).map_err(NotStarted::Failed)?;
    proc.wait_ready(&[h1, tls], None)
        .map_err(NotStarted::Failed)?;
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: Some(h1),
        tls: Some(tls),
        caps: Caps {
            // lighttpd's HTTP/2 allows 8 streams per connection.
            max_streams: Some(8),
            ..static_caps(ctx.profile, Some(5), Some(limit))
        },
        h3: None,
    })
}
