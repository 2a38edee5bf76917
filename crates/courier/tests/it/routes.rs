//! Route precedence (issue 27): a Unix socket route never goes through a
//! proxy, nor does a caller's connector; then an address given with
//! `resolve`; then a proxy given to the builder (its `no_proxy` bypass
//! included); then the environment's proxy and `NO_PROXY`; then direct.
//! Each outranked route here is a proxy that answers with its own name, so
//! a request that took the wrong route shows it in its body.

use std::net::SocketAddr;

use courier::connect::{AsyncIo, Connect, Connecting};
use courier::{Client, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{alone, fetch};
use crate::unix_socket::{serve_unix, SocketDir};

/// A forward proxy that answers every request with `name` and closes.
async fn naming_proxy(name: &'static str) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut io, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut chunk = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
                    match io.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                let out = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{name}",
                    name.len()
                );
                let _ = io.write_all(out.as_bytes()).await;
            });
        }
    });
    (addr, task)
}

/// Dials `addr` whatever it is asked for.
struct To(SocketAddr);

impl Connect for To {
    fn connect(&self, _host: &str, _port: u16) -> Connecting {
        let addr = self.0;
        Box::pin(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            Ok(Box::new(tcp) as Box<dyn AsyncIo>)
        })
    }
}

async fn body(client: &Client, url: &str) -> String {
    String::from_utf8(fetch(client, url).await.to_vec()).unwrap()
}

#[tokio::test]
async fn a_unix_socket_or_a_connector_never_goes_through_a_proxy() {
    let (proxy, p) = naming_proxy("proxy").await;
    let dir = SocketDir::new("routes");
    let unix = serve_unix(&dir.path());
    let srv = crate::support::server().await;
    let explicit = || Proxy::all(&format!("http://{proxy}")).unwrap();

    let client = Client::builder()
        .no_env_proxy()
        .proxy(explicit())
        .unix_socket_for("agent.local", dir.path())
        .build()
        .unwrap();
    assert_eq!(
        body(&client, "http://agent.local/x").await,
        "agent.local #1"
    );
    // Other hosts still take the proxy.
    assert_eq!(body(&client, "http://elsewhere.example/x").await, "proxy");

    let client = Client::builder()
        .no_env_proxy()
        .proxy(explicit())
        .unix_socket(dir.path())
        .build()
        .unwrap();
    assert_eq!(body(&client, "http://docker/info").await, "docker #1");

    let client = Client::builder()
        .no_env_proxy()
        .proxy(explicit())
        .connector(To(srv.local_addr()))
        .build()
        .unwrap();
    assert_eq!(
        fetch(&client, "http://service.example/bytes/3").await.len(),
        3
    );
    unix.abort();
    p.abort();
}

#[tokio::test]
async fn an_address_given_with_resolve_goes_direct_past_a_proxy() {
    let (proxy, p) = naming_proxy("proxy").await;
    let srv = crate::support::server().await;
    let client = Client::builder()
        .no_env_proxy()
        .proxy(Proxy::all(&format!("http://{proxy}")).unwrap())
        .resolve("api.internal", srv.local_addr())
        .build()
        .unwrap();
    let url = format!("http://api.internal:{}/bytes/4", srv.local_addr().port());
    assert_eq!(fetch(&client, &url).await.len(), 4);
    assert_eq!(body(&client, "http://other.internal/x").await, "proxy");
    p.abort();
}

/// The environment is the process's: this runs in a process of its own.
#[tokio::test]
async fn the_environments_proxy_comes_after_every_route_the_caller_chose() {
    if !alone(
        module_path!(),
        "the_environments_proxy_comes_after_every_route_the_caller_chose",
    ) {
        return;
    }
    let (env_proxy, pe) = naming_proxy("env").await;
    let (explicit, px) = naming_proxy("explicit").await;
    let dir = SocketDir::new("routes-env");
    let unix = serve_unix(&dir.path());
    let srv = crate::support::server().await;
    for var in [
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        std::env::remove_var(var);
    }
    std::env::remove_var("no_proxy");
    std::env::remove_var("NO_PROXY");
    std::env::set_var("http_proxy", format!("http://{env_proxy}"));

    // The case: a Unix socket for a host, with http_proxy set.
    let client = Client::builder()
        .unix_socket_for("agent.local", dir.path())
        .build()
        .unwrap();
    assert_eq!(
        body(&client, "http://agent.local/x").await,
        "agent.local #1"
    );
    assert_eq!(body(&client, "http://elsewhere.example/x").await, "env");

    // A connector, and an address given with resolve.
    let client = Client::builder()
        .connector(To(srv.local_addr()))
        .build()
        .unwrap();
    assert_eq!(
        fetch(&client, "http://service.example/bytes/2").await.len(),
        2
    );
    let client = Client::builder()
        .resolve("api.internal", srv.local_addr())
        .build()
        .unwrap();
    let url = format!("http://api.internal:{}/bytes/5", srv.local_addr().port());
    assert_eq!(fetch(&client, &url).await.len(), 5);

    // A proxy given to the builder comes first, and so does its bypass.
    let client = Client::builder()
        .proxy(
            Proxy::http(&format!("http://{explicit}"))
                .unwrap()
                .no_proxy("bypassed.example, 127.0.0.1"),
        )
        .build()
        .unwrap();
    assert_eq!(body(&client, "http://a.example/x").await, "explicit");
    assert_eq!(fetch(&client, srv.url("/bytes/6")).await.len(), 6);

    // An explicit proxy for https only leaves http to the environment's.
    let client = Client::builder()
        .proxy(Proxy::https(&format!("http://{explicit}")).unwrap())
        .build()
        .unwrap();
    assert_eq!(body(&client, "http://a.example/x").await, "env");

    // NO_PROXY, then direct.
    std::env::set_var("no_proxy", "127.0.0.1");
    let client = Client::new();
    assert_eq!(fetch(&client, srv.url("/bytes/7")).await.len(), 7);
    assert_eq!(body(&client, "http://a.example/x").await, "env");
    std::env::remove_var("no_proxy");
    std::env::remove_var("http_proxy");
    unix.abort();
    pe.abort();
    px.abort();
}
