//! Client default headers reach the server over HTTP/1.1 and HTTP/2, and a
//! request's own header of the same name wins.

use courier::http::{HeaderMap, HeaderValue};
use courier::Client;

async fn echoed(client: &Client, url: String) -> serde_json::Value {
    let res = client
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    res.json().await.unwrap()
}

#[tokio::test]
async fn default_headers_are_sent_unless_the_request_sets_them() {
    let srv = crate::support::server().await;
    let mut defaults = HeaderMap::new();
    defaults.insert("user-agent", HeaderValue::from_static("billing/1.4"));
    defaults.insert("accept", HeaderValue::from_static("*/*"));
    defaults.append("x-team", HeaderValue::from_static("a"));
    defaults.append("x-team", HeaderValue::from_static("b"));
    // Framing and routing headers are the request's own, never defaults.
    defaults.insert("content-length", HeaderValue::from_static("999"));
    for http2 in [false, true] {
        let mut builder = Client::builder().default_headers(defaults.clone());
        if http2 {
            builder = builder.http2_prior_knowledge();
        }
        let client = builder.build().unwrap();
        let seen = echoed(&client, srv.url("/headers")).await;
        let protocol = if http2 { "HTTP/2" } else { "HTTP/1.1" };
        assert_eq!(seen["user-agent"], "billing/1.4", "{protocol}: {seen}");
        assert_eq!(seen["accept"], "application/json", "{protocol}: {seen}");
        assert_eq!(seen["x-team"], "a, b", "{protocol}: {seen}");
        assert!(seen.get("content-length").is_none(), "{protocol}: {seen}");
    }
}

/// A service client's defaults leave out the same framing and routing
/// headers as a client's: a default `Content-Length` or
/// `Transfer-Encoding` would frame each body as something else than it is,
/// a default `Host` would address every origin as one.
#[tokio::test]
async fn service_client_defaults_never_frame_or_route_a_request() {
    let srv = crate::support::server().await;
    let mut defaults = HeaderMap::new();
    defaults.insert("x-team", HeaderValue::from_static("billing"));
    defaults.insert("content-length", HeaderValue::from_static("7"));
    defaults.insert("transfer-encoding", HeaderValue::from_static("chunked"));
    defaults.insert("host", HeaderValue::from_static("elsewhere.test"));
    defaults.insert("connection", HeaderValue::from_static("close"));
    for http2 in [false, true] {
        let mut builder = Client::builder();
        if http2 {
            builder = builder.http2_prior_knowledge();
        }
        let stack = courier::middleware::Stack::new();
        let service = courier::ServiceClient::new(builder.build().unwrap(), &stack)
            .with_default_headers(defaults.clone());
        let protocol = if http2 { "HTTP/2" } else { "HTTP/1.1" };
        let res = service
            .get(srv.url("/headers"))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{protocol}: {e:#}"));
        let seen: serde_json::Value = res.json().await.unwrap();
        assert_eq!(seen["x-team"], "billing", "{protocol}: {seen}");
        assert!(seen.get("content-length").is_none(), "{protocol}: {seen}");
        assert!(
            seen.get("transfer-encoding").is_none(),
            "{protocol}: {seen}"
        );
        assert_ne!(seen["host"], "elsewhere.test", "{protocol}: {seen}");
        // A body goes out as its own size says, not as a default would.
        let res = service
            .post(srv.url("/echo"))
            .body("two apples")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{protocol}: {e:#}"));
        assert_eq!(res.text().await.unwrap(), "two apples", "{protocol}");
    }
}
