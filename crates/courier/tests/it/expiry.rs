//! Connection lifetime (rotation) and idle timeout.
//!
//! On the wall clock, not paused time: the scavenger ticks on a tokio interval
//! but judges idle time and lifetimes by `std::time::Instant` (`pool/expiry.rs`,
//! `pool/origin`), which paused time does not move, so an idle connection would
//! never expire (tried: the idle-timeout test times out, and the rotation test's
//! requests time out once the paused clock runs ahead of the wall clock that
//! sets their deadlines).

use std::time::{Duration, Instant};

use crate::support::{connection_id, eventually, fetch, server, spawn_get};

#[tokio::test]
async fn lifetime_rotates_connections_without_failing_requests() {
    let srv = server().await;
    let client = courier::Client::builder()
        .pooled_connection_lifetime(Some(Duration::from_secs(1)))
        .build()
        .unwrap();
    let started = Instant::now();
    let mut ids = std::collections::BTreeSet::new();
    let mut requests = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let res = client.get(srv.url("/delay/5")).send().await.unwrap();
        ids.insert(connection_id(&res));
        res.bytes().await.unwrap();
        requests += 1;
    }
    let m = client.metrics();
    assert!(m.connections_established >= 4, "{m:?}");
    assert_eq!(ids.len() as u64, m.connections_established);
    assert_eq!(m.requests_failed, 0);
    assert!(requests > 100);
}

#[tokio::test]
async fn lifetime_never_interrupts_a_request_in_flight() {
    let srv = server().await;
    let client = courier::Client::builder()
        .pooled_connection_lifetime(Some(Duration::from_millis(100)))
        .build()
        .unwrap();
    // The response takes 3x the lifetime; it must complete on its connection.
    let res = client.get(srv.url("/delay/300")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "ok");
    // On return the expired connection is closed, not pooled.
    eventually("expired connection closed", Duration::from_secs(2), || {
        client.metrics().connections_open == 0
    })
    .await;
}

#[tokio::test]
async fn lifetime_jitter_spreads_expiry() {
    let srv = server().await;
    let client = courier::Client::builder()
        .pooled_connection_lifetime(Some(Duration::from_millis(200)))
        .pooled_connection_lifetime_jitter(Duration::from_millis(200))
        .build()
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        fetch(&client, srv.url("/delay/5")).await;
    }
    let n = client.metrics().connections_established;
    // Lifetimes are between 200 and 400 ms: 5 to 10 rotations in 2 s.
    assert!((5..=12).contains(&n), "{n} connections");
}

#[tokio::test]
async fn idle_timeout_closes_idle_connections_in_the_background() {
    let srv = server().await;
    let client = courier::Client::builder()
        .pool_idle_timeout(Some(Duration::from_secs(1)))
        .build()
        .unwrap();
    let burst: Vec<_> = (0..3)
        .map(|_| spawn_get(&client, srv.url("/delay/50")))
        .collect();
    for t in burst {
        t.await.unwrap().unwrap();
    }
    assert_eq!(client.metrics().connections_open, 3);
    // Silence: nobody touches the pool, so only the scavenger can close them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    eventually("idle connections closed", Duration::from_secs(1), || {
        client.metrics().connections_open == 0
    })
    .await;
    eventually("server saw them close", Duration::from_secs(1), || {
        srv.connections_open() == 0
    })
    .await;
    assert_eq!(client.metrics().connections_idle, 0);
}

#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_replaced() {
    let srv = server().await;
    let client = courier::Client::new();
    let first = client.get(srv.url("/bytes/1")).send().await.unwrap();
    let first_id = connection_id(&first);
    first.bytes().await.unwrap();
    srv.close_idle_connections();
    let res = client.get(srv.url("/bytes/1")).send().await.unwrap();
    assert_ne!(connection_id(&res), first_id);
    res.bytes().await.unwrap();
    assert_eq!(client.metrics().connections_established, 2);
    assert_eq!(client.metrics().requests_failed, 0);
}
