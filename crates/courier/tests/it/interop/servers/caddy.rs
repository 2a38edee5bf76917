//! Caddy 2 (Debian package), from a Caddyfile: files, `encode gzip`,
//! `/echo` & co. through `reverse_proxy`; h2c only because the config
//! turns it on (`protocols h1 h2 h2c`).

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{static_caps, Ctx, NotStarted, Profile, Running, Server};

pub fn server() -> Server {
    Server {
        name: "caddy",
        version,
        launch: start,
    }
}

fn version() -> Result<String, String> {
    if !installed("caddy") {
        return Err("caddy is not installed (interop/install-debian.sh)".into());
    }
    Ok(format!("Caddy {}", version_of("caddy", &["version"])))
}

fn start(ctx: &Ctx) -> Result<Running, NotStarted> {
    version().map_err(NotStarted::Missing)?;
    let dir = temp_dir("caddy");
    let d = s(&dir);
    let (h1, tls) = (free_port(), free_port());
    let timeouts = match ctx.profile {
        Profile::Default => "",
        Profile::Tight => "timeouts {\n\t\t\tidle 2s\n\t\t\tread_header 2s\n\t\t}",
    };
    let conf = format!(
        r#"{{
	admin off
	auto_https off
	storage file_system {d}/data
	servers {{
		protocols h1 h2 h2c
		{timeouts}
	}}
}}
(site) {{
	bind 127.0.0.1
	root * {www}
	encode gzip
	@dynamic path /echo /status/* /redirect/* /delay/*
	reverse_proxy @dynamic 127.0.0.1:{backend}
	file_server
}}
http://127.0.0.1:{h1} {{
	import site
}}
https://localhost:{tls} {{
	tls {cert} {key}
	import site
}}
"#,
        www = s(&ctx.fx.www),
        backend = ctx.backend,
        cert = s(&ctx.fx.cert),
        key = s(&ctx.fx.key),
    );
    std::fs::write(dir.join("Caddyfile"), conf).unwrap();
    let mut cmd = Command::new("caddy");
    cmd.args([
        "run",
        "--config",
        &format!("{d}/Caddyfile"),
        "--adapter",
        "caddyfile",
    ])
    .env("HOME", d)
    .env("XDG_DATA_HOME", d)
    .env("XDG_CONFIG_HOME", d);
    let mut proc = Proc::spawn("caddy", cmd, &dir).map_err(NotStarted::Failed)?;
    proc.wait_ready(&[h1, tls], None)
        .map_err(NotStarted::Failed)?;
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: Some(h1),
        tls: Some(tls),
        // Caddy has no per-connection request limit.
        caps: static_caps(ctx.profile, None, None),
    })
}
