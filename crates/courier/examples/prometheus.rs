//! Metrics to Prometheus: `metrics-exporter-prometheus` installed as the
//! `metrics` recorder with its own `/metrics` listener, and courier
//! exporting a named client into it every second.
//!
//! Run the built-in server, then the example, then scrape:
//!
//! ```sh
//! cargo run -p courier-cli -- serve              # listens on 127.0.0.1:8080
//! cargo run -p courier-http --example prometheus      # serves http://127.0.0.1:9898/metrics for 60 s
//! curl -s http://127.0.0.1:9898/metrics | grep -E 'courier|http_client'
//! ```
//!
//! `COURIER_URL` points the client elsewhere; `SERVE_SECS=0` prints one
//! scrape and exits. In your service add
//! `metrics-exporter-prometheus = { version = "0.18", default-features = false, features = ["http-listener"] }`.

use std::net::SocketAddr;
use std::time::Duration;

use courier::middleware::{RetryConfig, Stack, TraceConfig};
use metrics_exporter_prometheus::PrometheusBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::var("COURIER_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let serve_secs: u64 = std::env::var("SERVE_SECS").map_or(Ok(60), |s| s.parse())?;
    // METRICS_LISTEN=127.0.0.1:0 for a port of its own (the tests do).
    let listen: SocketAddr = std::env::var("METRICS_LISTEN")
        .unwrap_or_else(|_| "127.0.0.1:9898".into())
        .parse()?;

    // The recorder, and the listener that serves what it holds as /metrics.
    let (recorder, listener) = PrometheusBuilder::new()
        .with_http_listener(listen)
        .build()?;
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    tokio::spawn(listener);

    // With tracing, request durations carry the OpenTelemetry attributes
    // (method, status, server, protocol, error.type).
    let client = Stack::new()
        .trace(TraceConfig::default())
        .retry(RetryConfig::default())
        .client(courier::Client::new());
    let exporter = client.metrics_exporter("catalog");

    for path in ["/json/64", "/json/64", "/status/404", "/bytes/1024"] {
        let res = client.get(format!("{base}{path}")).send().await?;
        res.bytes().await?;
    }
    // Export now, then show one scrape.
    exporter.record();
    for line in handle.render().lines().filter(|l| {
        l.starts_with("courier_client_requests_total")
            || l.starts_with("http_client_request_duration")
    }) {
        println!("{line}");
    }
    if serve_secs > 0 {
        // From here on, every second (`client.export_metrics(name, period)`
        // does both steps in one).
        let _task = exporter.spawn(Duration::from_secs(1));
        println!("serving http://{listen}/metrics for {serve_secs} s");
        tokio::time::sleep(Duration::from_secs(serve_secs)).await;
    }
    Ok(())
}
