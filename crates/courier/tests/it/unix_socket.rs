//! Connections that are not TCP courier dials itself: a Unix domain socket
//! (for every host, or for one), and a caller's connector, with TLS on top
//! for `https` URLs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use courier::connect::{AsyncIo, Connect, Connecting};
use courier::{Client, ErrorKind};
use courier_server::{ServerConfig, TestPki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

/// A socket path in a fresh temp dir (removed when the guard drops).
pub(crate) struct SocketDir(PathBuf);

impl SocketDir {
    pub(crate) fn new(name: &str) -> SocketDir {
        let dir = std::env::temp_dir().join(format!(
            "courier-uds-{}-{name}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        SocketDir(dir)
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.0.join("s.sock")
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An HTTP/1.1 server on a Unix socket: keeps connections alive and answers
/// each request with its `Host` header and how many requests its
/// connection carried so far.
pub(crate) fn serve_unix(path: &PathBuf) -> tokio::task::JoinHandle<()> {
    let listener = UnixListener::bind(path).unwrap();
    tokio::spawn(async move {
        while let Ok((mut io, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut served = 0;
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        let mut chunk = [0u8; 4096];
                        match io.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_string();
                    buf.drain(..end + 4);
                    served += 1;
                    let host = head
                        .lines()
                        .find_map(|l| l.strip_prefix("host: ").or(l.strip_prefix("Host: ")))
                        .unwrap_or("-")
                        .to_owned();
                    let body = format!("{host} #{served}");
                    let out = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if io.write_all(out.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    })
}

#[tokio::test]
async fn every_request_goes_over_the_unix_socket_and_connections_are_reused() {
    let dir = SocketDir::new("all");
    let server = serve_unix(&dir.path());
    let client = Client::builder().unix_socket(dir.path()).build().unwrap();
    for n in 1..=3 {
        let body = crate::support::fetch(&client, "http://docker/v1.43/info").await;
        assert_eq!(body, format!("docker #{n}"));
    }
    let m = client.metrics();
    assert_eq!(m.connections_established, 1, "{m:?}");
    server.abort();
}

#[tokio::test]
async fn one_host_over_a_unix_socket_the_others_over_tcp() {
    let dir = SocketDir::new("one");
    let server = serve_unix(&dir.path());
    let tcp = crate::support::server().await;
    let client = Client::builder()
        .unix_socket_for("Agent.Local", dir.path())
        .build()
        .unwrap();
    let body = crate::support::fetch(&client, "http://agent.local:8126/v0.4/traces").await;
    assert_eq!(body, "agent.local:8126 #1");
    let body = crate::support::fetch(&client, tcp.url("/bytes/4")).await;
    assert_eq!(body.len(), 4);
    server.abort();
}

#[tokio::test]
async fn a_missing_socket_is_a_connect_error_naming_it() {
    let dir = SocketDir::new("missing");
    let client = Client::builder().unix_socket(dir.path()).build().unwrap();
    let err = client.get("http://x/").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(format!("{err:#}").contains("s.sock"), "{err}");
}

/// Dials the one server it was made for, counting the calls.
struct Fixed {
    addr: std::net::SocketAddr,
    calls: Arc<AtomicUsize>,
}

impl Connect for Fixed {
    fn connect(&self, host: &str, port: u16) -> Connecting {
        assert_eq!((host, port), ("service.example", 443));
        self.calls.fetch_add(1, Ordering::SeqCst);
        let addr = self.addr;
        Box::pin(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            Ok(Box::new(tcp) as Box<dyn AsyncIo>)
        })
    }
}

#[tokio::test]
async fn a_callers_connector_carries_tls_and_http2() {
    let pki = TestPki::new();
    let srv = crate::support::server_with(ServerConfig {
        tls: Some(pki.server_config(&["service.example"])),
        http2: true,
        ..ServerConfig::default()
    })
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let client = Client::builder()
        .add_root_certificate(pki.ca_pem())
        .connector(Fixed {
            addr: srv.local_addr(),
            calls: Arc::clone(&calls),
        })
        .build()
        .unwrap();
    for _ in 0..3 {
        let res = client
            .get("https://service.example/bytes/5")
            .send()
            .await
            .unwrap();
        assert_eq!(res.version(), http::Version::HTTP_2);
        assert_eq!(res.bytes().await.unwrap().len(), 5);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let m = client.metrics();
    assert_eq!(m.tls_handshakes, 1, "{m:?}");
}
