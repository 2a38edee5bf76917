//! Testing code that uses courier without a network (the ways
//! `examples/mock_testing.rs` and the book's testing chapter show): a mock
//! service behind a `ServiceClient`, alone and under courier's middleware,
//! and a `Client` whose connections are in-memory pipes to a hyper server.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use courier::connect::{AsyncIo, Connect, Connecting};
use courier::middleware::{RetryConfig, Stack};
use courier::{Body, Client, Error, ErrorKind, Response, ServiceClient};
use http::{HeaderMap, HeaderValue, Method};
use http_body_util::{BodyExt, Full};

/// What a mock saw of a request.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: Bytes,
}

#[tokio::test]
async fn a_mock_service_sees_each_request_and_answers_as_a_server_would() {
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let log = seen.clone();
    let mock = tower::service_fn(move |req: http::Request<Body>| {
        let log = log.clone();
        async move {
            let (head, body) = req.into_parts();
            let body = body.collect().await.map_err(Error::from)?.to_bytes();
            log.lock().unwrap().push(Seen {
                method: head.method.clone(),
                uri: head.uri.to_string(),
                headers: head.headers.clone(),
                body: body.clone(),
            });
            match head.uri.path() {
                "/orders" => Ok(Response::from(
                    http::Response::builder()
                        .status(201)
                        .header("location", "/orders/9")
                        .body(body)
                        .unwrap(),
                )),
                "/api/down" => Err(Error::new(ErrorKind::Connect, "the mock refuses")),
                _ => Ok(Response::from(
                    http::Response::builder().status(404).body(()).unwrap(),
                )),
            }
        }
    });
    let mut defaults = HeaderMap::new();
    defaults.insert("x-team", HeaderValue::from_static("billing"));
    let client = ServiceClient::from_service(mock)
        .with_base_url("http://shop.test/api/")
        .unwrap()
        .with_default_headers(defaults);

    let res = client
        .post("/orders")
        .header("content-type", "text/plain")
        .body("two apples")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert_eq!(res.headers()["location"], "/orders/9");
    assert_eq!(res.text().await.unwrap(), "two apples");

    let err = client.get("down").send().await.unwrap_err();
    assert!(err.is_connect(), "{err:#}");
    let res = client.get("missing").send().await.unwrap();
    // A mock's response answers the request's URL, as a server's does.
    assert_eq!(res.url().as_str(), "http://shop.test/api/missing");
    let err = res.error_for_status().unwrap_err();
    assert!(err.is_status());
    assert_eq!(err.url().unwrap(), "http://shop.test/api/missing");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].method, Method::POST);
    assert_eq!(seen[0].uri, "http://shop.test/orders");
    assert_eq!(
        seen[0].headers["x-team"], "billing",
        "default headers applied"
    );
    assert_eq!(seen[0].headers["content-type"], "text/plain");
    assert_eq!(seen[0].body, "two apples");
    assert_eq!(seen[1].uri, "http://shop.test/api/down");
}

#[tokio::test(start_paused = true)]
async fn a_mock_under_couriers_middleware_is_retried_like_a_server() {
    let calls = Arc::new(AtomicUsize::new(0));
    let count = calls.clone();
    // 503 twice, then 200: what the retry layer is for.
    let mock = tower::service_fn(move |_req: http::Request<Body>| {
        let n = count.fetch_add(1, SeqCst);
        async move {
            let status = if n < 2 { 503 } else { 200 };
            let res = http::Response::builder()
                .status(status)
                .body(format!("attempt {}", n + 1))
                .unwrap();
            Ok::<_, Infallible>(Response::from(res))
        }
    });
    let stack = Stack::new().retry(
        RetryConfig::default()
            .max_attempts(3)
            .budget(None)
            .base_delay(Duration::from_millis(10)),
    );
    let client = ServiceClient::from_service(stack.service(mock));
    let res = client.get("http://shop.test/flaky").send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), "attempt 3");
    assert_eq!(calls.load(SeqCst), 3);
}

/// Every connection is one end of an in-memory pipe; a hyper server runs
/// `answer` on the other. `opened` counts connections.
struct InMemory {
    opened: Arc<AtomicUsize>,
}

impl Connect for InMemory {
    fn connect(&self, _host: &str, _port: u16) -> Connecting {
        self.opened.fetch_add(1, SeqCst);
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(server_end);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, hyper::service::service_fn(answer))
                .await;
        });
        Box::pin(async move { Ok(Box::new(client_end) as Box<dyn AsyncIo>) })
    }
}

async fn answer(
    req: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let body = format!("{} {}", req.method(), req.uri().path());
    Ok(http::Response::new(Full::new(Bytes::from(body))))
}

#[tokio::test]
async fn an_in_memory_connection_goes_through_the_real_client() {
    let opened = Arc::new(AtomicUsize::new(0));
    let client = Client::builder()
        .connector(InMemory {
            opened: opened.clone(),
        })
        .build()
        .unwrap();
    for path in ["/a", "/b", "/c"] {
        let url = format!("http://inventory.test{path}");
        let res = client.get(url.as_str()).send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.text().await.unwrap(), format!("GET {path}"));
    }
    let m = client.metrics();
    assert_eq!(opened.load(SeqCst), 1, "one pipe, reused");
    assert_eq!(m.connections_established, 1);
    assert_eq!(m.requests_total, 3);
}
