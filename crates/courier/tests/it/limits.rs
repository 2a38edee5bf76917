//! The per-host cap, the FIFO wait queue and the pool queue timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{eventually, fetch, server, spawn_get};
use courier::ErrorKind;

#[tokio::test]
async fn cap_of_four_serves_sixty_four_requests() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(4)
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        tasks.push(spawn_get(&client, srv.url("/delay/50")));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let m = client.metrics();
    assert!(m.connections_open_max <= 4, "{m:?}");
    assert!(m.connections_established <= 4, "{m:?}");
    assert!(srv.connections_accepted() <= 4);
    // 64 requests over 4 connections: at least 60 had to wait.
    assert!(m.time_in_queue.count() >= 60, "{m:?}");
    assert!(m.time_in_queue.max() >= Duration::from_millis(100), "{m:?}");
    assert_eq!(m.requests_queued, 0);
}

#[tokio::test]
async fn queue_timeout_fails_the_excess_and_the_pool_stays_usable() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(2)
        .pool_queue_timeout(Some(Duration::from_millis(50)))
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        tasks.push(spawn_get(&client, srv.url("/delay/300")));
    }
    let mut ok = 0;
    let mut queue_timeouts = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::PoolQueueTimeout, "{e}");
                assert!(e.is_timeout());
                queue_timeouts += 1;
            }
        }
    }
    assert_eq!((ok, queue_timeouts), (2, 6));
    assert_eq!(client.metrics().requests_queued, 0);
    // Still usable, over the connections it already has.
    let res = client.get(srv.url("/bytes/10")).send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 10);
    assert!(client.metrics().connections_established <= 2);
}

#[tokio::test]
async fn waiters_are_served_in_arrival_order() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    // Hold the only connection until everyone after has queued: a response
    // whose body is unread keeps its lease (a timed hold, /delay/100, ran
    // out before five waiters had queued on a loaded machine).
    let holder = client.get(srv.url("/bytes/1048576")).send().await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..5 {
        let request = client.get(srv.url("/bytes/1"));
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let res = request.send().await.unwrap();
            order.lock().unwrap().push(i);
            res.bytes().await.unwrap();
        }));
        // Enqueue strictly one after another.
        eventually("queued", Duration::from_secs(5), || {
            client.metrics().requests_queued == i + 1
        })
        .await;
    }
    assert_eq!(holder.bytes().await.unwrap().len(), 1 << 20);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn a_request_served_by_a_returned_connection_does_not_wait_for_its_dial() {
    // Connection attempts belong to the pool: the attempt a request started
    // ends up idle if that request was served by a returned connection first.
    let srv = server().await;
    let client = courier::Client::new();
    let first = client.get(srv.url("/bytes/1")).send().await.unwrap();
    first.bytes().await.unwrap();
    let burst: Vec<_> = (0..10)
        .map(|_| spawn_get(&client, srv.url("/bytes/1")))
        .collect();
    for t in burst {
        t.await.unwrap().unwrap();
    }
    let m = client.metrics();
    eventually("attempts settle", Duration::from_secs(5), || {
        client.metrics().connect_attempts_current == 0
    })
    .await;
    let m2 = client.metrics();
    // Every established connection is still open (idle), none was thrown away.
    assert_eq!(
        m2.connections_open, m2.connections_established,
        "{m:?} {m2:?}"
    );
    assert_eq!(m2.connections_idle, m2.connections_open);
}

/// A response dropped on a thread with no tokio runtime (a worker pool, a
/// destructor at shutdown) closes its connection there: the per-host cap
/// must get that slot back, or the origin is stuck below its cap for good.
#[tokio::test]
async fn a_connection_closed_outside_the_runtime_frees_its_slot() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(1)
        .timeout(std::time::Duration::from_secs(3))
        .build()
        .unwrap();
    let res = client.get(srv.url("/bytes/100000")).send().await.unwrap();
    // Dropped unread where no runtime is: no drain can start, the
    // connection is closed.
    std::thread::spawn(move || drop(res)).join().unwrap();
    let body = fetch(&client, srv.url("/bytes/10")).await;
    assert_eq!(body.len(), 10);
}
