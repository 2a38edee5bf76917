//! Metrics export through the `metrics` facade, with OpenTelemetry names.

mod middleware_support;

use std::collections::BTreeMap;

use courier::Client;
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use middleware_support::builtin;

#[derive(Debug, Default)]
struct Seen {
    counters: BTreeMap<String, u64>,
    gauges: BTreeMap<String, f64>,
    histograms: BTreeMap<String, Vec<f64>>,
    units: BTreeMap<String, Unit>,
}

/// `name{k=v,...}` for every series.
fn take(snapshotter: &Snapshotter) -> Seen {
    let mut seen = Seen::default();
    for (key, unit, _, value) in snapshotter.snapshot().into_vec() {
        let mut labels: Vec<String> = key
            .key()
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.key().name(), labels.join(","));
        if let Some(unit) = unit {
            seen.units.insert(key.key().name().to_owned(), unit);
        }
        match (key.kind(), value) {
            (MetricKind::Counter, DebugValue::Counter(v)) => {
                seen.counters.insert(name, v);
            }
            (MetricKind::Gauge, DebugValue::Gauge(v)) => {
                seen.gauges.insert(name, v.0);
            }
            (MetricKind::Histogram, DebugValue::Histogram(v)) => {
                seen.histograms
                    .insert(name, v.into_iter().map(|x| x.0).collect());
            }
            _ => {}
        }
    }
    seen
}

#[tokio::test]
async fn pool_metrics_are_exported_with_opentelemetry_names() {
    let srv = builtin().await;
    let client = Client::new();
    for _ in 0..5 {
        let res = client.get(srv.url("/bytes/10")).send().await.unwrap();
        res.bytes().await.unwrap();
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let exporter = client.metrics_exporter("billing");
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));

    let seen = take(&snapshotter);
    assert_eq!(seen.counters["courier.client.requests{client=billing}"], 5);
    assert_eq!(
        seen.counters
            ["courier.client.connections.established{client=billing,network.protocol.version=1.1}"],
        1
    );
    assert_eq!(
        seen.gauges["http.client.open_connections{client=billing,http.connection.state=idle}"],
        1.0
    );
    assert_eq!(
        seen.gauges["http.client.open_connections{client=billing,http.connection.state=active}"],
        0.0
    );
    assert_eq!(
        seen.gauges["http.client.active_requests{client=billing}"],
        0.0
    );
    let durations = &seen.histograms["http.client.request.duration{client=billing}"];
    assert_eq!(durations.len(), 5);
    assert!(
        durations.iter().all(|s| *s > 0.0 && *s < 5.0),
        "{durations:?} (seconds)"
    );
    assert_eq!(seen.units["http.client.request.duration"], Unit::Seconds);
    assert!(seen
        .histograms
        .contains_key("courier.client.connect.duration{client=billing}"));

    // The next export records what happened since: counters add up,
    // histograms get only the new values.
    for _ in 0..3 {
        let res = client.get(srv.url("/bytes/10")).send().await.unwrap();
        res.bytes().await.unwrap();
    }
    metrics::with_local_recorder(&recorder, || assert!(exporter.record()));
    let seen = take(&snapshotter);
    assert_eq!(seen.counters["courier.client.requests{client=billing}"], 8);
    assert_eq!(
        seen.histograms["http.client.request.duration{client=billing}"].len(),
        3
    );
    assert_eq!(
        seen.counters
            ["courier.client.connections.established{client=billing,network.protocol.version=1.1}"],
        1
    );
}

#[tokio::test]
async fn the_factory_exports_every_named_client() {
    let srv = builtin().await;
    let factory = courier::ClientFactory::new();
    for name in ["billing", "search"] {
        factory
            .client(name)
            .get(srv.url("/bytes/1"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    for (name, client) in factory.clients() {
        let exporter = client.metrics_exporter(name);
        metrics::with_local_recorder(&recorder, || exporter.record());
    }
    let seen = take(&snapshotter);
    assert_eq!(seen.counters["courier.client.requests{client=billing}"], 1);
    assert_eq!(seen.counters["courier.client.requests{client=search}"], 1);

    // Middleware counts of a ServiceClient are exported too.
    let flaky = middleware_support::scripted(|req| async move {
        middleware_support::reply(if req.n == 1 { 503 } else { 200 }, "")
    })
    .await;
    let client = courier::middleware::Stack::new()
        .retry(courier::middleware::RetryConfig {
            base_delay: std::time::Duration::from_millis(1),
            ..Default::default()
        })
        .client(courier::Client::new());
    client.get(flaky.url("/")).send().await.unwrap();
    let exporter = client.metrics_exporter("flaky");
    metrics::with_local_recorder(&recorder, || exporter.record());
    let seen = take(&snapshotter);
    assert_eq!(
        seen.counters["courier.client.middleware.retries{client=flaky}"],
        1
    );
    assert_eq!(seen.counters["courier.client.requests{client=flaky}"], 2);

    // The periodic task runs until dropped.
    let task = factory.export_metrics(std::time::Duration::from_millis(10));
    task.stop();
}
