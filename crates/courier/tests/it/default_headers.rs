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
