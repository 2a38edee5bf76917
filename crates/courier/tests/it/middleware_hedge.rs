//! Hedging: a stalled first attempt is overtaken by a second one, which wins;
//! the stalled one is cancelled and the server sees its connection close.
//!
//! The hedge's timer is tokio's (`tokio::time::sleep` in `middleware/hedge.rs`),
//! and so are the built-in server's `/delay` timers, so the tests that wait for
//! them run on paused time: the clock jumps to the next timer once every task
//! is idle, and the figures are exact instead of wall-clock bounds. The servers
//! run on the test's own runtime over loopback, where a write is readable by the
//! peer as it returns, so the runtime is never idle with I/O under way and the
//! clock never jumps past a reply still in flight. (A runtime on another thread,
//! or a server in another process, would let it.)
//!
//! The client's own request timeout is on that clock too (`client/send.rs`
//! takes its deadline from `tokio::time::Instant`), so it counts paused time
//! like everything else here, however far the clock is moved.

use std::time::Duration;

use crate::support::h2::within_for;
use crate::support::middleware::{get_request, reply, scripted};
use crate::support::{read_head, server};
use courier::middleware::{HedgeConfig, HedgeLayer, Stack};
use courier::{Body, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tower::{ServiceBuilder, ServiceExt};

/// A raw HTTP/1.1 server: the first connection reads a request and never
/// answers, reporting when the client gives up on it (EOF or reset); every
/// later connection answers "fast".
async fn first_stalls() -> (String, mpsc::UnboundedReceiver<&'static str>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut n = 0;
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            n += 1;
            let tx = tx.clone();
            tokio::spawn(async move {
                if !read_head(&mut stream).await {
                    return;
                }
                let mut buf = vec![0u8; 4096];
                if n == 1 {
                    let _ = tx.send("stalled request received");
                    // Never answer; report when the client hangs up.
                    loop {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => {
                                let _ = tx.send("cancelled");
                                return;
                            }
                            Ok(_) => {}
                        }
                    }
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nfast")
                    .await;
                // Keep the connection open for reuse.
                let _ = stream.read(&mut buf).await;
            });
        }
    });
    (format!("http://{addr}/slow-or-fast"), rx)
}

#[tokio::test(start_paused = true)]
async fn a_stalled_attempt_is_hedged_and_cancelled() {
    let (url, mut events) = first_stalls().await;
    let delay = Duration::from_millis(100);
    let hedge = HedgeLayer::new(HedgeConfig::default().delay(delay));
    let svc = ServiceBuilder::new()
        .layer(hedge.clone())
        .service(Client::new());
    let started = tokio::time::Instant::now();
    let req = get_request(&url);
    let res = within_for(Duration::from_secs(10), "hedged request", svc.oneshot(req))
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "fast");
    // Paused time moves only to timers: the hedge went out at its delay (not
    // before, and not a delay later), and its answer took no time.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= delay && elapsed < 2 * delay,
        "hedged after {elapsed:?}, not {delay:?}"
    );

    let stats = hedge.stats();
    assert_eq!((stats.hedges, stats.hedges_won), (1, 1), "{stats:?}");
    assert_eq!(
        within_for(Duration::from_secs(5), "first event", events.recv()).await,
        Some("stalled request received")
    );
    assert_eq!(
        within_for(Duration::from_secs(5), "cancellation", events.recv()).await,
        Some("cancelled"),
        "the server must see the losing attempt's connection close"
    );
}

#[tokio::test]
async fn fast_answers_are_not_hedged() {
    let srv = scripted(|_| async { reply(200, "quick") }).await;
    let hedge = HedgeLayer::new(HedgeConfig::default().delay(Duration::from_secs(5)));
    let svc = ServiceBuilder::new()
        .layer(hedge.clone())
        .service(Client::new());
    for _ in 0..5 {
        let req = get_request(&srv.url("/"));
        let res = svc.clone().oneshot(req).await.unwrap();
        assert_eq!(res.text().await.unwrap(), "quick");
    }
    assert_eq!(srv.hits(), 5);
    assert_eq!(hedge.stats().hedges, 0);
}

/// The answer takes 200 ms, ten times the hedge's delay: a hedge would have
/// gone out (in no time, on paused time).
#[tokio::test(start_paused = true)]
async fn post_is_not_hedged_by_default() {
    let srv = server().await;
    let hedge = HedgeLayer::new(HedgeConfig::default().delay(Duration::from_millis(20)));
    let svc = ServiceBuilder::new()
        .layer(hedge.clone())
        .service(Client::new());
    let req = http::Request::post(srv.url("/delay/200"))
        .body(Body::from("x"))
        .unwrap();
    let res = svc.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(hedge.stats().hedges, 0);
    assert_eq!(srv.requests_served(), 1);
}

#[tokio::test(start_paused = true)]
async fn hedged_http2_stream_is_reset_not_the_connection() {
    // Over h2c both attempts share one connection; the loser's stream is reset.
    let srv = server().await;
    let client = Stack::new()
        .hedging(HedgeConfig::default().delay(Duration::from_millis(50)))
        .client(Client::builder().http2_prior_knowledge().build().unwrap());
    // Both attempts take 300 ms: the first still wins (it started first), and
    // the hedge is cancelled.
    let res = client.get(srv.url("/delay/300")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.version(), http::Version::HTTP_2);
    assert_eq!(res.text().await.unwrap(), "ok");
    let hedge = client.layers().hedge.as_ref().unwrap().stats();
    assert_eq!(hedge.hedges, 1);
    let m = client.metrics();
    assert_eq!(m.connections_established, 1, "{m:?}");
    crate::support::eventually("stream slots freed", Duration::from_secs(5), || {
        client.metrics().http2_streams_active == 0
    })
    .await;
}
