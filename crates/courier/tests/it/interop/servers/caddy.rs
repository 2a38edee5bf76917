//! Caddy 2 (Debian package), from a Caddyfile: files, `encode gzip`,
//! `/echo` & co. through `reverse_proxy`; h2c only because the config
//! turns it on (`protocols h1 h2 h2c`), and HTTP/3 on the TLS port's number
//! over UDP with feature `http3` (`h3` added to them; Caddy's HTTP/3 is
//! quic-go's, which listens only where the site says `bind 127.0.0.1`).

use std::process::Command;
use std::time::Duration;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{h3_port, static_caps, Caps, Ctx, H3Port, NotStarted, Profile, Running, Server};

/// Caddy 2.6.2 (Go 1.19's net/http) now and then never finishes an upload
/// sent with `Expect: 100-continue` through `reverse_proxy` to an upstream
/// that answers before it has read the body, as the built-in server's
/// `/echo` does: the response head stays in Caddy, which waits on the
/// upstream's body until the client gives up ("aborting with incomplete
/// response: context canceled"). curl does the same: 32 loops of `curl -H
/// 'Expect: 100-continue' --data-binary @64KiB` for 8 s, 8 of 2,101 timed
/// out (3 of 2,215 without the tight timeouts); without the header 0 of
/// 2,113, and 0 of 2,125 with the header to an upstream that reads the body
/// first. Without the header Caddy instead cuts a hole in such an echo (see
/// `http1_half_duplex.rs`), so courier keeps asking.
const UPLOAD_STALLS: &str = "Caddy 2.6.2 now and then stalls an upload sent with Expect: 100-continue to an upstream that answers before reading it (curl: 8 of 2,101)";

/// Caddy 2.6.2's HTTP/3 (its quic-go) gives a request without
/// `content-length` a length of 0, and `reverse_proxy` then forwards no
/// body: an upload of unknown length (streamed) is echoed empty. quic-go's
/// client (v0.65) shows the same: a 256 KiB POST to `/echo` echoed 262,144
/// bytes with `content-length` and 0 without. courier sends the length
/// whenever it knows it (`http3_conn::a_body_of_known_length_says_it`).
const H3_STREAMED_UPLOAD: &str = "Caddy 2.6.2 forwards an HTTP/3 upload without content-length as empty (quic-go's client: 0 of 262,144 bytes echoed)";

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
    let h3 = h3_port();
    let (h1, tls) = (free_port(), h3.unwrap_or_else(free_port));
    let protocols = if h3.is_some() {
        "h1 h2 h2c h3"
    } else {
        "h1 h2 h2c"
    };
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
		protocols {protocols}
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
    let caps = Caps {
        upload_stalls: Some(UPLOAD_STALLS),
        // Caddy has no per-connection request limit.
        ..static_caps(ctx.profile, None, None)
    };
    let h3 = h3.map(|port| H3Port {
        port,
        caps: Caps {
            // Caddy 2.6.2 gives quic-go no config of its own: QUIC's idle
            // timeout is quic-go's 30 s in both profiles (`timeouts` are
            // net/http's).
            idle: Some(Duration::from_secs(30)),
            h3_streamed_upload_dropped: Some(H3_STREAMED_UPLOAD),
            ..caps.clone()
        },
        own: None,
    });
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: Some(h1),
        tls: Some(tls),
        caps,
        h3,
    })
}
