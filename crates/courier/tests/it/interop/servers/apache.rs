//! Apache httpd 2.4 (Debian package) with mpm_event, mod_http2 (h2 and h2c
//! prior knowledge), mod_ssl, mod_deflate; `/echo` & co. through mod_proxy.

use std::process::Command;

use super::super::process::{free_port, installed, s, temp_dir, version_of, Proc};
use super::{static_caps, Ctx, NotStarted, Profile, Running, Server, PROXIED};

const MODULES: [&str; 12] = [
    "mpm_event",
    "authz_core",
    "mime",
    "http2",
    "ssl",
    "socache_shmcb",
    "proxy",
    "proxy_http",
    "filter",
    "deflate",
    "reqtimeout",
    "headers",
];

pub fn server() -> Server {
    Server {
        name: "apache",
        version,
        launch: start,
    }
}

fn version() -> Result<String, String> {
    if !installed("apache2") {
        return Err("apache2 is not installed (interop/install-debian.sh)".into());
    }
    Ok(version_of("apache2", &["-v"]))
}

fn start(ctx: &Ctx) -> Result<Running, NotStarted> {
    version().map_err(NotStarted::Missing)?;
    let dir = temp_dir("apache");
    let d = s(&dir);
    let www = s(&ctx.fx.www);
    let (h1, tls) = (free_port(), free_port());
    let modules: String = MODULES
        .iter()
        .map(|m| format!("LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so\n"))
        .collect();
    let proxied: String = PROXIED
        .iter()
        .map(|p| format!("ProxyPass {p} http://127.0.0.1:{}{p}\n", ctx.backend))
        .collect();
    let tight = match ctx.profile {
        // mod_reqtimeout, once loaded, applies its defaults (header 20-40 s).
        Profile::Default => "",
        Profile::Tight => {
            "KeepAliveTimeout 2\nMaxKeepAliveRequests 100\n\
             RequestReadTimeout handshake=2 header=2 body=5,MinRate=500\n"
        }
    };
    // As root, workers run as www-data (which can read the temp docroot).
    let user = if is_root() {
        "User www-data\nGroup www-data\n"
    } else {
        ""
    };
    let conf = format!(
        r#"
ServerRoot "{d}"
ServerName localhost
PidFile {d}/httpd.pid
ErrorLog {d}/error.log
LogLevel warn
DefaultRuntimeDir {d}
Mutex file:{d} default
{modules}
{user}
TypesConfig /etc/mime.types
Listen 127.0.0.1:{h1}
Listen 127.0.0.1:{tls}
SSLSessionCache shmcb:{d}/ssl_scache(512000)
Protocols h2 h2c http/1.1
H2Direct on
AddOutputFilterByType DEFLATE text/plain
{tight}
<Directory />
    Require all granted
</Directory>
<VirtualHost 127.0.0.1:{h1}>
    DocumentRoot {www}
    {proxied}
</VirtualHost>
<VirtualHost 127.0.0.1:{tls}>
    DocumentRoot {www}
    SSLEngine on
    SSLCertificateFile {cert}
    SSLCertificateKeyFile {key}
    Protocols h2 http/1.1
    {proxied}
</VirtualHost>
"#,
        cert = s(&ctx.fx.cert),
        key = s(&ctx.fx.key),
    );
    std::fs::write(dir.join("httpd.conf"), conf).unwrap();
    let mut cmd = Command::new("apache2");
    cmd.args(["-f", &format!("{d}/httpd.conf"), "-DFOREGROUND"]);
    let mut proc = Proc::spawn("apache", cmd, &dir).map_err(NotStarted::Failed)?;
    proc.wait_ready(&[h1, tls], None)
        .map_err(NotStarted::Failed)?;
    let limit = 100; // MaxKeepAliveRequests' default is 100 too.
    Ok(Running {
        procs: vec![proc],
        h1,
        h2c: Some(h1),
        tls: Some(tls),
        caps: static_caps(ctx.profile, Some(5), Some(limit)),
        h3: None,
    })
}

fn is_root() -> bool {
    version_of("id", &["-u"]) == "0"
}
