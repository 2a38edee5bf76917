//! nginx's GOAWAY after `keepalive_requests` under load: the regression tests
//! for refused streams (issue 13), kept apart from the interop suite
//! (`tests/interop.rs`, which covers nginx's bodies, uploads and protocols) so
//! that they stay quick and focused. Skipped, with a message, when nginx is
//! not installed, except under CI (`support::ci`), where that fails the test
//! (`.ci/run` installs it).

use crate::support::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use courier::Client;

struct Nginx {
    dir: PathBuf,
    child: Child,
    h2c: u16,
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

fn nginx_installed() -> bool {
    Command::new("nginx")
        .arg("-v")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// nginx with `http_extra` in its `http` block (`""`: nginx's own defaults
/// for what the block does not name).
fn start_nginx_with(http_extra: &str) -> Option<Nginx> {
    if !nginx_installed() {
        crate::support::ci::skip_unless_ci(
            "nginx is not installed for the nginx GOAWAY tests (apt-get install nginx)",
        );
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

    let h2c = free_port();
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
    server {{ listen 127.0.0.1:{h2c} http2; }}
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
    let nginx = Nginx { dir, child, h2c };
    // Ready when its port accepts.
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in [h2c] {
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
