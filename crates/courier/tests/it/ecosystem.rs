//! courier among tower's and tower-http's layers: each layer over a
//! `ServiceClient` ([`ServiceClient::with_layer`]) or under courier's own
//! (`FromTower`), against the built-in server on loopback; and a tower
//! layer of the caller's that fails with a courier `Error`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use courier::middleware::{
    AsHttpLayer, FromTowerLayer, RetryConfig, RetryLayer, Stack, TimeoutConfig,
};
use courier::{Client, Error, ErrorKind, ServiceClient};
use http::{HeaderName, HeaderValue, StatusCode};
use tower::{ServiceBuilder, ServiceExt};

use crate::support::server;

/// The `x-connection-id` the built-in server stamps on each response.
fn connection_id(res: &courier::Response) -> String {
    res.headers()["x-connection-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn set_request_header_reaches_the_server() {
    let srv = server().await;
    let client = ServiceClient::new(Client::new(), &courier::middleware::Stack::new()).with_layer(
        tower_http::set_header::SetRequestHeaderLayer::overriding(
            HeaderName::from_static("x-team"),
            HeaderValue::from_static("billing"),
        ),
    );
    let res = client.get(srv.url("/headers")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let seen: serde_json::Value = res.json().await.unwrap();
    assert_eq!(seen["x-team"], "billing", "{seen}");
}

#[tokio::test]
async fn a_trace_layer_sees_each_response_and_its_body_and_keeps_the_connection() {
    let srv = server().await;
    let statuses = Arc::new(AtomicUsize::new(0));
    let body_bytes = Arc::new(AtomicU64::new(0));
    let (s, b) = (statuses.clone(), body_bytes.clone());
    let trace = tower_http::trace::TraceLayer::new_for_http()
        .on_response(
            move |res: &http::Response<courier::ResponseBody>, _: Duration, _: &tracing::Span| {
                assert_eq!(res.status(), 200);
                s.fetch_add(1, SeqCst);
            },
        )
        .on_body_chunk(move |chunk: &Bytes, _: Duration, _: &tracing::Span| {
            b.fetch_add(chunk.len() as u64, SeqCst);
        });
    let client =
        ServiceClient::new(Client::new(), &courier::middleware::Stack::new()).with_layer(trace);

    let url = srv.url("/bytes/5000");
    let first = client.get(url.as_str()).send().await.unwrap();
    // What the client knew about the response crossed the layer.
    assert_eq!(first.url().to_string(), url);
    assert_eq!(first.remote_addr(), Some(srv.local_addr()));
    let id = connection_id(&first);
    assert_eq!(first.bytes().await.unwrap().len(), 5000);
    assert_eq!(statuses.load(SeqCst), 1);
    assert_eq!(
        body_bytes.load(SeqCst),
        5000,
        "the layer saw the whole body"
    );

    // The body read to its end through the layer gave the connection back.
    let second = client.get(url.as_str()).send().await.unwrap();
    assert_eq!(connection_id(&second), id, "the connection was reused");
    second.bytes().await.unwrap();
    assert_eq!(client.metrics().connections_established, 1);
}

#[tokio::test]
async fn a_body_a_layer_wrapped_keeps_the_clients_body_limit() {
    let srv = server().await;
    let client = Client::builder()
        .max_response_body_size(Some(1000))
        .build()
        .unwrap();
    let client = ServiceClient::new(client, &courier::middleware::Stack::new())
        .with_layer(tower_http::trace::TraceLayer::new_for_http());
    let res = client.get(srv.url("/bytes/5000")).send().await.unwrap();
    let err = match res.bytes().await {
        Ok(bytes) => panic!("read {} bytes past the limit of 1000", bytes.len()),
        Err(err) => err,
    };
    assert_eq!(err.kind(), ErrorKind::BodyTooLarge, "{err:#}");
}

#[tokio::test]
async fn tower_https_timeout_answers_its_status_in_time() {
    let srv = server().await;
    let client = ServiceClient::new(Client::new(), &courier::middleware::Stack::new()).with_layer(
        tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_millis(100),
        ),
    );
    let start = Instant::now();
    let slow = srv.url("/delay/5000");
    let res = client.get(slow.as_str()).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    // The layer's own answer names the request's URL, as the server's would.
    assert_eq!(res.url().to_string(), slow);
    assert!(res.bytes().await.unwrap().is_empty());
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    // An answer in time is the server's.
    let res = client.get(srv.url("/bytes/3")).send().await.unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn towers_timeout_is_a_courier_timeout_over_and_under_the_stack() {
    let srv = server().await;
    let slow = srv.url("/delay/5000");
    let limit = Duration::from_millis(100);

    // Over a ServiceClient: its BoxError becomes an Error.
    let client = ServiceClient::new(Client::new(), &courier::middleware::Stack::new())
        .with_layer(tower::timeout::TimeoutLayer::new(limit));
    let start = Instant::now();
    let err = client.get(slow.as_str()).send().await.unwrap_err();
    assert!(err.is_timeout(), "{err:#}");
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.source_chain_has::<tower::timeout::error::Elapsed>());
    assert!(start.elapsed() < Duration::from_secs(3));

    // Under courier's stack (it failed the HttpService bound before).
    let stack = Stack::new()
        .retry(RetryConfig::default().max_attempts(2))
        .service(tower::timeout::Timeout::new(Client::new(), limit));
    let req = http::Request::get(&slow)
        .body(courier::Body::empty())
        .unwrap();
    let err = stack.oneshot(req).await.unwrap_err();
    assert!(err.is_timeout(), "{err:#}");

    // And by hand, courier's retry around tower's timeout around courier's client.
    let attempts = Arc::new(AtomicUsize::new(0));
    let count = attempts.clone();
    let svc = ServiceBuilder::new()
        .layer(RetryLayer::new(
            RetryConfig::default()
                .max_attempts(3)
                .budget(None)
                .base_delay(Duration::from_millis(1)),
        ))
        .layer(FromTowerLayer)
        .layer(tower::timeout::TimeoutLayer::new(limit))
        .map_request(move |req| {
            count.fetch_add(1, SeqCst);
            req
        })
        .layer(AsHttpLayer)
        .service(Client::new());
    let req = http::Request::get(&slow)
        .body(courier::Body::empty())
        .unwrap();
    let err = svc.oneshot(req).await.unwrap_err();
    assert!(err.is_timeout(), "{err:#}");
    assert_eq!(
        attempts.load(SeqCst),
        3,
        "each timed-out attempt was retried"
    );

    // A timeout from courier's own stack inside the layer is still one.
    let client = Stack::new()
        .timeout(TimeoutConfig::default().total(limit))
        .client(Client::new())
        .with_layer(tower_http::trace::TraceLayer::new_for_http());
    let err = client.get(slow.as_str()).send().await.unwrap_err();
    assert!(err.is_timeout(), "{err:#}");
}

#[tokio::test]
async fn tower_https_follow_redirect_follows_with_courier_following_none() {
    let srv = server().await;
    // A plain Client follows by itself: off, so tower-http is the one
    // follower (two would each see only part of the chain).
    let courier_following_none = Client::builder()
        .redirect(courier::redirect::Policy::none())
        .build()
        .unwrap();
    let client = ServiceClient::new(courier_following_none, &courier::middleware::Stack::new())
        .with_layer(tower_http::follow_redirect::FollowRedirectLayer::new());
    let res = client.get(srv.url("/redirect/3")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    // tower-http made the last request itself: courier answered each hop
    // with its 302 (had courier followed, the layer's last URI would be the first).
    let last = res
        .extensions()
        .get::<tower_http::follow_redirect::RequestUri>()
        .expect("the layer's RequestUri");
    assert_eq!(last.0.path(), "/redirect/0");
    assert_eq!(res.url().path(), "/redirect/0");
    assert_eq!(res.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn a_layer_of_the_callers_fails_with_a_courier_error() {
    let srv = server().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    // A quota layer: refuses the third request with a courier error.
    let quota = tower::layer::layer_fn(move |inner: courier::middleware::AsHttp<_>| {
        let seen = seen.clone();
        inner.and_then(move |res: http::Response<courier::ResponseBody>| {
            let n = seen.fetch_add(1, SeqCst);
            async move {
                if n >= 2 {
                    Err(Error::new(ErrorKind::CircuitOpen, "quota of 2 spent"))
                } else {
                    Ok(res)
                }
            }
        })
    });
    let client =
        ServiceClient::new(Client::new(), &courier::middleware::Stack::new()).with_layer(quota);
    for _ in 0..2 {
        let res = client.get(srv.url("/bytes/1")).send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
    let err = client.get(srv.url("/bytes/1")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CircuitOpen, "{err:#}");
    assert_eq!(format!("{err:#}"), "circuit breaker open: quota of 2 spent");
    assert_eq!(calls.load(SeqCst), 3);
}

/// Whether an error's source chain holds a `T`.
trait SourceChain {
    fn source_chain_has<T: std::error::Error + 'static>(&self) -> bool;
}

impl SourceChain for Error {
    fn source_chain_has<T: std::error::Error + 'static>(&self) -> bool {
        let mut source = std::error::Error::source(self);
        while let Some(err) = source {
            if err.is::<T>() {
                return true;
            }
            source = err.source();
        }
        false
    }
}
