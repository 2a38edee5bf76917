//! Timeouts (total, per attempt, the deadline header) and the concurrency limit.
//!
//! The deadlines are on tokio's clock: the tests that wait for one run on
//! paused time, with the servers' waits as timers in the same runtime.
//! Not the endless body (`the_total_timeout_bounds_the_body_too`): its
//! bytes keep the runtime busy, so paused time would never move.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::h2::within_for;
use crate::support::middleware::{reply, scripted};
use crate::support::server;
use courier::middleware::{RetryConfig, Stack, TimeoutConfig};
use courier::{Client, ErrorKind, ServiceRequestBuilder};

/// Sends `req` to the echoing server below and returns the
/// `x-request-timeout-ms` value it saw (`none` when there was none).
async fn timeout_header_seen(req: ServiceRequestBuilder) -> String {
    req.send().await.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn the_server_is_told_the_time_left() {
    let srv = scripted(|req| async move {
        reply(
            200,
            req.header("x-request-timeout-ms")
                .unwrap_or("none")
                .to_owned(),
        )
    })
    .await;
    let client = Stack::new()
        .timeout(
            TimeoutConfig::default()
                .total(Duration::from_secs(2))
                .per_attempt(Duration::from_millis(700)),
        )
        .client(Client::new());
    let ms: u64 = timeout_header_seen(client.get(srv.url("/")))
        .await
        .parse()
        .unwrap();
    assert!((600..=700).contains(&ms), "{ms}");

    // A per-request timeout shorter than the total wins.
    let client = Stack::new()
        .timeout(TimeoutConfig::default().total(Duration::from_secs(2)))
        .client(Client::new());
    let ms: u64 = timeout_header_seen(client.get(srv.url("/")).timeout(Duration::from_millis(300)))
        .await
        .parse()
        .unwrap();
    assert!((200..=300).contains(&ms), "{ms}");

    // Another header name, or none.
    let client = Stack::new()
        .timeout(
            TimeoutConfig::default()
                .total(Duration::from_secs(1))
                .header(None),
        )
        .client(Client::new());
    assert_eq!(timeout_header_seen(client.get(srv.url("/"))).await, "none");
}

#[tokio::test(start_paused = true)]
async fn per_attempt_timeouts_are_retried_within_the_total() {
    let srv = server().await;
    let client = Stack::new()
        .timeout(
            TimeoutConfig::default()
                .total(Duration::from_millis(1500))
                .per_attempt(Duration::from_millis(100)),
        )
        .retry(
            RetryConfig::default()
                .max_attempts(3)
                .base_delay(Duration::from_millis(1)),
        )
        .client(Client::new());
    let started = tokio::time::Instant::now();
    let err = client.get(srv.url("/delay/1000")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(format!("{err:#}").contains("attempt timed out"), "{err}");
    // Three attempts of 100 ms and two short backoffs, on paused time.
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(400),
        "{took:?}"
    );
    let retry = client.layers().retry.as_ref().unwrap().stats();
    assert_eq!(retry.retries, 2);
}

#[tokio::test]
async fn the_total_timeout_bounds_the_body_too() {
    let srv = server().await;
    let client = Stack::new()
        .timeout(TimeoutConfig::default().total(Duration::from_millis(200)))
        .client(Client::new());
    // The head arrives at once; the body never ends. Bounded here too, so
    // a body the total timeout misses fails the test instead of hanging it.
    let res = client.get(srv.url("/fault/endless")).send().await.unwrap();
    let started = Instant::now();
    let err = within_for(Duration::from_secs(5), "the endless body", res.bytes())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));

    let started = Instant::now();
    let err = client.get(srv.url("/delay/2000")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn the_concurrency_limit_holds_until_the_body_ends() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let srv = {
        let (in_flight, most) = (in_flight.clone(), most.clone());
        scripted(move |_| {
            let (in_flight, most) = (in_flight.clone(), most.clone());
            async move {
                let now = in_flight.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                tokio::time::sleep(Duration::from_millis(30)).await;
                in_flight.fetch_sub(1, SeqCst);
                reply(200, "x")
            }
        })
        .await
    };
    let client = Stack::new().concurrency_limit(2).client(Client::new());
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            let url = srv.url("/");
            tokio::spawn(
                async move { client.get(url).send().await.unwrap().bytes().await.unwrap() },
            )
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(srv.hits(), 8);
    assert_eq!(most.load(SeqCst), 2);
    let limit = client.layers().concurrency_limit.as_ref().unwrap();
    assert_eq!(limit.available(), 2);

    // Waiting for a slot counts against the deadline.
    let first = client.get(srv.url("/")).send().await.unwrap();
    let second = client.get(srv.url("/")).send().await.unwrap();
    let started = tokio::time::Instant::now();
    let third = client
        .get(srv.url("/"))
        .timeout(Duration::from_millis(50))
        .send();
    let err = within_for(Duration::from_secs(5), "a slot or the deadline", third)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    assert!(format!("{err:#}").contains("concurrency limit"), "{err}");
    drop((first, second));

    // A response held unread keeps its slot.
    let held = client.get(srv.url("/")).send().await.unwrap();
    assert_eq!(limit.available(), 1);
    drop(held);
    assert_eq!(limit.available(), 2);
}
