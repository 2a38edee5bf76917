//! Circuit breaker: opens on failures, fails fast, probes, closes.
//!
//! The breaker's clock is tokio's (`tokio::time::Instant` in
//! `middleware/circuit.rs`), so the test that waits out its break duration runs
//! on paused time: `eventually`'s sleeps move the clock, and the break passes in
//! no time. The scripted server runs on the test's runtime over loopback, so the
//! clock does not jump while a reply is on its way.
//!
//! The client's own request timeout is on that clock too (`client/send.rs`
//! takes its deadline from `tokio::time::Instant`), so it counts paused time
//! like everything else here, however far the clock is moved.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use crate::support::eventually;
use crate::support::middleware::{get_request, reply, scripted};
use courier::middleware::{CircuitBreakerConfig, CircuitBreakerLayer, CircuitState};
use courier::{Client, ErrorKind};
use tokio::time::Instant;
use tower::{ServiceBuilder, ServiceExt};

fn config() -> CircuitBreakerConfig {
    CircuitBreakerConfig::default()
        .failure_ratio(0.5)
        .minimum_throughput(4)
        .sampling_window(Duration::from_secs(30))
        .break_duration(Duration::from_millis(200))
}

#[tokio::test(start_paused = true)]
async fn opens_fails_fast_and_closes_after_a_good_probe() {
    let healthy = Arc::new(AtomicBool::new(false));
    let srv = {
        let healthy = healthy.clone();
        scripted(move |_| {
            let ok = healthy.load(SeqCst);
            async move {
                if ok {
                    reply(200, "ok")
                } else {
                    reply(500, "broken")
                }
            }
        })
        .await
    };
    let breaker = CircuitBreakerLayer::new(config());
    let svc = ServiceBuilder::new()
        .layer(breaker.clone())
        .service(Client::new());
    let get = || get_request(&srv.url("/"));
    let uri: http::Uri = srv.url("/").parse().unwrap();

    // Four failures in a row reach the minimum throughput at 100 % failures.
    for i in 0..4 {
        assert_eq!(
            breaker.state(&uri),
            CircuitState::Closed,
            "before failure {i}"
        );
        let res = svc.clone().oneshot(get()).await.unwrap();
        assert_eq!(res.status(), 500);
    }
    assert_eq!(breaker.state(&uri), CircuitState::Open);
    let opened = Instant::now();

    // Open: fails fast, the server sees nothing.
    for _ in 0..10 {
        let err = svc.clone().oneshot(get()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::CircuitOpen);
        assert!(format!("{err:#}").contains(&srv.origin()), "{err}");
    }
    assert_eq!(srv.hits(), 4);

    // Another origin is not affected.
    let other = crate::support::middleware::scripted(|_| async { reply(200, "fine") }).await;
    let res = svc
        .clone()
        .oneshot(get_request(&other.url("/")))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    // After the break, one probe goes through; it fails: open again.
    half_open_after_the_break(&breaker, &uri, opened).await;
    let res = svc.clone().oneshot(get()).await.unwrap();
    assert_eq!(res.status(), 500);
    assert_eq!(srv.hits(), 5);
    assert_eq!(breaker.state(&uri), CircuitState::Open);
    let opened = Instant::now();
    assert_eq!(
        svc.clone().oneshot(get()).await.unwrap_err().kind(),
        ErrorKind::CircuitOpen
    );

    // The origin recovers: the next probe succeeds and closes the circuit.
    healthy.store(true, SeqCst);
    half_open_after_the_break(&breaker, &uri, opened).await;
    let res = svc.clone().oneshot(get()).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(breaker.state(&uri), CircuitState::Closed);
    for _ in 0..5 {
        assert_eq!(svc.clone().oneshot(get()).await.unwrap().status(), 200);
    }
    assert_eq!(srv.hits(), 11);
}

/// Waits for the circuit opened at `opened` to turn half-open, and checks that
/// it did so at the break duration: `eventually` polls every 5 ms, and on
/// paused time its wall-clock limit alone would let any break pass.
async fn half_open_after_the_break(
    breaker: &CircuitBreakerLayer,
    uri: &http::Uri,
    opened: Instant,
) {
    eventually("half-open", Duration::from_secs(5), || {
        breaker.state(uri) == CircuitState::HalfOpen
    })
    .await;
    let after = opened.elapsed();
    let expected = config().break_duration;
    assert!(
        after >= expected && after < expected + Duration::from_millis(50),
        "half-open after {after:?}, not {expected:?}"
    );
}

#[tokio::test]
async fn below_the_failure_ratio_stays_closed() {
    // One request in three fails: 33 % < 50 %.
    let srv = scripted(|req| async move {
        if req.n % 3 == 0 {
            reply(503, "busy")
        } else {
            reply(200, "ok")
        }
    })
    .await;
    let breaker = CircuitBreakerLayer::new(config());
    let svc = ServiceBuilder::new()
        .layer(breaker.clone())
        .service(Client::new());
    for _ in 0..30 {
        let req = get_request(&srv.url("/"));
        svc.clone().oneshot(req).await.unwrap();
    }
    assert_eq!(srv.hits(), 30);
    assert_eq!(
        breaker.state(&srv.url("/").parse().unwrap()),
        CircuitState::Closed
    );
}

#[tokio::test]
async fn connection_errors_count_as_failures() {
    let (port, _held) = crate::support::refused_port();
    let breaker = CircuitBreakerLayer::new(config());
    let svc = ServiceBuilder::new()
        .layer(breaker.clone())
        .service(Client::new());
    let url = format!("http://127.0.0.1:{port}/");
    let mut kinds = Vec::new();
    for _ in 0..6 {
        let req = get_request(&url);
        kinds.push(svc.clone().oneshot(req).await.unwrap_err().kind());
    }
    assert_eq!(&kinds[..4], &[ErrorKind::Connect; 4]);
    assert_eq!(&kinds[4..], &[ErrorKind::CircuitOpen; 2]);
}
