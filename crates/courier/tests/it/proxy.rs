//! Requests through real proxies started on loopback: tinyproxy (an HTTP
//! proxy: `http` requests forwarded in absolute form, `https` ones through
//! a `CONNECT` tunnel, with and without Basic credentials) and microsocks
//! (SOCKS5, names resolved by the proxy or here, with and without a
//! username and password). Both come from Debian's packages
//! (`interop/install-debian.sh`); with `CI=true` a missing one fails the
//! test, otherwise it is skipped with a note.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use courier::{Client, ClientBuilder, ErrorKind, Proxy};
use courier_server::{ServerConfig, ServerHandle, TestPki};

use crate::support::free_port;

/// A proxy process, killed on drop.
struct Running {
    child: Child,
    addr: SocketAddr,
    _dir: Option<TempDir>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn installed(bin: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {bin}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        crate::support::ci::skip_unless_ci(&format!(
            "{bin} is not installed (interop/install-debian.sh)"
        ));
    }
    found
}

/// Waits until `addr` accepts connections (the process is up), or fails.
fn wait_listening(addr: SocketAddr, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the proxy exited at start: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "the proxy did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// tinyproxy on loopback; with `credentials`, it asks for Basic auth.
fn tinyproxy(credentials: Option<(&str, &str)>) -> Option<Running> {
    if !installed("tinyproxy") {
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "courier-tinyproxy-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let mut conf = format!(
        "Port {port}\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nMaxClients 64\nLogLevel Error\n"
    );
    if let Some((user, pass)) = credentials {
        conf += &format!("BasicAuth {user} {pass}\n");
    }
    let path = dir.join("tinyproxy.conf");
    std::fs::write(&path, conf).unwrap();
    let mut child = Command::new("tinyproxy")
        .arg("-d")
        .arg("-c")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_listening(addr, &mut child);
    Some(Running {
        child,
        addr,
        _dir: Some(TempDir(dir)),
    })
}

/// microsocks on loopback; with `credentials`, it asks for them.
fn microsocks(credentials: Option<(&str, &str)>) -> Option<Running> {
    if !installed("microsocks") {
        return None;
    }
    let port = free_port();
    let mut cmd = Command::new("microsocks");
    cmd.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
    if let Some((user, pass)) = credentials {
        cmd.args(["-u", user, "-P", pass]);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_listening(addr, &mut child);
    Some(Running {
        child,
        addr,
        _dir: None,
    })
}

/// A TLS server (HTTP/2 by ALPN) for `localhost`, and its CA.
async fn tls_origin() -> (ServerHandle, TestPki) {
    let pki = TestPki::new();
    let srv = crate::support::server_with(ServerConfig {
        tls: Some(pki.server_config(&["localhost"])),
        http2: true,
        ..ServerConfig::default()
    })
    .await;
    (srv, pki)
}

/// A client trusting `pki` that reads no proxy from the environment.
fn trusting(pki: &TestPki) -> ClientBuilder {
    Client::builder()
        .no_env_proxy()
        .add_root_certificate(pki.ca_pem())
}

fn https(srv: &ServerHandle, path: &str) -> String {
    format!("https://localhost:{}{path}", srv.local_addr().port())
}

async fn headers(client: &Client, url: String) -> serde_json::Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn http_is_forwarded_by_an_http_proxy() {
    let Some(proxy) = tinyproxy(None) else { return };
    let srv = crate::support::server().await;
    let client = Client::builder()
        .no_env_proxy()
        .proxy(Proxy::http(&format!("http://{}", proxy.addr)).unwrap())
        .build()
        .unwrap();
    // tinyproxy adds `Via` to what it forwards: the request went through it.
    let h = headers(&client, srv.url("/headers")).await;
    assert!(
        h["via"].as_str().unwrap_or_default().contains("tinyproxy"),
        "{h}"
    );
    let res = client.get(srv.url("/bytes/10")).send().await.unwrap();
    assert_eq!(res.remote_addr(), Some(proxy.addr));
    // (tinyproxy keeps no client connection alive: nothing to reuse here.)
    assert_eq!(res.bytes().await.unwrap().len(), 10);
}

#[tokio::test]
async fn https_goes_through_a_connect_tunnel_and_tunnels_are_per_origin() {
    let Some(proxy) = tinyproxy(None) else { return };
    let (srv, pki) = tls_origin().await;
    let (other, _) = tls_origin().await;
    let client = trusting(&pki)
        .proxy(Proxy::all(&format!("http://{}", proxy.addr)).unwrap())
        .build()
        .unwrap();
    let h = headers(&client, https(&srv, "/headers")).await;
    // Inside a tunnel the proxy sees only TLS: no `Via`.
    assert!(h.get("via").is_none(), "{h}");
    let res = client.get(https(&srv, "/bytes/7")).send().await.unwrap();
    assert_eq!(res.version(), http::Version::HTTP_2);
    assert_eq!(res.bytes().await.unwrap().len(), 7);
    // Another origin through the same proxy: a tunnel of its own (this
    // one's certificate is from another CA, so reusing the first tunnel
    // would fail the TLS check as well as reach the wrong server).
    let err = client
        .get(https(&other, "/bytes/1"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn proxy_credentials_are_sent_and_their_absence_is_clear() {
    let Some(proxy) = tinyproxy(Some(("ann", "s3cret"))) else {
        return;
    };
    let (srv, pki) = tls_origin().await;
    let plain = crate::support::server().await;
    let with = format!("http://ann:s3cret@{}", proxy.addr);
    let client = trusting(&pki)
        .proxy(Proxy::all(&with).unwrap())
        .build()
        .unwrap();
    let res = client.get(https(&srv, "/bytes/3")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 3);
    let res = client.get(plain.url("/bytes/4")).send().await.unwrap();
    assert_eq!(res.status(), 200);

    let client = trusting(&pki)
        .proxy(Proxy::all(&format!("http://{}", proxy.addr)).unwrap())
        .build()
        .unwrap();
    let err = client
        .get(https(&srv, "/bytes/3"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(format!("{err:#}").contains("407"), "{err}");
    // A forwarded request gets the proxy's answer as its response.
    let res = client.get(plain.url("/bytes/4")).send().await.unwrap();
    assert_eq!(res.status(), 407);
}

#[tokio::test]
async fn socks5_with_names_resolved_by_the_proxy_or_here() {
    let Some(proxy) = microsocks(None) else {
        return;
    };
    let (srv, pki) = tls_origin().await;
    let plain = crate::support::server().await;
    for scheme in ["socks5h", "socks5"] {
        let client = trusting(&pki)
            .proxy(Proxy::all(&format!("{scheme}://{}", proxy.addr)).unwrap())
            .build()
            .unwrap();
        let res = client.get(https(&srv, "/bytes/5")).send().await.unwrap();
        assert_eq!(res.remote_addr(), Some(proxy.addr), "{scheme}");
        assert_eq!(res.bytes().await.unwrap().len(), 5, "{scheme}");
        let res = client.get(plain.url("/bytes/6")).send().await.unwrap();
        assert_eq!(res.bytes().await.unwrap().len(), 6, "{scheme}");
    }
}

#[tokio::test]
async fn socks5_credentials() {
    let Some(proxy) = microsocks(Some(("bob", "pw"))) else {
        return;
    };
    let plain = crate::support::server().await;
    let client = Client::builder()
        .no_env_proxy()
        .proxy(Proxy::all(&format!("socks5://bob:pw@{}", proxy.addr)).unwrap())
        .build()
        .unwrap();
    let body = crate::support::fetch(&client, plain.url("/bytes/2")).await;
    assert_eq!(body.len(), 2);
    let client = Client::builder()
        .no_env_proxy()
        .proxy(Proxy::all(&format!("socks5://bob:wrong@{}", proxy.addr)).unwrap())
        .build()
        .unwrap();
    let err = client.get(plain.url("/bytes/2")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(
        format!("{err:#}").contains("username and password"),
        "{err}"
    );
}

#[tokio::test]
async fn a_dead_proxy_fails_the_request_and_no_proxy_goes_direct() {
    let (dead, _held) = crate::support::refused_port();
    let dead = SocketAddr::from(([127, 0, 0, 1], dead));
    let srv = crate::support::server().await;
    let proxy = Proxy::all(&format!("http://{dead}"))
        .unwrap()
        .no_proxy("internal.example, 10.0.0.0/8");
    let client = Client::builder()
        .no_env_proxy()
        .proxy(proxy.clone())
        .build()
        .unwrap();
    let err = client.get(srv.url("/bytes/1")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(
        format!("{err:#}").contains(&format!("proxy {dead}")),
        "{err}"
    );
    // 127.0.0.1 bypasses it once listed.
    let client = Client::builder()
        .no_env_proxy()
        .proxy(proxy.no_proxy("127.0.0.0/8"))
        .build()
        .unwrap();
    assert_eq!(
        crate::support::fetch(&client, srv.url("/bytes/1"))
            .await
            .len(),
        1
    );
}

/// A proxy that accepts and then answers nothing, or trickles its answer
/// slower than `connect_timeout`: the request fails with ConnectTimeout at
/// that deadline (every dial of the pool, its stalled-attempt redials
/// included, meets the same proxy), never hangs. HTTP `CONNECT` (https)
/// and SOCKS5 (http).
#[tokio::test]
async fn a_silent_or_trickling_proxy_is_a_connect_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let proxy = tokio::spawn(async move {
        let mut n = 0usize;
        while let Ok((mut tcp, _)) = listener.accept().await {
            n += 1;
            let trickle = n % 2 == 0;
            tokio::spawn(async move {
                let mut first = [0u8; 1024];
                let _ = tcp.read(&mut first).await;
                let answer: &[u8] = if first[0] == 5 {
                    &[5, 0, 5, 0, 0, 1, 127, 0, 0, 1, 0, 80]
                } else {
                    b"HTTP/1.1 200 OK\r\n\r\n"
                };
                if trickle {
                    // One byte of a CONNECT answer (or SOCKS5 reply) every 100 ms.
                    for b in answer {
                        if tcp.write_all(&[*b]).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                let _ = tcp.read(&mut first).await;
            });
        }
    });
    let timeout = Duration::from_millis(400);
    for url in [format!("http://{addr}"), format!("socks5h://{addr}")] {
        let client = Client::builder()
            .no_env_proxy()
            .proxy(Proxy::all(&url).unwrap())
            .connect_timeout(timeout)
            .build()
            .unwrap();
        let target = if url.starts_with("http") {
            "https://origin.example/"
        } else {
            "http://origin.example/"
        };
        let started = Instant::now();
        let err = tokio::time::timeout(Duration::from_secs(10), client.get(target).send())
            .await
            .expect("a silent proxy hung the request")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectTimeout, "{url}: {err}");
        assert!(
            started.elapsed() >= timeout,
            "{url}: {:?}",
            started.elapsed()
        );
    }
    proxy.abort();
}
