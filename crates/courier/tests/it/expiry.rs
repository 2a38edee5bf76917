//! Connection lifetime (rotation) and idle timeout.
//!
//! On paused time: the pool judges idle time and lifetimes, and the client
//! its deadlines, by `tokio::time::Instant`, the clock its timers run on, so
//! paused time moves all of them together. The server is the built-in one,
//! in this runtime, and its `/delay` waits are timers too, so time advances
//! only when every task waits for a timer, never while bytes are on their
//! way over loopback (which the kernel delivers within the write). The bounds
//! on waits for observable state ([`eventually`]) stay on the wall clock.

use std::time::Duration;

use tokio::time::Instant;

use crate::support::{connection_id, eventually, fetch, server, spawn_get};

#[tokio::test(start_paused = true)]
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

#[tokio::test(start_paused = true)]
async fn lifetime_never_interrupts_a_request_in_flight() {
    let srv = server().await;
    let client = courier::Client::builder()
        .pooled_connection_lifetime(Some(Duration::from_millis(100)))
        .build()
        .unwrap();
    // The response takes 3x the lifetime; it must complete on its connection.
    let res = client.get(srv.url("/delay/300")).send().await.unwrap();
    assert_eq!(res.text().await.unwrap(), "ok");
    // On return the expired connection is closed, not pooled: at once, with
    // no time passing, so not by the scavenger (whose next tick is a timer,
    // which paused time does not reach while this task stays ready).
    let paused_at = Instant::now();
    for _ in 0..100 {
        if client.metrics().connections_open == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let m = client.metrics();
    assert_eq!((m.connections_open, m.connections_idle), (0, 0), "{m:?}");
    assert_eq!(Instant::now(), paused_at, "no time passed");
}

#[tokio::test(start_paused = true)]
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
    // Lifetimes are between 200 and 400 ms: 5 to 10 connections in 2 s. On
    // paused time each request takes its 5 ms exactly, so without jitter
    // it is always 10 (each lives 200 ms); with it, 10 needs nine lifetimes
    // adding up to under 2 s, all near 200 ms (odds of about 1 in 360,000).
    assert!((5..=9).contains(&n), "{n} connections");
}

#[tokio::test(start_paused = true)]
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
    // Silence: nobody touches the pool, so only the scavenger can close them,
    // and not before they have been idle for the timeout (it sweeps every
    // 250 ms: a quarter of the timeout).
    tokio::time::sleep(Duration::from_millis(750)).await;
    assert_eq!(client.metrics().connections_idle, 3, "closed too early");
    tokio::time::sleep(Duration::from_millis(1250)).await;
    // Due at 1 s of idleness, seen by a sweep within 250 ms: closed by now,
    // give or take a sweep (paused time bounds this: `eventually`).
    eventually(
        "idle connections closed",
        Duration::from_millis(250),
        || client.metrics().connections_open == 0,
    )
    .await;
    eventually("server saw them close", Duration::from_millis(250), || {
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
