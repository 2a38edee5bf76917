//! Request timeouts and cancellation leave nothing behind.
//!
//! The deadlines are on tokio's clock, so the tests of a timeout firing run
//! on paused time where the server's waits are timers too (its `/delay`),
//! and exact. The endless body stays on the wall clock: its bytes are always
//! on their way, so the runtime is never idle and paused time would never
//! reach the deadline (nor the test's own bound).

use std::time::Duration;

use tokio::time::Instant;

use crate::support::h2::within_for;
use crate::support::{eventually, server, spawn_get};
use courier::ErrorKind;

#[tokio::test(start_paused = true)]
async fn request_timeout_fires_on_time_and_frees_the_connection() {
    let srv = server().await;
    let client = courier::Client::new();
    assert_eq!(client.metrics().connections_open, 0);
    let started = Instant::now();
    let err = client
        .get(srv.url("/delay/5000"))
        .timeout(Duration::from_millis(100))
        .send()
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.is_timeout());
    // Paused time: to the millisecond of the timer wheel.
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took <= Duration::from_millis(101), "{took:?}");
    eventually("connection closed", Duration::from_secs(2), || {
        let m = client.metrics();
        m.connections_open == 0 && m.requests_active == 0
    })
    .await;
    eventually("server side closed", Duration::from_secs(2), || {
        srv.connections_open() == 0
    })
    .await;
}

/// HTTP/1.1 keeps a request's deadline on its connection's timer, one tokio
/// timer reused by every request on the connection: a later deadline moves
/// it forward (the earlier one's time passes without firing), an earlier
/// one registers it anew, and each fires at its own deadline, to the
/// millisecond tick of tokio's timer wheel, as the request's own timer did.
#[tokio::test(start_paused = true)]
async fn a_reused_connection_keeps_each_requests_own_deadline() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let get = |path: &str, ms: u64| {
        client
            .get(srv.url(path))
            .timeout(Duration::from_millis(ms))
            .send()
    };
    // 50 ms, not reached: the timer stays registered for it.
    get("/delay/10", 50).await.unwrap().bytes().await.unwrap();
    // 300 ms on the same connection, answered at 100 ms: past the first
    // request's 50 ms without a timeout.
    let started = Instant::now();
    get("/delay/100", 300).await.unwrap().bytes().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
    // 5 s, then 100 ms: an earlier deadline than the timer's, on time.
    get("/delay/1", 5000).await.unwrap().bytes().await.unwrap();
    assert_eq!(
        client.metrics().connections_established,
        1,
        "one connection reused"
    );
    let started = Instant::now();
    let err = get("/delay/5000", 100).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        format!("{err:#}").contains("no response within the request timeout"),
        "{err:#}"
    );
    assert!(
        err.url().is_none(),
        "the request's own timeout error, as before"
    );
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took <= Duration::from_millis(101), "{took:?}");
    // The connection that timed out is closed, and a new one keeps the next deadline.
    let started = Instant::now();
    let err = get("/delay/5000", 200).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took <= Duration::from_millis(201), "{took:?}");
    eventually("connections closed", Duration::from_secs(2), || {
        let m = client.metrics();
        m.connections_open == 0 && m.requests_active == 0
    })
    .await;
}

/// HTTP/2 keeps its open streams' deadlines on one timer of the connection
/// (a request keeps no timer of its own once its stream is open, 112 B per
/// long poll before): on one connection, requests whose deadlines come out
/// of order each fail at their own, to the millisecond tick, with the
/// request timeout's error; a stream answered in time is not touched, and
/// the connection serves on.
#[tokio::test(start_paused = true)]
async fn an_http2_connection_keeps_each_streams_own_deadline() {
    let srv = server().await;
    let client = courier::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    crate::support::fetch(&client, srv.url("/delay/0")).await;
    let started = Instant::now();
    let get =
        |path: &str, ms: u64| crate::support::spawn_timed_get(&client, srv.url(path), ms, started);
    let late = [300, 100, 200].map(|ms| (get("/delay/5000", ms), ms));
    let answered = get("/delay/150", 1000);
    for (task, ms) in late {
        let (outcome, took) = task.await.unwrap();
        let err = outcome.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err:#}");
        assert!(
            format!("{err:#}").contains("no response within the request timeout"),
            "{err:#}"
        );
        let ms = Duration::from_millis(ms);
        assert!(took >= ms, "{ms:?}: {took:?}");
        assert!(took <= ms + Duration::from_millis(1), "{ms:?}: {took:?}");
    }
    let (outcome, took) = answered.await.unwrap();
    outcome.expect("answered before its deadline");
    assert!(took >= Duration::from_millis(150), "{took:?}");
    crate::support::fetch(&client, srv.url("/delay/0")).await;
    let m = client.metrics();
    assert_eq!(m.connections_established, 1, "one connection throughout");
    eventually("requests done", Duration::from_secs(2), || {
        client.metrics().requests_active == 0
    })
    .await;
}

#[tokio::test]
async fn client_default_timeout_applies_to_the_body_too() {
    let srv = server().await;
    let client = courier::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let mut res = client.get(srv.url("/fault/endless")).send().await.unwrap();
    // Bounded here too, so a body the timeout misses fails the test instead
    // of hanging it.
    let err = within_for(Duration::from_secs(5), "the endless body", async {
        loop {
            match res.chunk().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("endless body ended"),
                Err(e) => break e,
            }
        }
    })
    .await;
    assert_eq!(err.kind(), ErrorKind::Timeout);
    drop(res);
    eventually("connection closed", Duration::from_secs(2), || {
        client.metrics().connections_open == 0
    })
    .await;
}

#[tokio::test]
async fn dropping_a_request_mid_flight_leaks_nothing() {
    let srv = server().await;
    let client = courier::Client::new();
    let request = client.get(srv.url("/delay/5000"));
    let task = tokio::spawn(async move { request.send().await.map(|_| ()) });
    eventually("request in flight", Duration::from_secs(2), || {
        let m = client.metrics();
        m.requests_active == 1 && m.connections_open == 1
    })
    .await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    eventually("everything released", Duration::from_secs(2), || {
        let m = client.metrics();
        m.requests_active == 0 && m.connections_open == 0 && m.connections_idle == 0
    })
    .await;
}

#[tokio::test]
async fn dropping_a_queued_request_leaves_no_queue_entry() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let holder = spawn_get(&client, srv.url("/delay/300"));
    eventually("holder active", Duration::from_secs(2), || {
        client.metrics().connections_open == 1
    })
    .await;
    let queued: Vec<_> = (0..10)
        .map(|_| {
            let request = client.get(srv.url("/bytes/1"));
            tokio::spawn(async move { request.send().await.map(|_| ()) })
        })
        .collect();
    eventually("all queued", Duration::from_secs(2), || {
        client.metrics().requests_queued == 10
    })
    .await;
    for t in &queued {
        t.abort();
    }
    eventually("queue empty", Duration::from_secs(2), || {
        client.metrics().requests_queued == 0
    })
    .await;
    holder.await.unwrap().unwrap();
    // The connection went back to the pool, not to a cancelled waiter.
    let res = client.get(srv.url("/bytes/1")).send().await.unwrap();
    res.bytes().await.unwrap();
    let m = client.metrics();
    assert_eq!(m.connections_established, 1, "{m:?}");
    assert_eq!(m.connections_open, 1);
}

#[tokio::test]
async fn cancelling_requests_at_random_points_leaks_nothing() {
    let srv = server().await;
    let client = courier::Client::builder()
        .max_connections_per_host(4)
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..400u64 {
        let request = client.get(srv.url(&format!("/delay/{}", i % 7)));
        let task = tokio::spawn(async move {
            let res = request.send().await?;
            res.bytes().await
        });
        // Cancel a third of them after varying amounts of progress.
        if i % 3 == 0 {
            tokio::time::sleep(Duration::from_micros(i * 37 % 3000)).await;
            task.abort();
        } else {
            tasks.push(task);
        }
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    eventually("pool settles", Duration::from_secs(5), || {
        let m = client.metrics();
        m.requests_active == 0
            && m.requests_queued == 0
            && m.connect_attempts_current == 0
            && m.connections_open == m.connections_idle
    })
    .await;
    assert!(client.metrics().connections_open <= 4);
}

/// A byte stream that always has more of an endless response ready: reads
/// never return `Pending`, where the body's timer used to be polled.
struct AlwaysReady {
    head: &'static [u8],
}

impl tokio::io::AsyncRead for AlwaysReady {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let n = if self.head.is_empty() {
            let n = buf.remaining().min(16 * 1024);
            buf.put_slice(&vec![b'z'; n]);
            n
        } else {
            let n = buf.remaining().min(self.head.len());
            buf.put_slice(&self.head[..n]);
            n
        };
        self.head = &self.head[n.min(self.head.len())..];
        std::task::Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for AlwaysReady {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Connections that answer `head`, then body bytes that are always ready.
struct Answers(&'static [u8]);

impl courier::connect::Connect for Answers {
    fn connect(&self, _host: &str, _port: u16) -> courier::connect::Connecting {
        let head = self.0;
        Box::pin(
            async move { Ok(Box::new(AlwaysReady { head }) as Box<dyn courier::connect::AsyncIo>) },
        )
    }
}

/// An endless response: delimited by the close, which never comes.
const ENDLESS: Answers = Answers(b"HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\n\r\n");

/// The deadline holds for a body whose bytes are always ready (a fast
/// server with an endless body): it was only checked when a read would
/// wait, so such a body ran past its timeout for as long as it lasted.
///
/// On paused time, moved by hand: a body that never waits leaves the
/// runtime no idle moment to move it. A millisecond per chunk, so the
/// deadline passes at the 100th chunk and the 101st must be the timeout.
#[tokio::test(start_paused = true)]
async fn the_timeout_holds_for_a_body_that_never_waits() {
    let client = courier::Client::builder()
        .connector(ENDLESS)
        .timeout(Duration::from_millis(100))
        .max_response_body_size(None)
        .build()
        .unwrap();
    let started = Instant::now();
    let mut res = client.get("http://endless.invalid/").send().await.unwrap();
    let err = loop {
        match res.chunk().await {
            Ok(Some(_)) if started.elapsed() <= Duration::from_millis(100) => {
                tokio::time::advance(Duration::from_millis(1)).await;
            }
            Ok(Some(_)) => panic!("a chunk past the deadline instead of a timeout"),
            Ok(None) => panic!("the endless body ended"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(started.elapsed(), Duration::from_millis(100));
}

/// The deadline bounds the wait for a body, not the taking of one already
/// in hand: a body whose last frame is ready when it is read, past the
/// deadline, completes (its deadline is checked on every other frame, and
/// on every wait).
#[tokio::test(start_paused = true)]
async fn a_body_whole_in_hand_past_the_deadline_completes() {
    let client = courier::Client::builder()
        .connector(Answers(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n"))
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let res = client.get("http://ten.invalid/").send().await.unwrap();
    tokio::time::advance(Duration::from_millis(150)).await;
    let body = res.bytes().await.expect("the whole body was in hand");
    assert_eq!(&body[..], b"zzzzzzzzzz");
}
