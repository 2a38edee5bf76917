//! Retry middleware: backoff, statuses, idempotency, Retry-After, budget.

use std::time::Duration;

use crate::support::middleware::{get_request, reply, scripted, with_header};
use courier::middleware::{BudgetConfig, RetryConfig, RetryLayer, Stack};
use courier::{Body, Client, ErrorKind};
use tower::{ServiceBuilder, ServiceExt};

fn fast(max_attempts: u32) -> RetryConfig {
    RetryConfig::default()
        .max_attempts(max_attempts)
        .base_delay(Duration::from_millis(1))
        .max_delay(Duration::from_millis(5))
}

#[tokio::test]
async fn two_503s_then_success_takes_three_attempts() {
    let srv = scripted(|req| async move {
        if req.n <= 2 {
            reply(503, "busy")
        } else {
            reply(200, "done")
        }
    })
    .await;
    let retry = RetryLayer::new(fast(3));
    let svc = ServiceBuilder::new()
        .layer(retry.clone())
        .service(Client::new());
    let req = get_request(&srv.url("/work"));
    let res = svc.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "done");
    assert_eq!(srv.hits(), 3);
    let stats = retry.stats();
    assert_eq!((stats.requests, stats.retries), (1, 2), "{stats:?}");
}

#[tokio::test]
async fn attempts_are_capped() {
    let srv = scripted(|_| async { reply(502, "bad gateway") }).await;
    let client = Stack::new().retry(fast(4)).client(Client::new());
    let res = client.get(srv.url("/")).send().await.unwrap();
    // The last response is returned as it is.
    assert_eq!(res.status(), 502);
    assert_eq!(srv.hits(), 4);
}

#[tokio::test]
async fn post_is_not_retried_unless_asked() {
    let srv = scripted(|_| async { reply(503, "busy") }).await;

    let client = Stack::new().retry(fast(3)).client(Client::new());
    let res = client
        .post(srv.url("/orders"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(srv.hits(), 1, "POST must not be replayed by default");

    // Marked idempotent, per request: an Idempotency-Key header or `.idempotent()`.
    let res = client
        .post(srv.url("/orders"))
        .header("idempotency-key", "order-17")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(srv.hits(), 1 + 3);
    client
        .post(srv.url("/orders"))
        .idempotent()
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(srv.hits(), 4 + 3);

    // Or for every request of a client.
    let client = Stack::new()
        .retry(fast(3).retry_non_idempotent(true))
        .client(Client::new());
    client
        .post(srv.url("/orders"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(srv.hits(), 7 + 3);
    // Every attempt carried the body.
    assert!(srv.seen().iter().all(|s| s.body == "{}"));
}

#[tokio::test]
async fn streaming_bodies_are_not_replayed() {
    let srv = scripted(|_| async { reply(503, "busy") }).await;
    let client = Stack::new().retry(fast(3)).client(Client::new());
    let body = Body::wrap(http_body_util::Full::new(bytes::Bytes::from_static(b"x")));
    let res = client
        .put(srv.url("/blob"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(srv.hits(), 1);
}

#[tokio::test]
async fn connect_errors_are_retried_for_any_method() {
    let (port, _held) = crate::support::refused_port();
    let retry = RetryLayer::new(fast(3));
    let svc = ServiceBuilder::new()
        .layer(retry.clone())
        .service(Client::new());
    let req = http::Request::post(format!("http://127.0.0.1:{port}/"))
        .body(Body::from("x"))
        .unwrap();
    let err = svc.oneshot(req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert_eq!(retry.stats().retries, 2);
}

#[tokio::test]
async fn retry_after_is_honoured_within_a_cap() {
    let srv = scripted(|req| async move {
        match req.uri.path() {
            // Asks for a 2-minute pause: longer than max_retry_after.
            "/long" => with_header(reply(503, "later"), "retry-after", "120"),
            // Asks for none.
            _ if req.n % 2 == 1 => with_header(reply(429, "slow down"), "retry-after", "0"),
            _ => reply(200, "ok"),
        }
    })
    .await;
    let client = Stack::new()
        .retry(
            RetryConfig::default()
                // A plain backoff this long would time the test out.
                .base_delay(Duration::from_secs(60))
                .max_retry_after(Duration::from_secs(30)),
        )
        .client(Client::new());
    let started = std::time::Instant::now();
    let res = client.get(srv.url("/short")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(srv.hits(), 2);

    let res = client.get(srv.url("/long")).send().await.unwrap();
    assert_eq!(res.status(), 503, "not waited for: over max_retry_after");
    assert_eq!(srv.hits(), 3);
}

#[tokio::test]
async fn budget_caps_extra_attempts_when_half_the_requests_fail() {
    // Requests with an even `i` always fail; odd ones always succeed.
    let srv = scripted(|req| async move {
        let i: u64 = req.query("i").unwrap().parse().unwrap();
        if i % 2 == 0 {
            reply(503, "down")
        } else {
            reply(200, "up")
        }
    })
    .await;
    let requests = 200u64;
    let retry = RetryLayer::new(
        fast(3).budget(
            BudgetConfig::default()
                .ratio(0.2)
                .min_per_second(0)
                .window(Duration::from_secs(60)),
        ),
    );
    let svc = ServiceBuilder::new()
        .layer(retry.clone())
        .service(Client::new());
    for i in 0..requests {
        let req = get_request(&srv.url(&format!("/?i={i}")));
        let res = svc.clone().oneshot(req).await.unwrap();
        res.bytes().await.unwrap();
    }
    let extra = srv.hits() as u64 - requests;
    let stats = retry.stats();
    // Without a budget: 100 failing requests x 2 retries = 200 extra attempts.
    assert!(
        extra <= requests / 5 + 1,
        "{extra} extra attempts: {stats:?}"
    );
    assert!(extra >= requests / 5 - 5, "the budget was used: {extra}");
    assert_eq!(stats.retries, extra);
    assert!(stats.budget_exhausted > 0, "{stats:?}");
}

/// An HTTP/2 server (on `h2`) that refuses the first `refuse` streams it
/// sees with REFUSED_STREAM, unread, and answers the rest with the method and
/// body it got. Returns its URL and the number of streams it saw.
async fn refusing_h2_server(
    refuse: usize,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = Arc::clone(&counter);
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(stream).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    if seen.fetch_add(1, SeqCst) < refuse {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    tokio::spawn(async move {
                        let (parts, mut body) = req.into_parts();
                        let mut echo = format!("{} ", parts.method);
                        while let Some(Ok(chunk)) = body.data().await {
                            let _ = body.flow_control().release_capacity(chunk.len());
                            echo.push_str(&String::from_utf8_lossy(&chunk));
                        }
                        if let Ok(mut send) = respond.send_response(http::Response::new(()), false)
                        {
                            let _ = send.send_data(echo.into(), true);
                        }
                    });
                }
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn a_refused_post_is_retried() {
    let (url, seen) = refusing_h2_server(1).await;
    let retry = RetryLayer::new(fast(3));
    // The client itself would send it again: leave that to the layer here.
    let inner = Client::builder()
        .http2_prior_knowledge()
        .http2_max_refused_retries(0)
        .build()
        .unwrap();
    let svc = ServiceBuilder::new().layer(retry.clone()).service(inner);
    let req = http::Request::post(&url)
        .body(Body::from("order 17"))
        .unwrap();
    let res = svc.oneshot(req).await.unwrap();
    assert_eq!(res.text().await.unwrap(), "POST order 17");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(retry.stats().retries, 1);
}

#[tokio::test]
async fn a_refusal_surfaces_as_refused_once_the_client_bound_is_spent() {
    let (url, seen) = refusing_h2_server(usize::MAX).await;
    let client = Client::builder()
        .http2_prior_knowledge()
        .http2_max_refused_retries(2)
        .build()
        .unwrap();
    let err = client.post(&url).body("x").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Refused, "{err}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3);
}
