//! Interop with a server nobody here wrote: nginx on loopback, over HTTP/1.1,
//! h2c (prior knowledge) and TLS with ALPN h2. Skipped, with a message, when
//! nginx is not installed (`.ci/run` installs it).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use courier::Client;
use http::Version;

const BIG: usize = 1024 * 1024;

struct Nginx {
    dir: PathBuf,
    child: Child,
    h1: u16,
    h2c: u16,
    tls: u16,
    ca_pem: String,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = Command::new("nginx")
            .args([
                "-p",
                path(&self.dir),
                "-c",
                "nginx.conf",
                "-e",
                "error.log",
                "-s",
                "stop",
            ])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn nginx_installed() -> bool {
    Command::new("nginx")
        .arg("-v")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn start_nginx() -> Option<Nginx> {
    start_nginx_with("keepalive_requests 100000;")
}

/// nginx with `http_extra` in its `http` block (`""`: nginx's own defaults
/// for what the block does not name).
fn start_nginx_with(http_extra: &str) -> Option<Nginx> {
    if !nginx_installed() {
        eprintln!("skipping nginx interop: nginx is not installed (apt-get install nginx)");
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "courier-nginx-{}-{}",
        std::process::id(),
        free_port()
    ));
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    std::fs::write(www.join("small.txt"), "hello from nginx\n").unwrap();
    let big: Vec<u8> = (0..BIG).map(|i| (i % 251) as u8).collect();
    std::fs::write(www.join("big.bin"), big).unwrap();

    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let ca_pem = cert.cert.pem();
    std::fs::write(dir.join("cert.pem"), &ca_pem).unwrap();
    std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();

    let (h1, h2c, tls) = (free_port(), free_port(), free_port());
    let d = path(&dir);
    let conf = format!(
        r#"
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 2048; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    {http_extra}
    http2_max_concurrent_streams 128;
    root {d}/www;
    server {{ listen 127.0.0.1:{h1}; }}
    server {{ listen 127.0.0.1:{h2c} http2; }}
    server {{
        listen 127.0.0.1:{tls} ssl http2;
        ssl_certificate {d}/cert.pem;
        ssl_certificate_key {d}/key.pem;
    }}
}}
"#
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new("nginx")
        .args(["-p", d, "-c", "nginx.conf", "-e", "error.log"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn nginx");
    let nginx = Nginx {
        dir,
        child,
        h1,
        h2c,
        tls,
        ca_pem,
    };
    // Ready when all three ports accept.
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in [h1, h2c, tls] {
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not start (see its error.log)"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Some(nginx)
}

async fn check_bodies(client: &Client, base: &str, version: Version) {
    let res = client
        .get(format!("{base}/small.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.version(), version);
    assert_eq!(res.text().await.unwrap(), "hello from nginx\n");
    // 1 MiB bodies, several at once, checked byte for byte.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let request = client.get(format!("{base}/big.bin"));
            tokio::spawn(async move { request.send().await?.bytes().await })
        })
        .collect();
    for t in tasks {
        let body = t.await.unwrap().unwrap();
        assert_eq!(body.len(), BIG);
        assert!(body.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
    }
    // 300 concurrent requests (streams, over HTTP/2).
    let tasks: Vec<_> = (0..300)
        .map(|_| {
            let request = client.get(format!("{base}/small.txt"));
            tokio::spawn(async move { request.send().await?.bytes().await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().len(), 17);
    }
    let missing = client.get(format!("{base}/missing")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    drop(missing);
}

#[tokio::test]
async fn interop_with_nginx() {
    let Some(nginx) = start_nginx() else { return };

    let h1 = Client::new();
    check_bodies(
        &h1,
        &format!("http://127.0.0.1:{}", nginx.h1),
        Version::HTTP_11,
    )
    .await;
    assert_eq!(h1.metrics().connections_established_http2, 0);

    let h2c = Client::builder().http2_prior_knowledge().build().unwrap();
    check_bodies(
        &h2c,
        &format!("http://127.0.0.1:{}", nginx.h2c),
        Version::HTTP_2,
    )
    .await;
    let m = h2c.metrics();
    assert_eq!(m.connections_established_http1, 0);
    // 300 streams against nginx's limit of 128: at most 3 connections.
    assert!((1..=3).contains(&m.connections_established_http2), "{m:?}");

    let tls = Client::builder()
        .add_root_certificate(&nginx.ca_pem)
        .build()
        .unwrap();
    check_bodies(
        &tls,
        &format!("https://localhost:{}", nginx.tls),
        Version::HTTP_2,
    )
    .await;
    let m = tls.metrics();
    assert!((1..=3).contains(&m.connections_established_http2), "{m:?}");
    assert_eq!(m.tls_handshakes, m.connections_established);
    assert_eq!(m.requests_failed, 0);
}

/// `requests` GETs of a small file over h2c, `concurrency` at a time;
/// returns the errors.
async fn load(client: &Client, url: &str, concurrency: usize, requests: usize) -> Vec<String> {
    let workers: Vec<_> = (0..concurrency)
        .map(|w| {
            let (client, url) = (client.clone(), url.to_string());
            let mine = requests / concurrency + usize::from(w < requests % concurrency);
            tokio::spawn(async move {
                let mut errors = Vec::new();
                for _ in 0..mine {
                    let result = async { client.get(&url).send().await?.bytes().await }.await;
                    match result {
                        Ok(body) => assert_eq!(body, "hello from nginx\n"),
                        Err(e) => errors.push(format!("{} ({})", e, e.kind())),
                    }
                }
                errors
            })
        })
        .collect();
    let mut errors = Vec::new();
    for w in workers {
        errors.extend(w.await.unwrap());
    }
    errors
}

/// nginx closes an HTTP/2 connection after `keepalive_requests` (here 100)
/// with GOAWAY, while advertising 128 streams: streams past the last it
/// serves are refused, and must be sent again, not fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_keepalive_requests_100_under_load_loses_no_request() {
    let Some(nginx) = start_nginx_with("keepalive_requests 100;") else {
        return;
    };
    let client = Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{}/small.txt", nginx.h2c);
    let errors = load(&client, &url, 128, 3000).await;
    let m = client.metrics();
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    // About 3000 / 100 connections once the budget is learnt.
    assert!(m.connections_established_http2 <= 60, "{m:?}");
}

/// nginx's defaults (`keepalive_requests 1000`) with 512 streams in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_defaults_under_load_lose_no_request() {
    let Some(nginx) = start_nginx_with("") else {
        return;
    };
    let client = Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{}/small.txt", nginx.h2c);
    let errors = load(&client, &url, 512, 6000).await;
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
}
