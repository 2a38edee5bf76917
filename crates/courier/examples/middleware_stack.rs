//! A middleware stack: tracing, decompression, timeouts, redirects, retries
//! with a budget and a circuit breaker, assembled in the right order by
//! `Stack`, and the same layers by hand with `tower::ServiceBuilder`.
//!
//! Run the built-in server, then the example:
//!
//! ```sh
//! cargo run -p courier-cli -- serve                  # listens on 127.0.0.1:8080
//! cargo run -p courier-http --example middleware_stack    # COURIER_URL=http://host:port to point elsewhere
//! ```

use std::time::Duration;

use courier::middleware::{
    CircuitBreakerConfig, DecompressionConfig, RedirectConfig, Redirects, RetryConfig, RetryLayer,
    Stack, TimeoutConfig, TimeoutLayer, TraceAttemptLayer, TraceConfig, TraceLayer,
};
use tower::{ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), courier::Error> {
    let base = std::env::var("COURIER_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());

    let client = Stack::new()
        .trace(TraceConfig::default())
        .decompression(DecompressionConfig::default())
        .timeout(
            TimeoutConfig::default()
                .total(Duration::from_secs(3))
                .per_attempt(Duration::from_secs(1)),
        )
        .redirect(RedirectConfig::default())
        .retry(RetryConfig::default().base_delay(Duration::from_millis(20)))
        .circuit_breaker(CircuitBreakerConfig::default())
        .client(courier::Client::new());

    // Two redirects followed; the chain is on the response.
    let res = client.get(format!("{base}/redirect/2")).send().await?;
    let hops = res
        .extensions()
        .get::<Redirects>()
        .map_or(0, |r| r.chain.len());
    println!("GET /redirect/2: {} after {hops} redirects", res.status());

    // A 503 is retried (3 attempts by default), then returned as is.
    let res = client.get(format!("{base}/status/503")).send().await?;
    let retries = client
        .layers()
        .retry
        .as_ref()
        .map_or(0, |r| r.stats().retries);
    println!("GET /status/503: {} ({retries} retries)", res.status());

    // The attempt timeout cuts a slow answer; the total timeout bounds all.
    let err = client
        .get(format!("{base}/delay/5000"))
        .send()
        .await
        .unwrap_err();
    println!("GET /delay/5000: {err:#} (kind {})", err.kind());

    // The same kind of stack by hand (outermost first), with any tower layer.
    let svc = ServiceBuilder::new()
        .layer(TraceLayer::default())
        .layer(TimeoutLayer::total(Duration::from_secs(2)))
        .layer(RetryLayer::new(RetryConfig::default()))
        .layer(TraceAttemptLayer::default())
        .service(courier::Client::new());
    let req = http::Request::get(format!("{base}/json/16"))
        .body(courier::Body::empty())
        .expect("a valid request");
    let res = svc.oneshot(req).await?;
    println!("tower GET /json/16: {} {}", res.status(), res.text().await?);
    Ok(())
}
