//! DNS is resolved for every new connection, and new connections rotate
//! through the resolved addresses.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{fetch, server};
use courier::{ErrorKind, Resolve, Resolving};

/// Resolves every name to a fixed list, counting lookups.
struct Fixed {
    addrs: Vec<SocketAddr>,
    lookups: Arc<AtomicUsize>,
}

impl Resolve for Fixed {
    fn resolve(&self, host: &str, _port: u16) -> Resolving {
        assert_eq!(host, "service.test");
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let addrs = self.addrs.clone();
        Box::pin(async move { Ok(addrs) })
    }
}

struct Failing;

impl Resolve for Failing {
    fn resolve(&self, _host: &str, _port: u16) -> Resolving {
        Box::pin(async {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such host",
            ))
        })
    }
}

#[tokio::test]
async fn each_new_connection_resolves_and_starts_at_the_next_address() {
    let (a, b) = (server().await, server().await);
    let lookups = Arc::new(AtomicUsize::new(0));
    let client = courier::Client::builder()
        .dns_resolver(Fixed {
            addrs: vec![a.local_addr(), b.local_addr()],
            lookups: lookups.clone(),
        })
        .build()
        .unwrap();
    // `/close` makes every response end its connection, so every request
    // needs a new one.
    for _ in 0..10 {
        let res = client
            .get("http://service.test/close")
            .send()
            .await
            .unwrap();
        res.bytes().await.unwrap();
    }
    assert_eq!(lookups.load(Ordering::SeqCst), 10);
    assert_eq!(a.connections_accepted(), 5);
    assert_eq!(b.connections_accepted(), 5);
    // Reused connections do not resolve again.
    for _ in 0..10 {
        fetch(&client, "http://service.test/bytes/1").await;
    }
    assert_eq!(lookups.load(Ordering::SeqCst), 11);
    assert_eq!(client.metrics().dns_lookups, 11);
}

#[tokio::test]
async fn unreachable_addresses_are_skipped() {
    let good = server().await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let client = courier::Client::builder()
        .dns_resolver(Fixed {
            addrs: vec![dead, good.local_addr()],
            lookups: Arc::default(),
        })
        .build()
        .unwrap();
    for _ in 0..4 {
        let res = client
            .get("http://service.test/close")
            .send()
            .await
            .unwrap();
        res.bytes().await.unwrap();
    }
    assert_eq!(good.connections_accepted(), 4);
}

#[tokio::test]
async fn dns_failure_is_a_dns_error() {
    let client = courier::Client::builder()
        .dns_resolver(Failing)
        .connect_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let err = client.get("http://nowhere.test/").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Dns, "{err}");
    let m = client.metrics();
    assert_eq!((m.dns_failures, m.connect_failures), (1, 1));
}
